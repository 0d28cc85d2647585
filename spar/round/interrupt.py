"""The reviewers of a round, stopped as a whole by SIGINT or SIGTERM.

The reviewers run in sessions of their own, so a terminal's Ctrl-C never reaches them
itself: while they run, either signal cancels the task group, the runner kills each
reviewer's whole process group, and `Interrupted` (spar.errors) is raised, saying what
the interruption left behind; `spar.cli` turns it into exit 128 + the signal.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Awaitable, Callable
from typing import TypeVar

import anyio
from anyio.abc import TaskStatus

from spar.errors import Interrupted
from spar.progress import Progress
from spar.round.runner import ReviewerJob, ReviewerOutcome, run_reviewers

INTERRUPT_SIGNALS = (signal.SIGINT, signal.SIGTERM)

T = TypeVar("T")


async def _until_signal(work: Callable[[], Awaitable[T]], left: str) -> T:
    caught: list[int] = []
    done: list[T] = []
    async with anyio.create_task_group() as tg:
        # a signal ignored when spar started (a background job in a script) stays ignored
        wanted = [s for s in INTERRUPT_SIGNALS if signal.getsignal(s) is not signal.SIG_IGN]

        async def watch(*, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
            with anyio.open_signal_receiver(*wanted) as signals:
                task_status.started()  # installed before any reviewer starts
                async for signum in signals:
                    caught.append(int(signum))
                    tg.cancel_scope.cancel()
                    return

        if wanted and threading.current_thread() is threading.main_thread():  # signals reach the main thread only
            await tg.start(watch)
        done.append(await work())
        tg.cancel_scope.cancel()  # stop the watcher
    if caught:
        raise Interrupted(caught[0], left)
    return done[0]


def run_until_signal(jobs: list[ReviewerJob], progress: Progress, env: dict[str, str],
                     passthrough: list[str] | None, backend: str, left: str,
                     sandbox: str | None = None, egress: bool = False) -> list[ReviewerOutcome]:
    """Every reviewer's outcome; `Interrupted` (saying `left`) when SIGINT or SIGTERM came
    first. `passthrough`: what each reviewer inherits of `env` (spar.proc.environment);
    `sandbox`: bwrap, to run them in its sandbox (`egress`: each with a network of its own)."""
    return work_until_signal(lambda: run_reviewers(jobs, progress=progress, env=env, env_passthrough=passthrough,
                                                   sandbox=sandbox, egress=egress), backend, left)


def work_until_signal(work: Callable[[], Awaitable[T]], backend: str, left: str) -> T:
    """What `work` returned, run under `anyio.run` with `backend`; `Interrupted` (saying
    `left`, what the interruption leaves behind) when SIGINT or SIGTERM cancelled it first."""
    try:
        return anyio.run(lambda: _until_signal(work, left), backend=backend)
    except BaseExceptionGroup as group:
        # a Ctrl-C before the watcher was in place comes wrapped by trio: keep it a plain one
        interrupt, rest = group.split(KeyboardInterrupt)
        if interrupt is not None and rest is None:
            raise KeyboardInterrupt from None
        raise
