"""A later round's workspace as a btrfs snapshot of the series' tree cache
(spar/round/treecache.py): equal to a fresh copy, checked before use, never
carrying a write from one round (or into the cache) to another; nothing of it
where the file system is not btrfs or subvolumes may not be destroyed.

The btrfs tests make a file system on a loop device (root, mkfs.btrfs from
btrfs-progs; .ci/run installs it) and skip without them."""

from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path

import pytest

from spar import git as spar_git
from spar.round import subvolume, treecache
from spar.round.treecache import TREE_FOLDER, prepare_workspace
from spar.round.workspace import build_workspace, workspace_state
from tests.gitrepo import commit, git, make_repo
from tests.loopfs import folder_for_test, loop_mounted
from tests.spies import calls_to
from tests.test_workspace import make_writable
from tests.test_workspace_reuse import tree_of

_NO_PARENT = "0" * 32


@pytest.fixture(scope="module")
def btrfs(tmp_path_factory):
    """A folder on a fresh btrfs on a loop device (root only); unmounted at the end."""
    mkfs = ["mkfs.btrfs", "-q", "-f"]
    with loop_mounted(tmp_path_factory.mktemp("btrfs"), mkfs, "btrfs-progs", "a file system with snapshots") as mnt:
        yield mnt


def _make_series(root: Path) -> tuple[Path, str, str, str, Path]:
    """A repository and its series folder. head2, against head1: a file changed, one
    added, one removed with its folder, a file become a folder, a mode changed, a link
    retargeted, a link that now leads out (written as a note), and one that no longer does."""
    repo = make_repo(root, {"README.md": "hello\n" * 50, "src/app.py": "v1\n", "src/lib.py": "lib\n",
                            "gone/deep/only.txt": "only\n", "tool.sh": "#!/bin/sh\n", "node": "a file\n",
                            "dup/a": "same\n", "dup/b": "same\n"})
    base = git(repo, "rev-parse", "HEAD").strip()
    head1 = commit(repo, {"src/app.py": "v2\n"},
                   symlinks={"link": "src/lib.py", "inside": "README.md", "outside": "/etc/passwd"})
    git(repo, "update-index", "--chmod=+x", "src/lib.py")
    commit(repo, remove=["gone", "node", "inside", "outside"])
    head2 = commit(repo, {"src/app.py": "v3\n", "new/file.txt": "new\n", "node/child.txt": "now a folder\n"},
                   symlinks={"link": "src/app.py", "inside": "/etc/hosts", "outside": "README.md"})
    series = root / "series"
    for name in ("r1", "r2", "r3"):
        (series / name).mkdir(parents=True)
    return repo, base, head1, head2, series


@pytest.fixture
def bseries(btrfs, request):
    with folder_for_test(btrfs, request) as root:
        yield _make_series(root)


def _prepare(repo: Path, base: str, head: str, workspace: Path, extra: dict[str, bytes] | None = None):
    return prepare_workspace(repo, base, head, workspace, None, {}, extra or {}, None)


def _fresh(repo: Path, base: str, head: str, where: Path, extra: dict[str, bytes] | None = None) -> dict:
    build_workspace(repo, base, head, where, extra=extra)
    return tree_of(where)


def _cache_tree(series: Path) -> Path:
    return series / TREE_FOLDER / "tree"


