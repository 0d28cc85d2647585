"""The copy's files are made on two threads (spar.workspace.build.WORKERS) once a copy
has enough of them: the result is the same as on one thread, whatever the sources."""

from __future__ import annotations

import pytest

from spar.workspace import build as workspace
from spar.workspace.build import build_workspace, workspace_state
from spar.workspace.reuse import sources
from tests.gitrepo import commit, git, make_repo
from tests.test_workspace_reuse import tree_of


def _big_repo(root):
    files: dict[str, str] = {}
    for i in range(300):
        files[f"src/m{i % 7}/f{i:03d}.txt"] = f"file {i}\n" if i % 5 else "shared\n"  # many of one blob
    files["tool.sh"] = "#!/bin/sh\n"
    repo = make_repo(root, files)
    git(repo, "update-index", "--chmod=+x", "tool.sh")
    base = commit(repo, {"src/m0/f000.txt": "changed\n"}, symlinks={"in": "src/m1/f001.txt", "out": "/etc/passwd"})
    head = commit(repo, {f"src/m1/f{i:03d}.txt": f"new {i}\n" for i in range(1, 300, 7)})
    return repo, base, head


@pytest.mark.parametrize("from_work_tree", [False, True])
def test_two_threads_make_the_same_copy_as_one(tmp_path, monkeypatch, from_work_tree):
    repo, base, head = _big_repo(tmp_path / "r")
    reuse = sources(repo if from_work_tree else None, None)
    copies = {}
    for workers in (1, 2):
        monkeypatch.setattr(workspace, "WORKERS", workers)
        where = tmp_path / f"w{workers}"
        state = build_workspace(repo, base, head, where, reuse=reuse)
        assert state == workspace_state(where)
        copies[workers] = tree_of(where)
    assert copies[1] == copies[2]
    assert len(copies[2]) > 600


def test_an_error_on_a_thread_is_raised(monkeypatch):
    seen = []

    def fn(item):
        seen.append(item)
        if item == 70:
            raise OSError(5, "simulated")

    with pytest.raises(OSError, match="simulated"):
        workspace.in_parallel(fn, list(range(100)))
    assert 70 in seen


def test_an_error_stops_the_other_thread_at_its_next_item():
    """The second chunk's thread raises at its first item: the first chunk's thread, in its
    first item until the stop is set, makes no call after it (an interrupted copy ends at once)."""
    import threading

    stop = threading.Event()
    seen = []

    def fn(item):
        if item == 50:
            raise OSError(5, "simulated")
        if item == 0:
            assert stop.wait(timeout=60)
        seen.append(item)

    with pytest.raises(OSError, match="simulated"):
        workspace.in_parallel(fn, list(range(100)), stop)
    assert seen == [0]
