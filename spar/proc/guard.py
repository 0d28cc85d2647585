"""One guard per spar process: it starts every reviewer, and no descendant outlives spar.

`spar.proc.process` forks the guard (`fork_guard`: a copy of spar, no interpreter start)
once (for `spar run`: first thing, before any thread starts; `fork_guard` refuses while
another thread runs), in a session of its own, with one end of a Unix socket pair: the
*control socket*, and no other descriptor of spar's. Spar has made itself not dumpable by
then (`spar.proc.prctl`), and the guard and its keepers inherit it: a reviewer of the same
user cannot open their descriptors (spar's terminal, a status pipe) through /proc.
The guard is a child subreaper (`spar.proc.reaper`). For each reviewer spar
sends a request (argv, cwd, environment) with four file descriptors (the
reviewer's stdin, stdout, stderr and a *status pipe*); the guard forks a
*keeper* (a copy of the guard) that

- starts a new session, so it leads the reviewer's process group as spar's
  kill expects, and becomes a child subreaper of its own: every orphan of the
  reviewer's subtree comes to it, a grandchild that called `setsid()` too;
- joins a new session keyring of the kernel (`spar.proc.keyring`), which the reviewer
  inherits: the user's own is out of its reach;
- writes its pid to the status pipe, starts the reviewer as its child and,
  when it finishes, writes the reviewer's exit code (negative: the signal that
  ended it) and exits (the messages: `spar.proc.guard_protocol`); a reviewer it
  cannot start is said to be so (the errno) before its exit code, 127;
- whenever it finishes, first ends every descendant (SIGTERM, GRACE seconds,
  SIGKILL) and reaps it: when the reviewer exits (what it left running is
  ended), and on SIGTERM, SIGINT or SIGHUP (spar's timeout or interrupt).

When spar dies (SIGKILL included) the kernel closes its end of the control
socket; the guard reads EOF at once and ends every descendant, every keeper
and reviewer of the round. When spar ends normally the same EOF lets the
guard exit. The status pipe reaches EOF when the keeper is gone, so spar
needs no wait on a process that is not its child.

Standard library only, besides `spar.proc.reaper`, `spar.proc.prctl`, `spar.proc.keyring`,
`spar.proc.guard_protocol` and `spar.errors` (the exit codes), which need nothing else
either (`tests/test_architecture.py` checks it): everything it runs is imported before the
fork. What it cannot do: survive
SIGKILL itself (then the keepers' descendants go to init); spar sends SIGKILL to a reviewer's
group only after GRACE + SETTLE seconds without its keeper ending.
"""

from __future__ import annotations

import contextlib
import errno
import os
import select
import signal
import socket
import threading
from types import FrameType

from spar.errors import EXIT_INTERNAL, EXIT_NOT_STARTED, EXIT_OK, SparError
from spar.proc.guard_protocol import FDS_PER_REQUEST, Kind, Request, encode_status, take_requests
from spar.proc.keyring import join_new_session_keyring
from spar.proc.reaper import become_subreaper, end_descendants, reap

GRACE = 1.0  # SIGTERM to SIGKILL for the descendants, as spar's own kill
SETTLE = 1.0  # spar waits GRACE + SETTLE for a keeper to finish before it SIGKILLs the group
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
_STATUS_FD = 3  # in a keeper
_CONTROL_FD = 3  # in the guard (a keeper puts its status pipe there, closing it)


