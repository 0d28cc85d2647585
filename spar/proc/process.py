"""One program in its own process group, started by the guard: streaming, output cap, kill.

`GuardedProcess` is the handle: an async context manager whose time limit is the caller's
cancel scope (`anyio.move_on_after` around `wait()`), and whose exit ends the program's
process group. The guard (`spar.proc.guard`) starts the program under a *keeper* that
leads a new process group, so everything the program spawns is ended with one
`os.killpg`. stdout and stderr are read concurrently as they stream (`OutputHandling` says
where they go): each goes to its log file up to the cap (the rest is drained and counted,
so the child never blocks on a full pipe), and stdout lines go to a monitor one at a time,
so memory stays bounded however much the program prints. The guard has one owner, the
`reviewer_guard()` block a command enters once, at its start.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import socket
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import anyio

from spar.proc import guard
from spar.proc.guard_protocol import Kind, Request, StatusReader, encode_request
from spar.proc.masking import Masker
from spar.proc.prctl import make_undumpable
from spar.proc.reaper import process_table

OUTPUT_CAP = 64 * 1024 * 1024  # bytes kept per log file
LINE_LIMIT = 16 * 1024 * 1024  # a longer stdout line is cut (not given to the monitor)
KILL_GRACE = 1.0  # seconds between SIGTERM and SIGKILL
DRAIN_GRACE = 2.0  # seconds to read what is left in the pipes once the group is gone
TAIL_BYTES = 64 * 1024  # last part of each stream kept in memory (reasons)
SCAN_PIECE = 64 * 1024  # a longer stderr line is scanned in pieces of this size
SCAN_OVERLAP = 512  # bytes each piece repeats from the previous one, so no phrase is split
PREFIX_BYTES = 4096  # start of an over-long stdout line handed to the monitor
_CHUNK = 64 * 1024
_POLL = 0.05
_FIRST_POLL = 0.001
_QUICK_LOOKS = 3  # killpg-only looks before a /proc scan (_group_outlives_keeper)


@dataclass
class StreamInfo:
    """What the process layer knows about one captured output stream."""

    path: Path | None  # the log file (None when kept in memory only)
    bytes_seen: int = 0
    bytes_kept: int = 0
    truncated: bool = False  # more than the cap arrived; the log holds the first `cap` bytes
    cut_lines: int = 0  # lines longer than the line limit, not given to the monitor


@dataclass
class ProcessResult:
    """How a reviewer process ended, and what its output held."""

    exit_code: int | None  # None when spar killed the process before it exited
    timed_out: bool = False
    violation: str | None = None  # first violation the stdout monitor reported
    stdout: StreamInfo = field(default_factory=lambda: StreamInfo(None))
    stderr: StreamInfo = field(default_factory=lambda: StreamInfo(None))
    stdout_tail: str = ""
    stderr_tail: str = ""
    log_error: str | None = None  # a log file could not be written: the record is incomplete
    masked: int = 0  # strings of `OutputHandling.masks` replaced in stdout and stderr
    not_started: bool = False  # the guard could not start the program (its exit code is then 127)

    @property
    def last_stderr_line(self) -> str:
        return last_line(self.stderr_tail)

    @property
    def last_stdout_line(self) -> str:
        return last_line(self.stdout_tail)


def last_line(text: str) -> str:
    for line in reversed(text.splitlines()):
        if line.strip():
            return line.strip()
    return ""


class LongLine(Protocol):
    def __call__(self, prefix: str, length: int, limit: int, complete: bool) -> str | None: ...


class _Scanner:
    """Text of a stream handed on line by line, in bounded memory: a line longer than
    SCAN_PIECE goes in overlapping pieces (for searches such as the refusal phrases)."""

    def __init__(self, on_text: Callable[[str], None]):
        self._on_text = on_text
        self._pending = bytearray()

    def write(self, chunk: bytes) -> None:
        self._pending += chunk
        end = self._pending.rfind(b"\n")
        if end >= 0:
            self._on_text(self._pending[: end + 1].decode("utf-8", errors="replace"))
            del self._pending[: end + 1]
        if len(self._pending) > SCAN_PIECE:
            self._on_text(self._pending.decode("utf-8", errors="replace"))
            del self._pending[: len(self._pending) - SCAN_OVERLAP]

    def eof(self) -> None:
        if self._pending:
            self._on_text(self._pending.decode("utf-8", errors="replace"))
            self._pending.clear()


class _Sink:
    """One output stream: capped log file, bounded tail, optional line monitor."""

    def __init__(self, path: Path | None, cap: int, line_limit: int,
                 on_line: Callable[[str], str | None] | None, on_violation: Callable[[], None],
                 on_long_line: LongLine | None = None, on_text: Callable[[str], None] | None = None,
                 masks: tuple[bytes, ...] = ()):
        self.info = StreamInfo(path)
        # first of all: nothing after it (log, tail, monitor) ever holds a masked string
        self.masker = Masker(masks) if masks else None
        self._on_long_line = on_long_line
        self._scanner = _Scanner(on_text) if on_text is not None else None
        self._long_prefix = b""  # start of the over-long line being skipped
        self._long_length = 0
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
        if self.masker is not None:
            chunk = self.masker.feed(chunk)
        self._take(chunk)

    def _take(self, chunk: bytes) -> None:
        self.info.bytes_seen += len(chunk)
        if self._file is not None and self.info.bytes_kept < self._cap:
            room = self._cap - self.info.bytes_kept
            try:
                self._file.write(chunk[:room])
                self._file.flush()  # on disk as it arrives: `tail -f` follows a running reviewer
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
        if self._scanner is not None:
            self._scanner.write(chunk)
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
                self._long_line(self._long_length + nl - start, complete=True)
            elif len(self._buf) + (nl - start) > self._line_limit:
                self._long_prefix = bytes((self._buf + chunk[start:nl])[:PREFIX_BYTES])
                length = len(self._buf) + nl - start
                self._buf.clear()
                self.info.cut_lines += 1
                self._long_line(length, complete=True)
            else:
                self._buf += chunk[start:nl]
                self._emit()
            start = nl + 1
        if self._skipping:
            self._long_length += len(chunk) - start
        else:
            self._buf += chunk[start:]
            if len(self._buf) > self._line_limit:
                # the monitor cannot read this line: it decides at once (monitoring fails closed)
                self._long_prefix = bytes(self._buf[:PREFIX_BYTES])
                self._long_length = len(self._buf)
                self._buf.clear()
                self._skipping = True
                self.info.cut_lines += 1
                self._long_line(self._long_length, complete=False)

    def _long_line(self, length: int, *, complete: bool) -> None:
        if self._on_long_line is None:
            return
        prefix = self._long_prefix.decode("utf-8", errors="replace")
        reason = self._on_long_line(prefix, length, self._line_limit, complete)
        if reason and self.violation is None:
            self.violation = reason
            self._on_violation()

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
        if self.masker is not None:
            self._take(self.masker.flush())
        if self._scanner is not None:
            self._scanner.eof()
        if self._on_line is not None and self._buf and not self._skipping:
            self._emit()
        if self._skipping:
            self._skipping = False
            self._long_line(self._long_length, complete=True)
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


def _group_alive(pgid: int, *, scan: bool = True) -> bool:
    """Some process of the group still runs (zombies do not count; with `scan=False`, a
    zombie counts too: killpg alone, no reading of /proc)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    if not scan:
        return True
    # killpg also "finds" zombies: killed grandchildren wait for an init that may never
    # reap them. Where /proc exists, look for a member that is not a zombie.
    table = process_table()
    if table is None:
        return True
    return any(group == pgid and state not in ("Z", "X") for _ppid, group, state in table.values())


