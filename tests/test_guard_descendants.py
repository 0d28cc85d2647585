"""No process outlives the round: grandchildren that left the reviewer's session
(setsid) are ended after a normal end, a timeout, and when spar dies by SIGKILL."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from tests.proctools import LIMITS, pid_gone, run_for, wait_for, with_own_guard, written

PY = sys.executable
BOUND = 30  # seconds: a hang guard, never the measure

# The reviewer forks a grandchild that calls setsid() (leaving the reviewer's session and
# group), keeps or drops stdout, writes its pid, and runs on. Then the reviewer ends, waits,
# or kills its parent (the process that keeps it) with SIGKILL, as any process of the user may.
REVIEWER = r'''
import os, sys, time
pid_file, keep_stdout, then = sys.argv[1], sys.argv[2] == "keep", sys.argv[3]
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:  # a daemon: orphaned at once, in a session of its own
        if not keep_stdout:
            null = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(null, fd)
        with open(pid_file + ".tmp", "w") as f:
            f.write(str(os.getpid()))
        os.rename(pid_file + ".tmp", pid_file)
        while True:
            time.sleep(60)
    os._exit(0)
while not os.path.exists(pid_file):
    time.sleep(0.01)
print("ready", flush=True)
if then == "kill-parent":
    import signal
    os.kill(os.getppid(), signal.SIGKILL)
if then != "exit":
    time.sleep(600)
'''


def _alive(pid: int) -> bool:
    return not pid_gone(pid)


def wait_gone(pid: int, bound: float = BOUND) -> bool:
    """Block until `pid` has ended (its pidfd becomes readable), at most `bound` seconds."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        ready, _, _ = select.select([fd], [], [], bound)
    finally:
        os.close(fd)
    return bool(ready) or not _alive(pid)


def wait_file(path: Path, proc: subprocess.Popen | None = None) -> None:
    """Wait until a child has written `path` (bounded; fails early if the child died)."""
    assert wait_for(lambda: path.exists() or (proc is not None and proc.poll() is not None), BOUND, poll=0.01), \
        f"{path} never appeared"
    assert path.exists(), "the process ended before writing its pid"


async def _review(tmp_path, keep: str, then: str, seconds: float):
    pid_file = tmp_path / "grandchild.pid"
    with anyio.fail_after(BOUND + seconds):
        res = await run_for([PY, "-c", REVIEWER, str(pid_file), keep, then], cwd=tmp_path, seconds=seconds,
                            kill_grace=0.3)
    return res, pid_file


@pytest.mark.anyio
@pytest.mark.parametrize("keep", ["keep", "drop"])
async def test_setsid_grandchild_ends_with_a_normal_end(tmp_path, keep):
    res, pid_file = await _review(tmp_path, keep, "exit", BOUND)
    assert res.exit_code == 0 and not res.timed_out
    assert not _alive(int(pid_file.read_text()))  # ended before the process block ended, not later


@pytest.mark.slow
@pytest.mark.anyio
@pytest.mark.parametrize("keep", ["keep", "drop"])
async def test_setsid_grandchild_ends_with_a_timeout(tmp_path, keep):
    for k in LIMITS:  # until the grandchild is up before the limit
        res, pid_file = await _review(tmp_path, keep, "wait", 1.0 * k)
        assert res.timed_out and res.exit_code is None
        if written(pid_file):
            break
    assert not _alive(int(pid_file.read_text()))


# spar stand-in: one reviewer process, killed with SIGKILL while the reviewer runs
SPAR = r'''
import sys, anyio
from spar.proc.process import GuardedProcess, reviewer_guard
async def main():
    argv = [sys.executable, "-c", sys.argv[1], sys.argv[2], sys.argv[3], "wait"]
    async with GuardedProcess(argv, cwd=sys.argv[4]) as proc:
        with anyio.move_on_after(600):
            await proc.wait()
with reviewer_guard():
    anyio.run(main, backend=sys.argv[5])
'''


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@pytest.mark.parametrize("keep", ["keep", "drop"])
def test_setsid_grandchild_ends_when_spar_is_killed(tmp_path, backend, keep):
    pid_file = tmp_path / "grandchild.pid"
    spar = subprocess.Popen([PY, "-c", SPAR, REVIEWER, str(pid_file), keep, str(tmp_path), backend],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)})
    try:
        wait_file(pid_file, spar)
        pid = int(pid_file.read_text())
        spar.send_signal(signal.SIGKILL)
        spar.wait()
        assert wait_gone(pid), f"grandchild {pid} still runs after spar was killed"
    finally:
        if spar.poll() is None:
            spar.kill()
            spar.wait()
        if pid_file.exists() and _alive(int(pid_file.read_text())):
            os.kill(int(pid_file.read_text()), signal.SIGKILL)  # safety net only


