"""Process helpers shared by the tests that start or kill processes (no tests here).

Tests wait for events (a pid file written, a process gone) by polling them with
`wait_for`; its timeout only bounds a hang, it is never an assertion about speed,
so it is generous: on a loaded machine an event may take seconds.
"""

from __future__ import annotations

import contextvars
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio

from spar.proc import process
from spar.proc.process import KILL_GRACE, GuardedProcess, OutputHandling, ProcessResult

T = TypeVar("T")

HANG = 120.0  # seconds: a wait this long means the event will not happen

# Growing time limits for a scenario that needs something to happen before a short limit
# runs out (a grandchild started, a line printed): on a loaded machine the short limit
# can pass first; the scenario then did not take place, and the test runs it again with
# the next limit instead of failing or asserting on wall time. Multiply by the base limit.
LIMITS = (1, 2, 4, 8, 16, 32)


async def run_for(argv: list[str], *, seconds: float, cwd: Path | str, env: dict[str, str] | None = None,
                  stdin_text: str | None = None, kill_grace: float = KILL_GRACE, **output: Any) -> ProcessResult:
    """Run `argv` as Spar runs a reviewer, its time limit `seconds` (the caller's cancel
    scope); `output` are OutputHandling's fields."""
    async with GuardedProcess(argv, cwd=cwd, env=env, stdin_text=stdin_text, output=OutputHandling(**output),
                              kill_grace=kill_grace) as proc:
        with anyio.move_on_after(seconds):
            await proc.wait()
    return proc.result


def wait_for(condition, timeout: float = HANG, poll: float = 0.02) -> bool:
    """True as soon as `condition()` is true; False if it is still false after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(poll)
    return condition()


def pid_gone(pid: int) -> bool:
    """True when `pid` no longer runs (a zombie nobody has reaped yet counts as gone:
    it runs nothing and holds no pipe)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return True
    except (OSError, IndexError):
        return True
    return state in ("Z", "X")


def gone(pid: int, wait: float = HANG) -> bool:
    """The process ends within `wait` seconds (returns as soon as it has)."""
    return wait_for(lambda: pid_gone(pid), wait, poll=0.05)


def written(path: Path) -> str:
    """The text of a marker file once something has been written to it, else ""."""
    try:
        return path.read_text()
    except FileNotFoundError:
        return ""


def signal_ignored(pid: int, signum: int) -> bool:
    """`signum` is ignored by process `pid` (its SigIgn mask in /proc): the kernel drops it when sent."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigIgn:"):
            return bool(int(line.split()[1], 16) >> (signum - 1) & 1)
    return False


def sigint_as_from_a_terminal() -> None:
    """A `preexec_fn` for a spar the test interrupts with SIGINT: the child starts with SIGINT
    at its default, as a terminal's foreground job does. A suite run as a background job of a
    script (`pytest ... &`, nohup, some CI runners) starts with SIGINT ignored, every child
    inherits that, and spar keeps an ignored SIGINT ignored: the test's SIGINT would be dropped."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def blocked_on_lock(pid: int) -> bool:
    """Process `pid` sleeps waiting for a file lock (flock or fcntl): a `->` line of /proc/locks."""
    for line in Path("/proc/locks").read_text().splitlines():
        parts = line.split()
        if "->" in parts and parts[parts.index("->") + 4] == str(pid):
            return True
    return False


def wait_alone() -> None:
    """Until this test process runs no other thread: a guard is forked only then
    (spar.proc.guard), and anyio's trio test runner keeps a thread of trio's for a few
    seconds after a trio test."""
    assert wait_for(lambda: threading.active_count() == 1, poll=0.05), threading.enumerate()


def start_guard_alone(guard: process.ReviewerGuard) -> None:
    """(Re)start `guard` once this process runs no other thread."""
    wait_alone()
    guard.start()


def with_own_guard(work: Callable[[process.ReviewerGuard], T]) -> T:
    """`work(guard)` with a reviewer guard of its own, as a command has: run in a context of
    its own (outside the suite's `reviewer_guard` block, whose guard then stays as it is),
    in a block that forks a new guard once this process runs no other thread."""
    def inside() -> T:
        wait_alone()
        with process.reviewer_guard() as guard:
            return work(guard)

    return contextvars.Context().run(inside)
