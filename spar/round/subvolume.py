"""btrfs subvolumes through their ioctls: create one, snapshot one, read what the
file system says of one, destroy one. No `btrfs` program is needed (it is seldom
installed), and nothing here mounts anything.

Why Spar uses them (`spar.round.treecache`): a snapshot is a copy-on-write copy of
a whole tree made in constant time, and each side gets blocks of its own on its
first write, so no reviewer of one round, root included, can change another
round's copy through it. `SubvolumeInfo.ctransid` is the transaction of the last
change to anything in the subvolume (data, modes, times, names, extended
attributes; measured on Linux 6.18, bench/README.md "Tree snapshots"); taking a
snapshot of it does not move it, so an unchanged `(uuid, ctransid)` says nobody
changed the subvolume since it was read.

Every call raises OSError; `UNSUPPORTED` holds the errors that mean "not btrfs"
(or too old a kernel), EPERM the ones a caller without the right may meet.
"""

from __future__ import annotations

import errno
import fcntl
import os
import struct
from dataclasses import dataclass

_MAGIC = 0x94  # BTRFS_IOCTL_MAGIC
_NAME_MAX = 4087  # BTRFS_PATH_NAME_MAX
_SUBVOL_NAME_MAX = 4039  # BTRFS_SUBVOL_NAME_MAX
_VOL_ARGS = struct.Struct(f"q{_NAME_MAX + 1}s")  # struct btrfs_ioctl_vol_args: 4096 bytes
_VOL_ARGS_V2 = struct.Struct(f"qQQ4Q{_SUBVOL_NAME_MAX + 1}s")  # struct btrfs_ioctl_vol_args_v2: 4096 bytes
_INFO_SIZE = 504  # struct btrfs_ioctl_get_subvol_info_args
_RDONLY = 1 << 1  # BTRFS_SUBVOL_RDONLY, as a snapshot is asked for
_ROOT_RDONLY = 1 << 0  # BTRFS_ROOT_SUBVOL_RDONLY, as GET_SUBVOL_INFO answers
UNSUPPORTED = frozenset({errno.ENOTTY, errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS, errno.EXDEV})


def _iow(nr: int, size: int) -> int:
    return (1 << 30) | (size << 16) | (_MAGIC << 8) | nr


def _ior(nr: int, size: int) -> int:
    return (2 << 30) | (size << 16) | (_MAGIC << 8) | nr


SNAP_DESTROY = _iow(15, _VOL_ARGS.size)
SUBVOL_CREATE = _iow(14, _VOL_ARGS.size)
SNAP_CREATE_V2 = _iow(23, _VOL_ARGS_V2.size)
GET_SUBVOL_INFO = _ior(60, _INFO_SIZE)


@dataclass(frozen=True)
class SubvolumeInfo:
    uuid: str  # hex; a new subvolume (or snapshot) has a new one
    parent_uuid: str  # hex; for a snapshot, the uuid of the subvolume it was taken of
    ctransid: int  # transaction of the last change to its contents
    read_only: bool


def _name(name: str) -> bytes:
    raw = os.fsencode(name)
    if not raw or b"/" in raw or b"\0" in raw or raw in (b".", b".."):
        raise OSError(errno.EINVAL, f"not a single name: {name!r}")
    return raw


def _dir_fd(path: str) -> int:
    return os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)


def _ioctl_in(folder: str, request: int, args: bytearray) -> None:
    """One ioctl on the folder `folder` (opened without following a link); `args` is
    passed as a mutable buffer, whatever its size, and holds what the kernel wrote back."""
    fd = _dir_fd(folder)
    try:
        fcntl.ioctl(fd, request, args, True)
    finally:
        os.close(fd)


def create(parent: str, name: str) -> None:
    """A new empty subvolume `parent/name` (like mkdir, mode 0755 before the umask)."""
    _ioctl_in(parent, SUBVOL_CREATE, bytearray(_VOL_ARGS.pack(0, _name(name))))


def snapshot(source: str, parent: str, name: str, *, read_only: bool = False) -> None:
    """`parent/name`: a snapshot of the subvolume `source` (copy-on-write, constant time;
    btrfs first writes out the source's pending data, so the snapshot holds it)."""
    src = _dir_fd(source)
    try:
        _ioctl_in(parent, SNAP_CREATE_V2,
                  bytearray(_VOL_ARGS_V2.pack(src, 0, _RDONLY if read_only else 0, 0, 0, 0, 0, _name(name))))
    finally:
        os.close(src)


def destroy(parent: str, name: str) -> None:
    """Remove the subvolume `parent/name` with all it holds (root, or a file system
    mounted with user_subvol_rm_allowed; EPERM otherwise)."""
    _ioctl_in(parent, SNAP_DESTROY, bytearray(_VOL_ARGS.pack(0, _name(name))))


def info(path: str) -> SubvolumeInfo:
    """What btrfs says of the subvolume whose root folder is `path`."""
    buf = bytearray(_INFO_SIZE)
    _ioctl_in(path, GET_SUBVOL_INFO, buf)  # the kernel fills `buf`
    # treeid, name[256], parent_id, dirid, generation, flags, uuid[16], parent_uuid[16],
    # received_uuid[16], ctransid, ...
    (flags,) = struct.unpack_from("Q", buf, 288)
    (ctransid,) = struct.unpack_from("Q", buf, 344)
    return SubvolumeInfo(uuid=bytes(buf[296:312]).hex(), parent_uuid=bytes(buf[312:328]).hex(),
                         ctransid=ctransid, read_only=bool(flags & _ROOT_RDONLY))

