"""The user's repository watched while reviewers run: its state noted before they start
and compared after they end (HEAD, the index, the status of tracked files and of untracked
files the ignore rules do not ignore, each listed file's size, mtime and inode).

A change is reported, never refused: users keep working while a long round runs, so with
a sandbox in place (the repository invisible to reviewers) a change is the user's own
editing; without one it may be a reviewer's. The series folder, which Spar itself writes,
is left out. Every call is git's, bounded in time (`spar.git`).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path

from spar import git
from spar.pathtext import path_text

SHOWN_PATHS = 50  # paths named in round.json and on stderr; the count is always whole


@dataclass(frozen=True)
class RepoState:
    head: bytes  # `git rev-parse` of the git folder, HEAD's ref name and commit
    index: str  # sha256 of the index's entries (`git ls-files --stage`)
    entries: dict[bytes, tuple[bytes, tuple[int, ...]]] = field(default_factory=dict)  # path -> (status, stat)


def _stat(path: Path) -> tuple[int, ...]:
    try:
        st = os.lstat(path)
    except OSError:
        return ()
    return (st.st_mode, st.st_size, st.st_mtime_ns, st.st_ino)


def repository_state(repo: Path, series: Path) -> RepoState | None:
    """The repository as it stands now, the series folder (and what is below it) left out;
    None when git cannot tell (the round goes on, unwatched: a watch never blocks)."""
    try:
        return _state(repo, series)
    except git.GitError:
        return None


def _state(repo: Path, series: Path) -> RepoState:
    head = git.run(repo, "rev-parse", "--absolute-git-dir", "HEAD", "--symbolic-full-name", "HEAD",
                   ok=(0, 128)).stdout
    index = hashlib.sha256(git.run(repo, "ls-files", "--stage", "-z").stdout).hexdigest()
    args = ["status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames", "--", ":/"]
    rel = os.path.relpath(os.path.realpath(series), os.path.realpath(repo))
    if rel != "." and rel != ".." and not rel.startswith("../"):  # a series inside the repository
        args.append(git.literal_pathspec(path_text(os.fsencode(rel)), exclude=True))
    out = git.run(repo, *args).stdout
    entries = {}
    for entry in out.split(b"\0"):
        if len(entry) > 3:
            name = entry[3:]
            entries[name] = (entry[:2], _stat(repo / os.fsdecode(name)))
    return RepoState(head=head, index=index, entries=entries)


@dataclass(frozen=True)
class RepoChange:
    head: bool  # HEAD moved (a commit, a checkout)
    index: bool  # the index's entries changed (an add, a reset)
    paths: list[str]  # the files whose status or stat changed, in text form

    def record(self, sandboxed: bool) -> dict[str, object]:
        """round.json `repository_changed`."""
        return {"head": self.head, "index": self.index, "paths": self.paths[:SHOWN_PATHS],
                "path_count": len(self.paths), "sandboxed": sandboxed}

    def message(self, sandboxed: bool) -> str:
        what = [w for w, changed in (("HEAD", self.head), ("the index", self.index)) if changed]
        shown = ", ".join(self.paths[:SHOWN_PATHS]) + (" ..." if len(self.paths) > SHOWN_PATHS else "")
        if self.paths:
            what.append(f"{len(self.paths)} file(s): {shown}")
        who = ("the reviewers ran in a sandbox that hides the repository, so this is someone else's editing"
               if sandboxed else "no sandbox was in place: a reviewer may have written it")
        return f"the repository changed while the reviewers ran ({'; '.join(what)}); {who}"


def repository_change(before: RepoState | None, after: RepoState | None) -> RepoChange | None:
    """What differs between two states; None when nothing does (or one is unknown)."""
    if before is None or after is None:
        return None
    names = set(before.entries) | set(after.entries)
    paths = sorted(path_text(n) for n in names if before.entries.get(n) != after.entries.get(n))
    change = RepoChange(head=before.head != after.head, index=before.index != after.index, paths=paths)
    return change if change.head or change.index or change.paths else None


__all__ = ["RepoChange", "RepoState", "repository_change", "repository_state"]