async def _group_outlives_keeper(pgid: int) -> bool:
    """`_group_alive` once the keeper has reported its reviewer's end. The keeper leads the
    group and is usually still there for a moment (exiting, then a zombie until the guard
    reaps it), so a few looks 1 ms apart with killpg alone come first: a group gone by then
    needs no reading of every process in /proc (a few ms of CPU per reviewer)."""
    for _ in range(_QUICK_LOOKS):
        if not _group_alive(pgid, scan=False):
            return False
        await anyio.sleep(_FIRST_POLL)
    return _group_alive(pgid)


def _signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


async def _wait_group_gone(pgid: int, exited: anyio.Event, seconds: float) -> bool:
    """Wait until the leader has exited and no process is left in the group. The checks
    start 1 ms apart and double up to _POLL: most often the only member left is the keeper
    itself, which closed its status pipe on its way out and is a zombie a moment later
    (a first check after a whole _POLL cost every such reviewer 50 ms)."""
    with anyio.move_on_after(seconds):
        await exited.wait()
        pause = _FIRST_POLL
        while _group_alive(pgid):
            await anyio.sleep(pause)
            pause = min(pause * 2, _POLL)
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


class ReviewerGuard:
    """Spar's side of `spar.proc.guard`: one guard process, which starts every program."""

    def __init__(self) -> None:
        self._sock: socket.socket | None = None
        self._pid: int | None = None
        self._exiting: list[int] = []  # guards told to go, not reaped yet (no zombie is kept)

    @property
    def pid(self) -> int | None:
        return self._pid

    def start(self) -> None:
        """Start the guard unless it runs already (cheap to call again; a dead one is replaced)."""
        if self._pid is not None:
            if self._sock is None:
                self._exiting.append(self._pid)
            elif not self._ended():
                return
            self._pid = None  # ended (reaped just now) or cut off: a new guard
        self.close()
        ours, theirs = socket.socketpair()
        try:
            make_undumpable()  # before any reviewer: none may open spar's descriptors through /proc
            self._pid = guard.fork_guard(theirs)
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        self._sock = ours

    def running(self) -> bool:
        return self._pid is not None and self._sock is not None and not self._ended()

    def _ended(self) -> bool:
        assert self._pid is not None
        return _reaped(self._pid)

    def close(self) -> None:
        """Close the control socket (the guard reads EOF, ends what is left and exits) and
        reap the guard if it is gone already; spar never waits for it."""
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        if self._pid is not None:
            if not self._ended():
                self._exiting.append(self._pid)  # reaped at a later call, or by init after spar
            self._pid = None
        self._exiting = [pid for pid in self._exiting if not _reaped(pid)]

    def send(self, argv: Sequence[str], cwd: str, env: Mapping[str, str], fds: list[int]) -> None:
        """One request with its four descriptors; a guard that died is replaced once."""
        data = encode_request(Request(list(argv), cwd, dict(env)))
        for last_try in (False, True):
            self.start()
            assert self._sock is not None
            try:
                sent = socket.send_fds(self._sock, [data], fds)
                if sent < len(data):
                    self._sock.sendall(data[sent:])
                return
            except (BrokenPipeError, ConnectionResetError):
                self.close()  # the guard died: one new one
                if last_try:
                    raise


