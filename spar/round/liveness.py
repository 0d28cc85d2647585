"""Giving up early on a reviewer that cannot reach its service or cannot authenticate.

A CLI without network or login does not always stop by itself (codex-cli 0.171.0 prints
"Reconnecting... waiting for network" for as long as it runs). Its monitor reports each
such notice as a stall and any model output as the end of it (spar/round/interface.py);
`Liveness` keeps the time: once a stall has lasted the reviewer's `unreachable_seconds`
with no model output, it cancels the run it watches (the process layer then ends the
reviewer's process group) and keeps the stall, which the runner records as `unavailable`.
A stall the service's own answer caused (an HTTP 401 or 403: `Stall.at_once`) ends it at once:
claude 2.1.197 would retry a refused key ten times, for minutes.
A notice followed by model output within the window stays transient.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

import anyio

from spar.errors import quote
from spar.judge.unreachable import short_message
from spar.round.interface import Monitor, Stall

if TYPE_CHECKING:
    from spar.config.model import ReviewerConfig
    from spar.progress import Progress

TICK = 1.0  # seconds between progress reports while a stall lasts

# what progress says while a stall lasts, followed by its seconds
WAITING = {"network": "waiting for network", "authentication": "cannot authenticate", "quota": "refused"}


class Liveness:
    """The stall state of one attempt; `watching()` ends the run when a stall lasts `window` seconds."""

    def __init__(self, window: float, on_wait: Callable[[Stall | None, int], None] | None = None):
        self.window = window
        self.gave_up: Stall | None = None  # the stall that ended the run
        self._stall: Stall | None = None
        self._since: float | None = None  # when the stall began (anyio clock)
        self._changed = anyio.Event()
        self._on_wait = on_wait

    def update(self, stall: Stall | None) -> None:
        """The monitor's `on_stall`: a stall notice, or None for model output."""
        if stall is None:
            if self._stall is not None and self._on_wait is not None:
                self._on_wait(None, 0)
            self._since = None
        elif self._since is None:
            self._since = anyio.current_time()
        self._stall = stall
        self._changed.set()

    @asynccontextmanager
    async def watching(self) -> AsyncIterator[None]:
        """Run the body (the reviewer's process) while watching; when a stall lasts the window,
        the body is cancelled, the block ends quietly and `gave_up` holds the stall."""
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._watch, tg.cancel_scope)
                yield
                tg.cancel_scope.cancel()
        except BaseExceptionGroup as group:
            # the watcher raises nothing: what the body raised (OSError: could not start) is
            # handed on as itself, as it would be without the watch
            if len(group.exceptions) == 1:
                raise group.exceptions[0] from None
            raise

    async def _watch(self, scope: anyio.CancelScope) -> None:
        while True:
            if self._changed.is_set():
                self._changed = anyio.Event()
            if self._since is None or self._stall is None:
                await self._changed.wait()
                continue
            waited = anyio.current_time() - self._since
            if waited >= self.window or self._stall.at_once:
                self.gave_up = self._stall
                scope.cancel()
                return
            if self._on_wait is not None:
                self._on_wait(self._stall, math.floor(waited))
            with anyio.move_on_after(min(TICK, self.window - waited)):
                await self._changed.wait()

    def reason(self, cli: str) -> str:
        """The `reason` of an attempt that was given up: the kind first, then the CLI's words."""
        stall = self.gave_up
        assert stall is not None
        words = quote(short_message(stall.message))
        if stall.kind == "quota":
            return f"quota or rate limit: {cli} was refused and would only retry; its last message: {words}"
        what = "could not reach its service" if stall.kind == "network" else "could not authenticate"
        if stall.at_once:
            how = "its service refused the credentials, which no retry changes"
        else:
            how = f"gave no model output for {self.window:g} s (unreachable_seconds)"
        return f"{stall.kind}: {cli} {what} and {how}; its last message: {words}"


def waiting_text(stall: Stall, seconds: int) -> str:
    """What progress shows while a stall lasts: `waiting for network 40 s`."""
    return f"{WAITING.get(stall.kind, 'stalled')} {seconds} s"


def watch_liveness(cfg: ReviewerConfig, monitor: Monitor, progress: Progress | None) -> Liveness:
    """A watch over `monitor`'s stalls with the reviewer's window; progress shows the wait."""
    def on_wait(stall: Stall | None, seconds: int) -> None:
        if progress is not None:
            progress.reviewer_waiting(cfg.name, waiting_text(stall, seconds) if stall is not None else "", seconds)

    liveness = Liveness(cfg.unreachable_seconds, on_wait)
    monitor.on_stall = liveness.update
    return liveness


__all__ = ["Liveness", "waiting_text", "watch_liveness"]
