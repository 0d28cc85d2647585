"""A window of lines of a round's workspace copy, read under bounds fixed before the
first byte is read: what a verifier is shown of a file a reviewer may have replaced.

- Only a regular file is read: every folder on the way is opened without following a
  symbolic link, the file itself is refused unless `lstat` says regular, and it is
  opened non-blocking (a FIFO swapped in after the check cannot block the open) and
  checked again with `fstat` before a byte is read.
- At most SCAN_LIMIT bytes of it are read, in chunks, to reach the window's lines;
  chunks wholly before the window are only counted, so memory holds one chunk and the
  window, and the time is linear in the bytes read.
- Each kept line holds at most LINE_LIMIT bytes (a minified one-line file is shown
  as its start); the window says how many bytes each cut line had.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

# a 16 MiB source file reaches some 300,000 lines of code, past any file a reviewer can
# read whole; a location further in is said to be out of reach instead of scanned
SCAN_LIMIT = 16 * 1024 * 1024
# source lines are seldom longer than 120 characters; 300 bytes shows a long line's start
# while a window of 200 lines stays under 64 KiB
LINE_LIMIT = 300
CHUNK = 64 * 1024


@dataclass
class Window:
    """Lines first..first + len(lines) - 1 of a file, each cut at LINE_LIMIT bytes."""

    first: int
    lines: list[str] = field(default_factory=list)
    lengths: dict[int, int] = field(default_factory=dict)  # line number -> its bytes, for each line cut
    stopped: bool = False  # SCAN_LIMIT bytes were read before the window's end
    problem: str | None = None  # why nothing was read (not a regular file, unreadable)

    def shown(self, number: int, line: str) -> str:
        """The line as shown, with what was cut of it said."""
        full = self.lengths.get(number)
        return line if full is None else f"{line} [… the line has {full} bytes; the first {LINE_LIMIT} shown]"


def _open_regular(root: Path, rel: str) -> int:
    """A descriptor of `root/rel` when it is a regular file reached from `root` without
    following a symbolic link (a copy's own folder included: `rel` starts with it); OSError
    otherwise (ENOENT, ELOOP or ENOTDIR for a link, EINVAL for a file of another kind)."""
    parts = rel.split("/")
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in parts[:-1]:
            inner = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
            os.close(fd)
            fd = inner
        if not stat.S_ISREG(os.stat(parts[-1], dir_fd=fd, follow_symlinks=False).st_mode):
            raise OSError(22, "not a regular file")
        file_fd = os.open(parts[-1], os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
    finally:
        os.close(fd)
    if not stat.S_ISREG(os.fstat(file_fd).st_mode):  # replaced between the check and the open
        os.close(file_fd)
        raise OSError(22, "not a regular file")
    return file_fd


class _Collector:
    """The window's lines as chunks arrive: line `number` is being read."""

    def __init__(self, window: Window, last: int):
        self.window, self.last = window, last
        self.number = 1
        self.current = bytearray()
        self.length = 0

    def feed(self, chunk: bytes) -> None:
        breaks = chunk.count(b"\n")
        if self.number + breaks < self.window.first:  # the whole chunk is before the window
            self.number += breaks
            return
        pieces = chunk.split(b"\n")
        for piece in pieces[:-1]:
            self._add(piece)
            self.end_line()
        self._add(pieces[-1])

    def _add(self, piece: bytes) -> None:
        if self.window.first <= self.number <= self.last:
            room = LINE_LIMIT - len(self.current)
            if room > 0:
                self.current += piece[:room]
            self.length += len(piece)

    def end_line(self) -> None:
        if self.window.first <= self.number <= self.last:
            if self.length > LINE_LIMIT:
                self.window.lengths[self.number] = self.length
            self.window.lines.append(bytes(self.current).decode("utf-8", errors="replace").rstrip("\r"))
        self.number += 1
        self.current, self.length = bytearray(), 0


def read_window(root: Path, rel: str, first: int, last: int) -> Window:
    """Lines first..last (1-based, inclusive) of `root/rel`, as far as SCAN_LIMIT reaches."""
    window = Window(first)
    try:
        fd = _open_regular(root, rel)
    except OSError as exc:
        window.problem = exc.strerror or str(exc)
        return window
    collector = _Collector(window, last)
    read = 0
    try:
        while collector.number <= last and read < SCAN_LIMIT:
            chunk = os.read(fd, min(CHUNK, SCAN_LIMIT - read))
            if not chunk:
                if collector.length:  # a last line without a line end
                    collector.end_line()
                return window
            read += len(chunk)
            collector.feed(chunk)
    except OSError as exc:
        window.problem = exc.strerror or str(exc)
        return window
    finally:
        os.close(fd)
    window.stopped = collector.number <= last
    return window


__all__ = ["LINE_LIMIT", "SCAN_LIMIT", "Window", "read_window"]
