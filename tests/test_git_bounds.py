"""A git query that never ends (a FIFO `.gitignore` blocks git's open of it): a short limit
and a plain error, and no git left running when Spar is stopped by SIGTERM or SIGINT."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from spar import git
from spar.commands import doctor
from tests.gitrepo import commit, make_repo
from tests.gitrepo import git as run_git
from tests.proctools import gone, wait_for
from tests.runsetup import make_setup

SHORT = 2.0  # seconds: the quick queries' limit in these tests (each waits on a FIFO for it)


def _fifo_ignore(repo: Path) -> None:
    (repo / ".gitignore").unlink()
    os.mkfifo(repo / ".gitignore")


def _children(pid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(stat[1]) == pid:
                out.append(int(entry))
    return out


def _git_on_fifo(pid: int) -> int | None:
    """A child of `pid` waiting to open a FIFO (its kernel wait channel), or None."""
    for child in _children(pid):
        try:
            if Path(f"/proc/{child}/wchan").read_text() == "wait_for_partner":
                return child
        except OSError:
            continue
    return None


@pytest.mark.slow
def test_run_refuses_plainly_when_git_status_never_ends(tmp_path):
    s = make_setup(tmp_path)
    s.configure([s.example_reviewer()])
    _fifo_ignore(s.repo)
    # spar itself, its quick limit made short so that the test does not wait 30 s for it
    code = f"import sys, spar.git as g; g.QUICK_LIMIT = {SHORT}; from spar.cli import main; sys.exit(main())"
    proc = subprocess.run([sys.executable, "-c", code, "run", "--stage", "code", "--out", "reviews/r1"],
                          cwd=s.repo, env=s.env, capture_output=True, timeout=120)
    err = proc.stderr.decode()
    assert proc.returncode == 65, err
    assert "Traceback" not in err and "internal error" not in err
    assert "uncommitted work: git status did not finish within 2s" in err
    assert not (s.repo / "reviews" / "r1").exists()


def test_doctor_reports_the_series_plainly(tmp_path, monkeypatch, capsys):
    s = make_setup(tmp_path)
    s.configure([s.example_reviewer()])
    _fifo_ignore(s.repo)
    monkeypatch.setattr(git, "QUICK_LIMIT", SHORT)
    for key, value in s.env.items():
        monkeypatch.setenv(key, value)
    code = doctor.main(["-C", str(s.repo), "--format", "json"])
    out = capsys.readouterr().out
    assert code == 1
    assert '"check": "series"' in out and "git check-ignore did not finish within 2s" in out


@pytest.mark.slow
@pytest.mark.parametrize(("command", "signum"), [
    (["run", "--stage", "code", "--out", "reviews/r1"], signal.SIGTERM),
    (["run", "--stage", "code", "--out", "reviews/r1"], signal.SIGINT),
    (["doctor"], signal.SIGTERM),
    (["doctor"], signal.SIGINT),
])
def test_stopping_spar_ends_its_blocked_git(tmp_path, command, signum):
    s = make_setup(tmp_path)
    s.configure([s.example_reviewer()])
    _fifo_ignore(s.repo)
    proc = subprocess.Popen([sys.executable, "-m", "spar", *command], cwd=s.repo, env=s.env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert wait_for(lambda: _git_on_fifo(proc.pid) is not None)
        child = _git_on_fifo(proc.pid)
        assert child is not None
        proc.send_signal(signum)
        _out, err = proc.communicate(timeout=120)
        assert proc.returncode == 128 + signum, err.decode()
        assert b"Traceback" not in err
        assert gone(child)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def test_an_interrupted_diff_leaves_no_git_running(tmp_path, monkeypatch):
    """Ctrl-C while the packet's diff is read ends both gits (the patch's and the stat's)."""
    repo = make_repo(tmp_path, {"a.txt": "a\n"})
    base = run_git(repo, "rev-parse", "HEAD").strip()
    head = commit(repo, {"a.txt": "b\n"})
    marker = f"spar-test-blocked-{os.getpid()}"
    # two programs standing in for git that never finish, as a git stuck on a dead file system
    block = [sys.executable, "-c", f"import sys, time; sys.argv.append({marker!r}); print('x', flush=True); "
             "time.sleep(600)", marker]
    git.diff_with_stat(repo, base, head, 1 << 20)  # where the objects are: asked once, of git itself
    monkeypatch.setattr(git, "_argv", lambda repo, args: block)
    stand_ins: list[int] = []

    def interrupt() -> None:
        wait_for(lambda: len(_marked(marker)) == 2)
        stand_ins.extend(_marked(marker))
        os.kill(os.getpid(), signal.SIGINT)

    sender = threading.Thread(target=interrupt)
    sender.start()
    with pytest.raises(KeyboardInterrupt):
        git.diff_with_stat(repo, base, head, 1 << 20)
    sender.join()
    assert len(stand_ins) == 2 and all(gone(pid) for pid in stand_ins)


def _marked(marker: str) -> list[int]:
    return [pid for pid in _children(os.getpid())
            if marker.encode() in Path(f"/proc/{pid}/cmdline").read_bytes()]