def test_a_later_round_is_a_checked_snapshot_equal_to_a_fresh_copy(bseries, tmp_path, monkeypatch):
    repo, base, head1, head2, series = bseries
    state1 = _prepare(repo, base, head1, series / "r1" / "workspace", {"change.diff": b"one\n"})
    assert state1 == workspace_state(series / "r1" / "workspace")
    r1_tree = tree_of(series / "r1" / "workspace")
    cached = subvolume.info(str(_cache_tree(series)))
    asked = calls_to(monkeypatch, spar_git, "stream_blobs", lambda _repo, shas: list(shas))
    state2 = _prepare(repo, base, head2, series / "r2" / "workspace", {"change.diff": b"two\n", "more": b"m\n"})
    taken = subvolume.info(str(series / "r2" / "workspace"))
    assert taken.parent_uuid == cached.uuid  # a snapshot of the cache round 1 left
    assert tree_of(series / "r2" / "workspace") == _fresh(repo, base, head2, tmp_path / "fresh",
                                                          {"change.diff": b"two\n", "more": b"m\n"})
    assert state2 == workspace_state(series / "r2" / "workspace")
    before = {(e.path, e.mode, e.sha) for e in spar_git.ls_tree(repo, head1)}
    changed = {e.sha for e in spar_git.ls_tree(repo, head2) if (e.path, e.mode, e.sha) not in before}
    assert asked and set(asked[0]) <= changed  # git gave only the entries that changed (base did not)
    assert tree_of(series / "r1" / "workspace") == r1_tree
    # the cache now holds round 2's copy, and a round of round 1's commits goes back
    assert subvolume.info(str(_cache_tree(series))).parent_uuid == taken.uuid
    _prepare(repo, base, head1, series / "r3" / "workspace", {"change.diff": b"one\n"})
    assert subvolume.info(str(series / "r3" / "workspace")).parent_uuid != _NO_PARENT
    assert tree_of(series / "r3" / "workspace") == r1_tree


def _write_into(path: Path) -> None:
    os.chmod(path.parent, 0o755)
    os.chmod(path, 0o644)
    with open(path, "r+b") as f:
        f.write(b"X")


def test_a_write_into_one_rounds_copy_reaches_no_other(bseries, tmp_path):
    repo, base, head1, head2, series = bseries
    _prepare(repo, base, head1, series / "r1" / "workspace")
    _write_into(series / "r1" / "workspace" / "head" / "README.md")  # a reviewer running as root
    _prepare(repo, base, head2, series / "r2" / "workspace")
    assert subvolume.info(str(series / "r2" / "workspace")).parent_uuid != _NO_PARENT
    assert tree_of(series / "r2" / "workspace") == _fresh(repo, base, head2, tmp_path / "fresh")
    _write_into(series / "r2" / "workspace" / "head" / "README.md")
    _prepare(repo, base, head2, series / "r3" / "workspace")
    assert tree_of(series / "r3" / "workspace") == tree_of(tmp_path / "fresh")


def _tamper_data(tree: Path) -> None:
    _write_into(tree / "head" / "README.md")


def _tamper_data_keeping_times(tree: Path) -> None:
    path = tree / "head" / "README.md"
    st = os.lstat(path)
    _write_into(path)
    os.chmod(path, 0o444)
    os.chmod(path.parent, 0o555)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def _tamper_mode(tree: Path) -> None:
    os.chmod(tree / "head" / "src" / "app.py", 0o755)


def _tamper_add(tree: Path) -> None:
    os.chmod(tree / "head", 0o755)
    (tree / "head" / "planted.txt").write_text("planted\n")


@pytest.mark.parametrize("tamper", [_tamper_data, _tamper_data_keeping_times, _tamper_mode, _tamper_add])
def test_a_changed_cache_is_not_used(bseries, tmp_path, tamper):
    """Anyone (root included) changing the cache moves its ctransid: the round copies
    file by file instead, equal to a fresh copy, and the cache becomes that copy."""
    repo, base, head1, head2, series = bseries
    _prepare(repo, base, head1, series / "r1" / "workspace")
    tamper(_cache_tree(series))
    state = _prepare(repo, base, head2, series / "r2" / "workspace")
    assert subvolume.info(str(series / "r2" / "workspace")).parent_uuid == _NO_PARENT  # built anew
    assert tree_of(series / "r2" / "workspace") == _fresh(repo, base, head2, tmp_path / "fresh")
    assert state == workspace_state(series / "r2" / "workspace")
    assert subvolume.info(str(_cache_tree(series))).parent_uuid == subvolume.info(
        str(series / "r2" / "workspace")).uuid


