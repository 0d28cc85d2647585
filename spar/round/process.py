"""One reviewer subprocess in its own process group: streaming, output cap, kill.

The child starts with `start_new_session=True`, so it leads a new process
group and everything it spawns can be killed with one `os.killpg`. stdout and
stderr are read concurrently as they stream: each goes to its log file up to
the cap (the rest is drained and counted, so the child never blocks on a full
pipe), and stdout lines go to a monitor one at a time, so memory stays bounded
however much the reviewer prints.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream

from spar.presets.base import StreamInfo
from spar.round import guard
from spar.round.reaper import process_table

OUTPUT_CAP = 64 * 1024 * 1024  # bytes kept per log file
LINE_LIMIT = 16 * 1024 * 1024  # a longer stdout line is cut (not given to the monitor)
KILL_GRACE = 1.0  # seconds between SIGTERM and SIGKILL
DRAIN_GRACE = 2.0  # seconds to read what is left in the pipes once the group is gone
TAIL_BYTES = 64 * 1024  # last part of each stream kept in memory (reasons, refusal phrases)
_CHUNK = 64 * 1024
_POLL = 0.05


@dataclass
class ProcessResult:
    exit_code: int | None  # None when spar killed the process before it exited
    timed_out: bool = False
    violation: str | None = None  # first violation the stdout monitor reported
    stdout: StreamInfo = field(default_factory=lambda: StreamInfo(None))
    stderr: StreamInfo = field(default_factory=lambda: StreamInfo(None))
    stdout_tail: str = ""
    stderr_tail: str = ""
    log_error: str | None = None  # a log file could not be written: the record is incomplete

    @property
    def last_stderr_line(self) -> str:
        return last_line(self.stderr_tail)

    @property
    def last_stdout_line(self) -> str:
        return last_line(self.stdout_tail)


def guarded(argv: Sequence[str]) -> list[str]:
    """`argv` run under spar.round.guard, which ends the group should spar die (SIGKILL
    included); -I keeps the reviewer's folder and PYTHON* variables out of the guard."""
    return [sys.executable, "-I", "-m", "spar.round.guard", str(os.getpid()), "--", *argv]


def last_line(text: str) -> str:
    for line in reversed(text.splitlines()):
        if line.strip():
            return line.strip()
    return ""


class _Sink:
    """One output stream: capped log file, bounded tail, optional line monitor."""

    def __init__(self, path: Path | None, cap: int, line_limit: int,
                 on_line: Callable[[str], str | None] | None, on_violation: Callable[[], None]):
        self.info = StreamInfo(path)
        self._file = open(path, "wb") if path is not None else None  # noqa: SIM115 (open for the stream's life)
        self._cap = cap
        self._line_limit = line_limit
        self._on_line = on_line
        self._on_violation = on_violation
        self._buf = bytearray()
        self._skipping = False  # inside a line longer than the limit
        self._tail = bytearray()
        self.violation: str | None = None
        self.log_error: str | None = None  # the first failed log write (full disk, ...)

    def write(self, chunk: bytes) -> None:
        self.info.bytes_seen += len(chunk)
        if self._file is not None and self.info.bytes_kept < self._cap:
            room = self._cap - self.info.bytes_kept
            try:
                self._file.write(chunk[:room])
            except OSError as exc:
                # keep draining and monitoring: the reviewer must never block on a full pipe
                self._lose_log(exc)
            else:
                self.info.bytes_kept += min(room, len(chunk))
        if self.info.bytes_seen > self._cap:
            self.info.truncated = True
        self._tail += chunk
        if len(self._tail) > TAIL_BYTES:
            del self._tail[: len(self._tail) - TAIL_BYTES]
        if self._on_line is not None:
            self._split(chunk)

    def _split(self, chunk: bytes) -> None:
        start = 0
        while True:
            nl = chunk.find(b"\n", start)
            if nl < 0:
                break
            if self._skipping:
                self._skipping = False  # the overlong line ends here
            elif len(self._buf) + (nl - start) > self._line_limit:
                self._buf.clear()
                self.info.cut_lines += 1
            else:
                self._buf += chunk[start:nl]
                self._emit()
            start = nl + 1
        if not self._skipping:
            self._buf += chunk[start:]
            if len(self._buf) > self._line_limit:
                self._buf.clear()
                self._skipping = True
                self.info.cut_lines += 1

    def _emit(self) -> None:
        line = self._buf.decode("utf-8", errors="replace")
        self._buf.clear()
        if self._on_line is None:
            return
        reason = self._on_line(line)
        if reason and self.violation is None:
            self.violation = reason
            self._on_violation()

    def eof(self) -> None:
        if self._on_line is not None and self._buf and not self._skipping:
            self._emit()
        self._buf.clear()

    def _lose_log(self, exc: OSError) -> None:
        if self.log_error is None:
            self.log_error = f"cannot write {self.info.path}: {exc.strerror or exc}"
        file, self._file = self._file, None
        if file is not None:
            with contextlib.suppress(OSError):  # the buffered rest fails the same way; the first error is reported
                file.close()

    def close(self) -> None:
        if self._file is not None:
            try:
                self._file.close()  # a buffered write may fail only here (ENOSPC on flush)
            except OSError as exc:
                self._file = None
                if self.log_error is None:
                    self.log_error = f"cannot write {self.info.path}: {exc.strerror or exc}"
            self._file = None

    def tail_text(self) -> str:
        return self._tail.decode("utf-8", errors="replace")


