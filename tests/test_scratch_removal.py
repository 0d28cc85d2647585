"""A reviewer's scratch HOME is removed whatever the reviewer left in it
(spar/proc/tree_removal.py, used by spar/round/sandboxing.py): folders nested deeper than
recursion and paths allow, folders without permissions, links out of the tree, a FIFO. The
round is recorded and every other reviewer's findings are kept."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import pytest

from spar.proc.tree_removal import remove_tree
from spar.round.sandboxing import choose_sandbox, remove_scratch
from tests.runsetup import ROOT, finding, make_setup, result

RUNUSER = shutil.which("runuser") or shutil.which("runuser", path="/usr/sbin:/sbin")

# builds the hostile tree in the folder argv[1] names (its HOME when that is "$HOME"), linking to argv[2]
BUILD = r'''
import os, sys
top = os.environ["HOME"] if sys.argv[1] == "$HOME" else sys.argv[1]
depth = int(sys.argv[3])
fd = os.open(top, os.O_RDONLY)
for _ in range(depth):
    os.mkdir("d", dir_fd=fd)
    inner = os.open("d", os.O_RDONLY, dir_fd=fd)
    os.close(fd)
    fd = inner
os.close(os.open("deepest", os.O_CREAT | os.O_WRONLY, 0o600, dir_fd=fd))
os.fchmod(fd, 0)
os.close(fd)
os.makedirs(os.path.join(top, "u", "v", "w"))
open(os.path.join(top, "u", "v", "w", "x"), "w").close()
for folder, mode in (("u/v/w", 0), ("u/v", 0o500), ("u", 0)):
    os.chmod(os.path.join(top, folder), mode)
os.symlink(sys.argv[2], os.path.join(top, "out"))
os.symlink(os.path.join(sys.argv[2], "keep"), os.path.join(top, "out-file"))
os.mkfifo(os.path.join(top, "fifo"))
os.chmod(top, 0)
if len(sys.argv) > 4:
    print(open(sys.argv[4]).read())
'''


def _outside(tmp_path: Path) -> Path:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("kept")
    (outside / "sub").mkdir()
    (outside / "sub" / "keep").write_text("kept")
    return outside


def test_a_hostile_tree_is_removed_and_links_are_not_followed(tmp_path):
    outside = _outside(tmp_path)
    top = tmp_path / "home"
    top.mkdir()
    subprocess.run([sys.executable, "-c", BUILD, str(top), str(outside), "10000"], check=True, timeout=300)
    removal = remove_tree(str(top))
    assert removal.text() == "" and removal.count == 0
    assert not os.path.lexists(top)
    assert (outside / "keep").read_text() == "kept" and (outside / "sub" / "keep").read_text() == "kept"


@pytest.fixture
def open_tmp():
    """A temporary folder another user can reach (pytest's own is the test user's alone)."""
    folder = Path(tempfile.mkdtemp(prefix="spar-removal-"))
    os.chmod(folder, 0o755)
    yield folder
    remove_tree(str(folder))


def test_as_an_unprivileged_user_too(open_tmp):
    """Without root's override, the unreadable and unwritable folders must be given back first."""
    if os.geteuid() != 0 or RUNUSER is None:
        pytest.skip("switching to another user needs root and runuser")
    python = f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}"
    if not os.path.exists(python):
        pytest.skip(f"no {python} that nobody may run")
    tmp_path = open_tmp
    outside = _outside(tmp_path)
    top = tmp_path / "home"
    top.mkdir()
    subprocess.run(["chown", "-R", "nobody", str(tmp_path)], check=True)
    remover = ("import sys; sys.path.insert(0, sys.argv[2]); from spar.proc.tree_removal import remove_tree; "
               "r = remove_tree(sys.argv[1]); print(r.count, r.timed_out)")
    for code, args in ((BUILD, [str(top), str(outside), "3000"]), (remover, [str(top), str(ROOT)])):
        done = subprocess.run([RUNUSER, "-u", "nobody", "--", python, "-c", code, *args],
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["0", "False"]
    assert not os.path.lexists(top)
    assert (outside / "keep").read_text() == "kept" and (outside / "sub" / "keep").read_text() == "kept"


def test_what_cannot_be_removed_is_said_not_raised(tmp_path):
    top = tmp_path / "home"
    (top / "a").mkdir(parents=True)
    (top / "a" / "f").write_text("x")
    gone = remove_tree(str(tmp_path / "missing"))  # a folder already gone is no failure
    assert gone.count == 0 and gone.text() == ""
    removal = remove_tree(str(top), seconds=-1)  # no time at all: the walk stops at once
    assert removal.timed_out and "removal stopped after" in removal.text()
    assert os.path.exists(top / "a" / "f")
    assert remove_tree(str(top)).text() == "" and not os.path.lexists(top)
    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("x")
    said = remove_scratch(str(not_a_folder))  # what the round warns with
    assert said == f"the reviewer's scratch HOME {not_a_folder} was not removed whole: 1 entries could not be " \
                   "removed (e.g. .)"


def _as(user: str, s, python: str) -> None:
    """Let `user` run Spar on the setup: its files its own, an interpreter and git it may run,
    bwrap on PATH, Spar and its dependencies importable."""
    tools = s.tmp / "bin"
    tools.mkdir()
    for name, target in (("git", shutil.which("git")), ("python3", python), ("bwrap", shutil.which("bwrap"))):
        (tools / name).symlink_to(target)
    s.env["PATH"] = os.pathsep.join([str(tools), "/usr/bin", "/bin"])
    if user != "root":
        s.env["PYTHONPATH"] = os.pathsep.join([str(ROOT), sysconfig.get_paths()["purelib"]])
        subprocess.run(["chown", "-R", user, str(s.tmp)], check=True)


@pytest.mark.parametrize("user", ["root", "nobody"])
def test_a_round_survives_a_reviewer_that_leaves_a_hostile_home(open_tmp, user):
    if choose_sandbox("auto", os.environ.get("PATH")).bwrap is None:
        pytest.skip("bwrap cannot make a sandbox here (.ci/run installs bubblewrap)")
    python = sys.executable
    if user != "root":
        python = f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}"
        if os.geteuid() != 0 or RUNUSER is None or not os.path.exists(python):
            pytest.skip(f"running Spar as {user} needs root, runuser and {python}")
    s = make_setup(open_tmp)
    outside = _outside(open_tmp)
    answer = s.answers / "hostile.json"
    answer.write_text(json.dumps(result(head=s.head, findings=[])))
    hostile = {"name": "hostile", "preset": "command",
               "argv": [python, "-c", BUILD, "$HOME", str(outside), "3000", str(answer), "{prompt}"]}
    finder = s.answer_reviewer("finder", result(findings=[finding()]), copy=False)
    finder["argv"][0] = python
    s.configure([hostile, finder], sandbox="auto")
    scratch_parent = open_tmp / "tmp"
    scratch_parent.mkdir()
    s.env["TMPDIR"] = str(scratch_parent)
    _as(user, s, python)
    argv = [python, "-m", "spar", "run", "--stage", "code", "--out", "reviews/r1"]
    if user != "root":
        argv = [RUNUSER, "-u", user, "--", "/usr/bin/env", "-i", *(f"{k}={v}" for k, v in s.env.items()), *argv]
    try:
        proc = subprocess.run(argv, cwd=s.repo, env=s.env, capture_output=True, timeout=300)
    finally:  # a tree Spar failed to remove would break the clean-up of the test's folder
        for left in scratch_parent.glob("spar-home-*"):
            remove_tree(str(left))
            (scratch_parent / f"{left.name}.left").touch()
    assert proc.returncode == 0, proc.stderr.decode()
    round_dir = s.repo / "reviews" / "r1"
    rj = json.loads((round_dir / "round.json").read_text())
    assert rj["sandbox"]["kind"] == "bwrap"
    assert {r["name"]: r["status"] for r in rj["reviewers"]} == {"hostile": "completed", "finder": "completed"}
    findings = json.loads((round_dir / "findings.json").read_text())
    assert [f["claim"] for f in findings] == ["divide by zero"]
    assert not list(scratch_parent.glob("*.left"))  # every scratch HOME was gone
    assert (outside / "keep").read_text() == "kept" and (outside / "sub" / "keep").read_text() == "kept"
