"""Which kernel sandbox a round's reviewers run in, and what each one sees in it.

`choose_sandbox` decides once per round from `[sandbox] mode` (user configuration):
`auto` uses bwrap where it starts (`spar.proc.sandbox.probe`) and else runs the reviewers
as before, saying why; `required` refuses the round without it; `off` never uses it.

`confined` builds one attempt's jail (the process layer only runs it): besides what every
jail holds (system folders, /proc, /dev, `spar.proc.sandbox`), a reviewer sees

- a private writable `/tmp` (`TMPDIR`) and a scratch `HOME` at `HOME_INSIDE` (outside
  /tmp: codex refuses a home under its temp folder), a new folder per attempt, removed
  after it, holding copies of its CLI's configuration (`Preset.home_files`), the login
  files themselves bound writable (a refreshed login stays refreshed);
- read-only: the round's `workspace` at its own path (where it starts), its own folder
  (its input files) and the schema; its executable with the install it belongs to (the
  npm `node_modules`, or the prefix of a `bin` folder, else the file's folder) and its
  script interpreter's; every existing file its argv names (a `command`'s program and
  inputs); the files the network settings name (`SSL_CERT_FILE`, ...) and its vendor
  variables name (`GOOGLE_APPLICATION_CREDENTIALS`).

Nothing else: not the rest of the user's home, not the repository, not the series and
its other rounds. A folder that would show one of them (the home, a parent of the round)
is never bound whole: the file alone is.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import sys
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from spar.errors import Refused
from spar.proc.environment import NETWORK_FILES, matches
from spar.proc.sandbox import SYSTEM_DIRS, Bind, Jail, find_bwrap, jail_argv, probe
from spar.round.interface import Preset, RunPaths

HOME_INSIDE = "/home/reviewer"
TMP_INSIDE = "/tmp"
COPY_LIMIT = 64 * 1024 * 1024  # a configuration file larger than this is not copied
SHEBANG_BYTES = 256
MAX_LINKS = 40  # as the kernel's own limit on links followed


@dataclass(frozen=True)
class SandboxChoice:
    """The round's sandbox: bwrap's path when in place, else why not."""

    bwrap: str | None
    why: str = ""

    def record(self) -> dict[str, str | None]:
        """round.json `sandbox`."""
        return {"kind": "bwrap"} if self.bwrap else {"kind": None, "why": self.why}


def choose_sandbox(mode: str, path_env: str | None) -> SandboxChoice:
    """The sandbox `mode` gives here (bwrap looked up on `path_env` and tried once);
    Refused when `required` finds none."""
    if mode == "off":
        return SandboxChoice(None, '[sandbox] mode = "off" in the user configuration')
    bwrap = find_bwrap(path_env)
    why = "bwrap (bubblewrap) is not installed" if bwrap is None else probe(bwrap)
    if why is None:
        return SandboxChoice(bwrap)
    if mode == "required":
        raise Refused(f'no kernel sandbox for the reviewers: {why}; [sandbox] mode = "required" runs none '
                      "without one. Install bubblewrap (apt-get install bubblewrap) where user namespaces "
                      'are allowed, or set [sandbox] mode = "auto"')
    return SandboxChoice(None, why)


def round_sandbox(mode: str, path_env: str | None) -> SandboxChoice:
    """`choose_sandbox` for a round (or a verification run), saying on stderr when `auto`
    found none: the reviewers then run as they would without Spar's sandbox."""
    choice = choose_sandbox(mode, path_env)
    if choice.bwrap is None and mode == "auto":
        print(f"spar: warning: no kernel sandbox for the reviewers: {choice.why}; they run without one "
              '([sandbox] mode = "auto"; "required" refuses instead)', file=sys.stderr)
    return choice


@dataclass(frozen=True)
class Confinement:
    """What one attempt's programs run with: the jail (None: no sandbox) and environment."""

    jail: Jail | None
    env: dict[str, str]

    def argv(self, argv: list[str]) -> list[str]:
        return argv if self.jail is None else jail_argv(self.jail, argv)


@contextmanager
def confined(preset: Preset, paths: RunPaths, exe: str, argv: list[str], env: Mapping[str, str],
             bwrap: str | None) -> Iterator[Confinement]:
    """The attempt's confinement; its scratch HOME is removed on the way out."""
    if bwrap is None:
        yield Confinement(None, dict(env))
        return
    scratch = tempfile.mkdtemp(prefix="spar-home-")
    try:
        binds = [Bind(scratch, HOME_INSIDE, writable=True)]
        binds += _home_binds(preset, env, scratch)
        shown, links = _visible(paths, exe, argv, env, preset)
        binds += [Bind(p, p) for p in shown]
        inside = {**env, "HOME": HOME_INSIDE, "TMPDIR": TMP_INSIDE, **preset.sandbox_env(env, HOME_INSIDE)}
        jail = Jail(bwrap, cwd=str(paths.workspace), private=(TMP_INSIDE,), binds=tuple(binds), links=tuple(links))
        yield Confinement(jail, inside)
    finally:
        _remove(scratch)


def _home_binds(preset: Preset, env: Mapping[str, str], scratch: str) -> list[Bind]:
    """Copies of the CLI's configuration into the scratch HOME; its login files, bound."""
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
        if item.live:
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
    shown = [str(paths.workspace), str(paths.reviewer_dir), str(paths.schema_path)]
    hops: list[tuple[str, str]] = []
    for program in (exe, _interpreter(exe, env)):
        if program:
            chain = _link_chain(program)
            hops += chain
            shown += [_install_root(p, hidden) for p in [program, *(os.path.join(os.path.dirname(path), target)
                                                                   for target, path in chain)]]
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


def _install_root(program: str, hidden: list[str]) -> str:
    """What to show of an executable: the `node_modules` it is in, the prefix of its `bin`
    folder, else its folder; the file alone when that would show too much."""
    parts = Path(program).parts
    if "node_modules" in parts:
        root = str(Path(*parts[:parts.index("node_modules") + 1]))
    else:
        folder = Path(program).parent
        root = str(folder.parent if folder.name == "bin" else folder)
    return program if _too_wide(root, hidden) else root


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


def _remove(folder: str) -> None:
    """Remove a scratch HOME whatever folder modes the reviewer left in it."""
    for root, dirs, _files in os.walk(folder):
        for name in dirs:
            if not os.path.islink(os.path.join(root, name)):
                with contextlib.suppress(OSError):
                    os.chmod(os.path.join(root, name), 0o700)
    shutil.rmtree(folder, ignore_errors=True)


__all__ = ["HOME_INSIDE", "Confinement", "SandboxChoice", "choose_sandbox", "confined", "round_sandbox"]
