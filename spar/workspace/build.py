"""`workspace/head` and `workspace/base`: read-only copies of two commits' trees.

Only blob entries are copied (regular 100644, executable 100755, symlink
120000); gitlinks never appear. `spar.workspace.treeplan` decides first: paths git
refuses to check out (`.git` in every spelling) are left out, and a symbolic
link whose target leaves its copy becomes a small read-only file saying what
it pointed to. Blobs stream from one `git cat-file --batch` for both copies,
each blob asked once (memory holds one file at a time), and a base file equal
to a head file (same blob and mode) is a hard link to it, so the base copy of a typical
change costs little more than its folder entries. A file may also be a
copy-on-write clone from the series' blob cache (`spar.workspace.blobcache`, where
the file system clones), or its bytes may come from the work tree or an earlier
round's copy (`spar.workspace.reuse`), each checked against its blob id; every file
is still a new inode of this round. Symlinks are created last,
so no file is ever written through a link this code made.

What "read-only" holds: files 0444/0555 and folders 0555 stop every write of
a process that does not run as root, the user who owns the copies included
(that user may change the modes back with chmod; the change check sees it,
modes included). They do not stop root (permission bits do not apply to it), and spar does not drop
privileges or mount anything. For the AI presets the enforcement that holds
also under root is the CLI's own read-only mode (claude `--tools
Read,Grep,Glob`, codex `--sandbox read-only`, agy `--mode plan`) plus spar's
monitoring (G10/G11); a `command` reviewer is a program the user configured
and is trusted as such. `workspace_state` / `describe_changes` let `spar run`
notice a change made anyway and record it as a round warning; since no kept
link leads out of its copy, a write through a link changes an entry of the
copies and is noticed the same way. Findings are
judged against the commits through git, never against these copies.
"""

from __future__ import annotations

import concurrent.futures
import errno
import os
import stat
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from spar import git
from spar.errors import Refused, WriteFailed
from spar.pathtext import path_text
from spar.workspace.blobcache import BlobCache
from spar.workspace.reuse import read_verified
from spar.workspace.treeplan import TreePlan, listed, plan_tree

MODE_FILE = "100644"
MODE_EXEC = "100755"
MODE_LINK = "120000"

READ_ONLY_FILE = 0o444
_READ_ONLY_EXEC = 0o555
_READ_ONLY_DIR = 0o555


Entry = tuple[int, int, int, int]  # one path of `workspace_state`: (mode, size, mtime_ns, inode)


def _entry(st: os.stat_result) -> Entry:
    if stat.S_ISDIR(st.st_mode):
        # a folder's size and mtime move with its entries, which are listed themselves
        return (st.st_mode, 0, 0, st.st_ino)
    return (st.st_mode, st.st_size, st.st_mtime_ns, st.st_ino)