def _end_group() -> None:
    """Without a subreaper: the old way, the whole process group (the keeper included)."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the keeper outlives the SIGTERM to finish the job
    os.killpg(0, signal.SIGTERM)
    end_descendants(GRACE)
    os.killpg(0, signal.SIGKILL)


class _Watch:
    """Signals noted by handlers and a wakeup pipe, so a loop reacts at once."""

    def __init__(self) -> None:
        self.stop: int | None = None
        self.fd, write = os.pipe()
        os.set_blocking(write, False)
        signal.set_wakeup_fd(write, warn_on_full_buffer=False)
        for sig in (*STOP_SIGNALS, signal.SIGCHLD):
            signal.signal(sig, self._note)  # reset to default in the reviewer by exec

    def _note(self, signum: int, _frame: FrameType | None) -> None:
        if signum in STOP_SIGNALS and self.stop is None:
            self.stop = signum

    def drain(self) -> None:
        with contextlib.suppress(BlockingIOError):
            os.read(self.fd, 512)

    def wait(self, seconds: float) -> None:
        ready, _, _ = select.select([self.fd], [], [], seconds)
        if ready:
            os.read(self.fd, 512)


def _status(kind: Kind, value: int) -> None:
    with contextlib.suppress(OSError):  # spar is gone: nobody reads it
        os.write(_STATUS_FD, encode_status(kind, value))


def keep(command: list[str], cwd: str, env: dict[str, str]) -> int:
    """In a keeper: run the reviewer to its end; the exit code (negative: a signal)."""
    reaper = become_subreaper()
    join_new_session_keyring()  # the program's own, empty: none of the user's keys within reach
    watch = _Watch()
    _status(Kind.STARTED, os.getpid())
    try:
        child = _spawn(command, cwd, env)  # inherits stdin, stdout, stderr
    except OSError as exc:
        # to fd 2, the reviewer's stderr: sys.stderr is whatever the forked spar had there
        with contextlib.suppress(OSError):
            os.write(2, f"spar: cannot start {command[0]}: {exc.strerror or exc}\n".encode(errors="replace"))
        _status(Kind.NOT_STARTED, exc.errno or 0)  # Spar's own word for it: a program may exit 127 too
        return EXIT_NOT_STARTED
    codes: dict[int, int] = {}

    def on_exit(pid: int, status: int) -> None:
        if pid == child:
            codes[pid] = os.waitstatus_to_exitcode(status)

    while child not in codes:
        reap(on_exit)
        if child in codes:
            break
        if watch.stop is not None:
            if not reaper:
                _end_group()
            end_descendants(GRACE, on_exit)
            return -watch.stop
        watch.wait(1.0)  # signals wake it at once; the timeout is a safety net
    if reaper:
        end_descendants(GRACE, on_exit)  # what the reviewer left running ends with it
    return codes[child]


def _spawn(command: list[str], cwd: str, env: dict[str, str]) -> int:
    """Start `command` in `cwd` as this keeper's child; its pid. As subprocess.Popen(command,
    cwd=cwd, env=env) would (SIGPIPE and SIGXFSZ back to their defaults, a bare name looked
    up in `env`'s PATH, the first error other than "not there" reported; every descriptor
    but 0-2 is close-on-exec here), by os.posix_spawn: no Popen set-up in this forked copy
    of spar, and no Popen object, whose collection would reap a reviewer that already
    ended, so that the keeper's own reaping never saw its exit."""
    os.chdir(cwd)  # the keeper's own folder: nothing else of it depends on it
    program = command[0]
    paths = [program] if "/" in program else [os.path.join(d, program) for d in os.get_exec_path(env)]
    first: OSError | None = None
    last: OSError = FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), program)
    for path in paths:
        try:
            return os.posix_spawn(path, command, env, setsigdef=(signal.SIGPIPE, signal.SIGXFSZ))
        except OSError as exc:
            last = exc
            if first is None and exc.errno not in (errno.ENOENT, errno.ENOTDIR):
                first = exc
    raise first or last


