"""`spar report`: one self-contained HTML page for a series, checked as text
and in a real headless Chromium (skipped cleanly where none is installed)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from spar.cli import main
from tests.roundfactory import add_extension, finding, ledger_line, make_round, reviewer, series_repo

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="no chromium installed (.ci/run installs it)")


def attempt(seconds: float, cost: float | None, tokens_in: int | None = None, tokens_out: int | None = None) -> dict:
    return {"model": "", "started_at": "2024-01-01T00:00:00.000Z", "finished_at": "2024-01-01T00:00:10.000Z",
            "exit_code": 0, "status": "completed", "reason": "", "resets": None, "argv": ["x"],
            "usage": {"duration_seconds": seconds, "input_tokens": tokens_in, "cached_input_tokens": None,
                      "output_tokens": tokens_out, "cost_usd": cost}}


def with_attempts(entry: dict, *attempts: dict) -> dict:
    entry["attempts"] = list(attempts)
    return entry


def build_series(tmp_path: Path) -> tuple[Path, Path]:
    """code-1: claude (cost 0.30) and codex (cost 0.12) with four findings, two
    triaged; code-2 (a rerun of the same input): claude, codex timed out, a
    repeat triaged duplicate, a new defect open; one code extension. The gate
    is blocked by the open findings."""
    repo, series = series_repo(tmp_path)
    f1 = finding("claude", 1, cls="defect", claim="divide(1, 0) raises <ZeroDivisionError> & crashes")
    f2 = finding("claude", 2, cls="hardening")
    f3 = finding("codex", 1, cls="note")
    f4 = finding("codex", 2, cls="requirement-question", location_unreadable=True)
    make_round(series, "code-1", repo=repo,
               reviewers=[with_attempts(reviewer("claude"), attempt(41.5, 0.30, 12000, 800)),
                          with_attempts(reviewer("codex"), attempt(63.0, 0.12, 9000, 500))],
               findings=[f1, f2, f3, f4],
               ledger=[ledger_line("codex-F1", "rejected", evidence="<script>alert(1)</script> is fine"),
                       ledger_line("claude-F1", "deferred", user_quote="later", at="2024-01-02T00:00:00.000Z"),
                       ledger_line("claude-F1", "fixed", commit="a" * 40, failed_before="t fails", passed_after="t passes",
                                   at="2024-01-03T00:00:00.000Z")],
               started_at="2024-01-01T10:00:00.000Z")
    repeat = finding("claude", 1, cls="defect", claim="still divides by zero")
    repeat["repeat_of"] = {"round": "code-1", "finding": "claude-F1", "disposition": "fixed"}
    open_defect = finding("claude", 2, cls="defect", claim="empty list crashes")
    make_round(series, "code-2", repo=repo,
               reviewers=[with_attempts(reviewer("claude"), attempt(30.0, 0.05, 5000, 300)),
                          with_attempts(reviewer("codex", status="timeout", reason="no answer within 900s"),
                                        attempt(900.0, None))],
               findings=[repeat, open_defect],
               ledger=[ledger_line("claude-F1", "duplicate", of="code-1/claude-F1")],
               started_at="2024-01-01T12:00:00.000Z")
    add_extension(series, "code", 1, cause="churn")
    return repo, series


@pytest.fixture
def report(tmp_path) -> tuple[Path, str]:
    repo, series = build_series(tmp_path)
    out = tmp_path / "report.html"
    assert main(["report", str(series), "--out", str(out)]) == 0
    return out, out.read_text(encoding="utf-8")


class _Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def test_self_contained_no_script_no_external_asset(report):
    out, html = report
    parser = _Tags()
    parser.feed(html)
    tags = {t for t, _ in parser.tags}
    assert "script" not in tags and "link" not in tags and "img" not in tags and "iframe" not in tags
    assert not any("src" in attrs or "href" in attrs for _, attrs in parser.tags)
    assert not re.search(r"https?:|url\(|@import", html)
    csp = next(a["content"] for t, a in parser.tags if t == "meta" and a.get("http-equiv") == "Content-Security-Policy")
    assert csp.startswith("default-src 'none'")
    assert "svg" in tags  # the charts are inline


def test_reviewer_text_is_escaped(report):
    out, html = report
    assert "<script>alert(1)</script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "&lt;ZeroDivisionError&gt; &amp; crashes" in html


def test_time_cost_and_disposition_history_are_in_the_page(report):
    out, html = report
    assert "$0.4200" in html  # code-1: 0.30 + 0.12
    assert "$0.0500" in html  # code-2: codex reported no cost, claude 0.05
    assert '<span id="total-cost">$0.4700</span>' in html
    history = html[html.index('id="code-1/claude-F1"'):]
    history = history[history.index('<ol class="hist">'):history.index("</div>")]
    assert history.index("deferred") < history.index("fixed") and "user quote: later" in history


def chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                           "--no-first-run", f"--user-data-dir={tmp_path / 'chromium-profile'}",
                           "--enable-logging=stderr", "--v=0", *args],
                          capture_output=True, text=True, timeout=120)


def console_messages(stderr: str) -> list[str]:
    """Chromium logs every console message (errors, uncaught exceptions, refused
    loads) as a `:CONSOLE` line on stderr with --enable-logging=stderr."""
    return [line for line in stderr.splitlines() if ":CONSOLE" in line]


def page_text(dom: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", dom))


@needs_chromium
@pytest.mark.slow
def test_console_errors_would_be_seen(tmp_path):
    """The check below is not vacuous: a page with an error shows up."""
    bad = tmp_path / "bad.html"
    bad.write_text("<!DOCTYPE html><p>x</p><script>console.error('seen'); missing();</script>")
    proc = chromium(tmp_path, "--dump-dom", bad.as_uri())
    assert any("seen" in m for m in console_messages(proc.stderr))
    assert any("missing is not defined" in m for m in console_messages(proc.stderr))


@needs_chromium
@pytest.mark.slow
def test_page_loads_in_chromium_without_errors_and_shows_the_numbers(report, tmp_path):
    out, _ = report
    proc = chromium(tmp_path, "--dump-dom", out.as_uri())
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert console_messages(proc.stderr) == []
    text = page_text(proc.stdout)
    assert "Gate: blocked" in text
    assert "codex" in text and "timeout" in text
    # the blocked reasons, as spar gate words them
    assert "finding claude-F2 (defect) has no standing disposition" in text
    assert "Open findings: code-1/codex-F2, code-2/claude-F2" in text
    assert "$0.4200" in text and "$0.0500" in text and "$0.4700" in text
    totals = re.findall(r'<text class="total"[^>]*>(\d+)</text>', proc.stdout)
    assert totals == ["4", "2"]  # findings per round in the chart
    assert "code-1 (code)" in text and "code-2 (code)" in text  # the timeline
    assert "+1 churn" in text
    assert "repeats code-1/claude-F1" in text


@needs_chromium
@pytest.mark.slow
def test_screenshot(report, tmp_path):
    out, _ = report
    shot = tmp_path / "shot.png"
    proc = chromium(tmp_path, f"--screenshot={shot}", "--window-size=1200,1600", out.as_uri())
    assert proc.returncode == 0 and console_messages(proc.stderr) == []
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000


def test_unreadable_record_is_refused(tmp_path):
    repo, series = build_series(tmp_path)
    (series / "code-2" / "findings.json").write_text("{")
    out = tmp_path / "r.html"
    assert main(["report", str(series), "--out", str(out)]) == 65
    assert not out.exists()
    assert main(["report", str(series / "code-1"), "--out", str(out)]) == 65  # a round is not a series


def test_old_rounds_without_usage_say_not_recorded(tmp_path):
    repo, series = series_repo(tmp_path)
    make_round(series, "old", repo=repo)
    out = tmp_path / "r.html"
    assert main(["report", str(series), "--out", str(out)]) == 0
    html = out.read_text()
    assert "not recorded" in html and "Gate: passed" in html


def test_empty_series_and_dry_runs(tmp_path, capsys):
    repo, series = series_repo(tmp_path)
    series.mkdir()
    out = tmp_path / "r.html"
    assert main(["report", str(series), "--out", str(out)]) == 65  # nothing to report
    assert "is not a series folder: it is empty" in capsys.readouterr().err and not out.exists()
    make_round(series, "dry", repo=repo, dry_run=True)
    assert main(["report", str(series), "--out", str(out)]) == 0
    html = out.read_text()
    assert "dry (dry run)" in html and ">n/a</text>" in html  # no findings to chart, said so


def test_readme_shows_the_screenshot():
    root = Path(__file__).resolve().parent.parent
    readme = (root / "README.md").read_text()
    link = re.search(r"!\[[^\]]*\]\((docs/[^)]+\.png)\)", readme)
    assert link and (root / link.group(1)).read_bytes()[:4] == b"\x89PNG"


def test_help_lists_exit_codes(capsys):
    assert main(["report", "--help"]) == 0
    assert "Exit codes: 0 written" in capsys.readouterr().out


def test_ids_are_unique_attributes(report):
    """Finding ids and names end up in attributes; quotes in them cannot break out."""
    out, html = report
    parser = _Tags()
    parser.feed(html)
    ids = [a["id"] for _, a in parser.tags if "id" in a]
    assert "code-1/claude-F1" in ids and len(ids) == len(set(ids))


def test_a_round_a_killed_run_left_is_judged_alike_by_gate_report_and_the_series_gate(tmp_path):
    """A folder a killed `spar run` left without round.json: `spar gate` over the listed
    rounds, `spar gate --series` (the CI recipe) and the report's gate give one verdict, and
    the report and --series name the stopped round with what to do about it."""
    repo, series = series_repo(tmp_path)
    make_round(series, "old", repo=repo)
    killed = series / "killed"
    killed.mkdir()
    (killed / "packet.md").write_text("# Review packet\n")
    assert main(["gate", str(series / "old"), "--out", str(tmp_path / "gate.json")]) == 0
    assert main(["gate", "--series", str(series), "--out", str(tmp_path / "series.json")]) == 0
    listed = json.loads((tmp_path / "series.json").read_text())
    assert [r["path"] for r in listed["rounds"]] == [str(series / "old")]
    assert len(listed["not_gated"]) == 1 and f"rm -rf {killed}" in listed["not_gated"][0]
    assert f"chmod -R u+w {killed}" in listed["not_gated"][0]
    out = tmp_path / "r.html"
    assert main(["report", str(series), "--out", str(out)]) == 0
    html = out.read_text()
    assert "Gate: passed" in html and "Gate: blocked" not in html
    assert "round killed was stopped before it wrote round.json and is not gated" in html
    # listed by hand, it blocks (G29), and the reason ends with what to do
    assert main(["gate", str(series / "old"), str(killed), "--out", str(tmp_path / "g2.json")]) == 1
    reasons = json.loads((tmp_path / "g2.json").read_text())["reasons"]
    assert reasons[0].endswith("and run the round again")


def test_the_page_gates_what_spar_gate_gates_and_leaves_a_dry_run_out(tmp_path):
    """A dry run beside a recorded round: `spar gate` on the recorded round passes, and the
    page says the same, names the round it gated and shows the dry run as one, not gated."""
    repo, series = series_repo(tmp_path)
    make_round(series, "r1", repo=repo, started_at="2024-01-01T10:00:00.000Z")
    make_round(series, "dry", repo=repo, dry_run=True, started_at="2024-01-01T11:00:00.000Z")
    gate_file = tmp_path / "gate.json"
    assert main(["gate", str(series / "r1"), "--out", str(gate_file)]) == 0
    out = tmp_path / "r.html"
    assert main(["report", str(series), "--out", str(out)]) == 0
    html = out.read_text()
    assert "Gate: passed" in html and "is a dry run" not in html
    assert "judges round r1 now" in html
    assert "Not gated: dry run dry;" in html and "dry (dry run)" in html
    # listed, the dry run blocks `spar gate`: the user's own choice, which the page does not make
    assert main(["gate", str(series / "r1"), str(series / "dry"), "--out", str(gate_file)]) == 1


def test_a_series_of_dry_runs_only_has_no_round_to_gate(tmp_path):
    repo, series = series_repo(tmp_path)
    make_round(series, "dry", repo=repo, dry_run=True)
    out = tmp_path / "r.html"
    assert main(["report", str(series), "--out", str(out)]) == 0
    html = out.read_text()
    assert "Gate: unknown" in html and "no round to gate yet (a dry run is not gated)" in html


def test_a_source_folder_is_not_a_series(tmp_path, capsys):
    """`spar report` and `spar cap-report` on a folder that holds no round refuse (65), as
    their help says; cap-report still reads an empty folder as a series yet to start."""
    repo, series = series_repo(tmp_path)
    out = tmp_path / "r.html"
    assert main(["report", str(repo / "app"), "--out", str(out)]) == 65
    assert "holds no round folder" in capsys.readouterr().err and not out.exists()
    assert main(["cap-report", str(repo / "app")]) == 65
    assert "holds no round folder" in capsys.readouterr().err
    series.mkdir()
    assert main(["cap-report", str(series)]) == 0


def test_out_in_a_folder_that_does_not_exist_is_refused(tmp_path, capsys):
    repo, series = build_series(tmp_path)
    out = tmp_path / "nodir" / "x.html"
    assert main(["report", str(series), "--out", str(out)]) == 65
    assert f'the folder "{tmp_path / "nodir"}" does not exist' in capsys.readouterr().err
    assert not out.parent.exists()


def test_a_finding_card_shows_the_reviewers_reasoning_and_its_rule_in_words(tmp_path):
    repo, series = series_repo(tmp_path)
    f = finding("claude", 1, cls="defect", claim="divide crashes")
    f.update(failure_scenario="divide(1, 0) <b>raises</b>", evidence="calc.py:3 has no check",
             smallest_fix="return None when b == 0", class_reason="rule 7: proposed defect")
    make_round(series, "r1", repo=repo, findings=[f])
    out = tmp_path / "r.html"
    assert main(["report", str(series), "--out", str(out)]) == 0
    html = out.read_text()
    assert "<dt>failure scenario</dt><dd>divide(1, 0) &lt;b&gt;raises&lt;/b&gt;</dd>" in html
    assert "<dt>evidence</dt><dd>calc.py:3 has no check</dd>" in html
    assert "<dt>smallest fix</dt><dd>return None when b == 0</dd>" in html
    assert "rule 7: proposed defect (no earlier rule applied: the class the reviewer proposed stands)" in html
