"""The user's repository watched while reviewers run: its state noted before they start
and compared after they end.

What is noted: HEAD (its ref name and commit) and every ref, loose, packed or replace; the
index's entries with their flags (assume-unchanged, skip-worktree); the files of the git
folder other than objects, logs, refs and the index (`config`, `hooks/`, `info/`, pseudo
refs, a linked work tree's own folder) and those of a `core.hooksPath` folder; and the
content of every tracked file and every untracked file the ignore rules do not ignore.

Content, not the stat: a file rewritten with its size and mtime put back, or a tracked file
git no longer looks at (`update-index --assume-unchanged`), is still seen. Each regular file
is hashed (SHA-256) as it streams, at most `FILE_BYTES` of it, and `TOTAL_BYTES` in all
within `HASH_SECONDS` per look; what lies beyond those bounds is compared by its stat, the
change time included (a write sets it, and only root changing the clock can set it back). A FIFO, a socket or a
device is never opened: its type and stat are compared. A symbolic link is its target.

A change is reported, never refused: users keep working while a long round runs, so with
a sandbox in place (the repository invisible to reviewers) a change is the user's own
editing; without one it may be a reviewer's. The series folder, which Spar itself writes,
is left out. Every call is git's, bounded in time (`spar.git`).
"""

from __future__ import annotations

import hashlib
import os
import stat
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from spar import git
from spar.pathtext import path_text

SHOWN_PATHS = 50  # paths (and refs, git folder files) named in round.json and on stderr; the count is whole
FILE_BYTES = 64 * 1024 * 1024  # bytes of one file hashed; its stat stands for the rest
TOTAL_BYTES = 1024 * 1024 * 1024  # bytes hashed per look; files past it are compared by their stat
HASH_SECONDS = 30.0  # time a look may spend hashing (a slow disk, a huge tree); then the stat alone
_CHUNK = 1024 * 1024
K = TypeVar("K", str, bytes)
# in a git folder: what other parts of the state cover (refs, the index's entries) or what
# is only ever added to and changes nothing by itself (objects, reflogs)
_ANY_DEPTH = frozenset({b"objects", b"logs"})
_TOP_ONLY = frozenset({b"refs", b"packed-refs", b"reftable", b"index"})
_WORKTREES = b"worktrees"  # other work trees' own folders: this one's is walked on its own


@dataclass(frozen=True)
class FileLook:
    """One file as the watch saw it."""

    mode: int  # st_mode (type and permissions); 0 when there is no file
    size: int
    digest: bytes | None  # SHA-256 of its first `hashed` bytes (a link: of its target); None: not read
    hashed: int  # bytes the digest covers
    stamp: tuple[int, int, int]  # mtime, ctime (ns) and inode: stand for what was not hashed

    def same(self, other: FileLook) -> bool:
        if (self.mode, self.size) != (other.mode, other.size):
            return False
        both = self.digest is not None and other.digest is not None and self.hashed == other.hashed
        if both and self.digest != other.digest:
            return False
        return (both and self.hashed == self.size) or self.stamp == other.stamp


_MISSING = FileLook(0, 0, None, 0, (0, 0, 0))


class _Budget:
    """Bytes a look may still hash, and until when: past either, files are compared by their stat."""

    def __init__(self, total: int, seconds: float) -> None:
        self.left = total
        self.until = time.monotonic() + seconds

    def allows(self) -> int:
        return self.left if time.monotonic() < self.until else 0


@dataclass(frozen=True)
class RepoState:
    head: bytes  # `git rev-parse` of the git folders, HEAD's ref name and commit
    index: str  # sha256 of the index's entries with their flags (`git ls-files --stage -v`)
    refs: dict[bytes, bytes] = field(default_factory=dict)  # ref name -> its object (and symbolic target)
    git_files: dict[str, FileLook] = field(default_factory=dict)  # text form (`.git/config`) -> the file
    files: dict[bytes, FileLook] = field(default_factory=dict)  # work tree path -> the file


def repository_state(repo: Path, series: Path) -> RepoState | None:
    """The repository as it stands now, the series folder (and what is below it) left out;
    None when git cannot tell (the round goes on, unwatched: a watch never blocks)."""
    try:
        return _state(repo, series)
    except git.GitError:
        return None


