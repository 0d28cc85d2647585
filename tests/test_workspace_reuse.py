"""Bytes taken from an earlier round's copy or the work tree, checked against the blob ids:
the result is byte-identical to a fresh copy and shares no file with the earlier one."""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
from pathlib import Path

import pytest

from spar import git as spar_git
from spar.workspace.blobcache import CACHE_FOLDER
from spar.workspace.build import build_workspace, workspace_state
from spar.workspace.reuse import earlier_copy, read_verified, sources
from tests.gitrepo import commit, git, make_repo
from tests.spies import calls_to
from tests.test_workspace import make_writable


@pytest.fixture
def series(tmp_path):
    """A repository whose round 1 copy (base, head1) exists; head2 changes one file,
    adds one, removes one and makes one executable."""
    repo = make_repo(tmp_path, {"README.md": "hello\n", "src/app.py": "v1\n", "src/lib.py": "lib\n",
                                "old.txt": "old\n", "tool.sh": "#!/bin/sh\n", "dup/a": "same\n",
                                "dup/b": "same\n", "empty": ""})
    base = git(repo, "rev-parse", "HEAD").strip()
    head1 = commit(repo, {"src/app.py": "v2\n"}, symlinks={"link": "src/lib.py", "out": "/etc/passwd"})
    git(repo, "update-index", "--chmod=+x", "tool.sh")
    head2 = commit(repo, {"src/app.py": "v3\n", "new.txt": "new\n"}, remove=["old.txt"])
    for name in ("r1", "r2"):
        (tmp_path / name).mkdir()
    earlier = tmp_path / "r1" / "workspace"
    build_workspace(repo, base, head1, earlier)
    return repo, base, head2, earlier


def tree_of(root: Path) -> dict[str, tuple]:
    """Every path under `root`: (kind, mode, bytes or link target)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            st = os.lstat(p)
            if stat.S_ISLNK(st.st_mode):
                out[str(p.relative_to(root))] = ("link", os.readlink(p))
            elif stat.S_ISDIR(st.st_mode):
                out[str(p.relative_to(root))] = ("dir", stat.S_IMODE(st.st_mode))
            else:
                out[str(p.relative_to(root))] = ("file", stat.S_IMODE(st.st_mode), p.read_bytes())
    return out


def inodes(root: Path) -> set[int]:
    return {os.lstat(os.path.join(d, n)).st_ino for d, ds, fs in os.walk(root) for n in ds + fs}


def copy_like_fresh(repo, base, head, tmp_path, monkeypatch, reuse) -> tuple[Path, list[str], dict[str, str]]:
    """Build base..head with `reuse` into r2/workspace, check it equals a fresh copy; returns
    the copy, the blob ids git was asked for, and head's path -> blob id."""
    fresh = tmp_path / "fresh"
    build_workspace(repo, base, head, fresh)
    streams = calls_to(monkeypatch, spar_git, "stream_blobs", lambda _repo, shas: list(shas))
    copy = tmp_path / "r2" / "workspace"
    built = build_workspace(repo, base, head, copy, reuse=reuse)
    assert tree_of(copy) == tree_of(fresh)
    assert built == workspace_state(copy)
    asked = [sha for stream in streams for sha in stream]
    return copy, asked, {e.path: e.sha for e in spar_git.ls_tree(repo, head)}


def test_reused_copy_is_byte_identical_to_a_fresh_one(series, tmp_path, monkeypatch):
    repo, base, head2, earlier = series
    _copy, asked, by_path = copy_like_fresh(repo, base, head2, tmp_path, monkeypatch, sources(None, earlier))
    # only what the earlier copy did not hold came from git: the changed and the new file,
    # and the link kept (a link's target is never read from a copy; "out" leads out of the
    # copy and is a note, written from the plan)
    assert sorted(asked) == sorted({by_path["src/app.py"], by_path["new.txt"], by_path["link"]})


