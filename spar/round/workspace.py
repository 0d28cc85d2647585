"""`workspace/head` and `workspace/base`: read-only copies of two commits' trees.

Only blob entries are copied (regular 100644, executable 100755, symlink
120000); gitlinks never appear. One `read_blobs` batch per commit keeps this
fast on large trees. Symlinks are created last, so no file is ever written
through a link this code made.

What "read-only" holds: files 0444/0555 and folders 0555 stop every process
that does not run as root, the user who owns the copies included. They do not
stop root (permission bits do not apply to it), and spar does not drop
privileges or mount anything. For the AI presets the enforcement that holds
also under root is the CLI's own read-only mode (claude `--tools
Read,Grep,Glob`, codex `--sandbox read-only`, agy `--mode plan`) plus spar's
monitoring (G10/G11); a `command` reviewer is a program the user configured
and is trusted as such. `workspace_state` / `describe_changes` let `spar run`
notice a change made anyway and record it as a round warning. Findings are
judged against the commits through git, never against these copies.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from spar import git
from spar.errors import WriteFailed

MODE_FILE = "100644"
MODE_EXEC = "100755"
MODE_LINK = "120000"

_READ_ONLY_FILE = 0o444
_READ_ONLY_EXEC = 0o555
_READ_ONLY_DIR = 0o555


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
    entries = [e for e in git.ls_tree(repo, commit) if e.mode in (MODE_FILE, MODE_EXEC, MODE_LINK)]
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


def workspace_state(root: Path) -> dict[str, tuple[int, int, int, int]]:
    """Every entry under `root` (not followed): relative path -> (mode, size, mtime_ns, inode)."""
    out: dict[str, tuple[int, int, int, int]] = {}
    stack = [(os.fspath(root), "")]
    while stack:
        folder, rel = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue  # a folder made unreadable shows up as changed through its own entry
        for entry in entries:
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            path = rel + entry.name
            if stat.S_ISDIR(st.st_mode):
                # a folder's size and mtime move with its entries, which are listed themselves
                out[path] = (st.st_mode, 0, 0, st.st_ino)
                stack.append((entry.path, path + "/"))
            else:
                out[path] = (st.st_mode, st.st_size, st.st_mtime_ns, st.st_ino)
    return out


def describe_changes(before: dict, after: dict, *, shown: int = 5) -> str | None:
    """A round warning naming what changed between two `workspace_state`s; None when nothing did."""
    changes = []
    for path in sorted(before.keys() | after.keys()):
        if path not in after:
            changes.append(f"{path} (removed)")
        elif path not in before:
            changes.append(f"{path} (added)")
        elif before[path] != after[path]:
            changes.append(f"{path} (changed)")
    if not changes:
        return None
    listed = ", ".join(changes[:shown]) + (f" and {len(changes) - shown} more" if len(changes) > shown else "")
    return (f"workspace changed while the reviewers ran: {len(changes)} path(s): {listed}; a reviewer "
            "wrote into the read-only copies (file modes do not stop a process running as root); "
            "findings were judged against the commits, not the copies")


def make_writable(root: Path) -> None:
    """Undo make_read_only (for tools that delete a round folder)."""
    for dirpath, _dirnames, filenames in os.walk(root):
        os.chmod(dirpath, 0o755)
        for name in filenames:
            p = os.path.join(dirpath, name)
            if not os.path.islink(p):
                os.chmod(p, os.stat(p).st_mode | stat.S_IWUSR)
