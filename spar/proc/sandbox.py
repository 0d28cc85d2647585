"""A kernel sandbox to start a program in: bubblewrap (`bwrap`), from a generic description.

The process layer knows nothing of reviewers: a caller hands `jail_argv` a `Jail` (what to
show of the file system, which folders are private and writable, where to start) and the
program's argv, and gets the argv that runs the program inside it. What every jail holds:

- the system folders read-only (`/usr` and its `/bin`, `/lib`, `/sbin` links) and, of
  `/etc`, only the files that name hosts, users, certificates and the dynamic linker's
  cache (`ETC_NAMES`), each bound as the file it leads to (`/etc/resolv.conf` may be a link
  into `/run`);
- a `/proc` of its own in a new PID namespace (no process outside it can be seen, read
  or signalled), a minimal `/dev` with a private `devpts` (no terminal of the user's), a
  new session (no controlling terminal), every capability dropped (root inside can mount
  nothing), and its end with its parent's;
- the network as it is, unless the `Jail` asks for a network namespace of its own
  (`unshare_net`: only its own loopback; `spar.proc.egress` is then the way out).

Everything else of the file system is absent unless the `Jail` binds it. `probe` says
whether bwrap starts at all here (it cannot without user namespaces: Ubuntu's AppArmor
rule, Docker's default seccomp profile).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from dataclasses import dataclass

SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# certificates, never the private keys beside them (root inside would read them)
ETC_NAMES = ("resolv.conf", "hosts", "nsswitch.conf", "host.conf", "gai.conf", "passwd", "group", "localtime",
             "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "ssl/certs", "ssl/openssl.cnf", "ca-certificates",
             "pki/tls/certs", "pki/ca-trust", "crypto-policies", "alternatives", "protocols", "services",
             "mime.types", "claude-code", "codex")  # the CLIs' managed policies apply inside too
PROBE_SECONDS = 10.0
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
    then `binds` in order, then the symbolic `links` (target, path); it starts in `cwd`."""

    bwrap: str  # the bwrap executable (absolute)
    cwd: str
    private: tuple[str, ...] = ()
    binds: tuple[Bind, ...] = ()
    links: tuple[tuple[str, str], ...] = ()
    unshare_net: bool = False  # a network namespace of its own (only its loopback)


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


def _base_args(bwrap: str) -> list[str]:
    return [bwrap, "--unshare-pid", "--new-session", "--die-with-parent", "--cap-drop", "ALL",
            "--proc", "/proc", "--dev", "/dev", *system_args()]


def jail_argv(jail: Jail, argv: list[str]) -> list[str]:
    """The argv that runs `argv` inside `jail`."""
    args = _base_args(jail.bwrap) + (["--unshare-net"] if jail.unshare_net else [])
    for folder in jail.private:
        args += ["--tmpfs", folder]
    for bind in jail.binds:
        args += ["--bind" if bind.writable else "--ro-bind", bind.source, bind.target]
    for target, path in jail.links:
        args += ["--symlink", target, path]
    return [*args, "--chdir", jail.cwd, "--", *argv]


def find_bwrap(path_env: str | None) -> str | None:
    """bwrap on `path_env` (absolute), or None."""
    found = shutil.which("bwrap", path=path_env)
    return os.path.abspath(found) if found else None


def probe(bwrap: str, *, net: bool = False) -> str | None:
    """None when `bwrap` starts a program in a jail here (with a network namespace of its
    own when `net`); else why not (its own words)."""
    true = "/usr/bin/true" if os.path.exists("/usr/bin/true") else "/bin/true"
    argv = [*_base_args(bwrap), *(["--unshare-net"] if net else []), "--tmpfs", "/tmp", "--", true]
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                start_new_session=True)
    except OSError as exc:
        return f"{bwrap} cannot be started: {exc.strerror or exc}"
    try:
        _, err = proc.communicate(timeout=PROBE_SECONDS)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return f"{bwrap} did not start a program within {PROBE_SECONDS:g}s"
    if proc.returncode == 0:
        return None
    said = err[-_PROBE_OUTPUT:].decode("utf-8", errors="replace").strip().splitlines()
    return f"{bwrap} cannot make a sandbox here (exit {proc.returncode})" + (f": {said[-1]}" if said else "")


__all__ = ["Bind", "Jail", "find_bwrap", "jail_argv", "probe", "system_args"]
