"""A crafted tree that cannot be copied (two entries of one name: git fsck's duplicateEntries)
is refused before the round is counted (issue 25 hole 12)."""

from __future__ import annotations

import json
import subprocess

import pytest

from spar.workspace.treeplan import clashes
from tests.gitrepo import git, git_env
from tests.runsetup import make_setup, result


def _hash(repo, kind: str, data: bytes) -> str:
    proc = subprocess.run(["git", "-C", str(repo), "hash-object", "-t", kind, "-w", "--literally", "--stdin"],
                          input=data, capture_output=True, env=git_env(), check=True)
    return proc.stdout.decode().strip()


def _raw_tree(repo, entries: list[tuple[str, str, str]]) -> str:
    """A tree object holding exactly `entries` (mode, name, sha), in git's order (a folder
    sorts as its name with a `/`), duplicates kept: what `git mktree` would not write."""
    ordered = sorted(entries, key=lambda e: e[1] + ("/" if e[0] == "40000" else ""))
    data = b"".join(f"{mode} {name}".encode() + b"\0" + bytes.fromhex(sha) for mode, name, sha in ordered)
    return _hash(repo, "tree", data)


def duplicate_entries_commit(repo, parent: str) -> str:
    """`parent`'s tree plus a symbolic link `a` -> `calc.py` and a folder `a` holding x.txt."""
    entries = []
    for line in git(repo, "ls-tree", parent).splitlines():
        meta, name = line.split("\t", 1)
        mode, _kind, sha = meta.split()
        entries.append(("40000" if mode == "040000" else mode, name, sha))
    folder = _raw_tree(repo, [("100644", "x.txt", _hash(repo, "blob", b"inside a\n"))])
    entries += [("120000", "a", _hash(repo, "blob", b"calc.py")), ("40000", "a", folder)]
    tree = _raw_tree(repo, entries)
    return git(repo, "commit-tree", tree, "-p", parent, "-m", "two entries named a").strip()


def test_clashes_names_paths_one_copy_cannot_hold():
    """issue 25 hole 12: a path twice, or a file where a folder must be, at any depth."""
    assert clashes(["a", "a/x.txt", "b", "c/d", "c/d", "e/f/g", "e/f", "ok/1", "ok/2"]) == ["a", "c/d", "e/f"]
    assert clashes(["a", "b/a", "a.txt", "a-b/c"]) == []


@pytest.mark.slow
def test_duplicate_entries_are_refused_before_the_round_is_counted(tmp_path):
    """issue 25 hole 12, as found: a head commit whose tree holds a link `a` and a folder `a`
    crashed the round (70, "cannot build workspace: File exists") and left a counted round
    with a pending reviewer. Now: refused (65) naming the path, no round folder, no
    reviewer started, and the next round at a good head is the series' first."""
    s = make_setup(tmp_path)
    head = duplicate_entries_commit(s.repo, s.head)
    listed = git(s.repo, "ls-tree", "-r", "--name-only", head).splitlines()
    assert "a" in listed and "a/x.txt" in listed
    s.configure([s.answer_reviewer("house", result(findings=[]))])
    run = s.run("--base", s.head, "--head", head)
    assert run.returncode == 65, run.stderr.decode()
    err = run.stderr.decode()
    assert f"commit {head} cannot be copied" in err and "duplicateEntries" in err and ": a" in err
    assert not (s.repo / "reviews" / "r1").exists()
    assert not (s.answers / "house.received").exists()
    ok = s.run("--base", s.base, "--head", s.head, out="reviews/r2")
    assert ok.returncode == 0, ok.stderr.decode()
    assert json.loads((s.repo / "reviews" / "r2" / "round.json").read_text())["counted"] is True
