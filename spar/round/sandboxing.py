"""Which kernel sandbox a round's reviewers run in, and what each one sees in it.

`choose_sandbox` decides once per round from `[sandbox] mode` (user configuration):
`auto` uses bwrap where it starts (`spar.proc.sandbox.probe`) and else runs the reviewers
as before, saying why; `required` refuses the round without it; `off` never uses it.

`confined` builds one attempt's jail (the process layer only runs it): besides what every
jail holds (system folders, /proc, /dev, `spar.proc.sandbox`), a reviewer sees

- a private writable `/tmp` (`TMPDIR`) and a scratch `HOME` at `HOME_INSIDE` (outside
  /tmp: codex refuses a home under its temp folder), a new folder per attempt, removed
  after it, holding copies of its CLI's configuration (`Preset.home_files`), the login
  files themselves bound writable (a refreshed login stays refreshed). Where Spar runs as
  root the reviewer runs as another uid (`spar.proc.sandbox.jail_user`), which cannot read
  the user's login files (root's, 0600): it gets copies of its own, and after the attempt a
  copy the CLI changed (a refreshed login) is written back over the user's file, atomically,
  keeping its mode and owner, unless that file changed meanwhile (another program refreshed
  it too): then the user's is kept and a warning says so. The scratch HOME and the egress
  proxy's socket are that uid's;
- read-only: the round's `workspace` at its own path (where it starts), its own folder
  (its input files) and the schema; its executable with the install it belongs to and its
  script interpreter's: under the user's home only the CLI's own (its npm package and the
  packages it depends on, a virtual environment, else the single file), elsewhere the npm
  `node_modules`, or the prefix of a `bin` folder, else the file's folder; every existing
  file its argv names (a `command`'s program and inputs); the files the network settings
  name (`SSL_CERT_FILE`, ...) and its vendor variables name (`GOOGLE_APPLICATION_CREDENTIALS`).

Nothing else: not the rest of the user's home, not the repository, not the series and
its other rounds. A folder that would show one of them (the home, a parent of the round)
is never bound whole: the file alone is.

Where bwrap can also make a network namespace (and the system's python3 runs the bridge),
each jail has only its own loopback and one way out: an egress proxy (`spar.proc.egress`)
started with the attempt's jail and ended with it, which lets the reviewer reach only the
hosts `egress_rule` lists (its service, and the `allow_hosts` of its configuration) and
counts every refusal. The proxy variables inside name the bridge's port; the user's own
proxy is chained on the host side (its password never enters the jail).
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import stat
import sys
import tempfile
import urllib.parse
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from spar.config.model import ReviewerConfig
from spar.endpoint.proxy import UnusableProxy, proxy_for
from spar.errors import Refused, WriteFailed
from spar.proc.egress import BRIDGE_SCRIPT, Count, EgressProxy, Rule, Upstream, bridge_python
from spar.proc.environment import NETWORK_FILES, matches
from spar.proc.sandbox import SYSTEM_DIRS, Bind, Jail, find_bwrap, jail_argv, jail_user, keyring_filter_file, probe
from spar.proc.tree_removal import remove_tree
from spar.records import atomic
from spar.round.interface import Preset, RunPaths

HOME_INSIDE = "/home/reviewer"
TMP_INSIDE = "/tmp"
COPY_LIMIT = 64 * 1024 * 1024  # a configuration file larger than this is not copied
SHEBANG_BYTES = 256
MAX_LINKS = 40  # as the kernel's own limit on links followed
MAX_PACKAGES = 500  # npm packages shown for one executable
MANIFEST_BYTES = 1024 * 1024  # of a package.json read
EGRESS_DIR = "/run/spar-egress"  # inside: the proxy's socket and the bridge
EGRESS_PORT = 3128  # inside: the bridge's loopback port
SHOWN_COPIES = ".spar-shown"  # in the scratch HOME: copies of files the jail's user could not read
PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")


@dataclass(frozen=True)
class SandboxChoice:
    """The round's sandbox: bwrap's path when in place, else why not; and, with bwrap, why
    its jails keep the host's network ("" when each has its own and the egress proxy)."""

    bwrap: str | None
    why: str = ""
    network_why: str = ""

    @property
    def egress(self) -> bool:
        """Each jail has a network of its own, its one way out Spar's egress proxy."""
        return self.bwrap is not None and not self.network_why

    def record(self) -> dict[str, str | None]:
        """round.json `sandbox`."""
        if self.bwrap is None:
            return {"kind": None, "why": self.why}
        if self.network_why:
            return {"kind": "bwrap", "network": "host", "network_why": self.network_why}
        return {"kind": "bwrap", "network": "allowlist"}


