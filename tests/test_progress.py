"""Progress on stderr: plain lines when not a terminal, a rich live table on a terminal."""

from __future__ import annotations

import io

from spar.progress import Progress, make_progress


class FakeClock:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t


class TTY(io.StringIO):
    def isatty(self):
        return True


def test_plain_lines():
    out = io.StringIO()
    clock = FakeClock()
    p = Progress(out, clock=clock)
    p.reviewer_started("claude", 1, "opus")
    p.reviewer_status("claude", "running")  # shown in the live table only
    p.reviewer_status("claude", "fallback", "quota or rate limit; retrying with model sonnet")
    clock.t += 2.14
    p.reviewer_started("claude", 2, "sonnet")
    p.reviewer_status("claude", "completed")
    p.reviewer_started("codex", 1, "")
    clock.t += 1
    p.reviewer_status("codex", "timeout", "no answer within 1s")
    p.reviewer_started("gemini", 1, "")
    clock.t += 0.5
    p.reviewer_status("gemini", "answered")
    clock.t += 3  # judging the answer takes no reviewer time
    p.reviewer_status("gemini", "invalid_output", "missing key limits")
    p.close()
    assert out.getvalue().splitlines() == [
        "spar: claude: started attempt 1 (model opus)",
        "spar: claude: fallback: quota or rate limit; retrying with model sonnet",
        "spar: claude: started attempt 2 (model sonnet)",
        "spar: claude: completed in 2.1s",  # elapsed counts from the first attempt
        "spar: codex: started attempt 1 (model CLI default)",
        "spar: codex: timeout in 1.0s: no answer within 1s",
        "spar: gemini: started attempt 1 (model CLI default)",
        "spar: gemini: answered in 0.5s",
        "spar: gemini: invalid_output in 0.5s: missing key limits",
    ]
    rows = {r.name: r for r in p.rows()}
    assert rows["claude"].attempt == 2 and rows["claude"].model == "sonnet"


def test_make_progress_picks_by_terminal():
    plain = make_progress(io.StringIO())
    assert not plain.live
    plain.close()
    live = make_progress(TTY())
    try:
        assert live.live
    finally:
        live.close()


def test_live_table_shows_every_reviewer():
    out = TTY()
    p = make_progress(out)
    p.reviewer_started("claude", 1, "opus")
    p.reviewer_started("agy", 1, "")
    p.reviewer_status("claude", "running")
    p.reviewer_status("agy", "tool_violation", 'agy command "ls; touch x"')
    p.close()
    text = out.getvalue()
    for word in ("reviewer", "status", "attempt", "model", "elapsed", "claude", "running", "opus",
                 "agy", "tool_violation", "CLI default"):
        assert word in text
    assert "spar: claude" not in text  # no plain lines on a terminal


def test_closed_stream_does_not_raise():
    out = io.StringIO()
    p = Progress(out)
    out.close()
    p.reviewer_started("x", 1, "")
    p.reviewer_status("x", "failed", "boom")
    p.close()


HOSTILE = "\x1b[2J\x1b]52;c;ZXZpbA==\x07\x9b31m[red]boom[/red]\rX"


def test_plain_lines_escape_reviewer_text():
    out = io.StringIO()
    p = Progress(out)
    p.reviewer_started("x", 1, "")
    p.reviewer_status("x", "failed", HOSTILE + "\nsecond line")
    p.close()
    text = out.getvalue()
    assert "\x1b" not in text and "\x9b" not in text and "\r" not in text and "\x07" not in text
    assert "\\e[2J\\e]52;c;ZXZpbA==\\a\\x9b31m[red]boom[/red]\\rX\\nsecond line" in text
    assert len(text.splitlines()) == 2


def test_live_table_escapes_reviewer_text():
    out = TTY()
    p = make_progress(out)
    p.reviewer_started("x", 1, "")
    p.reviewer_status("x", "failed", "[red]x[/red]\x1b]52;c;eA==\x07\x9b2J")
    p.close()
    text = out.getvalue()
    assert "\x1b]52" not in text and "\x9b" not in text and "\x07" not in text
    assert "\\e]52;c;eA==" in text and "\\x9b" in text
    assert "[red]x[/red]" in text  # shown as text, not read as rich markup


def test_rows_keep_configuration_order_whoever_starts_first():
    p = Progress(io.StringIO())
    p.expect(["claude", "codex", "agy"])
    p.reviewer_started("agy", 1, "")
    p.reviewer_status("agy", "failed", "boom")
    p.reviewer_started("codex", 1, "")
    assert [r.name for r in p.rows()] == ["claude", "codex", "agy"]
    p.close()


def test_transient_notices_show_until_the_reviewer_ends():
    out = io.StringIO()
    p = Progress(out)
    p.reviewer_started("codex", 1, "")
    p.reviewer_status("codex", "running")
    for text in ("reconnecting 2/5", "reconnecting 3/5", "reconnecting 3/5", "reconnecting: waiting for network"):
        p.reviewer_notice("codex", text)
    assert {r.name: r.detail for r in p.rows()}["codex"] == "reconnecting: waiting for network"
    p.reviewer_status("codex", "timeout", "no answer within 5s")
    p.reviewer_notice("codex", "reconnecting 4/5")  # a late notice never hides the outcome
    p.reviewer_notice("claude", "API retry 4/10\x1b[2J")
    p.close()
    assert out.getvalue().splitlines() == [
        "spar: codex: started attempt 1 (model CLI default)",
        "spar: codex: reconnecting 2/5",
        "spar: codex: reconnecting 3/5",  # the same notice twice is shown once
        "spar: codex: reconnecting: waiting for network",
        "spar: codex: timeout in 0.0s: no answer within 5s",
        "spar: claude: API retry 4/10\\e[2J",
    ]


def test_live_table_keeps_the_end_of_a_long_reason():
    out = TTY()
    p = make_progress(out)
    reason = "authentication: " + "very long detail " * 20 + "· Please run /login"
    p.reviewer_started("claude", 1, "")
    p.reviewer_status("claude", "unavailable", reason)
    p.close()
    text = out.getvalue()
    assert "Please run /login" in text and "unavailable: authentication" in text and "…" in text


def test_shorten_middle():
    from spar.progress import shorten_middle

    assert shorten_middle("short", 10) == "short"
    cut = shorten_middle("abcdefghijklmnopqrstuvwxyz", 11)
    assert len(cut) == 11 and cut.startswith("abcd") and cut.endswith("uvwxyz") and "…" in cut
