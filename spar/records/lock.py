"""The series lock (G33): one write at a time per series.

The lock is `flock` on the series folder itself, so it leaves no file that git
could see (a series whose round folders are ignored one by one stays clean),
and the kernel releases it when the holder dies, so a crashed run never leaves
the series locked. Callers must read the records again after taking the lock.
"""

from __future__ import annotations

import fcntl
import os
import re
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


def waiting_message(series: Path | str, holder: tuple[str, int] | None = None) -> str:
    """The one line a command prints when it must wait; names the holder when it is a Spar command."""
    line = f"spar: waiting for another write of {series} to finish"
    if holder is not None:
        line += f"; the series lock is held by `spar {holder[0]}` (pid {holder[1]})"
    return line


_COMMAND = re.compile(r"[a-z][a-z-]{0,31}")


def _lock_table(series: Path | str) -> tuple[str, str] | None:
    """The series folder's key in /proc/locks and that table's text, or None when either
    cannot be read."""
    try:
        st = os.stat(series)
        with open("/proc/locks", encoding="ascii", errors="replace") as fh:
            return _lock_key(st), fh.read()
    except OSError:
        return None


def lock_holder(series: Path | str) -> tuple[str, int] | None:
    """(command, pid) of the Spar process holding the series lock, or None when that cannot be
    told. No note is written anywhere (the lock leaves no file): the kernel's own table,
    /proc/locks, names the holding process, and its /proc/PID/cmdline names the command."""
    found = _lock_table(series)
    if found is None:
        return None
    key, table = found
    for fields in map(str.split, table.splitlines()):
        # the holder: "1: FLOCK  ADVISORY  WRITE <pid> <dev>:<inode> 0 EOF" (waiters have "->")
        if "->" in fields or "FLOCK" not in fields or key not in fields:
            continue
        at = fields.index("FLOCK") + 3
        pid = int(fields[at]) if at < len(fields) and fields[at].isdigit() else 0
        command = _spar_command(pid) if pid > 0 else None
        return (command, pid) if command is not None else None
    return None


def _spar_command(pid: int) -> str | None:
    """The Spar command process `pid` runs (`run` for `spar run …`, `python -m spar run …`
    or `python …/bin/spar run …`), or None when it is not Spar."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            argv = fh.read().decode("utf-8", errors="replace").split("\0")
    except OSError:
        return None
    for n, arg in enumerate(argv[:-1]):
        if os.path.basename(arg) == "spar":  # the program, its script, or the module after -m
            command = argv[n + 1]
            return command if _COMMAND.fullmatch(command) else None
    return None


def _lock_key(st: os.stat_result) -> str:
    """How /proc/locks names a file: `<major>:<minor>:<inode>`, the numbers of the device in hex."""
    return f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"


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
                        print(waiting_message(shown, lock_holder(series)), file=out, flush=True)
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
    found = _lock_table(series)
    if found is None:
        return None
    # "1: FLOCK  ADVISORY  WRITE <pid> <major>:<minor>:<inode> 0 EOF" (waiters: "1: -> FLOCK ...")
    key, table = found
    return any("FLOCK" in fields and key in fields for fields in map(str.split, table.splitlines()))
