"""Issue 22: a command that waits on the series lock says which Spar command and process
hold it (read from the kernel's lock table and the holder's command line; no file)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from spar.records.lock import waiting_message
from tests.proctools import HANG, blocked_on_lock, wait_for
from tests.runsetup import make_setup, result

pytestmark = pytest.mark.slow  # two real spar processes


def test_waiting_command_names_the_holding_spar_run(tmp_path):
    """Issue 22 (lock holder): `spar extend` waiting on a series whose `spar run` is still
    reviewing prints once that `spar run` with its pid holds the lock, then goes on."""
    s = make_setup(tmp_path)
    started, fifo = tmp_path / "started", tmp_path / "release"
    os.mkfifo(fifo)
    answer = s.answer_reviewer("house", result())
    # the reviewer says it started, then waits until the test writes to the fifo
    blocked = ["sh", "-c", 'touch "$1"; cat "$2" >/dev/null; shift 2; exec "$@"', "sh", str(started), str(fifo),
               *answer["argv"]]
    s.configure([{**answer, "argv": blocked}])
    argv = [sys.executable, "-m", "spar"]
    holder = subprocess.Popen([*argv, "run", "--stage", "code", "--out", "reviews/r1"], cwd=s.repo, env=s.env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    waiter = None
    try:
        assert wait_for(lambda: started.exists() or holder.poll() is not None), "the reviewer never started"
        assert holder.poll() is None, holder.communicate()
        waiter = subprocess.Popen([*argv, "extend", "reviews", "--stage", "code", "--by", "1", "--cause", "churn"],
                                  cwd=s.repo, env=s.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        line = waiter.stderr.readline().decode()
        assert line == waiting_message("reviews", ("run", holder.pid)) + "\n"
        assert line.rstrip("\n").endswith(f"held by `spar run` (pid {holder.pid})")
        assert wait_for(lambda: blocked_on_lock(waiter.pid) or waiter.poll() is not None)
        assert waiter.poll() is None  # still waiting while the run holds the lock
    finally:
        with open(fifo, "w") as release:  # lets the reviewer answer
            release.write("go\n")
    _out, err = holder.communicate(timeout=HANG)
    assert holder.returncode == 0, err.decode()
    _out, err = waiter.communicate(timeout=HANG)
    assert waiter.returncode == 0, err.decode()
    assert "waiting for another write" not in err.decode()  # said once, the line read above
