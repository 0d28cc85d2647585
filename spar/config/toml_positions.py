"""TOML 1.0 parsing with the line of every key (G17 errors name the key's line).

`tomllib` (strict TOML 1.0, like go-toml/v2) decides syntax and values; it
gives no positions, so a small scanner walks the same text — already known to
be valid — and records where each key path is first written. Key paths are
tuples: table keys are strings, array items (array-of-tables entries included)
are their 0-based index, e.g. `("reviewers", 1, "model")`.
"""

from __future__ import annotations

import bisect
import re
import tomllib
from dataclasses import dataclass, field
from typing import Any

KeyPath = tuple[str | int, ...]  # a key path: table keys and array indexes

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


class TomlSyntaxError(Exception):
    def __init__(self, line: int, message: str):
        super().__init__(message)
        self.line = line
        self.message = message


@dataclass
class LocatedDoc:
    """A parsed configuration file and where its keys are."""

    file: str
    data: dict[str, Any]
    lines: dict[KeyPath, int] = field(default_factory=dict)

    def line(self, path: KeyPath) -> int:
        """Line of `path`, else of its nearest written parent, else 1."""
        path = tuple(path)
        while path:
            if path in self.lines:
                return self.lines[path]
            path = path[:-1]
        return 1


_AT = re.compile(r"\s*\(at (?:line (\d+), column \d+|end of document)\)\s*$")


