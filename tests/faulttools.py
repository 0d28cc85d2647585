"""Shared set-up for the fault tests (`tests/test_fault_*.py`; no tests here).

Builds on the `spar run` end-to-end set-up (a real repository, SPAR_CONFIG, the
fake CLIs on PATH) and adds: a `command` reviewer that leaves markers (its pid,
"started", "done") so a test can act at a chosen point of the round, a check
that every JSON record under a folder is whole, file hashes to prove earlier
records never change, and real tmpfs / read-only mounts (the tests run as root,
which ignores file modes).
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from tests.proctools import wait_for
from tests.runsetup import Setup, make_setup

# A command reviewer for fault tests. argv: PROMPT NAME. Environment:
#   FAULT_MARKERS  folder for NAME.pid / NAME.started / NAME.done (optional)
#   FAULT_SLEEP    seconds to sleep between "started" and "done" (default 0)
#   FAULT_FILL     path of a file to grow until the disk is full, before answering
#   FAULT_KEEP     bytes to give back after filling (default 0)
#   FAULT_FINDINGS number of (defect) findings to report (default 0)
REVIEWER_SCRIPT = r'''
import errno, json, os, re, sys, time
prompt, name = sys.argv[1], sys.argv[2]
markers = os.environ.get("FAULT_MARKERS", "")

def mark(what, text=""):
    if markers:
        with open(os.path.join(markers, f"{name}.{what}"), "w") as f:
            f.write(text)

mark("pid", str(os.getpid()))
mark("started")
head = re.search(r"^- Head commit: `([0-9a-f]+)`", open(prompt, encoding="utf-8").read(), re.M).group(1)
time.sleep(float(os.environ.get("FAULT_SLEEP", "0")))
fill = os.environ.get("FAULT_FILL", "")
if fill:
    fd = os.open(fill, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    for size in (65536, 4096, 1):  # unbuffered, down to the last byte
        try:
            while True:
                os.write(fd, b"\0" * size)
        except OSError as exc:
            if exc.errno != errno.ENOSPC:
                raise
    os.close(fd)
    keep = int(os.environ.get("FAULT_KEEP", "0"))
    if keep:
        size = os.path.getsize(fill)
        os.truncate(fill, max(0, size - keep))
mark("done")
angles = ["criteria", "correctness", "checks", "contracts", "risk"]
findings = [{"id": f"F{n}", "proposed_class": "defect", "angle": "correctness", "location": "head/calc.py:1",
             "claim": f"claim {n}", "failure_scenario": "add(None, 1) raises", "evidence": "no check",
             "link_kind": "none", "link": "", "introduced_by_change": "yes", "regression": "yes",
             "check_impact": "none", "confidence": "high"}
            for n in range(1, int(os.environ.get("FAULT_FINDINGS", "0")) + 1)]
print(json.dumps({"reviewed_head": head, "verdict": "blocking_findings" if findings else "no_blocking_findings",
                  "angles_checked": [{"angle": a, "result": "looked"} for a in angles],
                  "angles_unchecked": [], "findings": findings, "limits": ""}))
'''

WAITING = "waiting for another write"


def fault_setup(tmp_path: Path, reviewers: tuple[str, ...] = ("alpha", "beta"), *, timeout: int = 60,
                extra_files: dict[str, str] | None = None) -> Setup:
    """The end-to-end set-up with `command` reviewers running REVIEWER_SCRIPT."""
    s = make_setup(tmp_path)
    if extra_files:
        from tests.gitrepo import commit

        s.base = s.head
        s.head = commit(s.repo, extra_files, message="more files")
    script = tmp_path / "fault_reviewer.py"
    script.write_text(REVIEWER_SCRIPT, encoding="utf-8")
    s.configure([{"name": n, "preset": "command", "argv": [sys.executable, str(script), "{prompt}", n]}
                 for n in reviewers], timeout=timeout, passthrough=["FAULT_*"])  # what the reviewer reads
    return s


def run_args(s: Setup, out: str | Path) -> list[str]:
    return [sys.executable, "-m", "spar", "run", "--stage", "code", "--base", s.base, "--head", s.head,
            "--out", str(out)]


def spar(s: Setup, *args: str, env: dict | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "spar", *args], cwd=s.repo, env=env or s.env,
                          capture_output=True, text=True, timeout=timeout)


def run_round(s: Setup, out: str | Path, *, env: dict | None = None,
              timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(run_args(s, out), cwd=s.repo, env=env or s.env, capture_output=True, text=True,
                          timeout=timeout)


def with_env(s: Setup, **extra: str) -> dict:
    env = dict(s.env)
    env.update(extra)
    return env


# ---------------------------------------------------------------- records on disk


def file_hashes(root: Path) -> dict[str, str]:
    """sha256 of every file (and the target of every symlink) under `root`, except the
    series lock file, which never holds data."""
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
            if name == ".spar.lock":
                continue
            full = Path(dirpath) / name
            rel = str(full.relative_to(root))
            if full.is_symlink():
                out[rel] = "-> " + os.readlink(full)
            else:
                out[rel] = hashlib.sha256(full.read_bytes()).hexdigest()
    return out


def records_whole(root: Path) -> list[str]:
    """Problems with the records under `root`: a *.json that is not whole JSON, a *.jsonl
    with a line that is not a whole JSON object. Workspace copies are repository files,
    not records, and are left alone."""
    problems = []
    for dirpath, dirnames, filenames in os.walk(root):
        if "workspace" in dirnames:
            dirnames.remove("workspace")
        for name in filenames:
            path = Path(dirpath) / name
            if name.endswith(".json"):
                try:
                    json.loads(path.read_bytes().decode("utf-8"))
                except (UnicodeDecodeError, ValueError) as exc:
                    problems.append(f"{path}: {exc}")
            elif name.endswith(".jsonl"):
                data = path.read_bytes()
                if data and not data.endswith(b"\n"):
                    problems.append(f"{path}: torn last line")
                for number, line in enumerate(data.splitlines(), start=1):
                    try:
                        if not isinstance(json.loads(line.decode("utf-8")), dict):
                            problems.append(f"{path}:{number}: not an object")
                    except (UnicodeDecodeError, ValueError) as exc:
                        problems.append(f"{path}:{number}: {exc}")
    return problems


def round_state(folder: Path) -> str:
    """absent | no_round_json | pending (round.json, no findings) | partial (findings.json but
    round.json not finished) | recorded."""
    if not folder.exists():
        return "absent"
    if not (folder / "round.json").exists():
        return "no_round_json"
    data = json.loads((folder / "round.json").read_text(encoding="utf-8"))
    if data.get("finished_at") or data.get("recorded_at"):
        return "recorded"
    return "partial" if (folder / "findings.json").exists() else "pending"


def one_clear_line(stderr: str) -> str:
    """The last stderr line, which must be one `spar: …` message and never a traceback."""
    assert "Traceback" not in stderr, stderr
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert lines and lines[-1].startswith("spar: "), stderr
    return lines[-1]


# ---------------------------------------------------------------- processes


def marked_pids(markers: Path) -> list[int]:
    pids = []
    for pid_file in markers.glob("*.pid"):
        try:
            pid = int(pid_file.read_text() or "0")
        except (OSError, ValueError):
            continue
        if pid:
            pids.append(pid)
    return pids


def kill_marked_reviewers(markers: Path) -> None:
    """Safety net after a test: SIGKILL the process group of every reviewer that left a
    pid marker, so a failing assertion never leaves a stray process behind."""
    for pid in marked_pids(markers):
        with suppress(OSError):
            os.killpg(os.getpgid(pid), signal.SIGKILL)


# ---------------------------------------------------------------- mounts


def _mount(*args: str) -> None:
    proc = subprocess.run(["mount", *args], capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(
            f"mount {' '.join(args)} failed ({proc.stderr.strip()}): the full-disk and read-only tests need "
            "mount privileges (root with CAP_SYS_ADMIN), because root ignores file modes")


def _umount(path: Path) -> None:
    # a reviewer that was just killed may still hold a file there for a moment
    if not wait_for(lambda: subprocess.run(["umount", str(path)], capture_output=True).returncode == 0, 10, poll=0.1):
        subprocess.run(["umount", "-l", str(path)], capture_output=True)


@contextmanager
def small_disk(path: Path, size: str) -> Iterator[Path]:
    """A real tmpfs of `size` (e.g. "2m") mounted at `path` for the duration."""
    path.mkdir(parents=True, exist_ok=True)
    _mount("-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(path))
    try:
        yield path
    finally:
        _umount(path)


@contextmanager
def read_only(path: Path) -> Iterator[Path]:
    """Make the existing folder `path` read-only for everyone, root included: a read-only
    bind mount of it over itself when running as root, plain file modes otherwise."""
    if os.geteuid() != 0:
        modes = {}
        for dirpath, _dirs, _files in os.walk(path):
            modes[dirpath] = os.stat(dirpath).st_mode
            os.chmod(dirpath, 0o555)
        try:
            yield path
        finally:
            for dirpath, mode in modes.items():
                os.chmod(dirpath, mode)
        return
    _mount("--bind", str(path), str(path))
    try:
        _mount("-o", "remount,bind,ro", str(path))
        yield path
    finally:
        _umount(path)


# Starts the command and reports its peak RSS. A child forked from a pytest worker counts the
# worker's own image in its peak (hundreds of MiB late in a run), so the command is started
# by this small launcher instead, whose image is a few MiB.
_LAUNCHER = """
import json, os, subprocess, sys
argv, report = json.loads(sys.argv[1]), sys.argv[2]
proc = subprocess.Popen(argv)
_pid, status, usage = os.wait4(proc.pid, 0)
with open(report, "w") as f:
    f.write(f"{os.waitstatus_to_exitcode(status)} {usage.ru_maxrss}")