def _umask() -> int | None:
    """This process's umask, read without changing it (Linux /proc); None when unknown."""
    try:
        with open("/proc/self/status", "rb") as f:
            for line in f:
                if line.startswith(b"Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return None


class Writer:
    """Writes new read-only files with exact modes: created with the final mode when the
    umask keeps those bits (no fchmod per file), else fchmod'ed to them."""

    def __init__(self) -> None:
        self.umask = _umask()

    def write(self, path: str, data: bytes, mode: int) -> Entry:
        """Write `path`, never replacing or following what is there (O_EXCL|O_NOFOLLOW);
        returns its `workspace_state` entry as written."""
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
        try:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            if self.umask is None or self.umask & mode:
                os.fchmod(fd, mode)  # exact bits, whatever the umask
            return _entry(os.fstat(fd))
        finally:
            os.close(fd)

    def clone(self, path: str, cache: BlobCache, blob_id: str, mode: int) -> Entry | None:
        """Write `path` as a clone of the cached blob (checked, spar.workspace.blobcache);
        None, and no file at `path`, when the cache cannot give it."""
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
        try:
            if cache.take(fd, blob_id):
                if self.umask is None or self.umask & mode:
                    os.fchmod(fd, mode)
                return _entry(os.fstat(fd))
        finally:
            os.close(fd)
        os.unlink(path)
        return None


def plan_targets(entries: Iterable[git.TreeEntry], dest: str | Path,
                 folders: list[str] | None = None) -> list[tuple[git.TreeEntry, str]]:
    """(entry, target path) for every blob entry, creating `dest` and the folders
    above the targets (one mkdir per folder, each added to `folders`); refuses a path
    that would leave `dest`."""
    dest = os.fspath(dest)
    os.mkdir(dest)
    made: set[str] = set()
    planned = []
    for entry in entries:
        if entry.mode not in (MODE_FILE, MODE_EXEC, MODE_LINK):
            continue  # gitlinks and trees are not part of a copy
        folder, sep, name = entry.path.rpartition("/")
        if name in _UNSAFE or (sep and folder not in made and not _make_folders(dest, folder, made, folders)):
            # git never writes such a tree; a crafted one must not write outside the copy
            raise WriteFailed(f"unsafe path {entry.path!r} in the tree; the copy {dest} is incomplete")
        planned.append((entry, f"{dest}/{entry.path}"))
    return planned


_UNSAFE = ("", ".", "..")


def _make_folders(dest: str, folder: str, made: set[str], folders: list[str] | None) -> bool:
    """mkdir each missing folder of `folder` (relative to `dest`), outermost first; False
    (nothing made) when a component is empty, "." or ".."."""
    parts = folder.split("/")
    if any(p in _UNSAFE for p in parts):
        return False
    for i in range(1, len(parts) + 1):
        rel = "/".join(parts[:i])
        if rel not in made:
            os.mkdir(f"{dest}/{rel}")
            made.add(rel)
            if folders is not None:
                folders.append(f"{dest}/{rel}")
    return True


def file_mode(entry: git.TreeEntry) -> int:
    return _READ_ONLY_EXEC if entry.mode == MODE_EXEC else READ_ONLY_FILE


def make_read_only(folders: Iterable[str], root: str, state: dict[str, Entry]) -> None:
    """chmod the copies' folders 0555, innermost first (files were set when written;
    symlinks have no modes of their own), adding each folder under `root` to `state`."""
    start = len(root) + 1
    for folder in reversed(list(folders)):
        os.chmod(folder, _READ_ONLY_DIR)
        if folder != root:
            state[folder[start:]] = _entry(os.lstat(folder))


def plan_commit(repo: str | Path, commit: str, max_bytes: int | None = None) -> TreePlan:
    """Which blob entries of `commit` are copied, left out (.git paths) or written as a
    file saying where a link pointed, or that the file is over `max_bytes` and was not
    copied (spar.workspace.treeplan); reads only the links' blobs, and the files' sizes."""
    entries = [e for e in git.ls_tree(repo, commit) if e.mode in (MODE_FILE, MODE_EXEC, MODE_LINK)]
    links = git.read_blobs(repo, [e.sha for e in entries if e.mode == MODE_LINK])
    sizes = git.blob_sizes(repo, [e.sha for e in entries if e.mode != MODE_LINK]) if max_bytes is not None else None
    plan = plan_tree(entries, links, sizes, max_bytes)
    if plan.clashes:
        # refused here, before the round exists: a copy that fails part-way would leave a
        # counted round with reviewers pending
        shown = listed([path_text(p) for p in plan.clashes], 5)
        raise Refused(f"commit {commit} cannot be copied into a workspace: its tree holds two entries for one "
                      f"path (a tree git itself never writes; git fsck: duplicateEntries): {shown}")
    return plan


def size_note(size: int, max_bytes: int | None) -> bytes:
    return (b"spar: this file of the commit is %d bytes, over the %d-byte cap per file (max_copy_bytes), so it "
            b"was not copied; spar wrote this file instead.\n" % (size, max_bytes or 0))


def link_note(target: bytes) -> bytes:
    return (b"spar: this path is a symbolic link in the commit, to " + path_text(target).encode("utf-8")
            + b"\nIt points outside this copy of the commit, so spar wrote this file instead of the link.\n")


WrittenBlobs = dict[tuple[str, str], tuple[str, Entry]]  # (blob, mode) -> a regular file already written


Pending = dict[str, list[tuple[git.TreeEntry, str]]]  # blob id -> (entry, target) git is to fill


class Copy:
    """One commit's copy in the making: what it has written ((blob, mode) -> file, with
    `known`: another copy's files to link to), and where its `workspace_state` entries go."""

    def __init__(self, known: WrittenBlobs | None, state: dict[str, Entry], prefix: str,
                 coming: frozenset[tuple[str, str]] = frozenset()) -> None:
        self.written: WrittenBlobs = {}
        self.known = known if known is not None else {}
        self.coming = coming  # (blob, mode) of files git is yet to give the copy of `known`
        self.state = state
        self.prefix = prefix

    def linked(self, key: tuple[str, str], target: str, path: str) -> bool:
        """`target` made a hard link to a file of the same (blob, mode) written already."""
        source = self.written.get(key) or self.known.get(key)
        if source is None or not _link(source[0], target):
            return False
        self.written.setdefault(key, source)
        self.state[self.prefix + path] = source[1]  # one inode: one entry
        return True

    def wrote(self, writer: Writer, key: tuple[str, str], entry: git.TreeEntry, target: str, data: bytes) -> None:
        self.added(key, entry, target, writer.write(target, data, file_mode(entry)))

    def added(self, key: tuple[str, str], entry: git.TreeEntry, target: str, written: Entry) -> None:
        self.state[self.prefix + entry.path] = written
        self.written.setdefault(key, (target, written))

    def without_git(self, writer: Writer, key: tuple[str, str], entry: git.TreeEntry, target: str,
                    reuse: Sequence[str], cache: BlobCache | None) -> bool:
        """`target` written without git: a clone from the series' blob cache, else bytes
        from the first folder of `reuse` holding the blob at the same path; each checked
        against the blob id. False when neither can give it."""
        if cache is not None and cache.has(entry.sha):
            cloned = writer.clone(target, cache, entry.sha, file_mode(entry))
            if cloned is not None:
                self.added(key, entry, target, cloned)
                return True
        data = next((d for folder in reuse if (d := read_verified(f"{folder}/{entry.path}", entry.sha))
                     is not None), None)
        if data is None:
            return False
        self.wrote(writer, key, entry, target, data)
        return True


def _start_copy(copy: Copy, writer: Writer, plan: TreePlan, dest: str, folders: list[str],
                reuse: Sequence[str], pending: Pending, cache: BlobCache | None = None) -> None:
    """Everything of one copy but git's bytes: `dest` and its folders (added to `folders`),
    the notes for links leading out, hard links to files of the same (blob, mode) already
    written (base and head share most files, and both copies are read-only), clones from
    the series' blob cache (spar.workspace.blobcache), and bytes taken from the same path under
    the first folder of `reuse` (an earlier round's copy, the work tree), each only where
    it hashes to the entry's blob id (spar.workspace.reuse); what git must give is added to
    `pending`. The files are made on `WORKERS` threads."""
    folders.append(dest)
    planned = plan_targets([*plan.copied, *_outward_entries(plan)], dest, folders)

    def one(item: tuple[git.TreeEntry, str]) -> None:
        entry, target = item
        if entry.path in plan.outward or entry.path in plan.too_large:
            note = (link_note(plan.outward[entry.path]) if entry.path in plan.outward
                    else size_note(plan.too_large[entry.path], plan.max_bytes))
            copy.state[copy.prefix + entry.path] = writer.write(target, note, READ_ONLY_FILE)
            return
        if entry.mode != MODE_LINK:
            key = (entry.sha, entry.mode)
            if copy.linked(key, target, entry.path):
                return
            if key in copy.coming:  # linked to that file once git has given it
                pending.setdefault(entry.sha, []).append((entry, target))
                return
            if copy.without_git(writer, key, entry, target, reuse, cache):
                return
        pending.setdefault(entry.sha, []).append((entry, target))

    in_parallel(one, planned)


# Threads that make one copy's files: the file system calls (open, write, link, close)
# release the GIL, so two threads overlap one's calls with the other's Python; on a
# 20,003-file first round they took 38% off on ext4, 12% on XFS, 4% on btrfs
# (bench/workspace_copies.py, "one thread" column). Every step a thread takes is safe beside the other's: each target
# is its own path, dict and list updates are atomic, and two files of one blob written at
# once are two valid files (the second simply is not a link).
WORKERS = 2
_PARALLEL_FROM = 64  # fewer items are not worth a thread


def in_parallel(fn: Callable[[Any], None], items: list[Any], stop: threading.Event | None = None) -> None:
    """fn(item) for every item, split among WORKERS threads; the first error is raised, and
    once one is (or the caller is interrupted: a signal, KeyboardInterrupt) `stop` is set
    and every thread stops at its next item, so an interrupted copy ends at once."""
    if len(items) < _PARALLEL_FROM or WORKERS < 2:
        for item in items:
            fn(item)
        return
    n = len(items)
    chunks = [items[i * n // WORKERS:(i + 1) * n // WORKERS] for i in range(WORKERS)]
    stop = stop or threading.Event()

    def run(chunk: list[Any]) -> None:
        try:
            for item in chunk:
                if stop.is_set():
                    return
                fn(item)
        except BaseException:
            stop.set()
            raise

    with concurrent.futures.ThreadPoolExecutor(WORKERS) as pool:
        try:
            for future in [pool.submit(run, chunk) for chunk in chunks]:
                future.result()
        except BaseException:
            stop.set()
            raise


def fill_copies(repo: str | Path, writer: Writer, copies: list[tuple[Copy, Pending]]) -> None:
    """The bytes every copy still needs, from one `git cat-file --batch` for them all (each
    blob asked once), written copy by copy in order, so a later copy links to an earlier
    one's file; symbolic links last, so nothing is ever written through one made here."""
    wanted = list(dict.fromkeys(sha for _copy, pending in copies for sha in pending))
    links = []
    for sha, data in git.stream_blobs(repo, wanted):
        for copy, pending in copies:
            for entry, target in pending.get(sha, ()):
                if entry.mode == MODE_LINK:
                    links.append((copy, entry.path, target, data))
                    continue
                key = (sha, entry.mode)
                if not copy.linked(key, target, entry.path):
                    copy.wrote(writer, key, entry, target, data)
    for copy, path, target, link_to in links:
        os.symlink(os.fsdecode(link_to), target)
        copy.state[copy.prefix + path] = _entry(os.lstat(target))


def _outward_entries(plan: TreePlan) -> list[git.TreeEntry]:
    """A placeholder entry for each note file: links leading out, files over the cap."""
    return [git.TreeEntry(mode=MODE_FILE, kind="file", sha="", path=p) for p in [*plan.outward, *plan.too_large]]


def _link(source: str, target: str) -> bool:
    """Hard link `target` to `source`; False when the file system will not (the caller writes)."""
    try:
        os.link(source, target, follow_symlinks=False)
    except OSError as exc:
        if exc.errno in (errno.EMLINK, errno.EPERM, errno.EXDEV, errno.EOPNOTSUPP):
            return False
        raise
    return True


def _plan(repo: str | Path, commit: str, plan: TreePlan | None, max_bytes: int | None) -> TreePlan:
    return plan_commit(repo, commit, max_bytes) if plan is None else plan


def build_workspace(repo: str | Path, base: str, head: str, workspace: str | Path,
                    plans: dict[str, TreePlan] | None = None,
                    reuse: Mapping[str, Sequence[str | Path]] | None = None,
                    extra: Mapping[str, bytes] | None = None,
                    cache: str | Path | None = None, max_bytes: int | None = None) -> dict[str, Entry]:
    """`workspace/head` and `workspace/base`, then everything read-only (workspace/ included).
    `plans` ("head", "base" -> TreePlan) when the caller has them already (else made here,
    files over `max_bytes` left out); `reuse`
    ("head", "base" -> folders, see spar.workspace.reuse.sources): where files may take their
    bytes from, each checked against its blob id (see `_start_copy`); `extra`: files beside
    the copies (name -> bytes, such as an incremental packet's `change.diff`); `cache`: the
    series' blob cache folder (spar.workspace.blobcache), cloned from where the file system can,
    and left holding this copy's blobs. Returns what `workspace_state(workspace)` reads now,
    taken while writing (no second pass over the copies): the state the change check
    compares the copies against after the round."""
    root = os.fspath(workspace)
    blobs = BlobCache(cache) if cache is not None else None
    try:
        os.mkdir(root)
        plans = {copy: _plan(repo, commit, (plans or {}).get(copy), max_bytes)
                 for copy, commit in (("head", head), ("base", base))}
        state = _build(repo, base, head, root, plans, reuse or {}, extra or {}, blobs)
    except OSError as exc:
        raise WriteFailed(f"cannot build {root}: {exc}") from exc
    finally:
        if blobs is not None:
            blobs.close()
    return state


def _build(repo: str | Path, base: str, head: str, root: str, plans: dict[str, TreePlan],
           reuse: Mapping[str, Sequence[str | Path]], extra: Mapping[str, bytes],
           cache: BlobCache | None) -> dict[str, Entry]:
    folders = [root]
    state: dict[str, Entry] = {}
    sources = {copy: [os.fspath(f) for f in folders_of] for copy, folders_of in reuse.items()}
    writer = Writer()
    head_pending: Pending = {}
    base_pending: Pending = {}
    head_copy = Copy(None, state, "head/")
    _start_copy(head_copy, writer, plans["head"], f"{root}/head", folders,
                sources.get("head", ()), head_pending, cache)
    # a base file of the same blob and mode as a head file is a link to it, also to one
    # that git has yet to give
    coming = frozenset((e.sha, e.mode) for targets in head_pending.values() for e, _ in targets)
    base_copy = Copy(head_copy.written, state, "base/", coming)
    _start_copy(base_copy, writer, plans["base"], f"{root}/base", folders,
                sources.get("base", ()), base_pending, cache)
    fill_copies(repo, writer, [(head_copy, head_pending), (base_copy, base_pending)])  # one git process for both
    for name, data in extra.items():
        state[name] = writer.write(f"{root}/{name}", data, READ_ONLY_FILE)
    if cache is not None:
        # the next round clones what this one holds (files the copies share are linked: one each)
        cache.keep((sha, target, written[1]) for copy in (head_copy, base_copy)
                   for (sha, _mode), (target, written) in copy.written.items())
    make_read_only(folders, root, state)
    return state


def workspace_state(root: str | Path) -> dict[str, Entry]:
    """Every entry under `root` (not followed): relative path -> (mode, size, mtime_ns, inode)."""
    out: dict[str, Entry] = {}
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
            out[path] = _entry(st)
            if stat.S_ISDIR(st.st_mode):
                stack.append((entry.path, path + "/"))
    return out


def describe_changes(before: dict[str, Any], after: dict[str, Any], *, shown: int = 5) -> str | None:
    """A round warning naming what changed between two `workspace_state`s; None when nothing did."""
    if before == after:
        return None
    changes = []
    for path in sorted(before.keys() | after.keys()):
        if path not in after:
            changes.append(f"{path_text(path)} (removed)")
        elif path not in before:
            changes.append(f"{path_text(path)} (added)")
        elif before[path] != after[path]:
            changes.append(f"{path_text(path)} (changed)")
    if not changes:
        return None
    return (f"workspace changed while the reviewers ran: {len(changes)} path(s): {listed(changes, shown)}; a reviewer "
            "wrote into the read-only copies (file modes do not stop a process running as root); "
            "findings were judged against the commits, not the copies")