def _start_keeper(request: Request, fds: list[int], control: socket.socket) -> int:
    """Fork a keeper for one request; its pid."""
    pid = os.fork()
    if pid:
        return pid
    try:
        for sig in (*STOP_SIGNALS, signal.SIGCHLD):
            signal.signal(sig, signal.SIG_DFL)
        signal.set_wakeup_fd(-1)
        os.setsid()  # leads the reviewer's process group
        for target, fd in enumerate(fds[:3]):
            os.dup2(fd, target)
        os.dup2(fds[3], _STATUS_FD, inheritable=False)
        _close_fds_above(_STATUS_FD, max([*fds, control.fileno()]))
        _status(Kind.EXITED, keep(request.argv, request.cwd, request.env))
    finally:
        os._exit(EXIT_OK)


def _close_fds_above(low: int, known: int) -> None:
    """Close every descriptor above `low` (the guard's own, other requests'): a keeper holds
    only its reviewer's."""
    try:
        open_fds = [int(name) for name in os.listdir("/proc/self/fd")]
    except OSError:
        open_fds = list(range(low + 1, known + 256))
    for fd in open_fds:
        if fd > low:
            with contextlib.suppress(OSError):
                os.close(fd)


def serve(control: socket.socket) -> int:
    """The guard's loop: start a keeper per request until EOF, then end every descendant."""
    reaper = become_subreaper()
    watch = _Watch()
    buf = bytearray()
    fds: list[int] = []
    try:
        while watch.stop is None:
            reap()
            ready, _, _ = select.select([control.fileno(), watch.fd], [], [], 5.0)
            if watch.fd in ready:
                watch.drain()
            if control.fileno() not in ready:
                continue
            try:
                data, new_fds, _flags, _addr = socket.recv_fds(control, 1 << 16, 4 * FDS_PER_REQUEST)
            except OSError:
                data, new_fds = b"", []
            fds += new_fds
            if not data:
                break  # spar is gone (or done): nothing may outlive it
            buf += data
            for request in take_requests(buf):
                mine = fds[:FDS_PER_REQUEST]
                del fds[:FDS_PER_REQUEST]
                try:
                    _start_keeper(request, mine, control)
                except OSError:
                    pass  # no fork: spar reads EOF on the status pipe without a pid and says so
                finally:
                    for fd in mine:
                        os.close(fd)
    finally:
        if reaper:
            end_descendants(GRACE)
        else:  # keepers lead their groups: end each of them
            os.killpg(0, signal.SIGTERM)
    return EXIT_OK


class ThreadsRunning(SparError):
    """The guard would be forked while another thread runs: refused (an internal error)."""


def running_threads() -> int:
    """Python threads of this process (those that run Python code and may hold its locks;
    a helper thread of C code such as faulthandler's watchdog is not counted)."""
    return threading.active_count()


def fork_guard(control: socket.socket) -> int:
    """Fork the guard, serving `control` (the other end is spar's); its pid. A fork, not a
    new interpreter: no start-up or imports (~25 ms of CPU a round), and the guard runs the
    very code spar loaded. Refused (ThreadsRunning) unless this is the only thread: a fork
    copies every lock as it stands, and one another thread held (an import lock, a buffer's
    lock) would stay held in the guard for good. The child imports nothing, starts a session
    of its own (a terminal's Ctrl-C is spar's to handle) and keeps none of spar's descriptors
    but the socket: no pipe end or lock of spar's may live on in it, and its stdin, stdout
    and stderr are /dev/null."""
    threads = running_threads()
    if threads > 1:
        names = ", ".join(thread.name for thread in threading.enumerate())
        raise ThreadsRunning(f"internal error: the reviewer guard must be forked before any thread starts, "
                             f"and {threads} threads run ({names})")
    pid = os.fork()
    if pid:
        return pid
    code = EXIT_INTERNAL
    try:
        os.setsid()
        null = os.open(os.devnull, os.O_RDWR)
        for target in (0, 1, 2):
            os.dup2(null, target)
        os.dup2(control.fileno(), _CONTROL_FD, inheritable=False)
        _close_fds_above(_CONTROL_FD, max(null, control.fileno()))
        code = serve(socket.socket(fileno=_CONTROL_FD))
    finally:
        os._exit(code)