def test_end_descendants_reaches_a_setsid_grandchild(tmp_path):
    """The reusable part (t15 may run one guard per round): subreaper + end_descendants."""
    code = r'''
import os, sys, time
from spar.proc.reaper import become_subreaper, end_descendants, descendants
assert become_subreaper()
if os.fork() == 0:
    if os.fork() == 0:
        os.setsid()
        time.sleep(600)
    os._exit(0)
os.wait()
while not descendants():
    time.sleep(0.01)
left = descendants()
print(left[0], flush=True)
assert end_descendants(0.2)
print(len(descendants()))
'''
    out = subprocess.run([PY, "-c", code], capture_output=True, text=True, timeout=BOUND,
                         env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)})
    assert out.returncode == 0, out.stderr
    pid, left = (int(x) for x in out.stdout.split())
    assert left == 0 and not _alive(pid)


@pytest.mark.slow
@pytest.mark.parametrize("how", ["normal end", "timeout", "spar killed"])
def test_spar_run_leaves_no_descendant(tmp_path, how):
    """The same through `spar run` with a `command` reviewer whose daemon keeps stdout open."""
    from tests.runsetup import make_setup

    s = make_setup(tmp_path)
    pid_file = tmp_path / "grandchild.pid"
    then = "exit" if how == "normal end" else "wait"
    for n, k in enumerate(LIMITS):  # a timeout: until the grandchild is up before the limit
        s.configure([{"name": "daemon", "preset": "command",
                      "argv": [PY, "-c", REVIEWER, str(pid_file), "keep", then]}],
                    timeout=k if how == "timeout" else 60)
        argv = [PY, "-m", "spar", "run", "--stage", "code", "--out", f"reviews/r{n + 1}"]
        spar = subprocess.Popen(argv, cwd=s.repo, env=s.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            if how == "spar killed":
                wait_file(pid_file, spar)
                spar.send_signal(signal.SIGKILL)
            spar.wait(timeout=BOUND + k)
            if not written(pid_file):
                assert how == "timeout", "the reviewer ended before its grandchild was up"
                continue
            pid = int(pid_file.read_text())
            if how == "spar killed":
                assert wait_gone(pid), f"grandchild {pid} still runs after spar was killed"
            else:
                assert not _alive(pid)  # ended before spar returned
                assert spar.returncode == 1  # the reviewer gave no answer: recorded, not clean
            break
        finally:
            if spar.poll() is None:
                spar.kill()
                spar.wait()
            if written(pid_file) and _alive(int(pid_file.read_text())):
                os.kill(int(pid_file.read_text()), signal.SIGKILL)  # safety net only
    assert written(pid_file)


@pytest.mark.slow
def test_a_reviewer_that_kills_its_keeper_leaves_nothing_running(tmp_path):
    """The reviewer kills the process that keeps it: its setsid daemon comes to the round's
    guard (a subreaper too), which ends it when spar is done."""
    from tests.runsetup import make_setup

    s = make_setup(tmp_path)
    pid_file = tmp_path / "grandchild.pid"
    s.configure([{"name": "rogue", "preset": "command",
                  "argv": [PY, "-c", REVIEWER, str(pid_file), "drop", "kill-parent"]}])
    proc = s.run()
    try:
        assert proc.returncode == 1, proc.stderr.decode()
        assert wait_gone(int(pid_file.read_text())), "the daemon outlived spar"
    finally:
        if written(pid_file) and _alive(int(pid_file.read_text())):
            os.kill(int(pid_file.read_text()), signal.SIGKILL)  # safety net only


@pytest.mark.anyio
async def test_one_guard_starts_every_reviewer(tmp_path):
    """Reviewers run under keepers forked from one guard process (not one Python start
    each): each reviewer's keeper leads its group, and every keeper has the same parent."""
    code = ("import os\n"
            "keeper = os.getppid()\n"
            "stat = open(f'/proc/{keeper}/stat').read().rsplit(')', 1)[1].split()\n"
            "print(keeper, stat[1], os.getpgid(0))\n")
    seen = []
    for _ in range(3):
        with anyio.fail_after(BOUND):
            res = await run_for([PY, "-c", code], cwd=tmp_path, seconds=BOUND)
        assert res.exit_code == 0, res.stderr_tail
        seen.append([int(x) for x in res.last_stdout_line.split()])
    keepers, guards, groups = zip(*seen, strict=True)
    assert len(set(keepers)) == 3 and list(groups) == list(keepers)  # a keeper per reviewer leads its group
    assert len(set(guards)) == 1 and guards[0] not in (os.getpid(), *keepers)  # one guard for all


def test_the_guard_keeps_no_descriptor_of_spar(tmp_path):
    """The guard is a fork of spar: of spar's descriptors it keeps only its end of the
    control socket (a pipe end of spar's left open in it could hold a reviewer's stdin or
    a status pipe open), and its stdin, stdout and stderr are /dev/null."""
    def look(guard):
        res = anyio.run(lambda: run_for([PY, "-c", "pass"], cwd=tmp_path, seconds=BOUND))
        assert res.exit_code == 0, res.stderr_tail
        return {int(fd): os.readlink(f"/proc/{guard.pid}/fd/{fd}") for fd in os.listdir(f"/proc/{guard.pid}/fd")}

    read_end, write_end = os.pipe()
    ours = os.readlink(f"/proc/self/fd/{read_end}")
    try:
        fds = with_own_guard(look)  # a new guard, forked while this pipe is open
    finally:
        os.close(read_end)
        os.close(write_end)
    assert [fds.pop(fd) for fd in (0, 1, 2)] == [os.devnull] * 3
    assert fds.pop(3).startswith("socket:")
    # what is left is the guard's own wakeup pipe (both ends), made after the fork
    assert len(fds) == 2 and len(set(fds.values())) == 1 and ours not in fds.values(), fds


def test_descendants_by_children_links_matches_the_full_scan(tmp_path):
    """The quick walk (/proc/PID/task/*/children) finds what the scan of every process
    finds: a child, a grandchild, and none once they are gone."""
    from spar.proc import reaper

    code = r'''
import os, sys, time
from spar.proc import reaper
r, w = os.pipe()
if os.fork() == 0:
    if os.fork() == 0:
        os.read(r, 1)
        os._exit(0)
    os.read(r, 1)
    os._exit(0)
while len(reaper.descendants()) < 2:
    time.sleep(0.01)
quick = sorted(reaper._descendants_by_children(os.getpid()) or [])
table = reaper.process_table()
scan_children = {}
for pid, (ppid, _g, state) in table.items():
    scan_children.setdefault(ppid, []).append(pid)
stack, scanned = [os.getpid()], []
while stack:
    for kid in scan_children.get(stack.pop(), []):
        stack.append(kid)
        if table[kid][2] not in ("Z", "X"):
            scanned.append(kid)
os.write(w, b"xx")
print(len(quick), quick == sorted(scanned))
'''
    out = subprocess.run([PY, "-c", code], capture_output=True, text=True, timeout=BOUND,
                         env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)})
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["2", "True"]
    assert reaper._descendants_by_children(os.getpid()) is not None or not os.path.exists("/proc/self/task")


