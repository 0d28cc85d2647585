"""A kernel sandbox to start a program in: bubblewrap (`bwrap`), from a generic description.

The process layer knows nothing of reviewers: a caller hands `jail_argv` a `Jail` (what to
show of the file system, which folders are private and writable, where to start) and the
program's argv, and gets the argv that runs the program inside it. What every jail holds:

- the system folders read-only (`/usr` and its `/bin`, `/lib`, `/sbin` links) and, of
  `/etc`, only the files that name hosts, users, certificates and the dynamic linker's
  cache (`ETC_NAMES`), each bound as the file it leads to (`/etc/resolv.conf` may be a link
  into `/run`);
- namespaces of its own (`NAMESPACES`, one list): a PID namespace with its own `/proc` (no
  process outside it can be seen, read or signalled), an IPC namespace (no System V shared
  memory, semaphore or message queue of the user's); bwrap adds a user namespace for a
  user other than root;
- when Spar runs as root (uid or group 0), the entries of `/proc` that change the host when
  written (`PROC_COVERS`: sysctls such as `kernel.core_pattern`, which makes the kernel run
  a program as host root) shown read-only: the kernel lets global root write them whatever
  its capabilities and user namespace. Not for other users, whom the kernel refuses anyway:
  a cover over `/proc` stops a nested sandbox (codex's own) from mounting a `/proc`;
- no kernel keyring where `Jail.seccomp` names the filter's file, as every jail Spar makes
  does (a seccomp filter, `keyring_filter`: keyctl, add_key and request_key fail with
  EPERM): keys are reached by uid, which a user namespace keeps (the user's own
  keyring, listed in /proc/keys, could be linked and read), and request_key would make the
  kernel run /sbin/request-key on the host;
- a minimal `/dev` with a private `devpts` (no terminal of the user's), a new session (no
  controlling terminal), every capability dropped (root inside can mount nothing), and its
  end with its parent's;
- when `Jail.user` names a uid (`jail_user`: Spar runs as root and setpriv is installed),
  the program runs as that uid and gid, with no supplementary group: bwrap (root) makes the
  jail keeping only CAP_SETUID and CAP_SETGID, and `setpriv` changes uid before anything
  else runs, which ends those too (bwrap sets no_new_privs: no exec gains any back). The
  kernel then refuses the sysctls itself, and a nested sandbox can map its own uid into a
  user namespace (codex's: as root without capabilities the kernel refuses to map uid 0).
  The folders bwrap makes on the way to a bind are then searchable (0755) and the private
  folders writable by all (1777) inside, as `/tmp` is;
- the network as it is, unless the `Jail` asks for a network namespace of its own
  (`unshare_net`: only its own loopback; `spar.proc.egress` is then the way out).

Everything else of the file system is absent unless the `Jail` binds it. `probe` says
whether a jail holds here: bwrap must start (it cannot without user namespaces: Ubuntu's
AppArmor rule, Docker's default seccomp profile), and the program inside must find itself
in a new PID namespace, a file of the host's absent and the sysctls read-only; a program
named bwrap that runs its command without a jail is refused.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import struct
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from spar.proc.keyring import KEYRING_CALLS

SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# certificates, never the private keys beside them (root inside would read them)
ETC_NAMES = ("resolv.conf", "hosts", "nsswitch.conf", "host.conf", "gai.conf", "passwd", "group", "localtime",
             "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "ssl/certs", "ssl/openssl.cnf", "ca-certificates",
             "pki/tls/certs", "pki/ca-trust", "crypto-policies", "alternatives", "protocols", "services",
             "mime.types", "claude-code", "codex")  # the CLIs' managed policies apply inside too
# one list of the namespaces every jail has of its own (bwrap's flags)
NAMESPACES = ("--unshare-pid", "--unshare-ipc")
PROC_COVERS = ("/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus")
PROBE_SECONDS = 10.0
# the uid and gid a jail started by root runs its program as: one that names no user and
# owns no file or process of the host's (a host process of the same uid could read the
# program's memory and environment), the same in every jail (each in a PID namespace of its own)
JAIL_UID = 2_147_483_646
_KEPT_CAPS = ("--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID")  # for setpriv only
_PROBE_OUTPUT = 4096  # bytes of bwrap's complaint kept


@dataclass(frozen=True)
class Bind:
    """`source` (of the real file system) shown at `target` inside, read-only unless `writable`."""

    source: str
    target: str
    writable: bool = False


@dataclass(frozen=True)
class Jail:
    """What a program sees: `private` folders (empty, writable, gone with it) made first,
    then `binds` in order, then the symbolic `links` (target, path); it starts in `cwd`;
    `seccomp` names a file holding `keyring_filter()` (written by the caller, kept while
    the jail starts)."""

    bwrap: str  # the bwrap executable (absolute)
    cwd: str
    private: tuple[str, ...] = ()
    binds: tuple[Bind, ...] = ()
    links: tuple[tuple[str, str], ...] = ()
    seccomp: str | None = None
    unshare_net: bool = False  # a network namespace of its own (only its loopback)
    user: int | None = None  # the uid and gid the program runs as (bwrap started by root)


# every architecture's keyring calls, not only this machine's: a 64-bit kernel runs 32-bit
# programs too (AUDIT_ARCH_* -> add_key, request_key, keyctl)
_KEYRING_BY_ARCH = dict(KEYRING_CALLS.values())
_X32_BIT = 0x40000000  # x86_64's x32 calls: the same numbers with this bit
_LD_ABS, _JEQ, _AND, _RET = 0x20, 0x15, 0x54, 0x06
_ALLOW, _EPERM = 0x7FFF0000, 0x00050000 | 1
_SECCOMP_FD = 9  # where the shell around bwrap opens the filter's file


def keyring_filter() -> bytes:
    """A seccomp program (classic BPF, as bwrap's --seccomp reads it) under which the keyring
    calls fail with EPERM and every other call is allowed."""
    code: list[tuple[int, int, int, int]] = []
    jumps: list[int] = []  # the instructions that jump to the EPERM at the end
    for arch, calls in _KEYRING_BY_ARCH.items():
        block = [(_LD_ABS, 0, 0, 0)]  # seccomp_data.nr
        if arch == 0xC000003E:
            block.append((_AND, 0, 0, ~_X32_BIT & 0xFFFFFFFF))
        block += [(_JEQ, 0, 0, nr) for nr in calls] + [(_RET, 0, 0, _ALLOW)]
        code += [(_LD_ABS, 0, 0, 4), (_JEQ, 0, len(block), arch)]  # seccomp_data.arch; not it: the next block
        jumps += [len(code) + i for i, ins in enumerate(block) if ins[0] == _JEQ]
        code += block
    code.append((_RET, 0, 0, _ALLOW))  # an architecture not listed
    code.append((_RET, 0, 0, _EPERM))
    for i in jumps:
        op, _, jf, k = code[i]
        code[i] = (op, len(code) - 2 - i, jf, k)
    return b"".join(struct.pack("=HBBI", *ins) for ins in code)


def system_args() -> list[str]:
    """The system folders and /etc files every jail holds, as bwrap arguments."""
    args: list[str] = []
    for folder in SYSTEM_DIRS:
        if os.path.islink(folder):
            args += ["--symlink", os.readlink(folder), folder]
        elif os.path.isdir(folder):
            args += ["--ro-bind", folder, folder]
    for name in ETC_NAMES:
        path = os.path.join("/etc", name)
        real = os.path.realpath(path)
        if os.path.exists(real):
            args += ["--ro-bind", real, path]
    return args


def _root_like() -> bool:
    """The kernel gives this process the owner's (or group's) rights on sysctls: uid or group 0."""
    return os.geteuid() == 0 or os.getegid() == 0 or 0 in os.getgroups()


def proc_args() -> list[str]:
    """The jail's own `/proc`, with `PROC_COVERS` read-only (the host's entries, whose writes
    would act on the host) where this process is root-like."""
    args = ["--proc", "/proc"]
    if _root_like():
        for path in PROC_COVERS:
            args += ["--ro-bind-try", path, path]
    return args


def find_setpriv() -> str | None:
    """util-linux's setpriv under /usr (so that it is inside every jail), or None."""
    for folder in ("/usr/bin", "/usr/sbin"):
        path = os.path.join(folder, "setpriv")
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


