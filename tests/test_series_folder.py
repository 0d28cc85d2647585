"""A series folder inside a repository is where the user named it: no symbolic link on its
way below the repository's top, and never a tracked path (issue 25 hole 3)."""

from __future__ import annotations

import os

import pytest

from spar.errors import Refused
from spar.records import paths
from tests.gitrepo import commit, git, make_repo
from tests.runsetup import make_setup


def _listing(root):
    return sorted(os.path.relpath(os.path.join(d, n), root) for d, dirs, files in os.walk(root) for n in dirs + files)


@pytest.mark.slow  # a real `spar run`
def test_committed_reviews_link_refuses_the_run_before_anything_is_written(tmp_path):
    """issue 25 hole 3, as found: a cloned repository commits `reviews -> ../outside`;
    `spar run --out reviews/r1` is refused (65) naming the link, and nothing is written at
    its target (no round, no workspace copy), although the target is in no repository."""
    s = make_setup(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    head = commit(s.repo, symlinks={"reviews": "../outside"}, message="a link where the records go")
    assert git(s.repo, "ls-files", "reviews").strip() == "reviews"
    s.configure([s.example_reviewer()])
    run = s.run("--base", s.head, "--head", head, out="reviews/r1")
    assert run.returncode == 65, run.stderr.decode()
    err = run.stderr.decode()
    assert "goes through the symbolic link" in err and str(s.repo / "reviews") in err
    assert _listing(outside) == []
    assert not s.fake_calls()


def test_link_below_the_top_is_refused_for_every_record_path(tmp_path):
    """issue 25 hole 3: the same rule for run --out, a series (extend) and gate --out, at any
    depth below the repository's top; links above the top stay the user's own."""
    repo = make_repo(tmp_path, {".gitignore": "reviews/\ngates/\n"})
    (tmp_path / "elsewhere").mkdir()
    (repo / "reviews").mkdir()
    (repo / "reviews" / "deep").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    (repo / "gates").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    with pytest.raises(Refused, match="goes through the symbolic link"):
        paths.check_run_out(repo / "reviews" / "deep" / "s" / "r1")
    with pytest.raises(Refused, match="goes through the symbolic link"):
        paths.check_record_path(repo / "reviews" / "deep", kind="series")
    with pytest.raises(Refused, match="goes through the symbolic link"):
        paths.check_gate_out(repo / "gates" / "g.json", [], [])
    via = tmp_path / "via"
    via.symlink_to(repo, target_is_directory=True)  # a link to the repository itself
    paths.check_run_out(via / "reviews" / "r1")


def test_tracked_path_is_never_a_series_folder(tmp_path):
    """issue 25 hole 3: a series folder that the index holds as an entry of its own (here a
    file `reviews` in the index, a folder on disk) is refused; tracked files beside it are
    not its business."""
    repo = make_repo(tmp_path, {".gitignore": "reviews/*\n!reviews/README.md\n", "reviews/README.md": "ours\n",
                                "data.txt": "x\n"})
    paths.check_run_out(repo / "reviews" / "r1")  # a tracked README beside the rounds is fine
    blob = git(repo, "hash-object", "-w", "data.txt").strip()
    git(repo, "rm", "-q", "--cached", "reviews/README.md")
    git(repo, "update-index", "--add", "--cacheinfo", f"100644,{blob},reviews")
    assert (repo / "reviews").is_dir() and git(repo, "ls-files", "reviews").strip() == "reviews"
    with pytest.raises(Refused, match=r"is a path the git repository .* tracks"):
        paths.check_run_out(repo / "reviews" / "r1")