@pytest.mark.parametrize("program", ["sh", "/bin/sh"])  # a name looked up in PATH, a path
def test_a_keepers_reviewer_is_reaped_by_the_keeper_alone(tmp_path, monkeypatch, program):
    # the keeper learns its reviewer's exit code by reaping it: nothing else in the keeper
    # may reap it first (a dropped subprocess.Popen did, once the reviewer had ended,
    # at the next Popen's clean-up: the keeper then waited for an exit it never saw)
    from spar.proc.guard import _spawn

    monkeypatch.chdir(tmp_path)  # _spawn moves into the reviewer's folder, as a keeper does
    (tmp_path / "here").mkdir()
    pid = _spawn([program, "-c", "exit 3"], str(tmp_path / "here"), {"PATH": os.environ["PATH"]})
    os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)  # ended, not reaped
    subprocess.run(["true"], check=True)  # a later Popen reaps what dropped ones left running
    assert os.waitpid(pid, 0) == (pid, 3 << 8)


def test_a_keeper_reports_the_first_error_other_than_not_there(tmp_path, monkeypatch):
    from spar.proc.guard import _spawn

    monkeypatch.chdir(tmp_path)
    (tmp_path / "bin1").mkdir()
    (tmp_path / "bin2").mkdir()
    (tmp_path / "bin2" / "tool").write_text("#!/bin/sh\n")  # there, but not executable
    env = {"PATH": f"{tmp_path / 'missing'}:{tmp_path / 'bin1'}:{tmp_path / 'bin2'}"}
    with pytest.raises(PermissionError):
        _spawn(["tool"], str(tmp_path), env)
    with pytest.raises(FileNotFoundError):
        _spawn(["nothing-of-that-name"], str(tmp_path), env)
    with pytest.raises(FileNotFoundError):
        _spawn(["tool"], str(tmp_path), {"PATH": ""})