def parse_toml(text: str) -> dict[str, Any]:
    """tomllib with errors turned into TomlSyntaxError(line, message)."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        msg = str(err)
        m = _AT.search(msg)
        if m and m.group(1):
            line = int(m.group(1))
        else:  # "at end of document": the last line holding anything
            line = max(1, len(text.rstrip("\r\n").split("\n")))
        raise TomlSyntaxError(line, f"TOML syntax error: {_AT.sub('', msg)}") from None
    return data


def locate_toml(file: str, text: str) -> LocatedDoc:
    """Parse `text` and compute key lines; raises TomlSyntaxError.

    Integers outside 64 bits are a syntax error, as in TOML 1.0 (tomllib
    accepts them)."""
    data = parse_toml(text)
    doc = LocatedDoc(file, data, key_lines(text))
    bad = _first_big_int(data, ())
    if bad is not None:
        raise TomlSyntaxError(doc.line(bad), "TOML syntax error: integer does not fit in 64 bits")
    return doc


def _first_big_int(value: object, path: KeyPath) -> KeyPath | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return path if not INT64_MIN <= value <= INT64_MAX else None
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        found = _first_big_int(item, path + (key,))
        if found is not None:
            return found
    return None


def key_lines(text: str) -> dict[KeyPath, int]:
    """Line (1-based) where each key path, array item and table is first written.

    Assumes `text` is valid TOML (call after tomllib accepted it)."""
    return _Scanner(text).run()


_BARE = re.compile(r"[A-Za-z0-9_-]+")
_ESCAPES = {"b": "\b", "t": "\t", "n": "\n", "f": "\f", "r": "\r", '"': '"', "\\": "\\"}


class _Scanner:
    def __init__(self, text: str):
        self.s = text
        self.i = 0
        self.newlines = [m.start() for m in re.finditer("\n", text)]
        self.lines: dict[KeyPath, int] = {}
        self.aot: dict[KeyPath, int] = {}  # array-of-tables path -> entries so far

    # -- helpers ---------------------------------------------------------
    def line_at(self, i: int) -> int:
        return bisect.bisect_left(self.newlines, i) + 1

    def peek(self, k: int = 0) -> str:
        j = self.i + k
        return self.s[j] if j < len(self.s) else ""

    def skip_ws(self) -> None:
        while self.peek() in (" ", "\t") and self.peek():
            self.i += 1

    def skip_blank(self) -> None:
        """Whitespace, newlines and comments (between statements, inside arrays)."""
        while self.i < len(self.s):
            ch = self.s[self.i]
            if ch in " \t\r\n":
                self.i += 1
            elif ch == "#":
                end = self.s.find("\n", self.i)
                self.i = len(self.s) if end < 0 else end
            else:
                break

    def record(self, path: KeyPath, i: int) -> None:
        self.lines.setdefault(path, self.line_at(i))

    # -- grammar ---------------------------------------------------------
    def run(self) -> dict[KeyPath, int]:
        table: KeyPath = ()
        while True:
            self.skip_blank()
            if self.i >= len(self.s):
                return self.lines
            start = self.i
            if self.s.startswith("[[", self.i):
                self.i += 2
                table = self.header(self.key(), start, array=True)
                self.skip_ws()
                self.i += 2  # ]]
            elif self.peek() == "[":
                self.i += 1
                table = self.header(self.key(), start, array=False)
                self.skip_ws()
                self.i += 1  # ]
            else:
                self.keyval(table)

    def header(self, parts: list[str], start: int, array: bool) -> KeyPath:
        path: KeyPath = ()
        for k, part in enumerate(parts):
            path += (part,)
            last = k == len(parts) - 1
            self.record(path, start)
            if last and array:
                n = self.aot.get(path, 0)
                self.aot[path] = n + 1
                path += (n,)
                self.record(path, start)
            elif path in self.aot:
                # [a.b] or [[a.b]] below [[a]]: the latest entry of a
                path += (self.aot[path] - 1,)
        return path

    def keyval(self, table: KeyPath) -> None:
        start = self.i
        path = table
        for part in self.key():
            path += (part,)
            self.record(path, start)
        self.skip_ws()
        self.i += 1  # =
        self.skip_ws()
        self.value(path)

    def key(self) -> list[str]:
        parts = []
        while True:
            self.skip_ws()
            ch = self.peek()
            if ch == '"':
                parts.append(self.basic_string())
            elif ch == "'":
                end = self.s.index("'", self.i + 1)
                parts.append(self.s[self.i + 1:end])
                self.i = end + 1
            else:
                m = _BARE.match(self.s, self.i)
                if m is None:  # not valid TOML after all: stop quietly
                    self.i = len(self.s)
                    return parts
                parts.append(m.group())
                self.i = m.end()
            self.skip_ws()
            if self.peek() != ".":
                return parts
            self.i += 1

    def basic_string(self) -> str:
        """A one-line basic string at self.i, decoded (keys may be quoted)."""
        out = []
        self.i += 1
        while self.i < len(self.s):
            ch = self.s[self.i]
            if ch == '"':
                self.i += 1
                break
            if ch == "\\":
                esc = self.peek(1)
                if esc in ("u", "U"):
                    width = 4 if esc == "u" else 8
                    out.append(chr(int(self.s[self.i + 2:self.i + 2 + width], 16)))
                    self.i += 2 + width
                    continue
                out.append(_ESCAPES.get(esc, esc))
                self.i += 2
                continue
            out.append(ch)
            self.i += 1
        return "".join(out)

    def value(self, path: KeyPath) -> None:
        ch = self.peek()
        if self.s.startswith('"""', self.i) or self.s.startswith("'''", self.i):
            self.multiline_string(self.s[self.i])
        elif ch == '"':
            self.basic_string()
        elif ch == "'":
            self.i = self.s.index("'", self.i + 1) + 1
        elif ch == "[":
            self.array(path)
        elif ch == "{":
            self.inline_table(path)
        else:  # number, boolean, date-time (which may hold one space)
            while self.i < len(self.s) and self.s[self.i] not in ",]}#\r\n":
                self.i += 1

    def multiline_string(self, quote: str) -> None:
        delim = quote * 3
        self.i += 3
        while self.i < len(self.s):
            if quote == '"' and self.s[self.i] == "\\":
                self.i += 2
                continue
            if self.s.startswith(delim, self.i):
                self.i += 3
                # up to two quotes right before the closing delimiter belong to the content
                for _ in range(2):
                    if self.peek() == quote:
                        self.i += 1
                return
            self.i += 1

    def array(self, path: KeyPath) -> None:
        self.i += 1
        index = 0
        while True:
            self.skip_blank()
            if self.i >= len(self.s) or self.peek() == "]":
                self.i += 1
                return
            item = path + (index,)
            self.record(item, self.i)
            self.value(item)
            index += 1
            self.skip_blank()
            if self.peek() == ",":
                self.i += 1

    def inline_table(self, path: KeyPath) -> None:
        self.i += 1
        while True:
            self.skip_blank()
            if self.i >= len(self.s) or self.peek() == "}":
                self.i += 1
                return
            self.keyval(path)
            self.skip_blank()
            if self.peek() == ",":
                self.i += 1