def test_no_file_is_shared_with_the_earlier_round(series, tmp_path):
    repo, base, head2, earlier = series
    before = tree_of(earlier)
    reused = tmp_path / "r2" / "workspace"
    build_workspace(repo, base, head2, reused, reuse=sources(None, earlier))
    assert inodes(reused).isdisjoint(inodes(earlier))
    make_writable(reused)  # as a reviewer running as root (or the owner after chmod) could
    for rel in ("head/README.md", "head/src/lib.py", "base/README.md"):
        with open(reused / rel, "a") as f:
            f.write("written in round 2\n")
    assert tree_of(earlier) == before


def test_a_tampered_earlier_copy_gives_nothing_wrong(series, tmp_path, monkeypatch):
    repo, base, head2, earlier = series
    make_writable(earlier)  # what a reviewer running as root could do to round 1's copy
    (earlier / "head" / "README.md").write_text("HELLO\n")  # same size, other bytes
    (earlier / "head" / "src" / "lib.py").unlink()
    os.mkfifo(earlier / "head" / "src" / "lib.py")  # a FIFO must not block the copy
    (earlier / "head" / "empty").write_text("not empty\n")
    os.unlink(earlier / "head" / "tool.sh")
    os.symlink(earlier / "base" / "tool.sh", earlier / "head" / "tool.sh")  # same bytes, through a link
    _copy, asked, by_path = copy_like_fresh(repo, base, head2, tmp_path, monkeypatch, sources(None, earlier))
    for rel in ("README.md", "src/lib.py", "empty", "tool.sh"):
        assert by_path[rel] in asked, rel


def test_read_verified_checks_the_blob_id(tmp_path):
    data = b"some bytes\n"
    path = tmp_path / "f"
    path.write_bytes(data)
    sha1 = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
    assert read_verified(str(path), sha1) == data
    assert read_verified(str(path), "0" * 40) is None
    assert read_verified(str(tmp_path / "missing"), sha1) is None
    os.symlink(path, tmp_path / "link")
    assert read_verified(str(tmp_path / "link"), sha1) is None  # the last component is never followed
    assert read_verified(str(tmp_path), sha1) is None  # a folder


def test_read_verified_reads_sha256_ids(tmp_path):
    # the id git itself gives the file in a SHA-256 repository
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", "--object-format=sha256", str(repo)], check=True)
    path = tmp_path / "f"
    path.write_bytes(b"\x00\xffbinary\n")
    blob_id = git(repo, "hash-object", str(path)).strip()
    assert len(blob_id) == 64
    assert read_verified(str(path), blob_id) == b"\x00\xffbinary\n"
    assert read_verified(str(path), blob_id[:40]) is None


def test_earlier_copy_is_the_last_workspace_built(tmp_path):
    rounds = [tmp_path / n for n in ("r1", "r2", "r3", "r4")]
    for i, folder in enumerate(rounds):
        folder.mkdir()
        if folder.name != "r3":  # r3 has no workspace (a crash before it was built)
            (folder / "workspace").mkdir()
            os.utime(folder / "workspace", ns=(i, i))
    os.utime(rounds[1] / "workspace", ns=(10, 10))  # r2's copy was built last
    assert earlier_copy(rounds, rounds[3]) == rounds[1] / "workspace"
    assert earlier_copy(rounds, rounds[1]) == rounds[3] / "workspace"
    assert earlier_copy([rounds[2]], rounds[0]) is None
    assert earlier_copy([], rounds[0]) is None


def test_read_verified_reads_regular_files_only():
    empty_blob = hashlib.sha1(b"blob 0\0").hexdigest()
    assert read_verified(os.devnull, empty_blob) is None  # a device reads as empty, but is no copy


