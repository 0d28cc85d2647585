"""PREVIOUS CODE, kept only to measure before/after in the same run; not used by spar.

This is `spar/workspace/build.py`'s copy as it was BEFORE commit 8f1906f
(`git show 8f1906f^:spar/workspace/build.py`): each commit's blobs are read
whole into memory with one `git.read_blobs` batch, every file of both copies
is written (no hard links), and `git.ls_tree` lists a commit's tree every time
it is asked (no per-process cache). Measured as the "previous" side by
`bench/workspace_copies.py --previous` and `bench/round_overhead.py --previous`.
Do not fix or improve it: its value is being the old behaviour.
"""

from __future__ import annotations

import os
from pathlib import Path

from spar import git
from spar.errors import WriteFailed

MODE_FILE = "100644"
MODE_EXEC = "100755"
MODE_LINK = "120000"

_READ_ONLY_FILE = 0o444
_READ_ONLY_EXEC = 0o555
_READ_ONLY_DIR = 0o555

# git.ls_tree before 8f1906f: the current uncached listing (same body, renamed when the cache came)
ls_tree_uncached = git._ls_tree


def install() -> None:
    """Make this process's spar behave as before 8f1906f: `spar run` builds its
    workspace with the code below and `git.ls_tree` no longer remembers trees
    (the judging context lists both commits again, as it did)."""
    import spar.commands.run as run

    git.ls_tree = ls_tree_uncached
    run.build_workspace = build_workspace


# ---------------------------------------------------------------- verbatim from 8f1906f^


def _write_new(path: Path, data: bytes, mode: int) -> None:
    # O_EXCL|O_NOFOLLOW: never replace or follow something already there
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        os.fchmod(fd, mode)  # exact bits, whatever the umask
    finally:
        os.close(fd)


def materialize(entries, blobs: dict[str, bytes], dest: Path) -> None:
    """Create `dest` holding `entries` (objects with mode, sha, path); pure disk work, no git."""
    dest = Path(dest)
    dest.mkdir(parents=False, exist_ok=False)
    made = {dest}  # folders already created: one mkdir per folder, not per file
    links = []
    for entry in entries:
        if entry.mode not in (MODE_FILE, MODE_EXEC, MODE_LINK):
            continue  # gitlinks and trees are not part of a copy
        parts = entry.path.split("/")
        if entry.path.startswith("/") or any(p in ("", ".", "..") for p in parts):
            # git never writes such a tree; a crafted one must not write outside the copy
            raise WriteFailed(f"unsafe path {entry.path!r} in the tree; the copy {dest} is incomplete")
        target = dest / entry.path
        if target.parent not in made:
            target.parent.mkdir(parents=True, exist_ok=True)
            made.add(target.parent)
        if entry.mode == MODE_LINK:
            links.append((target, blobs[entry.sha]))
            continue
        _write_new(target, blobs[entry.sha], _READ_ONLY_EXEC if entry.mode == MODE_EXEC else _READ_ONLY_FILE)
    for target, link_to in links:
        os.symlink(os.fsdecode(link_to), target)


def make_read_only(root: Path) -> None:
    """chmod dirs 0555 bottom-up (files were set when written); symlinks are left alone."""
    for dirpath, _dirnames, _filenames in os.walk(root, topdown=False):
        os.chmod(dirpath, _READ_ONLY_DIR)


def copy_commit(repo: str | Path, commit: str, dest: Path) -> int:
    """Copy one commit's blob entries to `dest`; returns the number of entries written."""
    entries = [e for e in ls_tree_uncached(repo, commit) if e.mode in (MODE_FILE, MODE_EXEC, MODE_LINK)]
    blobs = git.read_blobs(repo, sorted({e.sha for e in entries}))
    materialize(entries, blobs, dest)
    return len(entries)


def build_workspace(repo: str | Path, base: str, head: str, workspace: Path) -> None:
    """`workspace/head` and `workspace/base`, then everything read-only (workspace/ included)."""
    workspace = Path(workspace)
    try:
        workspace.mkdir(parents=False, exist_ok=False)
        copy_commit(repo, head, workspace / "head")
        copy_commit(repo, base, workspace / "base")
        make_read_only(workspace)
    except OSError as exc:
        raise WriteFailed(f"cannot build {workspace}: {exc}") from exc