def jail_user() -> int | None:
    """The uid a jail's program runs as: `JAIL_UID` where Spar runs as root and setpriv is
    there to change to it, else None (the program keeps Spar's uid)."""
    return JAIL_UID if os.geteuid() == 0 and find_setpriv() is not None else None


def _base_args(bwrap: str, user: int | None) -> list[str]:
    caps = ["--cap-drop", "ALL", *(_KEPT_CAPS if user is not None else ())]
    return [bwrap, *NAMESPACES, "--new-session", "--die-with-parent", *caps, *proc_args(), "--dev", "/dev"]


def _folder_args(jail: Jail) -> list[str]:
    """The private folders, and for a jail with a `user`, every folder on the way to what it
    shows made first, searchable (bwrap makes them 0700, its owner's alone), never a system
    folder (some are links) nor a link's path; in order of depth, so that a folder under a
    private one is made in it."""
    if jail.user is None:
        return [arg for folder in jail.private for arg in ("--tmpfs", folder)]
    targets = [b.target for b in jail.binds] + list(jail.private) + [p for _, p in jail.links] + [jail.cwd]
    targets += [os.path.join("/etc", name) for name in ETC_NAMES]
    links = {p for _, p in jail.links}
    folders: set[str] = set(jail.private)
    for target in targets:
        parent = os.path.dirname(os.path.normpath(target))
        while parent not in ("/", ""):
            folders.add(parent)
            parent = os.path.dirname(parent)
    args: list[str] = []
    for folder in sorted(folders, key=lambda f: (f.count("/"), f)):
        if folder in jail.private:
            args += ["--perms", "1777", "--tmpfs", folder]
        elif folder not in links and not any(folder == d or folder.startswith(d + "/") for d in SYSTEM_DIRS):
            # writable where root's would be: in a private folder
            private = any(folder.startswith(p.rstrip("/") + "/") for p in jail.private)
            args += ["--perms", "1777" if private else "0755", "--dir", folder]
    return args


