"""A later round's files cloned copy-on-write (FICLONE) from the series' blob cache: on a
file system that cannot clone, one failed attempt per round and the byte path; on a real
XFS with reflink, clones that share blocks yet never carry a write from one round (or a
tampered cache) into another."""

from __future__ import annotations

import array
import errno
import fcntl
import os
import shutil
import struct
import types
from pathlib import Path

import pytest

from spar import git as spar_git
from spar.workspace import blobcache
from spar.workspace.blobcache import CACHE_FOLDER, UNSUPPORTED, holds_blob
from spar.workspace.build import build_workspace
from spar.workspace.reuse import sources
from tests.gitrepo import commit, git, make_repo
from tests.loopfs import folder_for_test, xfs_mounted
from tests.spies import calls_to
from tests.test_workspace import make_writable
from tests.test_workspace_reuse import inodes, tree_of

REAL_CLONE_MIN = blobcache.CLONE_MIN


@pytest.fixture(autouse=True)
def every_file_clones(monkeypatch):
    """The test files are small: make each worth a clone (one test puts the limit back)."""
    monkeypatch.setattr(blobcache, "CLONE_MIN", 0)




def _make_series(root: Path) -> tuple[Path, str, str, str, Path]:
    """A repository in `root` and its series folder; head2 changes, adds and removes a file."""
    repo = make_repo(root, {"README.md": "hello\n" * 200, "src/app.py": "v1\n", "src/lib.py": "lib\n" * 500,
                            "old.txt": "old\n", "tool.sh": "#!/bin/sh\n", "dup/a": "same\n", "dup/b": "same\n",
                            "empty": ""})
    base = git(repo, "rev-parse", "HEAD").strip()
    head1 = commit(repo, {"src/app.py": "v2\n"}, symlinks={"link": "src/lib.py", "out": "/etc/passwd"})
    git(repo, "update-index", "--chmod=+x", "tool.sh")
    head2 = commit(repo, {"src/app.py": "v3\n", "new.txt": "new\n"}, remove=["old.txt"])
    series = root / "series"
    for name in ("r1", "r2"):
        (series / name).mkdir(parents=True)
    return repo, base, head1, head2, series


def _regular_blobs(repo: Path, *commits: str) -> set[str]:
    return {e.sha for c in commits for e in spar_git.ls_tree(repo, c) if e.mode in ("100644", "100755")}


def _blob_of(repo: Path, commit_id: str, path: str) -> str:
    return next(e.sha for e in spar_git.ls_tree(repo, commit_id) if e.path == path)


def _spy_ioctl(monkeypatch) -> list[int | None]:
    """Every FICLONE ioctl the cache makes: None when it succeeded, else its errno."""
    outcomes: list[int | None] = []
    real = blobcache.fcntl.ioctl

    def ioctl(fd, request, arg):
        assert request == blobcache.FICLONE
        try:
            result = real(fd, request, arg)
        except OSError as exc:
            outcomes.append(exc.errno)
            raise
        outcomes.append(None)
        return result

    monkeypatch.setattr(blobcache, "fcntl", types.SimpleNamespace(ioctl=ioctl))
    return outcomes


def _failing_ioctl(monkeypatch, code: int) -> list[int]:
    calls: list[int] = []

    def ioctl(fd, request, arg):
        calls.append(request)
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(blobcache, "fcntl", types.SimpleNamespace(ioctl=ioctl))
    return calls


def _plant_cache(repo: Path, series: Path, *commits: str) -> set[str]:
    """A cache folder holding each regular blob of `commits`, written as plain files."""
    folder = series / CACHE_FOLDER
    folder.mkdir(mode=0o700)
    blobs = _regular_blobs(repo, *commits)
    for sha, data in spar_git.read_blobs(repo, sorted(blobs)).items():
        (folder / sha).write_bytes(data)
    return blobs