def _probes(bwrap: str) -> tuple[str | None, str | None]:
    """Why no jail holds here, and why its jails cannot have a network of their own (None
    for each that holds): one probe with a network namespace, which covers both when it
    holds; the plain one only when that fails."""
    if bridge_python() is None:
        return probe(bwrap), "no python3 under /usr to run the egress bridge inside the jail"
    netted = probe(bwrap, net=True)
    if netted is None:
        return None, None
    return probe(bwrap), netted


def choose_sandbox(mode: str, path_env: str | None) -> SandboxChoice:
    """The sandbox `mode` gives here (bwrap looked up on `path_env` and tried once);
    Refused when `required` finds none, or no network namespace for it."""
    if mode == "off":
        return SandboxChoice(None, '[sandbox] mode = "off" in the user configuration')
    bwrap = find_bwrap(path_env)
    why, network_why = ("bwrap (bubblewrap) is not installed", None) if bwrap is None else _probes(bwrap)
    if why is None and bwrap is not None:
        if network_why is not None and mode == "required":
            raise Refused(f"no network namespace for the reviewers' sandbox: {network_why}; [sandbox] mode = "
                          '"required" runs none whose network is not limited to its service. Set [sandbox] '
                          'mode = "auto" to run them with the host\'s network')
        return SandboxChoice(bwrap, network_why=network_why or "")
    if mode == "required":
        raise Refused(f'no kernel sandbox for the reviewers: {why}; [sandbox] mode = "required" runs none '
                      "without one. Install bubblewrap (apt-get install bubblewrap) where user namespaces "
                      'are allowed, or set [sandbox] mode = "auto"')
    return SandboxChoice(None, why or "")


def round_sandbox(mode: str, path_env: str | None) -> SandboxChoice:
    """`choose_sandbox` for a round (or a verification run), saying on stderr when `auto`
    found none, or no network namespace: the reviewers then run as they would without it."""
    choice = choose_sandbox(mode, path_env)
    if choice.bwrap is None and mode == "auto":
        print(f"spar: warning: no kernel sandbox for the reviewers: {choice.why}; they run without one "
              '([sandbox] mode = "auto"; "required" refuses instead)', file=sys.stderr)
    elif choice.network_why and mode == "auto":
        print(f"spar: warning: the reviewers' sandbox keeps the host's network: {choice.network_why}; every "
              'reviewer reaches every host ([sandbox] mode = "auto"; "required" refuses instead)', file=sys.stderr)
    return choice


def egress_rule(preset: Preset, cfg: ReviewerConfig, env: Mapping[str, str]) -> Rule:
    """Where one reviewer may connect: its preset's service, and its `allow_hosts` (which,
    like a configured base URL, may name a local server)."""
    hosts, services = preset.egress_hosts(cfg, env)
    return Rule(hosts=(*hosts, *cfg.allow_hosts), services=(*services, *cfg.allow_hosts))


def user_proxy(env: Mapping[str, str]) -> Upstream:
    """The user's own proxy (Spar's environment) for a connection the egress proxy makes."""
    def hop(scheme: str, host: str, port: int) -> tuple[str, int, dict[str, str]] | None:
        shown = f"[{host}]" if ":" in host else host
        try:
            proxy = proxy_for(urllib.parse.urlsplit(f"{scheme}://{shown}:{port}/"), env)
        except UnusableProxy as exc:
            raise OSError(str(exc)) from None  # refused rather than sent around the user's proxy
        return None if proxy is None else (proxy.host, proxy.port, proxy.headers())
    return hop