def jail_argv(jail: Jail, argv: list[str]) -> list[str]:
    """The argv that runs `argv` inside `jail`."""
    args = _base_args(jail.bwrap, jail.user) + (["--unshare-net"] if jail.unshare_net else [])
    args += _folder_args(jail) + system_args()
    for bind in jail.binds:
        args += ["--bind" if bind.writable else "--ro-bind", bind.source, bind.target]
    for target, path in jail.links:
        args += ["--symlink", target, path]
    if jail.user is not None:
        setpriv = find_setpriv() or "/usr/bin/setpriv"
        argv = [setpriv, f"--reuid={jail.user}", f"--regid={jail.user}", "--clear-groups", "--inh-caps=-all",
                "--", *argv]
    args += ["--chdir", jail.cwd, "--", *argv]
    if jail.seccomp is None:
        return args
    # bwrap reads the filter from a descriptor: a shell opens the file there and becomes bwrap
    return [_shell(), "-c", f'exec "$@" {_SECCOMP_FD}<"$0"', jail.seccomp, args[0],
            "--seccomp", str(_SECCOMP_FD), *args[1:]]


@contextmanager
def keyring_filter_file() -> Iterator[str]:
    """A temporary file holding `keyring_filter()`, for `Jail.seccomp`; removed on the way out."""
    fd, path = tempfile.mkstemp(prefix="spar-seccomp-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(keyring_filter())
        yield path
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)