def test_a_file_system_that_cannot_clone_costs_one_attempt_per_round(tmp_path, monkeypatch):
    """The machine's temp folder (ext4 or tmpfs): each round tries FICLONE once, is told
    the file system cannot, and builds the copy from bytes; no cache is left behind, and
    the copies equal fresh ones."""
    repo, base, head1, head2, series = _make_series(tmp_path)
    outcomes = _spy_ioctl(monkeypatch)
    cache = series / CACHE_FOLDER
    build_workspace(repo, base, head1, series / "r1" / "workspace", cache=cache)
    if outcomes and outcomes[0] is None:
        pytest.fail("the temp folder's file system clones files: this test needs one that cannot (ext4, tmpfs)")
    assert len(outcomes) == 1 and outcomes[0] in UNSUPPORTED
    assert not cache.exists()
    # a cache left there (copied from a file system that clones): taking from it fails once,
    # then no further attempt for the thousands of files a real round has; the cache is removed
    _plant_cache(repo, series, base, head1)
    outcomes.clear()
    streams = calls_to(monkeypatch, spar_git, "stream_blobs", lambda _repo, shas: list(shas))
    copy = series / "r2" / "workspace"
    build_workspace(repo, base, head2, copy, reuse=sources(None, series / "r1" / "workspace"), cache=cache)
    assert len(outcomes) == 1 and outcomes[0] in UNSUPPORTED
    assert not cache.exists()
    asked = sorted(sha for s in streams for sha in s)
    by_path = {e.path: e.sha for e in spar_git.ls_tree(repo, head2)}
    # the byte path still reused round 1's copy: only what it did not hold came from git
    assert asked == sorted({by_path["src/app.py"], by_path["new.txt"], by_path["link"]})
    fresh = tmp_path / "fresh"
    build_workspace(repo, base, head2, fresh)
    assert tree_of(copy) == tree_of(fresh)


@pytest.mark.parametrize("code", [errno.EOPNOTSUPP, errno.EXDEV, errno.EINVAL])
def test_each_cannot_clone_answer_stops_the_attempts(tmp_path, monkeypatch, code):
    repo, base, head1, _head2, series = _make_series(tmp_path)
    _plant_cache(repo, series, base, head1)
    calls = _failing_ioctl(monkeypatch, code)
    copy = series / "r1" / "workspace"
    build_workspace(repo, base, head1, copy, cache=series / CACHE_FOLDER)
    assert len(calls) == 1
    assert not (series / CACHE_FOLDER).exists()
    fresh = tmp_path / "fresh"
    build_workspace(repo, base, head1, fresh)
    assert tree_of(copy) == tree_of(fresh)


def test_another_clone_error_falls_back_for_that_file_only(tmp_path, monkeypatch):
    """An error that says nothing about the file system (here EIO) costs that file its
    clone, not the round its cache: the next file is tried again."""
    repo, base, head1, _head2, series = _make_series(tmp_path)
    _plant_cache(repo, series, base, head1)
    calls = _failing_ioctl(monkeypatch, errno.EIO)
    copy = series / "r1" / "workspace"
    build_workspace(repo, base, head1, copy, cache=series / CACHE_FOLDER)
    assert len(calls) > 1
    fresh = tmp_path / "fresh"
    build_workspace(repo, base, head1, fresh)
    assert tree_of(copy) == tree_of(fresh)


# --- a real copy-on-write file system ----------------------------------------------------

_FS_IOC_FIEMAP = 0xC020660B
_FIEMAP_FLAG_SYNC = 0x1
_FIEMAP_EXTENT_SHARED = 0x2000
_FIEMAP_HEADER = "=QQIIII"  # fm_start, fm_length, fm_flags, fm_mapped_extents, fm_extent_count, fm_reserved
_FIEMAP_EXTENT = "=QQQQQIIII"  # fe_logical, fe_physical, fe_length, 2 reserved, fe_flags, 3 reserved


def shares_blocks(path: Path) -> bool:
    """Whether every extent of the file at `path` is marked shared (FIEMAP): a clone whose
    blocks are still those of its source."""
    count = 16
    buf = array.array("B", struct.pack(_FIEMAP_HEADER, 0, 2**64 - 1, _FIEMAP_FLAG_SYNC, 0, count, 0)
                      + bytes(struct.calcsize(_FIEMAP_EXTENT) * count))
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.ioctl(fd, _FS_IOC_FIEMAP, buf)
    finally:
        os.close(fd)
    header = struct.calcsize(_FIEMAP_HEADER)
    mapped = struct.unpack_from(_FIEMAP_HEADER, buf, 0)[3]
    flags = [struct.unpack_from(_FIEMAP_EXTENT, buf, header + i * struct.calcsize(_FIEMAP_EXTENT))[5]
             for i in range(mapped)]
    return bool(flags) and all(f & _FIEMAP_EXTENT_SHARED for f in flags)


@pytest.fixture(scope="module")
def xfs(tmp_path_factory):
    """A folder on a fresh XFS file system with reflink, on a loop device (root only);
    unmounted at the end whatever the tests did."""
    with xfs_mounted(tmp_path_factory.mktemp("xfs")) as mnt:
        yield mnt


@pytest.fixture
def cow_series(xfs, request):
    with folder_for_test(xfs, request) as root:
        yield _make_series(root)


