"""Check path globs (G24): `/`-separated segments, `**` = zero or more path
segments, every other segment matched within one name by Go `path.Match` rules.

Pure: no I/O. A pattern is checked with `glob_problem` before use; `match_glob`
on a bad pattern is simply False (as Go's Match returns false with its error).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import cache, lru_cache

from spar.errors import quote


class _BadPattern(Exception):
    pass


def normalize_glob(pattern: str) -> str:
    """A trailing `/` is ignored (G24): `tests/` means `tests`."""
    return pattern.rstrip("/") if pattern.strip("/") else pattern


def glob_problem(pattern: str) -> str | None:
    """Why `pattern` is not an acceptable check path glob, or None when it is."""
    if pattern == "":
        return "empty glob"
    if pattern.startswith("/"):
        return "absolute path (check paths are repository-relative)"
    for segment in normalize_glob(pattern).split("/"):
        if segment == "..":
            return "'..' segment (check paths stay inside the repository)"
        if segment == "**":
            continue
        try:
            _compile_segment(segment)
        except _BadPattern as bad:
            return f"bad pattern in segment {quote(segment)}: {bad}"
    return None


def match_glob(pattern: str, path: str) -> bool:
    """Does repository path `path` match `pattern`? The root (empty path) never does."""
    path = path.strip("/")
    if path == "" or glob_problem(pattern) is not None:
        return False
    pat = tuple(normalize_glob(pattern).split("/"))
    return _match_segments(pat, tuple(path.split("/")))


def match_any(patterns: Iterable[str], path: str) -> bool:
    return any(match_glob(p, path) for p in patterns)


def _match_segments(pat: tuple[str, ...], names: tuple[str, ...]) -> bool:
    # memoised over suffix positions: patterns with several `**` stay linear-ish
    @cache
    def go(i: int, j: int) -> bool:
        if i == len(pat):
            return j == len(names)
        if pat[i] == "**":
            # zero or more whole segments
            return any(go(i + 1, k) for k in range(j, len(names) + 1))
        if j == len(names):
            return False
        return _compile_segment(pat[i]).fullmatch(names[j]) is not None and go(i + 1, j + 1)

    return go(0, 0)


@lru_cache(maxsize=1024)
def _compile_segment(segment: str) -> re.Pattern[str]:
    """Translate one Go path.Match pattern (no `/` inside) into a regex.

    Follows Go's parser exactly, including what it calls ErrBadPattern:
    a trailing `\\`, an unclosed `[`, an empty class, a `-` or `]` where a
    class character is expected (`[]`, `[-a]`, `[a-]`, `[a-b-c]`)."""
    out: list[str] = []
    i, n = 0, len(segment)
    while i < n:
        ch = segment[i]
        if ch == "*":
            out.append(".*")
            i += 1
        elif ch == "?":
            out.append(".")
            i += 1
        elif ch == "\\":
            if i + 1 >= n:
                raise _BadPattern("trailing '\\'")
            out.append(re.escape(segment[i + 1]))
            i += 2
        elif ch == "[":
            regex, i = _class(segment, i + 1)
            out.append(regex)
        else:
            out.append(re.escape(ch))
            i += 1
    return re.compile("".join(out), re.DOTALL)


def _class(segment: str, i: int) -> tuple[str, int]:
    """Parse a character class starting after `[`; return (regex, index after `]`)."""
    n = len(segment)
    negated = i < n and segment[i] == "^"
    if negated:
        i += 1
    ranges: list[tuple[str, str]] = []
    while True:
        if i < n and segment[i] == "]" and ranges:
            i += 1
            break
        lo, i = _class_char(segment, i)
        hi = lo
        if segment[i] == "-":  # _class_char guarantees a character follows
            hi, i = _class_char(segment, i + 1)
        ranges.append((lo, hi))
    # Go accepts lo > hi (an empty range); Python's re would reject it, so drop it
    parts = [re.escape(lo) if lo == hi else f"{re.escape(lo)}-{re.escape(hi)}"
             for lo, hi in ranges if lo <= hi]
    if not parts:
        return ("." if negated else "(?!)"), i
    return f"[{'^' if negated else ''}{''.join(parts)}]", i


def _class_char(segment: str, i: int) -> tuple[str, int]:
    """Go's getEsc: one class character (maybe escaped) that must be followed by more."""
    n = len(segment)
    if i >= n:
        raise _BadPattern("unclosed '['")
    if segment[i] in "-]":
        raise _BadPattern(f"unexpected {segment[i]!r} in character class")
    if segment[i] == "\\":
        i += 1
        if i >= n:
            raise _BadPattern("unclosed '[' (trailing '\\')")
    ch = segment[i]
    i += 1
    if i >= n:
        raise _BadPattern("unclosed '['")
    return ch, i
