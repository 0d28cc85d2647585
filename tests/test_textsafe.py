"""terminal_safe: no reviewer character acts on the terminal."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from spar.textsafe import terminal_safe

HOSTILE = [
    ("\x1b[2J\x1b[H", "\\e[2J\\e[H"),  # clear screen, cursor home
    ("\x1b]52;c;ZXZpbA==\x07", "\\e]52;c;ZXZpbA==\\a"),  # OSC 52 clipboard write
    ("\x9b2J", "\\x9b2J"),  # C1 CSI
    ("\x9d52;c;eA==\x9c", "\\x9d52;c;eA==\\x9c"),  # C1 OSC ... ST
    ("ok\rFAKE", "ok\\rFAKE"),
    ("a\x08b\x7f", "a\\bb\\x7f"),
    ("\u202eevil", "\\u202eevil"),  # bidi override
    ("x\u200by", "x\\u200by"),
    ("line\u2028two", "line\\u2028two"),
    ("caf\udce9", "caf\\xe9"),  # a byte that was not UTF-8
    ("\x00", "\\x00"),
]


def test_hostile_sequences_are_escaped():
    for raw, shown in HOSTILE:
        assert terminal_safe(raw) == shown


def test_plain_text_unchanged():
    for text in ("", "agy: completed in 1.0s", "naïve résumé 日本語 ✓", "C:\\path [bold]x[/bold]"):
        assert terminal_safe(text) == text


def test_newline_and_tab_per_use():
    assert terminal_safe("a\nb\tc") == "a\\nb\\tc"
    assert terminal_safe("a\nb\tc\r", multiline=True) == "a\nb\tc\\r"
    assert terminal_safe("a\n\x1b[31m", multiline=True) == "a\n\\e[31m"


@given(st.text())
def test_no_control_character_survives(text):
    for multiline in (False, True):
        out = terminal_safe(text, multiline=multiline)
        kept = "\n\t" if multiline else ""
        assert all(ch == " " or ch in kept or ch.isprintable() for ch in out)


def test_data_on_stdout_is_escaped_only_on_a_terminal():
    import io

    from spar.textsafe import for_stream

    class TTY(io.StringIO):
        def isatty(self):
            return True

    text = '{"claim": "\x1b]52;c;eA==\x07"}\n'
    assert for_stream(text, io.StringIO()) == text  # files and pipes get the exact data
    assert for_stream(text, TTY()) == '{"claim": "\\e]52;c;eA==\\a"}\n'