@pytest.mark.slow
def test_spar_run_builds_a_later_round_from_the_last_copy(tmp_path, monkeypatch):
    """Round 2 of a series reuses round 1's copy (checked), and its copies equal a fresh build."""
    from spar.commands import run as run_mod
    from spar.round import preparation
    from tests.runsetup import make_setup, result

    s = make_setup(tmp_path)
    s.configure([s.answer_reviewer("alpha", result(findings=[]))])
    first = s.run(out="reviews/r1")
    assert first.returncode == 0, first.stderr.decode()
    head2 = commit(s.repo, {"calc.py": "def add(a, b):\n    return b + a\n"}, message="swap")
    seen = []
    real = preparation.build_workspace

    def recording(repo, base, head, workspace, plans=None, reuse=None, extra=None, cache=None):
        seen.append(reuse)
        seen.append(cache)
        asked = []
        real_stream = spar_git.stream_blobs
        monkeypatch.setattr(spar_git, "stream_blobs", lambda r, shas: (asked.extend(shas), real_stream(r, shas))[1])
        seen.append(asked)
        return real(repo, base, head, workspace, plans, reuse, extra, cache)

    monkeypatch.setattr(preparation, "build_workspace", recording)
    for key in list(os.environ):
        if key.startswith(("SPAR_", "XDG_", "GIT_")):
            monkeypatch.delenv(key)
    for key, value in s.env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.chdir(s.repo)
    assert run_mod.main(["--stage", "code", "--out", "reviews/r2", "--base", s.base]) == 0
    series = s.repo / "reviews"
    earlier = series / "r1" / "workspace"
    # the work tree holds head2 (just committed) and round 1's copy the rest: git gave nothing
    assert seen == [{"head": [s.repo, earlier / "head"], "base": [earlier / "base"]}, series / CACHE_FOLDER, []]
    assert not (series / CACHE_FOLDER).exists()  # the temp folder's file system (ext4, tmpfs) cannot clone
    fresh = tmp_path / "fresh"
    build_workspace(s.repo, s.base, head2, fresh)
    assert tree_of(series / "r2" / "workspace") == tree_of(fresh)
    assert inodes(series / "r2" / "workspace").isdisjoint(inodes(series / "r1" / "workspace"))


def test_the_work_tree_gives_what_matches_and_git_the_rest(series, tmp_path, monkeypatch):
    repo, base, head2, _earlier = series  # the work tree has head2 checked out
    (repo / "README.md").write_text("edited, not committed\n")
    (repo / "src" / "lib.py").unlink()
    os.symlink("../README.md", repo / "src" / "lib.py")
    os.unlink(repo / "new.txt")
    copy, asked, by_path = copy_like_fresh(repo, base, head2, tmp_path, monkeypatch, sources(repo, None))
    head_keys = {(e.sha, e.mode) for e in spar_git.ls_tree(repo, head2)}
    base_only = {e.sha for e in spar_git.ls_tree(repo, base) if (e.sha, e.mode) not in head_keys}
    # git: the three files the work tree does not hold as committed, the kept link, and the
    # base's own files (blob and mode; the work tree is only a source for the head copy)
    assert sorted(asked) == sorted({by_path["README.md"], by_path["src/lib.py"], by_path["new.txt"],
                                    by_path["link"], *base_only})
    assert inodes(copy).isdisjoint(inodes(repo))


def test_sources_order():
    assert sources(None, None) == {"head": [], "base": []}
    assert sources(Path("/w"), Path("/r1/workspace")) == {
        "head": [Path("/w"), Path("/r1/workspace/head")], "base": [Path("/r1/workspace/base")]}


def test_a_base_file_equal_to_one_git_gives_the_head_is_linked_not_reused(series, tmp_path, monkeypatch):
    # one git stream fills both copies: a base file whose blob and mode the head copy takes
    # from git is a link to that head file, even where the base could take its bytes elsewhere
    repo, base, head2, earlier = series
    copy, asked, _by_path = copy_like_fresh(repo, base, head2, tmp_path, monkeypatch,
                                            {"head": [], "base": [earlier / "base"]})
    head_keys = {(e.sha, e.mode) for e in spar_git.ls_tree(repo, head2) if e.mode != "120000"}
    shared = [e.path for e in spar_git.ls_tree(repo, base) if (e.sha, e.mode) in head_keys]
    assert shared
    for path in shared:
        assert os.stat(copy / "base" / path).st_ino == os.stat(copy / "head" / path).st_ino, path
    assert len(asked) == len(set(asked))
