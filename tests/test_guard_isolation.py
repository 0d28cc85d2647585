"""What keeps the guard sound and reviewers away from Spar: the guard is forked only while
Spar runs one thread (issue 21 point 3), and Spar, the guard and its keepers are not
dumpable, so a reviewer of the same user cannot open their descriptors through /proc
(issue 25 hole 4)."""

from __future__ import annotations

import contextvars
import ctypes
import json
import os
import pwd
import socket
import sys
import threading
import traceback

import anyio
import pytest

from spar.proc import guard, process
from spar.proc.prctl import PR_SET_DUMPABLE, dumpable
from tests.proctools import HANG, pid_gone, run_for, wait_for, with_own_guard


def test_the_guard_is_not_forked_while_another_thread_runs():
    """Issue 21 point 3: "fork before any thread starts" is checked: with a second thread
    running, fork_guard refuses with an internal error and forks nothing."""
    release = threading.Event()
    thread = threading.Thread(target=release.wait, name="test-holder")
    thread.start()
    ours, theirs = socket.socketpair()
    try:
        with pytest.raises(guard.ThreadsRunning, match="before any thread starts") as refused:
            guard.fork_guard(theirs)
    finally:
        release.set()
        thread.join()
        ours.close()
        theirs.close()
    assert refused.value.exit_code == 70  # an internal error
    assert "test-holder" in str(refused.value)  # it names the threads it saw


def test_spar_starts_no_guard_while_another_thread_runs():
    """Issue 21 point 3: the same refusal reaches the command that enters the guard's block,
    which then holds no guard; with one thread again, the block starts one."""
    def refused():
        with pytest.raises(guard.ThreadsRunning), process.reviewer_guard():
            pass
        return process._OWNED.get()

    def alone(guard):
        assert guard.running()
        return guard.pid

    release = threading.Event()
    thread = threading.Thread(target=release.wait, name="test-holder")
    thread.start()
    try:
        # a context of its own: outside the suite's block (with_own_guard would wait for the thread)
        assert contextvars.Context().run(refused) is None  # the block holds no guard
    finally:
        release.set()
        thread.join()
    assert with_own_guard(alone) is not None  # one thread again: it starts


# The reviewer tries what issue 25 hole 4 found: writing to Spar's stderr (the user's
# terminal) through /proc, here a clear-screen and an OSC 52 clipboard write; and forging
# its exit code through its keeper's status pipe (the keeper is its parent, the pipe fd 3).
REVIEWER = r"""
( printf '\033[2J\033]52;c;aGk=\007' >"/proc/$1/fd/2" ) 2>/dev/null && echo spar-open || echo spar-refused
( printf 'X0\n' >"/proc/$PPID/fd/3" ) 2>/dev/null && echo keeper-open || echo keeper-refused
"""


def _become_a_plain_user() -> None:
    """In the forked stand-in: a user without root's capabilities (nobody when the tests run
    as root), dumpable as any process a user starts (changing the uid just reset it)."""
    if os.getuid() == 0:
        try:
            nobody = pwd.getpwnam("nobody")
            uid, gid = nobody.pw_uid, nobody.pw_gid
        except KeyError:
            uid = gid = 65534
        os.setgroups([])
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)
    assert ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) == 0


def _stand_in(report_w: int) -> None:
    """A Spar of a plain user running REVIEWER; writes what it saw to `report_w`. Its stderr is
    a pipe it made as that user, as a user's terminal belongs to the user (a pipe root made
    is closed to another user whatever Spar does)."""
    _become_a_plain_user()
    stderr_r, stderr_w = os.pipe()
    os.dup2(stderr_w, 2)
    before = dumpable()
    argv = ["/bin/sh", "-c", REVIEWER, "reviewer", str(os.getpid())]
    # not the test process's guard: this stand-in forks its own, as that user
    res = with_own_guard(lambda _guard: anyio.run(lambda: run_for(argv, cwd="/", seconds=HANG)))
    os.set_blocking(stderr_r, False)
    try:
        spar_stderr = os.read(stderr_r, 1 << 16)
    except BlockingIOError:
        spar_stderr = b""
    report = {"uid": os.getuid(), "before": before, "after": dumpable(), "exit_code": res.exit_code,
              "stdout": res.stdout_tail, "stderr": res.stderr_tail, "spar_stderr": spar_stderr.hex()}
    os.write(report_w, json.dumps(report).encode())


def test_a_reviewer_of_the_same_user_cannot_open_spars_descriptors():
    """Issue 25 hole 4: a reviewer opened /proc/<spar pid>/fd/2 and wrote escapes to the
    user's terminal. Spar (here a stand-in running as a user without root's capabilities)
    makes itself not dumpable before its guard starts: the reviewer's open is refused, for
    Spar's stderr and for its keeper's status pipe, and nothing reaches Spar's stderr."""
    report_r, report_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            _stand_in(report_w)
        except BaseException:
            os.write(report_w, json.dumps({"error": traceback.format_exc()}).encode())
        finally:
            os._exit(0)
    os.close(report_w)
    with os.fdopen(report_r, "rb") as f:
        report = json.loads(f.read() or b"{}")
    os.waitpid(pid, 0)
    assert "error" not in report, report.get("error")
    assert report["uid"] != 0 and report["before"] is True  # the stand-in began as a user's Spar does
    assert report["exit_code"] == 0, report["stderr"]
    assert report["stdout"].split() == ["spar-refused", "keeper-refused"]
    assert b"\x1b" not in bytes.fromhex(report["spar_stderr"])  # no escape reached Spar's stderr
    assert report["after"] is False


def test_one_block_owns_the_guard_of_every_program_in_it(tmp_path):
    """A command's `reviewer_guard` block forks one guard; every program of the block, in
    each `anyio.run` of it, is started by that guard; leaving the block tells it to go."""
    parent = "import os; print(open(f'/proc/{os.getppid()}/stat').read().rsplit(')', 1)[1].split()[1])"

    def two_runs(guard):
        pids = []
        for _ in range(2):
            res = anyio.run(lambda: run_for([sys.executable, "-c", parent], cwd=tmp_path, seconds=HANG))
            assert res.exit_code == 0, res.stderr_tail
            pids.append(int(res.last_stdout_line))
        return guard.pid, pids

    owned, parents = with_own_guard(two_runs)
    assert parents == [owned, owned]  # each program's keeper is a child of the block's guard
    assert wait_for(lambda: pid_gone(owned))


def test_a_program_outside_every_guard_block_is_refused(tmp_path):
    """No program starts without an owner: outside every block (here a context of its own,
    away from the suite's block) starting one is an internal error, and no guard is forked."""
    forks = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(guard, "fork_guard", forks.append)
        with pytest.raises(RuntimeError, match=r"outside spar\.proc\.process\.reviewer_guard"):
            contextvars.Context().run(
                lambda: anyio.run(lambda: run_for(["true"], cwd=tmp_path, seconds=HANG)))
    assert forks == []