@dataclass(frozen=True)
class Confinement:
    """What one attempt's programs run with: the jail (None: no sandbox) and environment;
    with a network of its own, the egress proxy and the bridge that starts each program."""

    jail: Jail | None
    env: dict[str, str]
    egress: EgressProxy | None = None
    prefix: tuple[str, ...] = ()

    def argv(self, argv: list[str]) -> list[str]:
        return argv if self.jail is None else jail_argv(self.jail, [*self.prefix, *argv])

    def refusals(self) -> list[Count]:
        return self.egress.refusals() if self.egress is not None else []


@contextmanager
def confined(preset: Preset, paths: RunPaths, exe: str, argv: list[str], env: Mapping[str, str],
             bwrap: str | None, rule: Rule | None = None, homes: list[str] | None = None) -> Iterator[Confinement]:
    """The attempt's confinement (with `rule`, a network of its own and the egress proxy
    that applies it); its proxy is ended on the way out, and its scratch HOME removed
    (`remove_scratch`) or, when `homes` is given, its path put there for the caller to remove."""
    if bwrap is None:
        yield Confinement(None, dict(env))
        return
    scratch = tempfile.mkdtemp(prefix="spar-home-")
    user = jail_user()
    logins: list[LoginCopy] = []
    try:
        binds = [Bind(scratch, HOME_INSIDE, writable=True)]
        binds += _home_binds(preset, env, scratch, logins if user is not None else None)
        shown, links = _visible(paths, exe, argv, env, preset)
        binds += _shown_binds(shown, scratch if user is not None else None)
        if user is not None:
            _give(scratch, user)
        inside = {**env, "HOME": HOME_INSIDE, "TMPDIR": TMP_INSIDE, **preset.sandbox_env(env, HOME_INSIDE)}
        with keyring_filter_file() as seccomp:
            jail = Jail(bwrap, cwd=str(paths.workspace), private=(TMP_INSIDE,), binds=tuple(binds),
                        links=tuple(links), seccomp=seccomp, user=user)
            if rule is None:
                yield Confinement(jail, inside)
                return
            with _egress(rule, env, user) as proxy:
                yield _with_egress(jail, inside, proxy)
    finally:
        for login in logins:
            if said := login.write_back():
                print(f"spar: warning: {said}", file=sys.stderr)
        if homes is None:
            remove_scratch(scratch)
        else:
            homes.append(scratch)


def remove_scratch(scratch: str) -> str:
    """Remove a scratch HOME whatever the reviewer left in it; what could not go, said ('' when
    nothing stayed)."""
    removal = remove_tree(scratch)
    return f"the reviewer's scratch HOME {scratch} was not removed whole: {removal.text()}" if removal.text() else ""


@contextmanager
def _egress(rule: Rule, env: Mapping[str, str], user: int | None) -> Iterator[EgressProxy]:
    """The attempt's egress proxy, listening on a Unix socket in a private folder (the
    socket `user`'s, when the jail runs as one)."""
    folder = tempfile.mkdtemp(prefix="spar-egress-")
    proxy = EgressProxy(os.path.join(folder, "proxy.sock"), rule, upstream=user_proxy(env))
    try:
        proxy.start()
        if user is not None:
            os.chown(proxy.socket_path, user, user)
        yield proxy
    finally:
        proxy.close()
        shutil.rmtree(folder, ignore_errors=True)