def test_a_failure_while_updating_the_snapshot_builds_the_copy_anew(bseries, tmp_path, monkeypatch):
    repo, base, head1, head2, series = bseries
    _prepare(repo, base, head1, series / "r1" / "workspace")

    def fails(*_args, **_kwargs):
        raise OSError(errno.EIO, "simulated")

    monkeypatch.setattr(treecache, "update_workspace", fails)
    _prepare(repo, base, head2, series / "r2" / "workspace")
    assert subvolume.info(str(series / "r2" / "workspace")).parent_uuid == _NO_PARENT
    assert tree_of(series / "r2" / "workspace") == _fresh(repo, base, head2, tmp_path / "fresh")


def test_a_cache_of_another_repository_is_not_used(bseries, tmp_path):
    repo, base, head1, head2, series = bseries
    _prepare(repo, base, head1, series / "r1" / "workspace")
    other = tmp_path / "other"
    shutil.copytree(repo, other, symlinks=True)
    _prepare(other, base, head2, series / "r2" / "workspace")
    assert subvolume.info(str(series / "r2" / "workspace")).parent_uuid == _NO_PARENT


def test_no_tree_cache_where_subvolumes_may_not_be_destroyed(bseries, tmp_path, monkeypatch):
    repo, base, head1, _head2, series = bseries

    def refused(parent, name):
        raise OSError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(subvolume, "destroy", refused)
    _prepare(repo, base, head1, series / "r1" / "workspace")
    assert not (series / TREE_FOLDER).exists()
    assert tree_of(series / "r1" / "workspace") == _fresh(repo, base, head1, tmp_path / "fresh")


def test_no_tree_cache_where_the_file_system_is_not_btrfs(tmp_path):
    """The temp folder (ext4, tmpfs): one probe, no folder left, the copy as before."""
    repo, base, head1, head2, series = _make_series(tmp_path)
    _prepare(repo, base, head1, series / "r1" / "workspace")
    _prepare(repo, base, head2, series / "r2" / "workspace")
    assert not (series / TREE_FOLDER).exists()
    assert tree_of(series / "r2" / "workspace") == _fresh(repo, base, head2, tmp_path / "fresh")


@pytest.mark.slow
def test_spar_run_makes_round_2_a_snapshot_of_round_1(btrfs):
    """End to end on btrfs: `spar run` twice; round 2's copy is a snapshot of the cache,
    equal to a fresh copy, and neither round records a workspace change."""
    import json

    from tests.runsetup import make_setup, result

    root = btrfs / "spar_run"
    root.mkdir()
    try:
        s = make_setup(root)
        s.configure([s.answer_reviewer("alpha", result(findings=[]))])
        first = s.run("--base", s.base, out="reviews/r1")
        assert first.returncode == 0, first.stderr.decode()
        cache = subvolume.info(str(s.repo / "reviews" / TREE_FOLDER / "tree"))
        head2 = commit(s.repo, {"calc.py": "def add(a, b):\n    return b + a\n"}, message="swap")
        second = s.run("--base", s.base, out="reviews/r2")
        assert second.returncode == 0, second.stderr.decode()
        r2 = s.repo / "reviews" / "r2"
        assert subvolume.info(str(r2 / "workspace")).parent_uuid == cache.uuid
        build_workspace(s.repo, s.base, head2, root / "fresh")
        assert tree_of(r2 / "workspace" / "head") == tree_of(root / "fresh" / "head")
        assert tree_of(r2 / "workspace" / "base") == tree_of(root / "fresh" / "base")
        for name in ("r1", "r2"):
            record = json.loads((s.repo / "reviews" / name / "round.json").read_text())
            assert not [w for w in record["warnings"] if "workspace changed" in w]
    finally:
        make_writable(root)
        shutil.rmtree(root)
