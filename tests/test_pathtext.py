"""pathtext: the one escaped text form of repository paths."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from spar.pathtext import needs_escape, path_text


def unescape(text: str) -> bytes:
    """The documented form read back (docs/records.md): \\xNN is a byte, \\\\ a backslash."""
    out = bytearray()
    i = 0
    while i < len(text):
        if text[i] == "\\":
            if text[i + 1] == "\\":
                out += b"\\"
                i += 2
            else:
                assert text[i + 1] == "x"
                out.append(int(text[i + 2:i + 4], 16))
                i += 4
        else:
            out += text[i].encode("utf-8")
            i += 1
    return bytes(out)


def test_examples():
    assert path_text("src/app.py") == "src/app.py"
    assert path_text("naïve/日本.md") == "naïve/日本.md"
    assert path_text(b"caf\xe9.txt") == "caf\\xe9.txt"
    assert path_text("caf\udce9.txt") == "caf\\xe9.txt"  # git's names as spar.git decodes them
    assert path_text("a\\b.txt") == "a\\\\b.txt"
    assert path_text("tab\there\n") == "tab\\x09here\\x0a"
    assert not needs_escape("naïve") and needs_escape(b"\xff") and needs_escape("a\\b")


@given(st.binary())
def test_reversible_and_printable(raw):
    text = path_text(raw)
    assert unescape(text) == raw
    text.encode("utf-8")  # always writable as UTF-8: raises on a lone surrogate
    assert not any(ord(c) < 0x20 or ord(c) == 0x7F for c in text)