def _with_egress(jail: Jail, env: dict[str, str], proxy: EgressProxy) -> Confinement:
    """`jail` with a network of its own: the proxy's socket and the bridge bound in, the
    bridge started before each program, the proxy variables naming its port."""
    python = bridge_python()
    if python is None:
        raise OSError("no python3 under /usr for the egress bridge")
    socket_inside, bridge_inside = f"{EGRESS_DIR}/proxy.sock", f"{EGRESS_DIR}/bridge.py"
    binds = (*jail.binds, Bind(proxy.socket_path, socket_inside), Bind(BRIDGE_SCRIPT, bridge_inside))
    netted = dataclasses.replace(jail, binds=binds, unshare_net=True)
    way_out = f"http://127.0.0.1:{EGRESS_PORT}"
    inside = {**env, **dict.fromkeys(PROXY_VARIABLES, way_out), "NO_PROXY": "", "no_proxy": "",
              "SPAR_EGRESS_PROXY": way_out}
    prefix = (python, "-I", "-S", bridge_inside, socket_inside, str(EGRESS_PORT), "--")
    return Confinement(netted, inside, proxy, prefix)


@dataclass(frozen=True)
class LoginCopy:
    """A copy of a login file of the user's in a scratch HOME, for a jail whose user cannot
    read the file itself; `before` is what was copied."""

    source: str  # the user's file (the file a link leads to)
    home: str  # the scratch HOME
    copy: str  # in `home`
    before: bytes

    def write_back(self) -> str:
        """Put a copy the CLI changed in the user's file's place (a new file of the same
        mode and owner, renamed over it); what stopped it ('' when written, or unchanged)."""
        after = _read_unfollowed(self.home, os.path.relpath(self.copy, self.home))
        # removed inside, or no longer a file: the user's file stays as it is
        if after is None or after == self.before or not after or len(after) > COPY_LIMIT:
            return ""
        try:
            st = os.stat(self.source)
            with open(self.source, "rb") as f:
                now = f.read(COPY_LIMIT + 1)
            if now != self.before:
                return (f"the reviewer refreshed its login, but {self.source} changed meanwhile: kept as it is "
                        "(the reviewer's refreshed copy is dropped)")
            atomic.write_bytes(self.source, after, unique_tmp=True, mode=stat.S_IMODE(st.st_mode),
                               owner=(st.st_uid, st.st_gid))
        except OSError as exc:
            return f"the reviewer refreshed its login, but it could not be written to {self.source}: {exc}"
        except WriteFailed as exc:
            return f"the reviewer refreshed its login, but {exc.message}"
        return ""


def _read_unfollowed(home: str, relative: str) -> bytes | None:
    """The first COPY_LIMIT + 1 bytes of the regular file at `relative` under `home`, no
    symbolic link followed on the way (the jail's user could have made one to a file of
    root's); None when there is none."""
    parts = relative.split(os.sep)
    fds: list[int] = []
    try:
        fds.append(os.open(home, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW))
        for part in parts[:-1]:
            fds.append(os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fds[-1]))
        fds.append(os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=fds[-1]))
        if not stat.S_ISREG(os.fstat(fds[-1]).st_mode):
            return None
        with os.fdopen(os.dup(fds[-1]), "rb") as f:
            return f.read(COPY_LIMIT + 1)
    except OSError:
        return None
    finally:
        for fd in fds:
            os.close(fd)


def _copy_login(source: str, home: str, target: str) -> LoginCopy | None:
    """A copy of the file `source` at `target` (0600) in the scratch `home`, or None when it
    cannot be read or is larger than COPY_LIMIT."""
    real = os.path.realpath(source)
    try:
        with open(real, "rb") as f:
            before = f.read(COPY_LIMIT + 1)
        if len(before) > COPY_LIMIT:
            return None
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(before)
    except OSError:
        return None
    return LoginCopy(real, home, target, before)


def _shown_binds(shown: list[str], scratch: str | None) -> list[Bind]:
    """Read-only binds of `shown`, each at its own path; with `scratch` (the jail's user is
    not Spar's), a file others may not read is shown through a copy in `scratch`'s SHOWN_COPIES
    (made the jail user's with the rest), so that it stays readable inside."""
    binds = []
    for number, path in enumerate(shown):
        source = path
        try:
            st = os.stat(path)
        except OSError:
            st = None
        if scratch is not None and st is not None and stat.S_ISREG(st.st_mode) and not st.st_mode & stat.S_IROTH:
            copy = os.path.join(scratch, SHOWN_COPIES, str(number))
            os.makedirs(os.path.dirname(copy), mode=0o700, exist_ok=True)
            if _copy_login(path, scratch, copy) is not None:
                source = copy
        binds.append(Bind(source, path))
    return binds