def _state(repo: Path, series: Path) -> RepoState:
    head = git.run(repo, "rev-parse", "--path-format=absolute", "--absolute-git-dir", "--git-common-dir",
                   "--git-path", "hooks", "HEAD", "--symbolic-full-name", "HEAD", ok=(0, 128),
                   timeout=git.QUICK_LIMIT).stdout
    folders = head.split(b"\n")[:3]
    if len(folders) != 3 or not all(folders):
        raise git.GitError("git rev-parse: cannot tell where the repository keeps its git folder")
    refs = git.run(repo, "for-each-ref", "--format=%(refname)%00%(objectname) %(symref)",
                   timeout=git.QUICK_LIMIT).stdout
    # the index's entries (tag, mode, object, stage, tab, path; the tag says the flags) and
    # the untracked files ("? path") in one listing
    args = ["ls-files", "-z", "--cached", "--stage", "-v", "--others", "--exclude-standard", "--", ":/"]
    rel = os.path.relpath(os.path.realpath(series), os.path.realpath(repo))
    if rel != "." and rel != ".." and not rel.startswith("../"):  # a series inside the repository
        args.append(git.literal_pathspec(path_text(os.fsencode(rel)), exclude=True))
    entries = git.run(repo, *args, timeout=git.QUICK_LIMIT).stdout.split(b"\0")
    staged = [entry for entry in entries if b"\t" in entry and not entry.startswith(b"? ")]
    names = dict.fromkeys(entry.partition(b"\t")[2] for entry in staged)
    names |= dict.fromkeys(entry[2:] for entry in entries if entry.startswith(b"? "))
    budget = _Budget(TOTAL_BYTES, HASH_SECONDS)
    top = os.fsencode(os.path.realpath(repo))
    files = {name: _seen(top + b"/" + name.rstrip(b"/"), budget) for name in names}
    return RepoState(head=head, index=hashlib.sha256(b"\0".join(staged)).hexdigest(), refs=_refs(refs),
                     git_files=_git_files(top, folders, budget), files=files)


def _refs(listing: bytes) -> dict[bytes, bytes]:
    out = {}
    for line in listing.split(b"\n"):
        name, _, value = line.partition(b"\0")
        if name:
            out[name] = value
    return out


def _git_files(top: bytes, folders: list[bytes], budget: _Budget) -> dict[str, FileLook]:
    """The git folder's files (the common one, the work tree's own when it is elsewhere) and
    the hooks folder's (git runs only its direct entries), by their text form: relative to
    the work tree when below it, absolute otherwise."""
    git_dir, common, hooks = (os.path.realpath(f) for f in folders)
    found: dict[bytes, FileLook] = {}
    _walk(common, common, found, budget)
    if git_dir != common:  # a linked work tree's own folder (common/worktrees/NAME)
        _walk(git_dir, git_dir, found, budget)
    try:
        entries = sorted(e.name for e in os.scandir(hooks))
    except OSError:
        entries = []
    for name in entries:
        path = os.path.join(hooks, name)
        if path not in found:
            found[path] = _seen(path, budget)
    return {path_text(_shown(top, path)): seen for path, seen in found.items()}


def _shown(top: bytes, path: bytes) -> bytes:
    rel = os.path.relpath(path, top)
    return path if rel == b".." or rel.startswith(b"../") else rel


def _walk(root: bytes, folder: bytes, found: dict[bytes, FileLook], budget: _Budget) -> None:
    """Every file below `folder` (links not followed), but objects, reflogs, other work
    trees' folders, and at the top of a git folder (`root`, or a submodule's below it) the
    refs and the index."""
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        return
    own_top = folder == root or any(e.name == b"HEAD" for e in entries)
    for entry in entries:
        name = os.fsencode(entry.name)
        if name in _ANY_DEPTH or (own_top and name in _TOP_ONLY) or (folder == root and name == _WORKTREES):
            continue
        path = os.path.join(folder, name)
        if entry.is_dir(follow_symlinks=False):
            _walk(root, path, found, budget)
        else:
            found[path] = _seen(path, budget)