def _reaped(pid: int) -> bool:
    try:
        return os.waitpid(pid, os.WNOHANG)[0] != 0
    except ChildProcessError:
        return True


# the guard of the `reviewer_guard` block the caller is in (None outside every block)
_OWNED: ContextVar[ReviewerGuard | None] = ContextVar("spar_reviewer_guard", default=None)


@contextmanager
def reviewer_guard() -> Iterator[ReviewerGuard]:
    """The reviewer guard's one owner: a command that starts programs enters this block
    once, at its start, before any thread runs (a fork copies every lock as it stands:
    `guard.fork_guard` refuses while another thread runs). Every `GuardedProcess` inside
    the block, in any `anyio.run` of it, is started by this guard; leaving the block tells
    the guard to go (it ends what is left, and is reaped now if gone, else by init).
    Inside an enclosing block (a host that keeps one guard for its whole life, such as the
    test suite) the enclosing block's guard serves, and stays."""
    enclosing = _OWNED.get()
    if enclosing is not None:
        yield enclosing
        return
    owned = ReviewerGuard()
    owned.start()
    token = _OWNED.set(owned)
    try:
        yield owned
    finally:
        _OWNED.reset(token)
        owned.close()


def _owned_guard() -> ReviewerGuard:
    owned = _OWNED.get()
    if owned is None:
        raise RuntimeError("internal error: a program was started outside spar.proc.process.reviewer_guard()")
    return owned


