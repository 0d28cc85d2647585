"""`workspace/head` and `workspace/base`: read-only copies of two commits' trees.

Only blob entries are copied (regular 100644, executable 100755, symlink
120000); gitlinks never appear. Blobs stream from one `git cat-file --batch`
per commit (memory holds one file at a time), and a base file equal to a head
file (same blob and mode) is a hard link to it, so the base copy of a typical
change costs little more than its folder entries. Symlinks are created last,
so no file is ever written through a link this code made.

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

import errno
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


def plan_targets(entries, dest: Path) -> list[tuple[object, Path]]:
    """(entry, target path) for every blob entry, creating `dest` and the folders
    above the targets (one mkdir per folder); refuses a path that would leave `dest`."""
    dest = Path(dest)
    dest.mkdir(parents=False, exist_ok=False)
    made = {dest}
    planned = []
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
        planned.append((entry, target))
    return planned


def _file_mode(entry) -> int:
    return _READ_ONLY_EXEC if entry.mode == MODE_EXEC else _READ_ONLY_FILE


def make_read_only(root: Path) -> None:
    """chmod dirs 0555 bottom-up (files were set when written); symlinks are left alone."""
    for dirpath, _dirnames, _filenames in os.walk(root, topdown=False):
        os.chmod(dirpath, _READ_ONLY_DIR)


def copy_commit(repo: str | Path, commit: str, dest: Path,
                known: dict[tuple[str, str], Path] | None = None) -> dict[tuple[str, str], Path]:
    """Copy one commit's blob entries to `dest`. A file whose (blob, mode) is in `known`
    (or was already written in this copy) becomes a hard link to that file instead of
    a new one: base and head share most files, and both copies are read-only.
    Blobs stream from git one at a time, so memory holds one file, not the tree.
    Returns (blob, mode) -> path of the regular files of this copy."""
    entries = [e for e in git.ls_tree(repo, commit) if e.mode in (MODE_FILE, MODE_EXEC, MODE_LINK)]
    planned = plan_targets(entries, Path(dest))
    written: dict[tuple[str, str], Path] = {}
    pending: dict[str, list[tuple[object, Path]]] = {}
    for entry, target in planned:
        source = known.get((entry.sha, entry.mode)) if known and entry.mode != MODE_LINK else None
        if source is not None and _link(source, target):
            written.setdefault((entry.sha, entry.mode), source)
            continue
        pending.setdefault(entry.sha, []).append((entry, target))
    links = []
    for sha, data in git.stream_blobs(repo, pending):
        for entry, target in pending[sha]:
            if entry.mode == MODE_LINK:
                links.append((target, data))  # created last: nothing is written through them
                continue
            key = (sha, entry.mode)
            if key in written and _link(written[key], target):
                continue
            _write_new(target, data, _file_mode(entry))
            written.setdefault(key, target)
    for target, link_to in links:
        os.symlink(os.fsdecode(link_to), target)
    return written


def _link(source: Path, target: Path) -> bool:
    """Hard link `target` to `source`; False when the file system will not (the caller writes)."""
    try:
        os.link(source, target, follow_symlinks=False)
    except OSError as exc:
        if exc.errno in (errno.EMLINK, errno.EPERM, errno.EXDEV, errno.EOPNOTSUPP):
            return False
        raise
    return True


def build_workspace(repo: str | Path, base: str, head: str, workspace: Path) -> None:
    """`workspace/head` and `workspace/base`, then everything read-only (workspace/ included)."""
    workspace = Path(workspace)
    try:
        workspace.mkdir(parents=False, exist_ok=False)
        head_files = copy_commit(repo, head, workspace / "head")
        copy_commit(repo, base, workspace / "base", known=head_files)
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
