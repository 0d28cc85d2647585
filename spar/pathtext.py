"""The one text form of a repository path in packets, records and locations.

git stores file names as bytes; a commit may hold names that are not UTF-8
(`caf\\xe9.txt`) or that contain control characters. Spar copies such files
byte for byte, and everywhere it writes a path as text (packet.md, round.json,
findings.json, summaries, warnings) it uses `path_text()`, deciding for each
component (the parts between `/`) on its own:

- a component that is valid UTF-8 without control characters is written as it
  is, backslashes included (nearly every name), unless it holds a backslash,
  `x` and two lower-case hex digits (`\\xNN`), which would read as an escape;
- any other component is escaped: each byte that is not part of valid UTF-8,
  each C0 control character and DEL is written `\\xNN` (two lower-case hex
  digits), and each backslash `\\\\`.

An escaped component always holds `\\xNN` and a written-as-is one never does,
so the form is reversible (`text_bytes`) and no two paths share it. A
location names a file by this form, or, when no file or folder has that form,
by its literal name (`literal_key`): `head/a\\b.txt` is the file `a\\b.txt`, and
the one name that a literal spelling cannot reach when both exist, a name
holding `\\xNN` as text, is reached by its escaped form. Pure functions, no I/O.
"""

from __future__ import annotations

import re

_PLAIN_ASCII = re.compile(r"[^\x00-\x1f\x7f\\]*")  # the common case: no decision to make
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_LOOKS_ESCAPED = re.compile(r"\\x[0-9a-f]{2}")


def path_bytes(path: str | bytes) -> bytes:
    """The raw name: str paths from git hold undecodable bytes as surrogateescape."""
    return path if isinstance(path, bytes) else path.encode("utf-8", "surrogateescape")


def path_text(path: str | bytes) -> str:
    """The text form of one repository path (see the module text)."""
    if isinstance(path, str) and path.isascii() and _PLAIN_ASCII.fullmatch(path):
        return path  # nearly every name: no bytes to decode, no backslash
    return "/".join(_component_text(part) for part in path_bytes(path).split(b"/"))


def _component_text(raw: bytes) -> str:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("utf-8", "surrogateescape")
    else:
        if not _CONTROL.search(text) and not _LOOKS_ESCAPED.search(text):
            return text
    out = []
    for ch in text:
        code = ord(ch)
        if 0xDC80 <= code <= 0xDCFF:
            out.append(f"\\x{code - 0xDC00:02x}")
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\x{code:02x}")
        elif ch == "\\":
            out.append("\\\\")
        else:
            out.append(ch)
    return "".join(out)


_ESCAPE = re.compile(r"\\(?:x([0-9a-f]{2})|(\\))")


def text_bytes(text: str) -> bytes:
    """The raw name a path_text() form stands for (its inverse), component by component:
    one holding `\\xNN` is escaped (`\\xNN` that byte, `\\\\` one backslash), any other is
    its UTF-8 bytes as written."""
    return b"/".join(_component_bytes(part) for part in text.split("/"))


def _component_bytes(text: str) -> bytes:
    if not _LOOKS_ESCAPED.search(text):
        return text.encode("utf-8", "surrogateescape")
    out = bytearray()
    last = 0
    for m in _ESCAPE.finditer(text):
        out += text[last:m.start()].encode("utf-8", "surrogateescape")
        out += bytes([int(m.group(1), 16)]) if m.group(1) else b"\\"
        last = m.end()
    out += text[last:].encode("utf-8", "surrogateescape")
    return bytes(out)


def literal_key(text: str) -> str | None:
    """The text form of the path whose name is `text` itself, read literally, when that
    differs from `text` (a name holding `\\xNN` as text); None when it does not differ or
    `text` cannot be a name as written (a lone surrogate or a control character)."""
    if _CONTROL.search(text):
        return None
    try:
        raw = text.encode("utf-8")
    except UnicodeEncodeError:
        return None
    key = path_text(raw)
    return key if key != text else None


def needs_escape(path: str | bytes) -> bool:
    """Whether the text form of `path` differs from its name read as UTF-8."""
    if isinstance(path, str) and path.isascii() and _PLAIN_ASCII.fullmatch(path):
        return False
    return path_text(path) != path_bytes(path).decode("utf-8", "surrogateescape")


__all__ = ["literal_key", "needs_escape", "path_bytes", "path_text", "text_bytes"]
