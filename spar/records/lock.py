"""The series lock (G33): one write at a time per series.

The lock is `flock` on the series folder itself, so it leaves no file that git
could see (a series whose round folders are ignored one by one stays clean),
and the kernel releases it when the holder dies, so a crashed run never leaves
the series locked. Callers must read the records again after taking the lock.
"""

from __future__ import annotations

import fcntl
import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

from spar.errors import WriteFailed

# flock locks of one process on two descriptors still exclude each other, so a
# nested take of the same series would wait forever; catch that bug loudly.
_held: set[str] = set()
_held_guard = threading.Lock()


def waiting_message(series: Path | str) -> str:
    return f"spar: waiting for another write of {series} to finish"


def _open_lock(series: Path) -> int:
    try:
        series.mkdir(parents=True, exist_ok=True)
        return os.open(series, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise WriteFailed(f"cannot lock {series}: {exc.strerror or exc}") from exc


def _same_file(fd: int, path: Path) -> bool:
    try:
        a, b = os.fstat(fd), os.stat(path)
    except OSError:
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


@contextmanager
def series_lock(series: Path | str, *, stderr: TextIO | None = None) -> Iterator[None]:
    """Hold the series lock; when another write holds it, say so once on stderr and wait.

    Creates the series folder when missing."""
    shown = series
    series = Path(series)
    key = os.path.realpath(series)
    with _held_guard:
        if key in _held:
            raise RuntimeError(f"series lock of {series} is already held by this process")
        _held.add(key)
    try:
        told = False
        while True:
            fd = _open_lock(series)
            try:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    if not told:
                        out = stderr if stderr is not None else sys.stderr
                        print(waiting_message(shown), file=out, flush=True)
                        told = True
                    fcntl.flock(fd, fcntl.LOCK_EX)
            except OSError as exc:
                os.close(fd)
                raise WriteFailed(f"cannot lock {series}: {exc.strerror or exc}") from exc
            except BaseException:
                os.close(fd)
                raise
            # the series folder was removed or replaced while we waited: lock the new one
            if _same_file(fd, series):
                break
            os.close(fd)
        try:
            yield
        finally:
            try:
                fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)
    finally:
        with _held_guard:
            _held.discard(key)


def is_locked(series: Path | str) -> bool | None:
    """Whether some process holds (or waits for) the series lock right now, read from
    Linux's /proc/locks without taking the lock (G33: the gate never locks); None
    when that cannot be told. Lets a reader tell a write in progress from the
    leftovers of a killed one."""
    try:
        st = os.stat(series)
        with open("/proc/locks", encoding="ascii", errors="replace") as fh:
            table = fh.read()
    except OSError:
        return None
    # "1: FLOCK  ADVISORY  WRITE <pid> <major>:<minor>:<inode> 0 EOF" (waiters: "1: -> FLOCK ...")
    key = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    return any("FLOCK" in fields and key in fields for fields in map(str.split, table.splitlines()))