def _give(scratch: str, user: int) -> None:
    """The scratch HOME and all Spar put in it made `user`'s (uid and gid)."""
    for folder, _dirs, files in os.walk(scratch):
        os.chown(folder, user, user, follow_symlinks=False)
        for name in files:
            os.chown(os.path.join(folder, name), user, user, follow_symlinks=False)


def _home_binds(preset: Preset, env: Mapping[str, str], scratch: str,
                logins: list[LoginCopy] | None = None) -> list[Bind]:
    """Copies of the CLI's configuration into the scratch HOME; its login files, bound (or,
    with `logins`, copied, each copy put there)."""
    binds = []
    for item in preset.home_files(env):
        target = os.path.join(scratch, item.inside)
        # the folder is made even when the user has none of its files: codex refuses to start
        # when its CODEX_HOME does not exist
        os.makedirs(os.path.dirname(target), mode=0o700, exist_ok=True)
        try:
            st = os.stat(item.source)
        except OSError:
            continue
        if not stat.S_ISREG(st.st_mode):
            continue
        if item.live and logins is not None:
            if (login := _copy_login(item.source, scratch, target)) is not None:
                logins.append(login)
        elif item.live:
            Path(target).touch(mode=0o600)
            binds.append(Bind(item.source, os.path.join(HOME_INSIDE, item.inside), writable=True))
        elif st.st_size <= COPY_LIMIT:
            shutil.copyfile(item.source, target)
    return binds


def _visible(paths: RunPaths, exe: str, argv: list[str], env: Mapping[str, str],
             preset: Preset) -> tuple[list[str], list[tuple[str, str]]]:
    """Everything else the reviewer sees read-only, at its own path, each once; and the
    symbolic links on the way to its programs (target, path)."""
    hidden = _never_whole(paths, env)
    home = hidden[0] if hidden[0] != "/" else ""  # no HOME: no folder of the user's to keep out
    shown = [str(paths.workspace), str(paths.reviewer_dir), str(paths.schema_path)]
    hops: list[tuple[str, str]] = []
    for program in (exe, _interpreter(exe, env)):
        if program:
            chain = _link_chain(program)
            hops += chain
            for path in [program, *(os.path.normpath(os.path.join(os.path.dirname(path), target))
                                    for target, path in chain)]:
                shown += _install_root(path, hidden, home)
    named = [a for a in argv[1:] if os.path.isabs(a)] + preset.sandbox_paths()
    named += [env[k] for k in NETWORK_FILES if env.get(k)]
    named += [v for k, v in env.items() if os.path.isabs(v) and os.path.isfile(v) and matches(k, preset.vendor_env)]
    shown += [os.path.abspath(p) for p in named if os.path.exists(p) and not _too_wide(os.path.abspath(p), hidden)]
    kept: list[str] = []
    for path in shown:
        if os.path.lexists(path) and path not in kept and not _system(path) and not os.path.islink(path):
            kept.append(path)
    links = [(target, path) for target, path in dict.fromkeys(hops)
             if not _system(os.path.dirname(path)) and not any(_under(path, k) for k in kept)]
    return kept, links


def _link_chain(program: str) -> list[tuple[str, str]]:
    """The symbolic links from `program` to the file it names, as (target, link path)."""
    chain = []
    path = os.path.abspath(program)
    for _ in range(MAX_LINKS):
        if not os.path.islink(path):
            break
        target = os.readlink(path)
        chain.append((target, path))
        path = os.path.normpath(os.path.join(os.path.dirname(path), target))
    return chain


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _never_whole(paths: RunPaths, env: Mapping[str, str]) -> list[str]:
    """Folders no bind may show whole: the user's home, the round folder (so the series and
    the repository above it), the temporary folder."""
    return [os.path.realpath(p) for p in (env.get("HOME") or "/", str(paths.round_dir), tempfile.gettempdir())]