def test_a_later_round_clones_from_the_cache_and_stays_its_own(cow_series, tmp_path, monkeypatch):
    repo, base, head1, head2, series = cow_series
    cache = series / CACHE_FOLDER
    r1, r2 = series / "r1" / "workspace", series / "r2" / "workspace"
    build_workspace(repo, base, head1, r1, cache=cache)
    # round 1 filled the cache (private to its owner) with its blobs, shared with its copy
    assert os.stat(cache).st_mode & 0o777 == 0o700
    assert set(os.listdir(cache)) == _regular_blobs(repo, base, head1)
    assert shares_blocks(cache / _blob_of(repo, head1, "README.md"))
    outcomes = _spy_ioctl(monkeypatch)
    streams = calls_to(monkeypatch, spar_git, "stream_blobs", lambda _repo, shas: list(shas))
    build_workspace(repo, base, head2, r2, reuse=sources(None, r1), cache=cache)
    asked = sorted(sha for s in streams for sha in s)
    by_path = {e.path: e.sha for e in spar_git.ls_tree(repo, head2)}
    # git gave only what round 1 did not hold; the rest was cloned, and every clone worked
    assert asked == sorted({by_path["src/app.py"], by_path["new.txt"], by_path["link"]})
    assert outcomes and all(o is None for o in outcomes)
    for rel in ("head/README.md", "head/src/lib.py", "base/src/lib.py", "base/old.txt"):
        assert shares_blocks(r2 / rel), rel
    fresh = tmp_path / "fresh"
    build_workspace(repo, base, head2, fresh)
    assert tree_of(r2) == tree_of(fresh)
    assert inodes(r2).isdisjoint(inodes(r1))
    # the cache now holds round 2's blobs only (round 1's src/app.py is gone)
    assert set(os.listdir(cache)) == _regular_blobs(repo, base, head2)
    # a reviewer of round 1 writing as root into its copy, over the shared blocks
    before = tree_of(r2)
    make_writable(r1)
    for rel in ("head/README.md", "head/src/lib.py", "base/old.txt"):
        fd = os.open(r1 / rel, os.O_WRONLY)
        try:
            os.pwrite(fd, b"WRITTEN IN ROUND 1", 0)
        finally:
            os.close(fd)
    assert (r1 / "head/README.md").read_bytes().startswith(b"WRITTEN IN ROUND 1")
    assert tree_of(r2) == before
    for name in os.listdir(cache):
        fd = os.open(cache / name, os.O_RDONLY)
        try:
            assert holds_blob(fd, name), name
        finally:
            os.close(fd)


def test_a_tampered_cache_entry_is_caught(cow_series, tmp_path, monkeypatch):
    """A reviewer running as root rewrites a cache entry (same size, other bytes): the
    clone does not hash to its blob id, so the file comes from git, and the cache holds
    the right bytes again afterwards."""
    repo, base, head1, head2, series = cow_series
    cache = series / CACHE_FOLDER
    build_workspace(repo, base, head1, series / "r1" / "workspace", cache=cache)
    readme = _blob_of(repo, head2, "README.md")
    os.chmod(cache / readme, 0o600)
    fd = os.open(cache / readme, os.O_WRONLY)
    try:
        os.pwrite(fd, b"HELLO\n", 0)
    finally:
        os.close(fd)
    streams = calls_to(monkeypatch, spar_git, "stream_blobs", lambda _repo, shas: list(shas))
    copy = series / "r2" / "workspace"
    build_workspace(repo, base, head2, copy, cache=cache)  # no other source: git is the fallback
    asked = [sha for s in streams for sha in s]
    assert readme in asked
    assert asked.count(readme) == 1 and len(asked) == 4  # README.md and round 2's three new blobs
    fresh = tmp_path / "fresh"
    build_workspace(repo, base, head2, fresh)
    assert tree_of(copy) == tree_of(fresh)
    fd = os.open(cache / readme, os.O_RDONLY)
    try:
        assert holds_blob(fd, readme)
    finally:
        os.close(fd)


def test_a_folder_of_that_name_holding_other_files_is_left_alone(tmp_path, monkeypatch):
    """A round named like the cache (its folder holds packet.md, round.json): Spar neither
    clones from it nor removes a thing in it."""
    repo, base, head1, _head2, series = _make_series(tmp_path)
    folder = series / CACHE_FOLDER
    folder.mkdir()
    sha = next(iter(_regular_blobs(repo, head1)))
    for name in ("round.json", "packet.md", sha):
        (folder / name).write_text("{}\n")
    calls = _failing_ioctl(monkeypatch, errno.EOPNOTSUPP)
    build_workspace(repo, base, head1, series / "r1" / "workspace", cache=folder)
    assert calls == []
    assert sorted(os.listdir(folder)) == sorted(["round.json", "packet.md", sha])


