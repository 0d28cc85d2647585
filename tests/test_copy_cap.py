"""A round's copies are bounded: a file over `max_copy_bytes` is a note saying its size, the
packet and coverage say so; --worktree counts a file's real size and never reads a big one
whole; a nested repository --worktree cannot review is named."""

from __future__ import annotations

import json
import os
import resource
from pathlib import Path

import pytest

from spar import git
from spar.config.model import DEFAULT_MAX_COPY_BYTES
from spar.workspace.build import build_workspace, plan_commit
from spar.workspace.treeplan import workspace_warnings
from tests.gitrepo import commit, make_repo
from tests.gitrepo import git as run_git
from tests.runsetup import make_setup, result

CAP = 4096


def load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def test_a_file_over_the_cap_is_a_note_in_the_copy(tmp_path):
    repo = make_repo(tmp_path, {"small.py": "x = 1\n", "zeros.bin": b"\0" * (CAP + 1)})
    head = run_git(repo, "rev-parse", "HEAD").strip()
    plan = plan_commit(repo, head, CAP)
    assert plan.too_large == {"zeros.bin": CAP + 1}
    assert [e.path for e in plan.copied] == ["small.py"]
    build_workspace(repo, head, head, tmp_path / "ws", {"head": plan, "base": plan})
    note = (tmp_path / "ws" / "head" / "zeros.bin").read_text(encoding="utf-8")
    assert f"{CAP + 1} bytes" in note and f"{CAP}-byte cap" in note and "not copied" in note
    assert (tmp_path / "ws" / "head" / "small.py").read_text(encoding="utf-8") == "x = 1\n"
    assert plan.notes("head") == [f"`head/zeros.bin`: {CAP + 1} bytes, over the {CAP}-byte cap per file "
                                  "(`max_copy_bytes`): not copied; the copy holds a small file saying so"]
    (warning,) = workspace_warnings({"head": plan})
    assert f"over the {CAP}-byte cap" in warning and f"head/zeros.bin ({CAP + 1} bytes)" in warning
    # without a cap (or at it) every file is copied as it is
    assert plan_commit(repo, head, CAP + 1).too_large == {} and plan_commit(repo, head).too_large == {}


def test_the_default_cap_is_sized_for_source_code():
    assert DEFAULT_MAX_COPY_BYTES == 16 * 1024 * 1024


def _config(s, *, cap: int, reviewer: dict | None = None) -> None:
    s.configure([reviewer or {"name": "claude", "preset": "claude"}])
    s.config.write_text(f"max_copy_bytes = {cap}\n" + s.config.read_text(encoding="utf-8"), encoding="utf-8")


@pytest.mark.slow
def test_a_round_says_what_it_did_not_copy_and_never_counts_it_as_read(tmp_path):
    s = make_setup(tmp_path)
    _config(s, cap=CAP)
    big = b"\0" + b"data\n" * CAP  # binary: its diff shows no text either
    head = commit(s.repo, {"big.bin": big, "small.py": "y = 2\n"}, message="big")
    ws = s.repo / "reviews" / "r1" / "workspace"
    s.scenario({"claude": {"result": result(head=head, findings=[]), "tools": [
        {"name": "Read", "input": {"file_path": str(ws / "head" / "big.bin")}},
        {"name": "Read", "input": {"file_path": str(ws / "head" / "small.py")}}]}})
    proc = s.run("--base", s.head, "--head", head)
    assert proc.returncode == 0, proc.stderr.decode()
    rj = load(s.repo / "reviews" / "r1" / "round.json")
    assert rj["unseen"] == ["big.bin"]
    assert any(f"head/big.bin ({len(big)} bytes)" in w for w in rj["warnings"])
    assert "not copied" in (ws / "head" / "big.bin").read_text(encoding="utf-8")
    packet = (s.repo / "reviews" / "r1" / "packet.md").read_text(encoding="utf-8")
    assert f"`head/big.bin`: {len(big)} bytes, over the {CAP}-byte cap per file" in packet
    shown = s.spar("config")
    assert f"max_copy_bytes   {CAP} " in shown.stdout.decode()


@pytest.mark.slow
def test_worktree_counts_a_sparse_file_by_its_size_and_never_reads_it_whole(tmp_path):
    """An untracked 2 GiB sparse file (no blocks on disk): streamed into git, not copied."""
    s = make_setup(tmp_path)
    _config(s, cap=CAP, reviewer=s.answer_reviewer("alpha", result(findings=[])))
    size = 2 << 30
    with open(s.repo / "sparse.img", "wb") as f:
        f.truncate(size)
    assert os.stat(s.repo / "sparse.img").st_blocks == 0
    proc = s.run("--worktree")
    assert proc.returncode == 0, proc.stderr.decode()
    rj = load(s.repo / "reviews" / "r1" / "round.json")
    assert any(f"head/sparse.img ({size} bytes)" in w for w in rj["warnings"])
    copy = s.repo / "reviews" / "r1" / "workspace" / "head" / "sparse.img"
    assert os.stat(copy).st_size < 1024
    # no child of this test (git, spar) held anything near the file in memory
    assert resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss < 512 * 1024  # KiB


@pytest.mark.slow
def test_worktree_names_the_nested_repositories_it_cannot_review(tmp_path):
    s = make_setup(tmp_path)
    s.configure([s.answer_reviewer("alpha", result(findings=[]))])
    nested = make_repo(s.repo, {"hidden.py": "import os; os.system('x')\n"}, name="vendor/lib")
    assert (nested / ".git").is_dir()
    # a `.git` file naming a repository elsewhere: a folder git records as a commit too
    elsewhere = make_repo(tmp_path, {"other.py": "x = 1\n"}, name="elsewhere")
    linked = s.repo / "linked"
    linked.mkdir()
    (linked / ".git").write_text(f"gitdir: {elsewhere / '.git'}\n", encoding="utf-8")
    proc = s.run("--worktree")
    assert proc.returncode == 0, proc.stderr.decode()
    said = ("--worktree: 2 folder(s) of the working tree hold a git repository of their own and were not "
            "reviewed (git records only their commit, none of their files): linked, vendor/lib")
    assert f"spar: warning: {said}" in proc.stderr.decode()
    assert said in load(s.repo / "reviews" / "r1" / "round.json")["warnings"]


def test_a_tracked_submodule_is_not_named(tmp_path):
    repo = make_repo(tmp_path, {"a.py": "a = 1\n"})
    make_repo(repo, {"x": "x\n"}, name="sub")
    run_git(repo, "add", "sub")
    run_git(repo, "commit", "-q", "-m", "submodule")
    head = run_git(repo, "rev-parse", "HEAD").strip()
    assert git.snapshot_worktree(repo, head).nested == ()
    make_repo(repo, {"y": "y\n"}, name="new")
    assert git.snapshot_worktree(repo, head).nested == ("new",)