def _seen(path: bytes, budget: _Budget) -> FileLook:
    """The file at `path` now: a regular file hashed (within the budget), a link by its
    target, anything else by its type and stat alone."""
    try:
        st = os.lstat(path)
    except OSError:
        return _MISSING
    digest, hashed = None, 0
    if stat.S_ISLNK(st.st_mode):
        try:
            target = os.readlink(path)
            digest, hashed = hashlib.sha256(target).digest(), st.st_size
        except OSError:
            pass
    elif stat.S_ISREG(st.st_mode):
        digest, hashed = _hash(path, st, budget)
    return FileLook(st.st_mode, st.st_size, digest, hashed, (st.st_mtime_ns, st.st_ctime_ns, st.st_ino))


def _hash(path: bytes, st: os.stat_result, budget: _Budget) -> tuple[bytes | None, int]:
    """SHA-256 of the first bytes of the regular file `st` describes, read in chunks (never
    more than FILE_BYTES, nor what the budget has left), and how many it covers. The open
    follows no link and cannot block (a FIFO put there since the lstat is not read)."""
    limit = min(FILE_BYTES, budget.allows())
    if limit <= 0 < st.st_size:
        return None, 0
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None, 0
    digest = hashlib.sha256()
    done = 0
    try:
        now = os.fstat(fd)
        if not stat.S_ISREG(now.st_mode) or (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
            return None, 0
        while done < limit:
            want = min(_CHUNK, limit - done)
            chunk = os.read(fd, want)
            digest.update(chunk)
            done += len(chunk)
            if len(chunk) < want:  # a short read of a regular file: its end
                break
    except OSError:
        return None, 0
    finally:
        os.close(fd)
        budget.left -= done
    return digest.digest(), done


@dataclass(frozen=True)
class RepoChange:
    head: bool  # HEAD moved (a commit, a checkout)
    index: bool  # the index's entries or their flags changed (an add, a reset, assume-unchanged)
    refs: list[str]  # refs added, removed or moved (branches, tags, replace refs), in text form
    git_files: list[str]  # files of the git folder added, removed or changed (config, hooks, info/)
    paths: list[str]  # the work tree's files whose content (or type, or stat beyond the bounds) changed

    def record(self, sandboxed: bool) -> dict[str, object]:
        """round.json `repository_changed`."""
        return {"head": self.head, "index": self.index,
                "refs": self.refs[:SHOWN_PATHS], "ref_count": len(self.refs),
                "git_files": self.git_files[:SHOWN_PATHS], "git_file_count": len(self.git_files),
                "paths": self.paths[:SHOWN_PATHS], "path_count": len(self.paths), "sandboxed": sandboxed}

    def message(self, sandboxed: bool) -> str:
        what = [w for w, changed in (("HEAD", self.head), ("the index", self.index)) if changed]
        for names, kind in ((self.refs, "ref(s)"), (self.git_files, "file(s) of the git folder"),
                            (self.paths, "file(s)")):
            if names:
                shown = ", ".join(names[:SHOWN_PATHS]) + (" ..." if len(names) > SHOWN_PATHS else "")
                what.append(f"{len(names)} {kind}: {shown}")
        who = ("the reviewers ran in a sandbox that hides the repository, so this is someone else's editing"
               if sandboxed else "no sandbox was in place: a reviewer may have written it")
        return f"the repository changed while the reviewers ran ({'; '.join(what)}); {who}"


def repository_change(before: RepoState | None, after: RepoState | None) -> RepoChange | None:
    """What differs between two states; None when nothing does (or one is unknown)."""
    if before is None or after is None:
        return None
    refs = sorted(path_text(n) for n in before.refs.keys() | after.refs.keys()
                  if before.refs.get(n) != after.refs.get(n))
    change = RepoChange(head=before.head != after.head, index=before.index != after.index, refs=refs,
                        git_files=sorted(_differ(before.git_files, after.git_files)),
                        paths=sorted(path_text(n) for n in _differ(before.files, after.files)))
    return change if change.head or change.index or change.refs or change.git_files or change.paths else None


def _differ(before: Mapping[K, FileLook], after: Mapping[K, FileLook]) -> list[K]:
    return [n for n in before.keys() | after.keys() if not before.get(n, _MISSING).same(after.get(n, _MISSING))]


__all__ = ["RepoChange", "RepoState", "repository_change", "repository_state"]
