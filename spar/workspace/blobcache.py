"""A private cache of blob contents, kept in the series folder, from which a later
round's workspace files are made as copy-on-write clones (`FICLONE`) where the file
system can clone (XFS with reflink, btrfs, bcachefs); elsewhere (ext4, tmpfs) it is
never filled and the copy takes its bytes as `spar.workspace.reuse` says.

Why clones and never hard links: a clone is a new inode whose blocks are shared
until one side writes; the write gets blocks of its own, so a reviewer writing
into one round's copy (as root, or as the owner after a chmod) cannot change
another round's copy or this cache. Why a cache and not the last round's copy
as the source: the cache is not in any reviewer's workspace (reviewers are
pointed at `ROUND/workspace`), so it normally stays as Spar wrote it and every
file of the last round's trees can be cloned, whatever a reviewer did to its copy.

Nothing here is trusted either: a reviewer running as root can write anywhere,
the cache included. So every clone is proven after it is made: its own bytes
(the new inode's, which no one else has opened) must hash to the blob id, as in
`spar.workspace.reuse`; a clone that does not is removed and the file comes from the
usual sources. The cache is not a record (docs/records.md "Workspace copies"): it
is written under the series lock, each entry cloned into `ID.tmp` and renamed to
`ID`, without fsync (a file a crash damaged is caught by the check like a
tampered one). Its size is bounded: after each round it holds exactly the blobs
of that round's two copies (regular files) of at least `CLONE_MIN` bytes, one
entry per blob id, sharing their blocks with that round's copies. Smaller files
are not worth a clone: one costs more than writing a few KiB (see CLONE_MIN).

The first clone that fails with an error saying the file system cannot clone
(EOPNOTSUPP, EXDEV, EINVAL, ENOTTY, ENOSYS) turns the cache off for the rest of
the round: no further attempt, no cost per file; a cache left on such a file
system is removed.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import stat
from collections.abc import Iterable
from pathlib import Path

from spar.records import atomic
from spar.workspace.reuse import blob_digest

FICLONE = 0x40049409  # linux/fs.h _IOW(0x94, 9, int): clone all of src_fd into dst_fd
CACHE_FOLDER = ".spar-blob-cache"  # in the series folder, beside the round folders
_TMP = ".tmp"
# Smaller files are copied as bytes: measured on XFS (bench/README.md), a clone
# and its check cost ~85 µs for 4 KiB against ~45 µs to read, hash and write the bytes,
# and break even near 256 KiB (1 MiB: ~1.2 ms against ~1.9 ms, before writeback)
CLONE_MIN = 256 * 1024
_ENTRY = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?(?:\.tmp)?")  # a SHA-1 or SHA-256 blob id, or its temporary
_CHUNK = 1 << 20
# what FICLONE answers when the file system (or the pair of file systems) cannot clone
UNSUPPORTED = frozenset({errno.EOPNOTSUPP, errno.EXDEV, errno.EINVAL, errno.ENOTTY, errno.ENOSYS})


def ficlone(dst_fd: int, src_fd: int) -> None:
    """Make `dst_fd`'s file a copy-on-write clone of all of `src_fd`'s (OSError when not)."""
    fcntl.ioctl(dst_fd, FICLONE, src_fd)


def holds_blob(fd: int, blob_id: str) -> bool:
    """Whether the regular file open at `fd` holds exactly the blob `blob_id` (its size
    as fstat says it, read from offset 0 with pread, whatever the file's position; a
    small file is one read)."""
    size = os.fstat(fd).st_size
    h = blob_digest(blob_id, size)
    offset = 0
    while offset < size:
        chunk = os.pread(fd, min(_CHUNK, size - offset), offset)
        if not chunk:
            return False  # shorter than it said
        h.update(chunk)
        offset += len(chunk)
    return bool(h.hexdigest() == blob_id)


class BlobCache:
    """The cache of one series for one round: `take` clones from it while the copy is
    built, `keep` leaves it holding the round's blobs afterwards, `close` ends it."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = os.fspath(folder)
        self.usable: bool | None = None  # None: no clone tried yet; False: the file system cannot
        self.fd: int | None = None
        self.present: set[str] = set()
        self.foreign = False  # a folder of that name holding anything else: never touched
        try:
            self.fd = os.open(self.folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
            names = os.listdir(self.fd)
        except OSError:
            self.close()  # no cache yet (or not a folder of its own): nothing to take
            return
        if not all(_ENTRY.fullmatch(name) for name in names):
            # not a cache Spar made (a round folder of that name, say): nothing in it is removed
            self.foreign = True
            self.close()
            return
        self.present = {name for name in names if not name.endswith(_TMP)}

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def _clone(self, dst_fd: int, src_fd: int) -> bool:
        try:
            ficlone(dst_fd, src_fd)
        except OSError as exc:
            if exc.errno in UNSUPPORTED:
                self.usable = False  # once per round: no further attempts
            return False
        self.usable = True
        return True

    def has(self, blob_id: str) -> bool:
        """Whether `take` may give `blob_id`: asked before a file is made for it, so a
        round with no usable cache creates no file it then removes."""
        return self.fd is not None and self.usable is not False and blob_id in self.present

    def take(self, dst_fd: int, blob_id: str) -> bool:
        """Clone the cached `blob_id` into the empty file open read-write at `dst_fd` and
        prove its bytes; False (the file left empty) when it is not cached, cannot be
        cloned, or the clone does not hold the blob."""
        if not self.has(blob_id):
            return False
        try:
            src = os.open(blob_id, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=self.fd)
        except OSError:
            return False
        try:
            if not stat.S_ISREG(os.fstat(src).st_mode) or not self._clone(dst_fd, src):
                return False
        finally:
            os.close(src)
        try:
            if holds_blob(dst_fd, blob_id):
                return True
            os.ftruncate(dst_fd, 0)
            # a damaged or tampered entry: dropped, so `keep` puts this round's checked file there
            self.present.discard(blob_id)
            os.unlink(blob_id, dir_fd=self.fd)
        except OSError:
            pass
        return False

    def keep(self, files: Iterable[tuple[str, str, int]]) -> None:
        """After the round's copy is built: clone each (blob id, file of the copy, size) of
        at least `CLONE_MIN` bytes whose blob is not cached into the cache, then remove
        every entry the round does not hold. Best effort: the cache only saves time, so a
        failure leaves it as it is. On a file system that cannot clone, no cache is kept."""
        wanted: dict[str, str] = {}
        for blob_id, path, size in files:
            if size >= CLONE_MIN:
                wanted.setdefault(blob_id, path)
        if self.foreign or (self.fd is None and not wanted):
            return
        try:
            if self.usable is not False and self.fd is None:
                os.mkdir(self.folder, 0o700)
                self.fd = os.open(self.folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
                os.fchmod(self.fd, 0o700)  # whatever the umask: private to its owner
            if self.fd is None:
                return
            for blob_id, path in wanted.items():
                if self.usable is False:
                    break
                if blob_id not in self.present and self._add(blob_id, path):
                    self.present.add(blob_id)
            keep = set(wanted) if self.usable is not False else set()
            for name in os.listdir(self.fd):
                if name not in keep:
                    with contextlib.suppress(OSError):
                        os.unlink(name, dir_fd=self.fd)
            if not keep:
                with contextlib.suppress(OSError):
                    os.rmdir(self.folder)
        except OSError:
            return

    def _add(self, blob_id: str, path: str) -> bool:
        """`path` cloned into the cache as `blob_id` (through `blob_id.tmp`, renamed)."""
        assert self.fd is not None
        tmp = blob_id + _TMP
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp, dir_fd=self.fd)  # a killed round's leftover
        src = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        try:
            dst = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o400,
                          dir_fd=self.fd)
            try:
                cloned = self._clone(dst, src)
            finally:
                os.close(dst)
        finally:
            os.close(src)
        if not cloned:
            os.unlink(tmp, dir_fd=self.fd)
            return False
        atomic.replace(tmp, blob_id, self.fd)  # not fsynced: every clone taken from it is checked
        return True


def series_cache(round_folder: str | Path) -> Path:
    """Where the cache of the series holding `round_folder` lives."""
    return Path(round_folder).parent / CACHE_FOLDER
