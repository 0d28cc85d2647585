"""Whole-file replacement: a reader sees the old file or the new one, never a mix.

Write `NAME.tmp` beside the target, flush and fsync it, rename it over the
target, then fsync the folder so the rename itself survives a crash.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from spar.errors import WriteFailed


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _failed(path: Path, exc: OSError) -> WriteFailed:
    return WriteFailed(f"cannot write {path}: {exc.strerror or exc}")


def write_bytes(path: Path | str, data: bytes) -> None:
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    try:
        # O_NOFOLLOW/O_TRUNC: a leftover or planted NAME.tmp is never followed or appended to
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        raise _failed(path, exc) from exc
    try:
        try:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise _failed(path, exc) from exc
    try:
        _fsync_dir(path.parent)
    except OSError as exc:
        # the new file is in place but its rename may not be durable: exit 70 says "may have been applied"
        raise _failed(path, exc) from exc


def write_text(path: Path | str, text: str) -> None:
    write_bytes(path, text.encode("utf-8"))


def dumps(obj: Any) -> str:
    """The JSON text of a whole-file record (strict JSON: no NaN)."""
    return json.dumps(obj, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def write_json(path: Path | str, obj: Any) -> None:
    # encode first: an object that cannot be written touches nothing on disk
    write_text(path, dumps(obj))
