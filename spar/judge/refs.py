"""The reference grammar shared by finding locations (G7) and links (G8), contract §3.

    reference = the text with leading and trailing whitespace removed
              = prefix? path (":" line (dash line)?)? (end rest)?
    prefix    = G7: "head/" | "base/" | "./"    G8: "head/" | "./"   (the one in front, once)
    line      = one or more ASCII digits
    dash      = "-" | "–"
    end       = whitespace | "," | ";"          (only after a line)

Pure parsing: which candidate is the path depends on what exists (the whole
reference or its first word), so the caller passes `is_target`. Lines are read
but never checked here; the caller checks them after the path is settled
(line 0 / end < start mean different things for G7 and G8).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

from spar.errors import quote
from spar.whitespace import WHITESPACE, trim

END_CHARS = WHITESPACE | {",", ";"}

G7_PREFIXES = ("head/", "base/", "./")
G8_PREFIXES = ("head/", "./")

# ":" line (dash line)? — ASCII digits only ([0-9], never \d, which takes any Unicode digit).
_LINE = re.compile(r":([0-9]+)(?:[-\u2013]([0-9]+))?")


def split_prefix(text: str, prefixes: tuple[str, ...]) -> tuple[str, str]:
    """(prefix removed or "", remainder). Only the one prefix in front, only once."""
    for prefix in prefixes:
        if text.startswith(prefix):
            return prefix, text[len(prefix):]
    return "", text


def first_word(text: str) -> str:
    for i, ch in enumerate(text):
        if ch in WHITESPACE:
            return text[:i]
    return text


@dataclass(frozen=True)
class LinePlace:
    """The line part of a reference."""

    index: int  # where ":" starts
    start: int
    end: int
    after: int  # index just past the line(s)


def find_line(body: str) -> LinePlace | None:
    """The first `:line` or `:line-line` followed by an end char or the end of the text."""
    pos = 0
    while True:
        colon = body.find(":", pos)
        if colon < 0:
            return None
        m = _LINE.match(body, colon)
        if m is not None:
            after = m.end()
            if after == len(body) or body[after] in END_CHARS:
                start = int(m.group(1))
                end = int(m.group(2)) if m.group(2) is not None else start
                return LinePlace(colon, start, end, after)
        pos = colon + 1


def stray_after_line(body: str) -> str:
    """When no line position exists: a description of the first `:line` followed by a
    character the grammar does not allow there (e.g. `:10.`), else "". Used only to
    explain why a reference that found no target is outside the grammar."""
    for m in _LINE.finditer(body):
        after = m.end()
        if after < len(body) and body[after] not in END_CHARS:
            return f"{quote(body[after])} after {quote(m.group(0))}"
    return ""


class ParsedRef(NamedTuple):
    """A reference read into prefix, path and lines."""

    text: str  # the trimmed reference
    prefix: str  # the prefix removed ("" when none)
    path: str  # the path as read (after the prefix; trailing "/" kept)
    start: int | None  # None when the reference has no line
    end: int | None
    rest: str  # what follows the end char (line form) or the path (no line)
    form: str  # "line", "whole" (no line, the whole was a target) or "word" (first word)
    stray: str  # see stray_after_line; "" when the reference has a line

    @property
    def has_line(self) -> bool:
        return self.start is not None

    @property
    def line_problem(self) -> str:
        """"" when the lines are fine (or absent); else what is wrong with them."""
        if self.start is None or self.end is None:
            return ""
        if self.start == 0 or self.end == 0:
            return "line 0"
        if self.end < self.start:
            return f"end line {self.end} < start line {self.start}"
        return ""


def parse_ref(text: str, prefixes: tuple[str, ...],
              is_target: Callable[[str, str], bool]) -> ParsedRef:
    """Read `text` by the §3 grammar. `is_target(prefix, path)` says whether `path`
    (read after removing `prefix`) names a target. It is asked once, about the whole
    reference, and only when the reference has no line; when the answer is no, the
    first word is the path whether or not it is a target (the caller judges that)."""
    trimmed = trim(text)
    prefix, body = split_prefix(trimmed, prefixes)
    place = find_line(body)
    if place is not None:
        rest = body[place.after + 1:] if place.after < len(body) else ""
        return ParsedRef(trimmed, prefix, body[:place.index], place.start, place.end,
                         rest, "line", "")
    stray = stray_after_line(body)
    if is_target(prefix, body):
        return ParsedRef(trimmed, prefix, body, None, None, "", "whole", stray)
    word = first_word(body)
    return ParsedRef(trimmed, prefix, word, None, None, body[len(word):], "word", stray)