def _group_alive(pgid: int) -> bool:
    """Some process of the group still runs (zombies do not count)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # killpg also "finds" zombies: killed grandchildren wait for an init that may never
    # reap them. Where /proc exists, look for a member that is not a zombie.
    table = process_table()
    if table is None:
        return True
    return any(group == pgid and state not in ("Z", "X") for _ppid, group, state in table.values())


def _signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


async def _wait_group_gone(pgid: int, exited: anyio.Event, seconds: float) -> bool:
    """Wait until the leader has exited and no process is left in the group."""
    with anyio.move_on_after(seconds):
        await exited.wait()
        while _group_alive(pgid):
            await anyio.sleep(_POLL)
        return True
    return False


async def terminate_group(pgid: int, exited: anyio.Event, grace: float) -> None:
    """SIGTERM the whole group, then SIGKILL what is left once the guard had the time to
    end every descendant itself (those that left the group included: SIGKILL on the
    guard would hand them to init)."""
    _signal_group(pgid, signal.SIGTERM)
    if await _wait_group_gone(pgid, exited, max(grace, guard.GRACE) + guard.SETTLE):
        return
    _signal_group(pgid, signal.SIGKILL)
    # SIGKILL cannot be ignored; a short wait lets the leader be reaped. A grandchild that is
    # a zombie of an init that never reaps still "exists" for killpg, so this wait is bounded.
    await _wait_group_gone(pgid, exited, max(grace, 1.0))


async def run_process(
    argv: Sequence[str],
    *,
    cwd: Path | str,
    deadline: float,
    env: Mapping[str, str] | None = None,
    stdin_text: str | None = None,
    stdout_path: Path | None = None,
    stderr_path: Path | None = None,
    on_stdout_line: Callable[[str], str | None] | None = None,
    output_cap: int = OUTPUT_CAP,
    line_limit: int = LINE_LIMIT,
    kill_grace: float = KILL_GRACE,
) -> ProcessResult:
    """Run one program until it exits, the deadline (anyio clock) passes, or the monitor objects.

    Raises OSError when the program cannot be started at all.
    """
    wake = anyio.Event()
    exited = anyio.Event()
    out = _Sink(stdout_path, output_cap, line_limit, on_stdout_line, wake.set)
    err = _Sink(stderr_path, output_cap, line_limit, None, wake.set)
    try:
        proc = await anyio.open_process(
            guarded(argv),
            stdin=subprocess.PIPE if stdin_text is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=str(cwd),
            env=dict(env) if env is not None else None,
            start_new_session=True,  # own process group: one killpg reaches every descendant
        )
    except BaseException:
        out.close()
        err.close()
        raise
    # both were asked for as pipes above
    stdout, stderr = proc.stdout, proc.stderr
    assert stdout is not None and stderr is not None
    pgid = proc.pid
    killed = False
    timed_out = False
    settled = False  # the body ran to its end: the group was already dealt with
    try:
        async with anyio.create_task_group() as tg:
            out_done = anyio.Event()
            err_done = anyio.Event()

            async def feed_stdin(stdin: ByteSendStream, data: bytes) -> None:
                try:
                    for i in range(0, len(data), _CHUNK):
                        await stdin.send(data[i : i + _CHUNK])
                except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                    pass  # the child closed its stdin or exited; its output tells the rest
                finally:
                    # close so programs that read to EOF (codex) go on
                    with anyio.CancelScope(shield=True):
                        with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                            await stdin.aclose()

            async def pump(stream: ByteReceiveStream, sink: _Sink, done: anyio.Event) -> None:
                try:
                    while True:
                        try:
                            chunk = await stream.receive(_CHUNK)
                        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                            break
                        sink.write(chunk)
                finally:
                    sink.eof()
                    done.set()

            async def wait_exit() -> None:
                await proc.wait()
                exited.set()
                wake.set()

            if stdin_text is not None and proc.stdin is not None:
                tg.start_soon(feed_stdin, proc.stdin, stdin_text.encode("utf-8"))
            tg.start_soon(pump, stdout, out, out_done)
            tg.start_soon(pump, stderr, err, err_done)
            tg.start_soon(wait_exit)

            with anyio.move_on_at(deadline):
                await wake.wait()
            if out.violation is not None or not exited.is_set():
                if not exited.is_set():
                    killed = True
                    timed_out = out.violation is None
                await terminate_group(pgid, exited, kill_grace)
            elif _group_alive(pgid):
                # the leader is done; descendants left behind would hold the pipes open
                await terminate_group(pgid, exited, kill_grace)
            with anyio.move_on_after(DRAIN_GRACE):
                await out_done.wait()
                await err_done.wait()
            tg.cancel_scope.cancel()
        settled = True
    finally:
        with anyio.CancelScope(shield=True):
            if not settled or proc.returncode is None:
                # cancelled from outside (spar interrupted) or a bug: never leave the group
                # running. The guard ends every descendant on SIGTERM; SIGKILL is the last resort
                _signal_group(pgid, signal.SIGTERM)
                if proc.returncode is None:
                    with anyio.move_on_after(guard.GRACE + guard.SETTLE):
                        await proc.wait()
                _signal_group(pgid, signal.SIGKILL)
            if proc.returncode is None:
                killed = True
                with anyio.move_on_after(5):
                    await proc.wait()
            if not settled:
                # read the killed group's pipes to their end: asyncio closes a pipe's transport
                # only at EOF, and one left open warns once the event loop has closed
                with anyio.move_on_after(DRAIN_GRACE):
                    for stream in (stdout, stderr):
                        try:
                            while await stream.receive(_CHUNK):
                                pass
                        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                            pass
            for stream in (stdout, stderr):
                with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                    await stream.aclose()
            out.close()
            err.close()
    return ProcessResult(
        exit_code=None if killed else proc.returncode,
        timed_out=timed_out,
        violation=out.violation,
        stdout=out.info,
        stderr=err.info,
        stdout_tail=out.tail_text(),
        stderr_tail=err.tail_text(),
        log_error=out.log_error or err.log_error,
    )
