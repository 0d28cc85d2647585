"""The one text form of a repository path in packets, records and locations.

git stores file names as bytes; a commit may hold names that are not UTF-8
(`caf\\xe9.txt`) or that contain control characters. Spar copies such files
byte for byte, and everywhere it writes a path as text (packet.md, round.json,
findings.json, summaries, warnings) it uses `path_text()`:

- a name that is valid UTF-8 without control characters or backslashes is
  written as it is (nearly every name);
- otherwise each byte that is not part of valid UTF-8 is written `\\xNN`
  (two lower-case hex digits), each C0 control character and DEL `\\xNN`,
  and each backslash `\\\\`.

The form is reversible and no two paths share it, so a reviewer's location
`head/caf\\xe9.txt:3` names exactly the file whose name is the bytes
`caf<E9>.txt` (G7 looks locations up by this form). Pure functions, no I/O.
"""

from __future__ import annotations

import re

_PLAIN = re.compile(r"[^\x00-\x1f\x7f\\]*")


def path_bytes(path: str | bytes) -> bytes:
    """The raw name: str paths from git hold undecodable bytes as surrogateescape."""
    return path if isinstance(path, bytes) else path.encode("utf-8", "surrogateescape")


def path_text(path: str | bytes) -> str:
    """The escaped text form of one repository path (see the module text)."""
    if isinstance(path, str) and path.isascii() and _PLAIN.fullmatch(path):
        return path  # nearly every name: no bytes to decode
    raw = path_bytes(path)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("utf-8", "surrogateescape")
    else:
        if _PLAIN.fullmatch(text):
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
    """The raw name a path_text() form stands for (its inverse): `\\xNN` is that byte,
    `\\\\` one backslash, everything else its UTF-8 bytes."""
    out = bytearray()
    last = 0
    for m in _ESCAPE.finditer(text):
        out += text[last:m.start()].encode("utf-8", "surrogateescape")
        out += bytes([int(m.group(1), 16)]) if m.group(1) else b"\\"
        last = m.end()
    out += text[last:].encode("utf-8", "surrogateescape")
    return bytes(out)


def needs_escape(path: str | bytes) -> bool:
    if isinstance(path, str) and path.isascii():
        return _PLAIN.fullmatch(path) is None
    return path_text(path) != path_bytes(path).decode("utf-8", "surrogateescape")


__all__ = ["needs_escape", "path_bytes", "path_text", "text_bytes"]
