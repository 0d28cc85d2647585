"""Shared timing and memory helpers for the benchmarks (standard library only).

Every benchmark runs the thing measured as a child process and reads the
child's peak memory from `os.wait4`, which on Linux reports the largest
resident set of that child and the descendants it waited for. The child is
forked by a small spawner process started at import (`run_measured`), since a
child counts the image of the process it was forked from. Tables print
medians over repeated runs next to a baseline measured in the same run, so a
busy machine slows both sides alike.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
OUT = BENCH / "out"  # cache of generated repositories (ignored by git)
PYTHON = sys.executable


@dataclass
class Sample:
    wall: float  # seconds, from start to reaped
    maxrss_mb: float  # peak RSS (MiB) of the child and the descendants it waited for
    returncode: int
    stdout: bytes = b""
    stderr: bytes = b""
    user: float = 0.0
    sys: float = 0.0


class ChildFailed(RuntimeError):
    pass


# Peak RSS is the largest resident set a process ever had, and a child made by fork (or
# vfork) counts the parent's image it had before exec: measured from run_all.py, once
# the benchmarks before had grown it to 116 MiB, every command read 116 MiB. So commands
# are started by a small process made when this module is imported, which forks each one,
# waits for it with os.wait4 and reports wall time, CPU time and peak RSS.
_SPAWNER = r"""
import json, os, signal, sys, threading, time
requests, answers = os.fdopen(int(sys.argv[1]), "rb"), int(sys.argv[2])
def kill(pid):
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass
for line in requests:
    r = json.loads(line)
    fds = [os.open(r["stdin"] or os.devnull, os.O_RDONLY),
           os.open(r["out"], os.O_WRONLY | os.O_TRUNC), os.open(r["err"], os.O_WRONLY | os.O_TRUNC)]
    start = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        try:
            os.setsid()
            if r["cwd"]:
                os.chdir(r["cwd"])
            for target, fd in enumerate(fds):
                os.dup2(fd, target)
            os.execvpe(r["argv"][0], r["argv"], r["env"] if r["env"] is not None else os.environ)
        except BaseException as exc:
            os.write(2, f"cannot start {r['argv'][0]}: {exc}\n".encode())
        os._exit(127)
    for fd in fds:
        os.close(fd)
    timer = threading.Timer(r["timeout"], kill, (pid,))
    timer.start()
    _, status, usage = os.wait4(pid, 0)
    wall = time.perf_counter() - start
    timer.cancel()
    os.write(answers, (json.dumps([wall, os.waitstatus_to_exitcode(status), usage.ru_maxrss,
                                   usage.ru_utime, usage.ru_stime]) + "\n").encode())
"""


class _Spawner:
    """The small process that starts every measured command (see _SPAWNER)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.proc: subprocess.Popen[bytes] | None = None

    def _start(self) -> None:
        to_child, self.requests = os.pipe()
        self.answers, from_child = os.pipe()
        self.proc = subprocess.Popen([PYTHON, "-I", "-S", "-c", _SPAWNER, str(to_child), str(from_child)],
                                     pass_fds=(to_child, from_child))
        os.close(to_child)
        os.close(from_child)
        self.reader = os.fdopen(self.answers, "rb")

    def run(self, request: dict) -> list:
        with self.lock:
            if self.proc is None or self.proc.poll() is not None:
                self._start()
            os.write(self.requests, (json.dumps(request) + "\n").encode())
            line = self.reader.readline()
        if not line:
            raise RuntimeError("the benchmark spawner ended")
        return json.loads(line)


_spawner = _Spawner()
_spawner._start()  # now, while this process is small


def run_measured(argv: list[str], *, cwd: str | Path | None = None, env: dict | None = None,
                 timeout: float = 600, check: bool = True, stdin_path: str | None = None) -> Sample:
    """Run `argv` to the end; wall time, peak RSS and CPU time through os.wait4 (in the
    spawner, so that this process's size never counts).

    Output goes to temporary files (not pipes), so nothing competes with the child
    for CPU while it runs."""
    with tempfile.NamedTemporaryFile() as out, tempfile.NamedTemporaryFile() as err:
        wall, code, maxrss_kb, user, system = _spawner.run({
            "argv": [str(a) for a in argv], "cwd": str(cwd) if cwd is not None else None,
            "env": env if env is not None else dict(os.environ),
            "timeout": timeout, "stdin": stdin_path, "out": out.name, "err": err.name})
        sample = Sample(wall=wall, maxrss_mb=maxrss_kb / 1024, returncode=code,
                        stdout=out.read(), stderr=err.read(), user=user, sys=system)
    if check and sample.returncode != 0:
        raise ChildFailed(f"{' '.join(map(str, argv[:6]))} … exited {sample.returncode}:\n"
                          f"{sample.stderr.decode('utf-8', 'replace')[-2000:]}")
    return sample


