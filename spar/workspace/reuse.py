"""Workspace files whose bytes need not come from git: taken from the repository's work
tree (when it has the reviewed head checked out) or from the series' last copy (a later
round), each checked against its git blob id, instead of git inflating them again.

What is reused is bytes, never a file: every file of a round's copy is a new
inode written by this round (`spar.workspace.build`), so a write into one round's
copy cannot reach another round's (a hard link would share the inode: a reviewer
running as root, or as the owner after a chmod, would change both). Neither the
earlier copy nor the work tree is trusted: a file is used only when it is a
regular file whose bytes hash to the blob id the tree names (`blob <size>\\0<bytes>`,
SHA-1 or SHA-256 as the id's length says), so whatever a reviewer did to that
copy, the new copy holds exactly what git would have given (an edited, filtered
or CRLF-converted work-tree file simply does not match). Anything else (changed,
missing, not a regular file, larger than `REUSE_LIMIT`) comes from git. SHA-1
ids: git hashes every object it stores with collision detection (sha1dc), so a
blob that is one half of a known-attack collision never enters the repository
for a tampered twin to match. Where the file system clones files copy-on-write,
`spar.workspace.blobcache` is tried first (a clone is a new inode too, checked the
same way); these bytes are its fallback.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path
from typing import Any

REUSE_LIMIT = 64 * 1024 * 1024  # larger files stream from git (one file is held in memory)
_SHA1_HEX = 40


def read_verified(path: str, blob_id: str) -> bytes | None:
    """The bytes of the regular file at `path` when they are the blob `blob_id`, else None.
    The last component is never followed and nothing can block the open (a FIFO)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > REUSE_LIMIT:
            return None
        data = os.read(fd, st.st_size + 1)  # one byte more: a file that grew does not match
    except OSError:
        return None
    finally:
        os.close(fd)
    h = blob_digest(blob_id, len(data))
    h.update(data)
    return data if h.hexdigest() == blob_id else None


def blob_digest(blob_id: str, size: int) -> Any:
    """A hash object fed the blob header of a `size`-byte blob: update it with the bytes,
    and its hexdigest is their blob id in the id's own format (SHA-1 or SHA-256)."""
    digest = hashlib.sha1 if len(blob_id) == _SHA1_HEX else hashlib.sha256
    return digest(b"blob %d\0" % size)


def earlier_copy(rounds: list[Path], current: Path) -> Path | None:
    """The most recently built workspace among `rounds` other than `current` (a folder's
    mtime moves when an entry is added: for a finished copy, when it was built); any
    round's copy is a safe source, as every file is checked. None when there is none."""
    best: tuple[int, Path] | None = None
    for folder in rounds:
        if folder == current:
            continue
        try:
            st = os.lstat(folder / "workspace")
        except OSError:
            continue
        if stat.S_ISDIR(st.st_mode) and (best is None or st.st_mtime_ns > best[0]):
            best = (st.st_mtime_ns, folder / "workspace")
    return best[1] if best else None


def sources(worktree: Path | None, earlier: Path | None) -> dict[str, list[Path]]:
    """Where each copy ("head", "base") may take bytes from, in the order tried: the work
    tree (when the round reviews its checked-out head), then the earlier copy."""
    out: dict[str, list[Path]] = {"head": [worktree] if worktree is not None else [], "base": []}
    if earlier is not None:
        out["head"].append(earlier / "head")
        out["base"].append(earlier / "base")
    return out