"""


def run_with_usage(argv: list[str], *, cwd: Path, env: dict, timeout: float) -> tuple[int, str, str, float]:
    """(exit code, stdout, stderr, peak RSS in MiB) of one process; the peak comes from
    os.wait4 (the process and the descendants it waited for), read by a small launcher
    process. A process still running after `timeout` seconds (a hang) is killed with its
    launcher (one process group)."""
    import tempfile
    import threading

    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            tempfile.NamedTemporaryFile("r") as report:
        launcher = [sys.executable, "-c", _LAUNCHER, json.dumps([str(a) for a in argv]), report.name]
        proc = subprocess.Popen(launcher, cwd=cwd, env=env, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                start_new_session=True)
        # a hang: the launcher's group is killed; cancelled as soon as the launcher ends
        timer = threading.Timer(timeout, lambda: os.killpg(proc.pid, signal.SIGKILL))
        timer.start()
        try:
            proc.wait()
        finally:
            timer.cancel()
        out.seek(0)
        err.seek(0)
        # the command's exit code (negative: the signal that ended it) and peak; none: killed
        code, peak_kb = (int(n) for n in (report.read() or "-9 0").split())
        return code, out.read().decode("utf-8", "replace"), err.read().decode("utf-8", "replace"), peak_kb / 1024
