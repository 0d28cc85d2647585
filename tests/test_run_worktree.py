"""Uncommitted work in `spar run`: named when not reviewed, reviewed with --worktree (issue 22 point 2)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.gitrepo import git, git_env
from tests.runsetup import finding, make_setup, result

pytestmark = pytest.mark.slow


def load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def porcelain(repo: Path) -> str:
    """`git status --porcelain` without letting it refresh the index (that would change its bytes)."""
    env = {**git_env(), "GIT_OPTIONAL_LOCKS": "0"}
    return subprocess.run(["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=all"],
                          capture_output=True, text=True, env=env, check=True).stdout


def refs(repo: Path) -> str:
    return git(repo, "for-each-ref") + git(repo, "rev-parse", "HEAD") + git(repo, "symbolic-ref", "HEAD")


def gate_head_reasons(s, out: Path) -> list[str]:
    proc = s.spar("gate", "reviews/r1", "--out", str(out))
    assert proc.returncode in (0, 1), proc.stderr.decode()
    return [reason for reason in load(out)["reasons"] if "reviewed head" in reason or "reviewed the" in reason]


def test_uncommitted_changes_are_named_on_stderr_in_summary_and_round_json(tmp_path):
    """Issue 22 point 2: a round of HEAD says how many changed tracked files and untracked
    files it does not review, on the terminal, in summary.md and in round.json."""
    s = make_setup(tmp_path)
    s.configure([s.answer_reviewer("alpha", result(findings=[]))])
    clean = s.run(out="reviews/r0")
    assert clean.returncode == 0, clean.stderr.decode()
    assert "working tree" not in clean.stderr.decode()
    assert load(s.repo / "reviews" / "r0" / "round.json")["uncommitted"] == {"modified": 0, "untracked": 0}

    (s.repo / "calc.py").write_text("def add(a, b):\n    return a - b\n", encoding="utf-8")
    (s.repo / "tests" / "test_calc.py").unlink()
    (s.repo / "notes.txt").write_text("not committed\n", encoding="utf-8")
    proc = s.run(out="reviews/r1")
    assert proc.returncode == 0, proc.stderr.decode()
    said = ("the working tree has 2 changed tracked files and 1 untracked file that this round does not "
            "review")
    assert f"spar: warning: {said}" in proc.stderr.decode()
    folder = s.repo / "reviews" / "r1"
    rj = load(folder / "round.json")
    assert rj["head"] == s.head and rj["head_source"] == "commit"
    assert rj["uncommitted"] == {"modified": 2, "untracked": 1}
    assert "head_tree" not in rj
    assert f"- Working tree: {said}" in (folder / "summary.md").read_text(encoding="utf-8")
    # a commit named by --head has no working tree at stake
    named = s.run("--head", s.head, out="reviews/r2")
    assert named.returncode == 0 and "working tree" not in named.stderr.decode()
    assert load(s.repo / "reviews" / "r2" / "round.json")["uncommitted"] is None


def test_worktree_reviews_an_untracked_file_and_leaves_index_files_and_refs(tmp_path):
    """Issue 22 point 2: --worktree's head is a commit of the working tree; a finding in an
    untracked file is located and recorded; the index's bytes, the status and the refs stay."""
    s = make_setup(tmp_path)
    (s.repo / "extra.py").write_text("def half(x):\n    return x / 0\n", encoding="utf-8")
    (s.repo / "calc.py").write_text("def add(a, b):\n    return a + b + 0\n", encoding="utf-8")
    item = finding(location="head/extra.py:2", claim="divides by zero", link_kind="none", link="")
    s.configure([s.answer_reviewer("alpha", result(findings=[item]))])
    index = s.repo / ".git" / "index"
    before = (index.read_bytes(), porcelain(s.repo), refs(s.repo))
    proc = s.run("--worktree")
    after = (index.read_bytes(), porcelain(s.repo), refs(s.repo))
    assert proc.returncode == 0, proc.stderr.decode()
    assert after == before
    assert before[1] == " M calc.py\n?? extra.py\n"

    folder = s.repo / "reviews" / "r1"
    rj = load(folder / "round.json")
    assert rj["head_source"] == "worktree" and rj["head_parent"] == s.head and rj["head"] != s.head
    assert rj["head_tree"] == git(s.repo, "rev-parse", f"{rj['head']}^{{tree}}").strip()
    assert rj["base"] == s.head  # the default base: what the working tree is built on
    assert rj["uncommitted"] == {"modified": 1, "untracked": 1}
    assert rj["reviewers"][0]["status"] == "completed"
    [found] = load(folder / "findings.json")
    assert (found["path"], found["location_unreadable"], found["claim"]) == ("extra.py", False, "divides by zero")
    assert (folder / "workspace" / "head" / "extra.py").read_text() == "def half(x):\n    return x / 0\n"
    assert "return a + b + 0" in (folder / "packet.md").read_text(encoding="utf-8")
    said = f"the head {rj['head']} is the working tree (1 changed tracked file, 1 untracked file), made a commit on"
    assert said in proc.stderr.decode() and said in (folder / "summary.md").read_text(encoding="utf-8")

    # the gate: stale while HEAD lacks the changes, current once exactly that tree is committed
    # (another commit ID), stale again after any other change
    [stale] = gate_head_reasons(s, tmp_path / "gate1.json")
    # named as what it is: the commit Spar made of the working tree is no commit of the user's
    assert stale == (f"round reviews/r1 reviewed the working tree snapshot of {s.head} (spar run --worktree), "
                     f"but HEAD of {s.repo} is {s.head}, whose files differ from it; review it with a new round "
                     "(spar run), or name the head the rounds reviewed with --expect-head")
    assert rj["head"] not in stale
    git(s.repo, "add", "--all")
    git(s.repo, "commit", "-q", "-m", "what was reviewed")
    assert git(s.repo, "rev-parse", "HEAD").strip() != rj["head"]
    assert gate_head_reasons(s, tmp_path / "gate2.json") == []
    (s.repo / "extra.py").write_text("def half(x):\n    return x / 2\n", encoding="utf-8")
    git(s.repo, "commit", "-q", "-am", "another change")
    assert gate_head_reasons(s, tmp_path / "gate3.json") != []


def test_worktree_is_not_combined_with_a_named_head(tmp_path):
    s = make_setup(tmp_path)
    s.configure([s.answer_reviewer("alpha", result(findings=[]))])
    for option in ("--head", "--expect-head"):
        proc = s.run("--worktree", option, "HEAD")
        assert proc.returncode == 64 and b"--worktree reviews the working tree" in proc.stderr
    assert not os.path.exists(s.repo / "reviews")
