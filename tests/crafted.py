"""Commits git itself would refuse to build from a work tree (`.git` paths, names
that are not UTF-8, symlinks anywhere): made with `git hash-object`, `git mktree`
and `git commit-tree`, as an attacker would craft them."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.gitrepo import git, git_env

FILE, EXEC, LINK = "100644", "100755", "120000"


def _git_bytes(repo: Path, *args: str, input: bytes) -> str:
    proc = subprocess.run(["git", "-C", str(repo), *args], input=input, capture_output=True,
                          env=git_env(), check=True)
    return proc.stdout.decode("ascii").strip()


def _tree(repo: Path, entries: dict[bytes, tuple[str, bytes]]) -> str:
    here: dict[bytes, tuple[str, str, str]] = {}  # name -> (mode, type, sha)
    below: dict[bytes, dict[bytes, tuple[str, bytes]]] = {}
    for path, (mode, data) in entries.items():
        name, sep, rest = path.partition(b"/")
        if sep:
            below.setdefault(name, {})[rest] = (mode, data)
        else:
            sha = _git_bytes(repo, "hash-object", "-w", "--stdin", "--literally", input=data)
            here[name] = (mode, "blob", sha)
    for name, sub in below.items():
        here[name] = ("040000", "tree", _tree(repo, sub))
    listing = b"".join(f"{mode} {typ} {sha}\t".encode() + name + b"\0"
                       for name, (mode, typ, sha) in sorted(here.items()))
    return _git_bytes(repo, "mktree", "-z", "--missing", input=listing)


def crafted_commit(repo: Path, entries: dict[bytes, tuple[str, bytes]], *, parent: str | None = None,
                   message: str = "crafted") -> str:
    """A commit whose tree holds exactly `entries` (raw path -> (mode, content)); not checked out."""
    args = ["commit-tree", _tree(repo, entries), "-m", message]
    if parent:
        args += ["-p", parent]
    return git(repo, *args).strip()


def tree_of(repo: Path, commit: str) -> dict[bytes, tuple[str, bytes]]:
    """The blob entries of `commit` in the form crafted_commit takes (to extend a commit)."""
    out = subprocess.run(["git", "-C", str(repo), "ls-tree", "-r", "-z", commit], capture_output=True,
                         env=git_env(), check=True).stdout
    entries = {}
    for record in out.split(b"\0"):
        if not record:
            continue
        meta, _, path = record.partition(b"\t")
        mode, _typ, sha = meta.decode().split()
        data = subprocess.run(["git", "-C", str(repo), "cat-file", "blob", sha], capture_output=True,
                              env=git_env(), check=True).stdout
        entries[path] = (mode, data)
    return entries