def _shell() -> str:
    return "/bin/sh" if os.path.exists("/bin/sh") else "/usr/bin/sh"


def find_bwrap(path_env: str | None) -> str | None:
    """bwrap on `path_env` (absolute), or None."""
    found = shutil.which("bwrap", path=path_env)
    return os.path.abspath(found) if found else None


# run inside the probe's jail: $1 a file of the host's, $2 the word to print when all holds;
# the program is pid 2 under bwrap's own init in a new PID namespace
_PROBE_SCRIPT = """[ "$$" -le 2 ] || exit 3
[ ! -e "$1" ] || exit 4
[ ! -w /proc/sys/kernel/core_pattern ] || exit 5
echo "$2"
"""
_PROBE_FAILURES = {3: "the program inside is not in a PID namespace of its own",
                   4: "the program inside sees a file of the host's",
                   5: "the program inside may write /proc/sys"}


def probe(bwrap: str, *, net: bool = False) -> str | None:
    """None when `bwrap` makes a jail that holds here (checked from inside: a new PID
    namespace, a file planted on the host absent, /proc/sys read-only; with a network
    namespace of its own when `net`); else why not."""
    word = f"spar-probe-{secrets.token_hex(8)}"
    with tempfile.TemporaryDirectory(prefix="spar-probe-") as folder, keyring_filter_file() as seccomp:
        planted = os.path.join(folder, "planted")
        with open(planted, "w", encoding="utf-8") as f:
            f.write("the host's\n")
        # readable by any uid: a jail's user must find it absent, not merely out of reach
        os.chmod(folder, 0o755)
        os.chmod(planted, 0o644)
        jail = Jail(bwrap, cwd="/", private=("/tmp",), seccomp=seccomp, unshare_net=net, user=jail_user())
        ran = _run_probe(bwrap, jail_argv(jail, [_shell(), "-c", _PROBE_SCRIPT, "sh", planted, word]))
    if isinstance(ran, str):
        return ran
    code, out, err = ran
    said = err.decode("utf-8", errors="replace").strip().splitlines()
    if code in _PROBE_FAILURES:
        return f"{bwrap} does not make a jail that holds: " + _PROBE_FAILURES[code]
    if code == 0 and out.decode("utf-8", errors="replace").strip() == word:
        return None
    if code == 0:
        return f"{bwrap} does not make a jail that holds: the program inside did not run or said something else"
    return f"{bwrap} cannot make a sandbox here (exit {code})" + (f": {said[-1]}" if said else "")


def _run_probe(bwrap: str, argv: list[str]) -> tuple[int, bytes, bytes] | str:
    """(exit code, the first bytes of stdout, the last of stderr) of the probe; or why it did not end."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err, start_new_session=True)
        except OSError as exc:
            return f"{bwrap} cannot be started: {exc.strerror or exc}"
        try:
            proc.wait(timeout=PROBE_SECONDS)
        except subprocess.TimeoutExpired:
            _end_probe(proc)
            return f"{bwrap} did not start a program within {PROBE_SECONDS:g}s"
        except BaseException:  # Ctrl-C, or a caller's deadline (spar hook's alarm): the probe ends too
            _end_probe(proc)
            raise
        out.seek(0)
        size = err.seek(0, os.SEEK_END)
        err.seek(max(0, size - _PROBE_OUTPUT))
        return proc.returncode, out.read(_PROBE_OUTPUT), err.read(_PROBE_OUTPUT)


def _end_probe(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


__all__ = ["JAIL_UID", "NAMESPACES", "PROC_COVERS", "Bind", "Jail", "find_bwrap", "find_setpriv", "jail_argv",
           "jail_user", "keyring_filter", "keyring_filter_file", "probe", "proc_args", "system_args"]