def _kill_group(pid: int) -> None:
    with contextlib.suppress(OSError):
        os.killpg(pid, signal.SIGKILL)


def spar_argv(*args: str) -> list[str]:
    return [PYTHON, "-m", "spar", *args]


def clean_env(**extra: str) -> dict[str, str]:
    """This environment with fixed git identity and no user git configuration."""
    env = dict(os.environ)
    env.update({
        "GIT_AUTHOR_NAME": "Spar Bench", "GIT_AUTHOR_EMAIL": "bench@example.invalid",
        "GIT_COMMITTER_NAME": "Spar Bench", "GIT_COMMITTER_EMAIL": "bench@example.invalid",
        "GIT_AUTHOR_DATE": "2024-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2024-01-01T00:00:00Z",
        "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1", "LC_ALL": "C",
    })
    env.pop("SPAR_FAKE_SCENARIO", None)
    env.update(extra)
    return env


PYCACHE = OUT / "pycache"  # bytecode of every module spar imports, when measured "cached"


def with_bytecode(env: dict[str, str], cached: bool) -> dict[str, str]:
    """`env` with bytecode cached (written to and read from bench/out/pycache) or not
    (PYTHONDONTWRITEBYTECODE=1: spar's modules are compiled at every start). Not cached
    also removes spar's own `__pycache__` folders first: PYTHONDONTWRITEBYTECODE only
    stops writing, and the test suite writes them (tests/conftest.py), so without this
    "not cached" would read whatever bytecode a test run left."""
    env = dict(env)
    if cached:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(PYCACHE)
    else:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        env.pop("PYTHONPYCACHEPREFIX", None)
        forget_spar_bytecode()
    return env


def forget_spar_bytecode() -> None:
    """Remove the `__pycache__` folders of spar's own source (git ignores them)."""
    for folder in sorted((ROOT / "spar").rglob("__pycache__")):
        shutil.rmtree(folder, ignore_errors=True)


def git(repo: str | Path, *args: str, input: bytes | None = None) -> str:
    proc = subprocess.run(["git", "-C", str(repo), *args], input=input, capture_output=True,
                          env=clean_env(), check=False)
    if proc.returncode != 0:
        raise ChildFailed(f"git {' '.join(args)}: {proc.stderr.decode('utf-8', 'replace')}")
    return proc.stdout.decode("utf-8", "surrogateescape")


def remove_tree(path: str | Path) -> None:
    """rmtree that first makes read-only folders (workspace copies) writable again."""
    path = Path(path)
    if not path.exists() and not path.is_symlink():
        return
    for dirpath, _dirs, _files in os.walk(path):
        with contextlib.suppress(OSError):
            os.chmod(dirpath, 0o755)
    shutil.rmtree(path, ignore_errors=False)


def du_bytes(path: str | Path) -> int:
    total = 0
    for dirpath, _dirs, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(dirpath, name)).st_blocks * 512
    return total


# ---------------------------------------------------------------- statistics and tables


@dataclass
class Series:
    """Repeated samples of one quantity."""

    values: list[float] = field(default_factory=list)

    def add(self, value: float) -> None:
        self.values.append(value)

    @property
    def median(self) -> float:
        return statistics.median(self.values) if self.values else float("nan")

    def spread(self, fmt: str = "{:.3f}") -> str:
        if not self.values:
            return "-"
        return f"{fmt.format(min(self.values))}–{fmt.format(max(self.values))}"


def table(title: str, header: list[str], rows: list[list[str]], notes: list[str] | None = None) -> str:
    """A plain-text table (also valid Markdown), with a title and notes."""
    widths = [max(len(str(c)) for c in col) for col in zip(header, *rows, strict=True)]

    def line(cells) -> str:
        return "| " + " | ".join(str(c).ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"

    out = [f"### {title}", "", line(header), "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    out += [line(r) for r in rows]
    for note in notes or []:
        out.append(f"  {note}")
    return "\n".join(out) + "\n"


def fmt_s(seconds: float) -> str:
    return f"{seconds:.3f} s"


def fmt_mb(mb: float) -> str:
    return f"{mb:.0f} MiB"


def verdict(ok: bool) -> str:
    return "met" if ok else "MISSED"


def machine_line() -> str:
    load = os.getloadavg()
    return (f"nproc {os.cpu_count()}, load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, "
            f"python {sys.version.split()[0]}, {git_version()}")


def git_version() -> str:
    try:
        return subprocess.run(["git", "--version"], capture_output=True, text=True).stdout.strip()
    except OSError:
        return "git ?"


def work_dir(prefix: str, where: str | None = None) -> Path:
    """A fresh temporary folder outside any git repository (record paths must not be
    tracked or unignored in one, G28)."""
    return Path(tempfile.mkdtemp(prefix=f"spar-bench-{prefix}-", dir=where))
