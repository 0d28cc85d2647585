"""Reviewer-derived text made safe to print on the user's terminal.

A reviewer's output (and anything the change under review made it say) is
untrusted: ESC sequences can clear the screen, rewrite earlier lines, set the
window title or write the clipboard (OSC 52); C1 controls (U+0080-U+009F) are
the same introducers in 8-bit form; CR and backspace overwrite what is shown;
bidi overrides and zero-width characters make text read differently from what
it is. Everything `str.isprintable()` rejects (categories Cc, Cf, Cs, Co, Cn,
Zl, Zp and spaces other than U+0020) is shown escaped instead:

- the usual short forms `\\t \\n \\r \\a \\b \\f \\v` and `\\e` for ESC;
- bytes that were not UTF-8 (surrogateescape code points U+DC80-U+DCFF) as
  `\\xNN` with the original byte;
- other code points below U+0100 as `\\xNN`, the rest as `\\uNNNN` or
  `\\UNNNNNNNN`.

Newlines and tabs: by default (one-line uses: progress lines, live table
cells, reasons) both are escaped, so one reviewer value is one line.
`multiline=True` keeps `\\n` and `\\t` as they are (summaries printed as a
block); CR is escaped in both modes. `for_stream()` is for data written to
stdout (exports, reports): escaped only when stdout is a terminal, so files
and pipes get the exact text. Backslashes are left alone: the output
is for reading, not for parsing back.

`bounded()` cuts a tool's value (a version, a reason) to a length a screen or
a log line can hold, with an ellipsis. `html_safe()` is the one escaping of
the HTML report: the same characters shown escaped (so a bidi override reads
as a visible `\u202e`, not as reversed text), then HTML's own escaping.
"""

from __future__ import annotations

import html
from typing import TextIO

_SHORT = {"\t": "\\t", "\n": "\\n", "\r": "\\r", "\a": "\\a", "\b": "\\b", "\f": "\\f",
          "\v": "\\v", "\x1b": "\\e"}


def _escape(ch: str) -> str:
    short = _SHORT.get(ch)
    if short is not None:
        return short
    code = ord(ch)
    if 0xDC80 <= code <= 0xDCFF:
        return f"\\x{code - 0xDC00:02x}"
    if code <= 0xFF:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def terminal_safe(text: str, *, multiline: bool = False) -> str:
    """`text` with every character that could act on a terminal shown escaped."""
    if text.isprintable():  # fast path: the common case needs no copy
        return text
    kept = "\n\t" if multiline else ""
    return "".join(ch if ch == " " or ch in kept or ch.isprintable() else _escape(ch) for ch in text)


def bounded(text: str, limit: int = 200) -> str:
    """`text` cut to `limit` characters, an ellipsis saying it was cut."""
    return text if len(text) <= limit else text[:limit - 1] + "\u2026"


def html_safe(value: object) -> str:
    """Any value shown on an HTML page: text that cannot act (no control, bidi or
    invisible character; newlines and tabs kept as the page's white space), then
    escaped for HTML text and attribute values alike."""
    text = "" if value is None else str(value)
    return html.escape(terminal_safe(text, multiline=True), quote=True)


def for_stream(text: str, stream: TextIO) -> str:
    """Output meant to be data (JSON, SARIF, Markdown reports on stdout): escaped, keeping
    newlines and tabs, only when `stream` is a terminal; written as it is otherwise."""
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):
        tty = False
    return terminal_safe(text, multiline=True) if tty else text


__all__ = ["bounded", "for_stream", "html_safe", "terminal_safe"]
