"""Text from reviewers and tools shown again: the HTML report and `spar doctor` through
a pipe (issue 25 holes 10 and 11). One escaping function per medium:
`spar.textsafe.html_safe` for pages, `terminal_safe` for terminals and logs."""

from __future__ import annotations

import json
import re

import pytest

from spar.cli import main
from tests.roundfactory import finding, ledger_line, make_round, reviewer, series_repo
from tests.test_doctor import CASES, _env, case_output, fake_ha, here  # noqa: F401 (fixtures)

# what a hostile reviewer or tool writes: a bidi override that reverses what follows, ESC
# (clear screen, OSC title, OSC 52 clipboard), a C1 CSI, a zero-width and a direction mark
REVERSED = "Verdict: \u202e.egrem ot efas"
ESCAPES = "\x1b[2J\x1b]0;owned\x07\x1b]52;c;ZWNobyBoaQ==\x07\x9b31m\u200b\u200e\u2066x\u2069\x85"
ACTING = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069]")


def test_report_shows_bidi_controls_and_escapes_as_visible_text(tmp_path):
    """issue 25 hole 10: `Verdict: \\u202e.egrem ot efas` showed as "Verdict: safe to
    merge." in the HTML report, and ESC went through as it was."""
    repo, series = series_repo(tmp_path)
    f1 = finding("claude", 1, claim=REVERSED + ESCAPES)
    f1["class_reason"] = "rule 7 " + ESCAPES
    entry = reviewer("codex", status="failed", reason="CLI said " + REVERSED)
    make_round(series, "code-1", repo=repo, reviewers=[reviewer("claude"), entry], findings=[f1],
               ledger=[ledger_line("claude-F1", "rejected", evidence=REVERSED)])
    out = tmp_path / "report.html"
    assert main(["report", str(series), "--out", str(out)]) == 0
    page = out.read_text(encoding="utf-8")
    assert ACTING.search(page) is None
    assert "Verdict: \\u202e.egrem ot efas" in page  # visible, in the order it was written
    assert "\\e[2J" in page and "\\x9b31m" in page and "\\u200e" in page


def test_the_html_function_escapes_markup_and_controls_alike():
    """issue 25 hole 10: the HTML escaping is one function, for text and attribute values."""
    from spar.textsafe import html_safe

    assert html_safe('<a href="x">\u202e&') == "&lt;a href=&quot;x&quot;&gt;\\u202e&amp;"
    assert html_safe(None) == "" and html_safe("line\nnext\tcell") == "line\nnext\tcell"


@pytest.fixture
def hostile_core(tmp_path, fake_ha, monkeypatch):  # noqa: F811 (the fixture from test_doctor)
    """A Core whose capability answer is well formed but whose ha_version is hostile and long."""
    good = dict(next(c for c in CASES if c["name"] == "the v0.1.8 example"))
    good["set"] = {**good.get("set", {}), "ha_version": "0.1.8" + ESCAPES + REVERSED + "x" * 900_000}
    assert json.loads(case_output(good))["ha_version"].startswith("0.1.8\x1b")
    monkeypatch.setenv("SPAR_FAKE_HA", _env(tmp_path, good, fake_ha.parent)["SPAR_FAKE_HA"])
    return fake_ha


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_doctor_escapes_and_bounds_the_core_version_through_a_pipe(here, hostile_core, capsys, fmt):  # noqa: F811
    """issue 25 hole 11: with stdout not a terminal (a pipe, a CI log) `spar doctor` printed
    the Core's ha_version raw: ESC, OSC title, OSC 52, C1 CSI, U+202E, and 900 KB of it."""
    main(["doctor", "--format", fmt, "--core", str(hostile_core)])
    out = capsys.readouterr().out
    assert ACTING.search(out) is None
    assert len(out) < 20_000  # the version is bounded, whatever the Core printed
    if fmt == "json":
        version = json.loads(out)["core"]["ha_version"]
        assert version.startswith("0.1.8\x1b[2J") and len(version) == 200 and version.endswith("\u2026")
    else:
        line = next(line for line in out.splitlines() if line.lstrip().split()[1:2] == ["core"])
        assert "ha 0.1.8\\e[2J\\e]0;owned\\a" in line and "\u2026" in line


def test_bounded_cuts_with_an_ellipsis():
    """issue 25 hole 11: a tool's value is bounded (200 characters by default)."""
    from spar.textsafe import bounded

    assert bounded("x" * 200) == "x" * 200
    assert bounded("x" * 201) == "x" * 199 + "\u2026"
