"""Leader of one reviewer's process group: ends the group when spar dies.

`spar.round.process` starts every reviewer as
`python -I -m spar.round.guard SPAR_PID -- ARGV...` in a new session, so this
guard leads the reviewer's process group and the reviewer is its child. spar
can stop the group on a timeout or violation itself, but a `spar run` killed
with SIGKILL cannot: then the guard is re-parented, notices within POLL
seconds and ends the whole group (SIGTERM, then SIGKILL), so no reviewer goes
on running, and spending quota, with nobody reading its output. The exit
status is the reviewer's own, death by a signal included. Standard library
only, and nothing printed unless the reviewer cannot be started.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

POLL = 0.2  # how soon a dead spar is noticed
GRACE = 1.0  # SIGTERM to SIGKILL, as spar's own kill


def end_group() -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the guard outlives the SIGTERM to finish the job
    os.killpg(0, signal.SIGTERM)
    time.sleep(GRACE)
    os.killpg(0, signal.SIGKILL)  # the guard included


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] != "--":
        print("usage: python -m spar.round.guard SPAR_PID -- ARGV...", file=sys.stderr)
        return 64
    parent, command = int(argv[0]), argv[2:]
    if os.getppid() != parent:  # spar died before the guard got going
        return 125
    try:
        child = subprocess.Popen(command)  # inherits stdin, stdout, stderr, cwd and environment
    except OSError as exc:
        print(f"spar: cannot start {command[0]}: {exc.strerror or exc}", file=sys.stderr)
        return 127
    while True:
        try:
            code = child.wait(timeout=POLL)
            break
        except subprocess.TimeoutExpired:
            if os.getppid() != parent:
                end_group()
    if code < 0:  # die the way the reviewer died, so spar reads the same status
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
