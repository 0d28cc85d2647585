"""Leader of one reviewer's process group: no descendant of the reviewer outlives it.

`spar.round.process` starts every reviewer as
`python -I -m spar.round.guard SPAR_PID -- ARGV...` in a new session, so this
guard leads the reviewer's process group and the reviewer is its child. The
guard is a child subreaper (`spar.round.reaper`): every orphan of the
reviewer's subtree comes to it, including a grandchild that called `setsid()`
and left the group. Whenever the guard finishes, it first ends every
descendant (SIGTERM, GRACE seconds, SIGKILL) and reaps it:

- the reviewer exits: what it left running is ended, then the guard exits
  with the reviewer's status (death by a signal included);
- SIGTERM, SIGINT or SIGHUP (spar's timeout or interrupt): everything is ended,
  then the guard dies by that signal;
- spar dies (SIGKILL included): the guard is re-parented, notices within POLL
  seconds and ends everything, so no reviewer goes on running, and spending
  quota, with nobody reading its output.

Standard library only, and nothing printed unless the reviewer cannot be
started. What it cannot do: survive SIGKILL itself (then its descendants go to
init); spar sends SIGKILL only after GRACE + SETTLE seconds without the guard
ending.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys

from spar.round.reaper import become_subreaper, end_descendants, reap

POLL = 0.2  # how soon a dead spar is noticed
GRACE = 1.0  # SIGTERM to SIGKILL for the descendants, as spar's own kill
SETTLE = 1.0  # spar waits GRACE + SETTLE for the guard to finish before it SIGKILLs the group
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def end_group() -> None:
    """Without a subreaper: the old way, the whole process group (the guard included)."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the guard outlives the SIGTERM to finish the job
    os.killpg(0, signal.SIGTERM)
    end_descendants(GRACE)
    os.killpg(0, signal.SIGKILL)


class _Watch:
    """Signals noted by handlers and a wakeup pipe, so the loop reacts at once."""

    def __init__(self) -> None:
        self.stop: int | None = None
        self._read, write = os.pipe()
        os.set_blocking(write, False)
        signal.set_wakeup_fd(write, warn_on_full_buffer=False)
        for sig in (*STOP_SIGNALS, signal.SIGCHLD):
            signal.signal(sig, self._note)  # reset to default in the child by exec

    def _note(self, signum, _frame) -> None:
        if signum in STOP_SIGNALS and self.stop is None:
            self.stop = signum

    def wait(self, seconds: float) -> None:
        ready, _, _ = select.select([self._read], [], [], seconds)
        if ready:
            os.read(self._read, 512)


def _die_like(status_or_signal: int, *, signum: bool = False) -> int:
    sig = status_or_signal if signum else -status_or_signal
    signal.signal(sig, signal.SIG_DFL)  # die the way the reviewer died, so spar reads the same status
    os.kill(os.getpid(), sig)
    return 128 + sig


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] != "--":
        print("usage: python -m spar.round.guard SPAR_PID -- ARGV...", file=sys.stderr)
        return 64
    parent, command = int(argv[0]), argv[2:]
    if os.getppid() != parent:  # spar died before the guard got going
        return 125
    reaper = become_subreaper()
    watch = _Watch()
    try:
        child = subprocess.Popen(command)  # inherits stdin, stdout, stderr, cwd and environment
    except OSError as exc:
        print(f"spar: cannot start {command[0]}: {exc.strerror or exc}", file=sys.stderr)
        return 127
    codes: dict[int, int] = {}

    def on_exit(pid: int, status: int) -> None:
        if pid == child.pid:
            codes[pid] = os.waitstatus_to_exitcode(status)

    while child.pid not in codes:
        reap(on_exit)
        if child.pid in codes:
            break
        if watch.stop is not None or os.getppid() != parent:
            if not reaper:
                end_group()
            end_descendants(GRACE, on_exit)
            return _die_like(watch.stop or signal.SIGTERM, signum=True)
        watch.wait(POLL)
    if reaper:
        end_descendants(GRACE, on_exit)  # what the reviewer left running ends with it
    code = codes[child.pid]
    return _die_like(code) if code < 0 else code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
