"""Live reviewer progress on stderr: a rich table on a terminal, plain lines otherwise.

Never writes to stdout. Everything runs on the event loop's thread; rich's
refresh thread only reads the state under a lock.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TextIO

from spar.records.model import ReviewerStatus
from spar.textsafe import terminal_safe

if TYPE_CHECKING:
    from rich.table import Table

S = ReviewerStatus
QUIET = (S.STARTING, S.RUNNING)  # shown in the live table only; plain lines stay few
PLAIN_WAIT_STEP = 10  # seconds between plain lines telling how long a reviewer has been stalled
FINAL = (S.ANSWERED, S.COMPLETED, S.FAILED, S.UNAVAILABLE, S.TIMEOUT, S.TOOL_VIOLATION, S.AWAITING_RECORD,
         S.INVALID_OUTPUT)


@dataclass
class _Row:
    """One reviewer's line on the display."""

    name: str
    status: str = ReviewerStatus.PENDING
    attempt: int = 0
    model: str = ""
    detail: str = ""
    started: float | None = None
    finished: float | None = None
    waiting_step: int | None = None  # the last plain line's PLAIN_WAIT_STEP of a stall; None: no stall

    def elapsed(self, now: float) -> float:
        if self.started is None:
            return 0.0
        return (self.finished if self.finished is not None else now) - self.started


def _model_text(model: str) -> str:
    return model if model else "CLI default"


class Progress:
    """Reviewer events; `live=True` draws a rich table on `stream`, else one line per event."""

    def __init__(self, stream: TextIO | None = None, *, live: bool = False,
                 clock: Callable[[], float] = time.monotonic):
        self.stream = stream if stream is not None else sys.stderr
        self._clock = clock
        self._rows: dict[str, _Row] = {}
        self._lock = threading.Lock()
        self._live = None
        if live:
            from rich.console import Console
            from rich.live import Live

            console = Console(file=self.stream, force_terminal=True)
            self._live = Live(_Table(self), console=console, refresh_per_second=4, transient=False,
                              redirect_stdout=False, redirect_stderr=False)
            self._live.start()

    @property
    def live(self) -> bool:
        return self._live is not None

    def _row(self, name: str) -> _Row:
        row = self._rows.get(name)
        if row is None:
            row = self._rows[name] = _Row(name)
        return row

    def expect(self, names: list[str]) -> None:
        """The round's reviewers, in configuration order: the table lists them so from the
        start, whichever starts or ends first."""
        with self._lock:
            for name in names:
                self._row(name)

    def reviewer_notice(self, name: str, text: str) -> None:
        """A running reviewer's latest transient notice (`reconnecting 3/5`, `API retry 4/10`)."""
        with self._lock:
            row = self._row(name)
            if row.status in FINAL or row.detail == text:
                return
            row.detail = text
        self._plain(f"{name}: {text}")

    def reviewer_waiting(self, name: str, text: str, seconds: int) -> None:
        """A running reviewer's stall as it lasts (`waiting for network 40 s`); "" when it is over.
        The table shows every second; plain lines come at the start and every PLAIN_WAIT_STEP s."""
        with self._lock:
            row = self._row(name)
            if row.status in FINAL:
                return
            if not text:
                if row.waiting_step is not None:
                    row.detail, row.waiting_step = "", None
                return
            row.detail = text
            step = seconds // PLAIN_WAIT_STEP
            if row.waiting_step == step:
                return
            row.waiting_step = step
        self._plain(f"{name}: {text}")

    def reviewer_started(self, name: str, attempt: int, model: str) -> None:
        with self._lock:
            row = self._row(name)
            if row.started is None:
                row.started = self._clock()  # elapsed counts from the first attempt
            row.finished = None
            row.attempt = attempt
            row.model = model
            row.status = ReviewerStatus.STARTING
            row.detail = ""
            row.waiting_step = None
        self._plain(f"{name}: started attempt {attempt} (model {_model_text(model)})")

    def reviewer_status(self, name: str, status: str, detail: str = "") -> None:
        with self._lock:
            row = self._row(name)
            answered = row.status == ReviewerStatus.ANSWERED
            row.status = status
            row.detail = detail
            if status in FINAL and not answered:  # the verdict on an answer keeps the answer's time
                row.finished = self._clock()
            elapsed = row.elapsed(self._clock())
        if self._live is None and status in QUIET:
            return
        if status in FINAL:
            text = f"{name}: {status} in {elapsed:.1f}s"
        else:
            text = f"{name}: {status}"
        if detail:
            text += f": {detail}"
        self._plain(text)

    def _plain(self, text: str) -> None:
        if self._live is not None:
            self._live.refresh()
            return
        try:
            self.stream.write(f"spar: {terminal_safe(text)}\n")
            self.stream.flush()
        except (OSError, ValueError):
            pass  # progress is a courtesy; a closed stderr must not stop the round

    def rows(self) -> list[_Row]:
        with self._lock:
            return [_Row(**vars(r)) for r in self._rows.values()]

    def close(self) -> None:
        if self._live is not None:
            self._live.refresh()
            self._live.stop()
            self._live = None


class _Table:
    """Rebuilt on every refresh so elapsed times keep moving."""

    def __init__(self, progress: Progress):
        self.progress = progress

    def __rich__(self) -> Table:
        from rich.table import Table
        from rich.text import Text

        now = self.progress._clock()
        table = Table(title="spar reviewers", title_justify="left", expand=False)
        for column in ("reviewer", "status", "attempt", "model", "elapsed"):
            table.add_column(column)
        for row in self.progress.rows():
            status = row.status + (f": {row.detail}" if row.detail else "")
            # Text, not str: rich would read `[...]` in a reviewer's words as markup
            # the end of a reason is often what to do (`Please run /login`): shorten the middle
            cells = (row.name, shorten_middle(status, STATUS_WIDTH), str(row.attempt or ""), _model_text(row.model),
                     f"{row.elapsed(now):.1f}s")
            table.add_row(*(Text(terminal_safe(cell)) for cell in cells))
        return table


STATUS_WIDTH = 100


def shorten_middle(text: str, width: int) -> str:
    """`text` in at most `width` characters, the middle replaced by `…` when it is longer, so
    both the start (what happened) and the end (what to do) stay readable."""
    if len(text) <= width:
        return text
    keep = width - 1
    head = keep * 2 // 5
    return text[:head] + "…" + text[len(text) - (keep - head):]


def make_progress(stream: TextIO | None = None) -> Progress:
    """A live table when `stream` (default stderr) is a terminal, plain lines otherwise."""
    stream = stream if stream is not None else sys.stderr
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):
        tty = False
    return Progress(stream, live=tty)
