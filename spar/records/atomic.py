"""Durable writes: whole-file replacement and whole-line appends.

Replacement writes a temporary file beside the target, fsyncs it, renames it
over the target, then fsyncs the folder so the rename itself survives a crash:
a reader sees the old file or the new one, never a mix. Appends add one whole
line with `O_APPEND` (callers hold the series lock, G33); an append that fails
part-way is cut back to the size before it. Every failure is `WriteFailed`
(exit 70) naming the target.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import threading
from pathlib import Path
from typing import Any

from spar.errors import RecordError, WriteFailed


def fsync_dir(folder: Path) -> None:
    """Make a rename or a new name in `folder` durable."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def replace(tmp: str | Path, target: str | Path, folder_fd: int | None = None) -> None:
    """The one atomic rename: `tmp` takes `target`'s name (both names relative to
    `folder_fd` when given); raises OSError. Durable only once the folder is fsynced."""
    os.replace(tmp, target, src_dir_fd=folder_fd, dst_dir_fd=folder_fd)


def _failed(path: Path, exc: OSError) -> WriteFailed:
    return WriteFailed(f"cannot write {path}: {exc.strerror or exc}")


def _open_tmp(path: Path, unique: bool) -> tuple[int, Path]:
    if unique:
        # writers without a lock (the gate): each gets its own name, since a shared
        # NAME.tmp could be truncated by one while the other renames it into place
        fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        return fd, Path(name)
    tmp = path.with_name(path.name + ".tmp")
    # O_NOFOLLOW/O_TRUNC: a leftover or planted NAME.tmp is never followed or appended to
    return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644), tmp


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def write_bytes(path: Path | str, data: bytes, *, unique_tmp: bool = False, mode: int | None = None,
                owner: tuple[int, int] | None = None) -> None:
    """Replace `path` whole. Writers under the series lock use `NAME.tmp` (a name
    reviewers cannot take, G21); `unique_tmp` is for writers that take no lock. `mode` and
    `owner` (uid, gid) are the new file's, for a file that must keep its own (a login)."""
    path = Path(path)
    try:
        fd, tmp = _open_tmp(path, unique_tmp)
    except OSError as exc:
        raise _failed(path, exc) from exc
    try:
        try:
            if mode is not None:
                os.fchmod(fd, mode)
            elif unique_tmp:
                os.fchmod(fd, 0o644)  # mkstemp makes it private; the gate file is for everybody
            if owner is not None:
                os.fchown(fd, *owner)
            _write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise _failed(path, exc) from exc
        raise
    try:
        fsync_dir(path.parent)
    except OSError as exc:
        # the new file is in place but its rename may not be durable: exit 70 says "may have been applied"
        raise _failed(path, exc) from exc


def write_files(files: list[tuple[Path, bytes]]) -> None:
    """Replace several files (under the series lock, `NAME.tmp` each) as `write_bytes`
    would one by one, with the same durability, but their fsyncs run at once: the file
    system commits them together instead of one journal commit per file, which is most
    of a round's set-up time on a busy disk. Every file is renamed into place only once
    all are on disk; on a failure none is, and the temporary files are removed."""
    opened: list[tuple[Path, Path, int]] = []
    open_fds: set[int] = set()
    try:
        for target, data in files:
            path = Path(target)
            try:
                fd, tmp = _open_tmp(path, False)
            except OSError as exc:
                raise _failed(path, exc) from exc
            opened.append((path, tmp, fd))
            open_fds.add(fd)
            try:
                _write_all(fd, data)
            except OSError as exc:
                raise _failed(path, exc) from exc
        _all_at_once([(path, fd) for path, _tmp, fd in opened], os.fsync)
        for _path, _tmp, fd in opened:
            open_fds.discard(fd)
            os.close(fd)
        for path, tmp, _fd in opened:
            try:
                replace(tmp, path)
            except OSError as exc:
                raise _failed(path, exc) from exc
    except BaseException:
        for _path, tmp, fd in opened:
            if fd in open_fds:
                with contextlib.suppress(OSError):
                    os.close(fd)
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        raise
    folders = list(dict.fromkeys(path.parent for path, _tmp, _fd in opened))
    _all_at_once([(folder, folder) for folder in folders], fsync_dir)


def _all_at_once(items: list[tuple[Path, Any]], sync: Any) -> None:
    """`sync(arg)` for every (path, arg) in threads of its own (fsync releases the GIL);
    the first failure is raised as WriteFailed naming its path."""
    errors: list[tuple[Path, OSError]] = []

    def one(path: Path, arg: Any) -> None:
        try:
            sync(arg)
        except OSError as exc:
            errors.append((path, exc))

    threads = [threading.Thread(target=one, args=item) for item in items[1:]]
    for thread in threads:
        thread.start()
    if items:
        one(*items[0])
    for thread in threads:
        thread.join()
    if errors:
        raise _failed(*errors[0])


def write_text(path: Path | str, text: str, *, unique_tmp: bool = False) -> None:
    write_bytes(path, text.encode("utf-8"), unique_tmp=unique_tmp)


def dumps(obj: Any) -> str:
    """The JSON text of a whole-file record (strict JSON: no NaN)."""
    return json.dumps(obj, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def write_json(path: Path | str, obj: Any, *, unique_tmp: bool = False) -> None:
    # encode first: an object that cannot be written touches nothing on disk
    write_text(path, dumps(obj), unique_tmp=unique_tmp)


def append_line(path: Path | str, data: bytes, *, create: bool = True) -> None:
    """Append one whole line (`data` ends with its only newline).

    Refuses (RecordError) when the file's last line is torn, since appending would
    glue this line onto it, and, with `create=False`, when the file is missing (a
    record that must already exist is never started afresh). A write that fails
    part-way (ENOSPC, EIO) is rolled back: the file is cut to its size before the
    append and fsynced, then WriteFailed (exit 70) reports the failure, so a full
    disk never leaves a torn line behind."""
    path = Path(path)
    flags = os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC | (os.O_CREAT if create else 0)
    try:
        fd = os.open(path, flags, 0o644)
    except FileNotFoundError as exc:
        if create:
            raise _failed(path, exc) from exc
        raise RecordError(f"{path}: missing") from None
    except OSError as exc:
        raise _failed(path, exc) from exc
    try:
        try:
            size = os.fstat(fd).st_size
            if size and _last_byte(path, size) != b"\n":
                raise RecordError(f"{path}: the last line is incomplete (a write was interrupted)")
        except OSError as exc:
            raise _failed(path, exc) from exc
        try:
            _write_all(fd, data)
            os.fsync(fd)
        except OSError as exc:
            _roll_back(fd, path, size, exc)
    finally:
        os.close(fd)
    if size == 0:
        try:
            fsync_dir(path.parent)  # the file may be new: make its name durable
        except OSError as exc:
            raise _failed(path, exc) from exc


def _roll_back(fd: int, path: Path, size: int, exc: OSError) -> None:
    """Cut `path` back to `size` after a failed append and raise WriteFailed."""
    why = exc.strerror or str(exc)
    try:
        os.ftruncate(fd, size)
        os.fsync(fd)
    except OSError as undo:
        raise WriteFailed(f"cannot write {path} (undoing the append failed too, "
                          f"{undo.strerror or undo}: its last line may be torn): {why}") from exc
    raise WriteFailed(f"cannot write {path} (the append was undone): {why}") from exc


def _last_byte(path: Path, size: int) -> bytes:
    # the append fd is write-only; read the tail through a second descriptor
    with open(path, "rb") as f:
        f.seek(size - 1)
        return f.read(1)