class _Reviewer:
    """A reviewer started by the guard: its keeper's pid (= process group) and status pipe."""

    def __init__(self, status_fd: int) -> None:
        self._status = status_fd
        self._reader = StatusReader()
        self._exit_code: int | None = None  # the last exit code the keeper wrote
        self.not_started = False  # the keeper said it could not start the program
        self.pid = 0
        self.returncode: int | None = None

    async def _read_status(self, until_pid: bool) -> None:
        while self._status >= 0 and not (until_pid and self.pid):
            await anyio.wait_readable(self._status)
            try:
                chunk = os.read(self._status, 512)
            except BlockingIOError:
                continue
            except OSError:
                chunk = b""
            if not chunk:
                os.close(self._status)
                self._status = -1
                break
            for status in self._reader.feed(chunk):
                if status.kind is Kind.STARTED and not self.pid:
                    self.pid = status.value
                elif status.kind is Kind.EXITED:
                    self._exit_code = status.value
                elif status.kind is Kind.NOT_STARTED:
                    self.not_started = True

    async def started(self) -> None:
        await self._read_status(until_pid=True)
        if not self.pid:
            raise OSError(errno.ECHILD, "spar's reviewer guard (spar.proc.guard) could not start it")

    async def wait(self) -> int:
        """Until the keeper has gone (the status pipe's EOF); its last word is the exit code."""
        await self._read_status(until_pid=False)
        if self.returncode is None:
            # no word from a keeper that is gone: it was killed (SIGKILL is the one it cannot handle)
            self.returncode = -signal.SIGKILL if self._exit_code is None else self._exit_code
        return self.returncode

    def close(self) -> None:
        if self._status >= 0:
            os.close(self._status)
            self._status = -1


async def _start(argv: Sequence[str], cwd: str, env: Mapping[str, str],
                 with_stdin: bool) -> tuple[_Reviewer, int | None, int, int]:
    """Have the guard start `argv`; (reviewer, stdin write end or None, stdout and stderr read ends)."""
    if not os.path.isdir(cwd):
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), cwd)
    theirs: list[int] = []
    ours: list[int] = []
    try:
        if with_stdin:
            stdin_r, stdin_w = os.pipe()
            theirs.append(stdin_r)
            ours.append(stdin_w)
        else:
            theirs.append(os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC))
        for _ in range(3):  # stdout, stderr, status
            r, w = os.pipe()
            ours.append(r)
            theirs.append(w)
        _owned_guard().send(argv, cwd, env, theirs)
    except BaseException:
        for fd in ours:
            os.close(fd)
        raise
    finally:
        for fd in theirs:
            os.close(fd)
    for fd in ours:
        os.set_blocking(fd, False)
    stdin_w_fd = ours.pop(0) if with_stdin else None
    stdout_fd, stderr_fd, status_fd = ours
    reviewer = _Reviewer(status_fd)
    try:
        await reviewer.started()
    except BaseException:
        with anyio.CancelScope(shield=True), anyio.move_on_after(guard.GRACE):
            await reviewer.started()  # cancelled meanwhile: learn the group, to end it
        if reviewer.pid:
            _signal_group(reviewer.pid, signal.SIGKILL)
        reviewer.close()
        for fd in (stdout_fd, stderr_fd) if stdin_w_fd is None else (stdin_w_fd, stdout_fd, stderr_fd):
            os.close(fd)
        raise
    return reviewer, stdin_w_fd, stdout_fd, stderr_fd


