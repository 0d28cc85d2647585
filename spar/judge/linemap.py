"""Where lines of one commit are in another: a `git diff -U0 -M` read as a line map (pure).

The caller runs git (`spar.git.line_diff`) and hands the text in. A line that
only moved (lines were inserted or removed above it) maps to its new number; a
line the diff deletes or changes maps to nothing, so a finding about code that
is gone never matches a finding about the code that replaced it. A renamed
file maps to its new path; a file the diff does not name is unchanged.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import NamedTuple

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_C_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}


class Hunk(NamedTuple):
    """One hunk header of a `git diff -U0`."""

    old_start: int
    old_count: int
    new_start: int
    new_count: int

    @property
    def shift_from(self) -> int:
        """The first old line after this hunk: lines from here on move by new - old count.
        A pure insertion (`-a,0`) goes after old line a, so line a itself stays."""
        return self.old_start + max(self.old_count, 1)

    def deletes(self, line: int) -> bool:
        return self.old_count > 0 and self.old_start <= line < self.old_start + self.old_count


@dataclass
class FileChange:
    """One file's change in a `git diff -U0 -M`."""

    old_path: str | None  # None: the file is new
    new_path: str | None  # None: the file was deleted
    hunks: list[Hunk] = field(default_factory=list)
    binary: bool = False  # lines of a changed binary file cannot be followed


def unquote(text: str) -> str:
    """A path as git prints it: C-quoted ("...", octal bytes) when it holds special characters."""
    if not (len(text) >= 2 and text.startswith('"') and text.endswith('"')):
        return text
    body, out, i = text[1:-1], bytearray(), 0
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if nxt in "01234567" and re.fullmatch(r"[0-7]{3}", body[i + 1:i + 4] or ""):
                out.append(int(body[i + 1:i + 4], 8))
                i += 4
                continue
            if nxt in _C_ESCAPES:
                out.append(_C_ESCAPES[nxt])
                i += 2
                continue
        out += ch.encode("utf-8", "surrogateescape")
        i += 1
    return out.decode("utf-8", "surrogateescape")


def _side(value: str, prefix: str) -> str | None:
    value = value.rstrip("\n")
    if value.endswith("\t"):  # git ends a name holding a space with a tab
        value = value[:-1]
    if value == "/dev/null":
        return None
    value = unquote(value)
    return value[len(prefix):] if value.startswith(prefix) else value


class LineMap:
    """Old commit lines -> new commit lines for every file, from one diff."""

    def __init__(self, changes: list[FileChange]):
        self.changes = changes  # new files too (`touches`); old lines map through `by_old`
        self.by_old = {c.old_path: c for c in changes if c.old_path}

    def map_path(self, path: str) -> str | None:
        change = self.by_old.get(path)
        return path if change is None else change.new_path

    def map_line(self, path: str, line: int) -> int | None:
        change = self.by_old.get(path)
        if change is None:
            return line
        if change.new_path is None or change.binary:
            return None
        delta = 0
        for h in change.hunks:
            if h.deletes(line):
                return None
            if line >= h.shift_from:
                delta += h.new_count - h.old_count
        return line + delta

    def map_range(self, path: str, start: int | None, end: int | None) -> tuple[str, int | None, int | None] | None:
        """(new path, new start, new end) of old lines start..end, or None when the file is gone
        or none of the lines survive. Without lines: the whole file (or folder), by path alone.
        Lines the diff deleted inside the range are skipped; the ends are the first and last
        lines that survive."""
        new_path = self.map_path(path)
        if new_path is None:
            return None
        if start is None or end is None:
            return new_path, None, None
        first, last = self._survivor(path, start, end, 1), self._survivor(path, end, start, -1)
        if first is None or last is None:
            return None
        new_first, new_last = self.map_line(path, first), self.map_line(path, last)
        if new_first is None or new_last is None:
            return None
        return new_path, new_first, new_last

    def _survivor(self, path: str, begin: int, stop: int, step: int) -> int | None:
        """The first line from `begin` towards `stop` that the diff keeps."""
        change = self.by_old.get(path)
        if change is None:
            return begin
        if change.binary:
            return None
        line = begin
        while (line <= stop) if step > 0 else (line >= stop):
            hit = next((h for h in change.hunks if h.deletes(line)), None)
            if hit is None:
                return line
            line = hit.old_start + hit.old_count if step > 0 else hit.old_start - 1
        return None


    def touches(self, path: str, start: int | None, end: int | None) -> bool:
        """Whether the diff changed new-side lines start..end of `path` (without lines: any of
        it), or the file itself (added, deleted, binary); a line next to a deletion counts."""
        for change in self.changes:
            if path not in (change.new_path, change.old_path):
                continue
            if change.binary or change.old_path is None or change.new_path is None or start is None or end is None:
                return bool(change.hunks) or change.binary or change.old_path != change.new_path
            return any(h.new_start <= end and start <= h.new_start + max(h.new_count, 1) - 1 for h in change.hunks)
        return False


IDENTITY = LineMap([])


def parse_diff(text: str) -> LineMap:
    """Read `git diff -U0 -M --src-prefix=a/ --dst-prefix=b/` output."""
    changes: list[FileChange] = []
    current: FileChange | None = None
    header = False  # between "diff --git" and the first hunk: a removed "-- x" line is not a header
    for line in text.split("\n"):
        if line.startswith("diff --git "):
            header = True
            current = FileChange(old_path=None, new_path=None)
            current.old_path = current.new_path = ""  # filled from ---/+++ or rename lines
            changes.append(current)
            # a pure mode change or rename names the paths only here: "a/X b/X"
            rest = line[len("diff --git "):]
            if not rest.startswith('"') and rest.count(" b/") == 1:
                old, new = rest.split(" b/")
                current.old_path = old[2:] if old.startswith("a/") else old
                current.new_path = new
            continue
        if current is None:
            continue
        m = _HUNK.match(line)
        if m:
            header = False
            current.hunks.append(Hunk(int(m.group(1)), int(m.group(2) or "1"),
                                      int(m.group(3)), int(m.group(4) or "1")))
        elif not header:
            continue
        elif line.startswith("rename from "):
            current.old_path = unquote(line[len("rename from "):])
        elif line.startswith("rename to "):
            current.new_path = unquote(line[len("rename to "):])
        elif line.startswith("new file mode"):
            current.old_path = None
        elif line.startswith("deleted file mode"):
            current.new_path = None
        elif line.startswith("--- "):
            current.old_path = _side(line[4:], "a/")
        elif line.startswith("+++ "):
            current.new_path = _side(line[4:], "b/")
        elif line.startswith("Binary files ") or line == "GIT binary patch":
            current.binary = True
    return LineMap(changes)