def test_readers_see_no_round_in_the_cache(tmp_path):
    """The cache folder beside the rounds is neither a round nor an unfinished one, and a
    leftover `ID.tmp` in it is no leftover of a round."""
    from spar.records import readers

    repo, base, head1, _head2, series = _make_series(tmp_path)
    build_workspace(repo, base, head1, series / "r1" / "workspace")
    for name in ("r1", "r2"):
        (series / name / "round.json").write_text("{}\n")
    blobs = _plant_cache(repo, series, base, head1)
    (series / CACHE_FOLDER / (sorted(blobs)[0] + ".tmp")).write_bytes(b"")
    assert readers.series_round_names(series) == ["r1", "r2"]
    assert readers.unfinished_rounds(series) == []


def test_holds_blob_reads_the_whole_file_whatever_its_position(tmp_path, monkeypatch):
    monkeypatch.setattr(blobcache, "_CHUNK", 3)  # several reads for one file
    data = b"0123456789"
    path = tmp_path / "f"
    path.write_bytes(data)
    sha1 = git(tmp_path, "hash-object", str(path)).strip()
    fd = os.open(path, os.O_RDONLY)
    try:
        os.lseek(fd, 4, os.SEEK_SET)
        assert holds_blob(fd, sha1)
        assert not holds_blob(fd, "0" * 40)
        assert not holds_blob(fd, sha1 + "0" * 24)  # read as a SHA-256 id: another hash
    finally:
        os.close(fd)


def test_no_file_is_made_for_a_blob_the_cache_cannot_give(tmp_path, monkeypatch):
    """Without a usable cache, each file is created once (as the byte path writes it), not
    first opened for a clone and removed: thousands of files would pay that twice."""
    repo, base, head1, _head2, series = _make_series(tmp_path)
    unlinked = calls_to(monkeypatch, os, "unlink", lambda *a, **k: a[0])
    build_workspace(repo, base, head1, series / "r1" / "workspace", cache=series / CACHE_FOLDER)
    assert [p for p in unlinked if "workspace" in os.fspath(p)] == []


def test_only_large_files_are_cached(xfs, monkeypatch):
    """Files under CLONE_MIN are cheaper to write than to clone and check: the cache holds
    the large blob only, and the later round clones just that one."""
    monkeypatch.setattr(blobcache, "CLONE_MIN", REAL_CLONE_MIN)
    root = xfs / "large_only"
    root.mkdir()
    big = "x" * blobcache.CLONE_MIN
    repo = make_repo(root, {"big.bin": big, "small.txt": "small\n"})
    base = git(repo, "rev-parse", "HEAD").strip()
    head = commit(repo, {"small.txt": "changed\n"})
    series = root / "series"
    (series / "r1").mkdir(parents=True)
    (series / "r2").mkdir()
    cache = series / CACHE_FOLDER
    try:
        build_workspace(repo, base, head, series / "r1" / "workspace", cache=cache)
        assert os.listdir(cache) == [_blob_of(repo, head, "big.bin")]
        build_workspace(repo, base, head, series / "r2" / "workspace", cache=cache)
        assert shares_blocks(series / "r2" / "workspace" / "head" / "big.bin")
        assert (series / "r2" / "workspace" / "head" / "big.bin").read_text() == big
    finally:
        make_writable(root)
        shutil.rmtree(root)


@pytest.mark.slow
def test_spar_run_clones_round_2_from_the_cache_round_1_left(xfs, monkeypatch):
    """End to end on XFS: `spar run` twice in a series; round 2's large file is a clone
    (its blocks shared), equal to what git holds, and the cache holds round 2's blobs."""
    from tests.runsetup import make_setup, result

    monkeypatch.setattr(blobcache, "CLONE_MIN", REAL_CLONE_MIN)  # spar runs as its own process anyway
    root = xfs / "spar_run"
    root.mkdir()
    try:
        s = make_setup(root)
        big = "y" * REAL_CLONE_MIN
        commit(s.repo, {"big.bin": big}, message="a large file")
        s.configure([s.answer_reviewer("alpha", result(findings=[]))])
        first = s.run("--base", s.base, out="reviews/r1")
        assert first.returncode == 0, first.stderr.decode()
        cache = s.repo / "reviews" / CACHE_FOLDER
        assert os.listdir(cache) == [_blob_of(s.repo, "HEAD", "big.bin")]
        commit(s.repo, {"calc.py": "def add(a, b):\n    return b + a\n"}, message="swap")
        second = s.run("--base", s.base, out="reviews/r2")
        assert second.returncode == 0, second.stderr.decode()
        copy = s.repo / "reviews" / "r2" / "workspace" / "head" / "big.bin"
        assert shares_blocks(copy) and copy.read_text() == big
        assert os.listdir(cache) == [_blob_of(s.repo, "HEAD", "big.bin")]
    finally:
        make_writable(root)
        shutil.rmtree(root)