@dataclass
class OutputHandling:
    """Where a program's output goes and what reads it as it streams (all optional).

    `on_stdout_line` gets each stdout line; `on_long_stdout_line` is told about a line longer
    than `line_limit` (not given to `on_stdout_line`) when it passes the limit and again when
    it ends; either may return a violation reason, which ends the program. `on_stderr_text`
    gets all of stderr, line by line in bounded pieces. Each log file keeps the first `cap`
    bytes of its stream; without a path only the tail is kept (`ProcessResult`). Every string
    of `masks` is replaced by `masking.MASK` before anything else sees the streams."""

    stdout_path: Path | None = None
    stderr_path: Path | None = None
    on_stdout_line: Callable[[str], str | None] | None = None
    on_long_stdout_line: LongLine | None = None
    on_stderr_text: Callable[[str], None] | None = None
    cap: int = OUTPUT_CAP
    line_limit: int = LINE_LIMIT
    masks: tuple[bytes, ...] = ()


class GuardedProcess:
    """One program started by the guard, in a process group of its own: an async context
    manager whose time limit is the caller's cancel scope.

        async with GuardedProcess(argv, cwd=folder, output=OutputHandling(...)) as proc:
            with anyio.move_on_after(seconds):
                await proc.wait()
        proc.result

    Entering starts the program (OSError when it cannot be started) and reads its output as
    it streams. `wait()` returns once the program has exited or the stdout monitor objected.
    Leaving the block ends the program's process group: the program itself when it still
    runs (its time ran out, the monitor objected, or the caller stopped waiting for a reason
    of its own; `result.timed_out` is then true unless the monitor objected), else whatever
    it left running; the rest of the output is read, and `result` says how it ended.
    Cancelled from outside (spar interrupted), the block still ends the group (SIGTERM, then
    SIGKILL) before the cancellation goes on. An exception other than a cancellation raised
    in the block comes out in an exception group, as from any anyio task group.
    """

    def __init__(self, argv: Sequence[str], *, cwd: Path | str, env: Mapping[str, str] | None = None,
                 stdin_text: str | None = None, output: OutputHandling | None = None,
                 kill_grace: float = KILL_GRACE) -> None:
        self._argv = list(argv)
        self._cwd = str(cwd)
        self._env = os.environ if env is None else env
        self._stdin_text = stdin_text
        self._output = output if output is not None else OutputHandling()
        self._kill_grace = kill_grace
        self._wake = anyio.Event()  # the program exited, or the monitor objected
        self._exited = anyio.Event()
        self._out_done = anyio.Event()
        self._err_done = anyio.Event()
        self._open_fds: list[int] = []
        self._killed = False  # spar ended the program before it exited
        self._timed_out = False
        self._result: ProcessResult | None = None
        self._context: AbstractAsyncContextManager[GuardedProcess] | None = None

    async def __aenter__(self) -> GuardedProcess:
        self._context = self._lifetime()
        return await self._context.__aenter__()

    async def __aexit__(self, *exc_info: Any) -> bool | None:
        assert self._context is not None, "not entered"
        return await self._context.__aexit__(*exc_info)

    async def wait(self) -> None:
        """Until the program has exited or the stdout monitor reported a violation."""
        await self._wake.wait()

    @property
    def result(self) -> ProcessResult:
        """How the program ended; there once the block has ended."""
        if self._result is None:
            raise RuntimeError("the process block has not ended yet")
        return self._result

    @asynccontextmanager
    async def _lifetime(self) -> AsyncIterator[GuardedProcess]:
        out = self._out = _Sink(self._output.stdout_path, self._output.cap, self._output.line_limit,
                                self._output.on_stdout_line, self._wake.set,
                                on_long_line=self._output.on_long_stdout_line, masks=self._output.masks)
        err = self._err = _Sink(self._output.stderr_path, self._output.cap, self._output.line_limit, None,
                                self._wake.set, on_text=self._output.on_stderr_text, masks=self._output.masks)
        try:
            self._proc, stdin_fd, stdout_fd, stderr_fd = await _start(
                self._argv, self._cwd, self._env, self._stdin_text is not None)
        except BaseException:
            out.close()
            err.close()
            raise
        self._open_fds = [fd for fd in (stdin_fd, stdout_fd, stderr_fd) if fd is not None]
        settled = False  # the block and the group's end ran to their end
        try:
            async with anyio.create_task_group() as tg:
                if stdin_fd is not None and self._stdin_text is not None:
                    tg.start_soon(self._feed_stdin, stdin_fd, self._stdin_text.encode("utf-8"))
                tg.start_soon(_pump, stdout_fd, out, self._out_done)
                tg.start_soon(_pump, stderr_fd, err, self._err_done)
                tg.start_soon(self._wait_exit)
                yield self
                await self._end_group()
                tg.cancel_scope.cancel()
            settled = True
        finally:
            with anyio.CancelScope(shield=True):
                await self._make_sure_ended(settled)
            self._close()

    async def _feed_stdin(self, fd: int, data: bytes) -> None:
        view = memoryview(data)
        try:
            while view:
                await anyio.wait_writable(fd)
                try:
                    view = view[os.write(fd, view[:_CHUNK]):]
                except BlockingIOError:
                    continue
        except OSError:
            pass  # the child closed its stdin or exited; its output tells the rest
        finally:
            self._open_fds.remove(fd)
            os.close(fd)  # EOF, so programs that read to the end (codex) go on

    async def _wait_exit(self) -> None:
        await self._proc.wait()
        self._exited.set()
        self._wake.set()

    async def _end_group(self) -> None:
        """The block has ended: end the group (the program if it still runs, else what it left
        behind, which would hold the pipes open), then read the pipes to their end."""
        pgid = self._proc.pid  # the keeper leads the group: one killpg reaches every descendant
        if self._out.violation is not None or not self._exited.is_set():
            if not self._exited.is_set():
                self._killed = True
                self._timed_out = self._out.violation is None
            await terminate_group(pgid, self._exited, self._kill_grace)
        elif await _group_outlives_keeper(pgid):
            await terminate_group(pgid, self._exited, self._kill_grace)
        with anyio.move_on_after(DRAIN_GRACE):
            await self._out_done.wait()
            await self._err_done.wait()

    async def _make_sure_ended(self, settled: bool) -> None:
        """Shielded, whatever happened: cancelled from outside (spar interrupted) or a bug must
        never leave the group running. The keeper ends every descendant on SIGTERM; SIGKILL
        is the last resort."""
        proc, pgid = self._proc, self._proc.pid
        if not settled or proc.returncode is None:
            if not self._exited.is_set():
                self._killed = True
            _signal_group(pgid, signal.SIGTERM)
            if proc.returncode is None:
                with anyio.move_on_after(guard.GRACE + guard.SETTLE):
                    await proc.wait()
            _signal_group(pgid, signal.SIGKILL)
        if proc.returncode is None:
            self._killed = True
            with anyio.move_on_after(5):
                await proc.wait()

    def _close(self) -> None:
        self._proc.close()
        for fd in self._open_fds:
            os.close(fd)
        self._out.close()
        self._err.close()
        out, err = self._out, self._err
        self._result = ProcessResult(
            exit_code=None if self._killed else self._proc.returncode,
            timed_out=self._timed_out,
            violation=out.violation,
            stdout=out.info,
            stderr=err.info,
            stdout_tail=out.tail_text(),
            stderr_tail=err.tail_text(),
            log_error=out.log_error or err.log_error,
            masked=sum(s.masker.count for s in (out, err) if s.masker is not None),
            not_started=self._proc.not_started,
        )


async def _pump(fd: int, sink: _Sink, done: anyio.Event) -> None:
    """Read one output pipe to its end into `sink`."""
    try:
        while True:
            await anyio.wait_readable(fd)
            try:
                chunk = os.read(fd, _CHUNK)
            except BlockingIOError:
                continue
            except OSError:
                break
            if not chunk:
                break
            sink.write(chunk)
    finally:
        sink.eof()
        done.set()