def _too_wide(path: str, hidden: list[str]) -> bool:
    """`path` is `/`, or holds (or is) one of `hidden`."""
    real = os.path.realpath(path)
    return real == "/" or any(h == real or h.startswith(real.rstrip("/") + "/") for h in hidden)


def _install_root(program: str, hidden: list[str], home: str) -> list[str]:
    """What to show of an executable. Under the user's `home`: its npm package with the
    packages it depends on, a Python virtual environment it is the `bin` of, else the file
    alone (a native install is one binary: claude's versioned file, codex in ~/.cargo/bin),
    never a whole ~/.local, ~/.cargo, ~/.npm-global or ~/.nvm. Elsewhere: the `node_modules`
    it is in, the prefix of its `bin` folder, else its folder. The file alone wherever that
    would show too much."""
    parts = Path(program).parts
    if home and _under(os.path.realpath(program), home):
        if "node_modules" in parts:
            return _npm_packages(program)
        folder = Path(program).parent
        if folder.name == "bin" and (folder.parent / "pyvenv.cfg").is_file() and not _too_wide(str(folder.parent),
                                                                                             hidden):
            return [str(folder.parent)]
        return [program]
    if "node_modules" in parts:
        root = str(Path(*parts[:parts.index("node_modules") + 1]))
    else:
        folder = Path(program).parent
        root = str(folder.parent if folder.name == "bin" else folder)
    return [program if _too_wide(root, hidden) else root]


def _npm_packages(program: str) -> list[str]:
    """The npm package folder `program` is in and, as node would find them in the same
    `node_modules`, the packages it depends on (optional ones included: codex's binary is
    one), each once, at most MAX_PACKAGES."""
    parts = Path(program).parts
    last = len(parts) - 1 - parts[::-1].index("node_modules")
    modules = Path(*parts[:last + 1])
    name = parts[last + 1:last + 3] if last + 1 < len(parts) and parts[last + 1].startswith("@") \
        else parts[last + 1:last + 2]
    if not name or len(parts) <= last + len(name):
        return [program]
    found: list[str] = []
    todo = ["/".join(name)]
    while todo and len(found) < MAX_PACKAGES:
        folder = modules / todo.pop()
        if str(folder) in found or not folder.is_dir():
            continue
        found.append(str(folder))
        todo += [d for d in _dependencies(folder / "package.json") if d and not d.startswith((".", "/"))]
    return found or [program]


def _dependencies(manifest: Path) -> list[str]:
    """The names of `dependencies` and `optionalDependencies` in a package.json."""
    try:
        with open(manifest, "rb") as f:
            value = json.loads(f.read(MANIFEST_BYTES))
    except (OSError, ValueError):
        return []
    if not isinstance(value, dict):
        return []
    names: list[str] = []
    for key in ("dependencies", "optionalDependencies"):
        table = value.get(key)
        if isinstance(table, dict):
            names += [n for n in table if isinstance(n, str) and ".." not in n.split("/")]
    return names


def _interpreter(exe: str, env: Mapping[str, str]) -> str | None:
    """The program a script's `#!` line runs (`env NAME` looked up on the reviewer's PATH)."""
    try:
        with open(exe, "rb") as f:
            head = f.read(SHEBANG_BYTES)
    except OSError:
        return None
    if not head.startswith(b"#!"):
        return None
    words = head[2:].split(b"\n", 1)[0].decode("utf-8", errors="replace").split()
    if not words:
        return None
    if os.path.basename(words[0]) != "env":
        return words[0]
    rest = [w for w in words[1:] if not w.startswith("-") and "=" not in w]
    return shutil.which(rest[0], path=env.get("PATH")) if rest else None


def _system(path: str) -> bool:
    real = os.path.realpath(path)
    return any(real == d or real.startswith(d + "/") for d in SYSTEM_DIRS if not os.path.islink(d))


__all__ = ["HOME_INSIDE", "Confinement", "SandboxChoice", "choose_sandbox", "confined", "egress_rule", "remove_scratch",
           "round_sandbox", "user_proxy"]
