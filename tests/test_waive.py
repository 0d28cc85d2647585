"""spar waive: required reviewers only (G20, literal), did not complete, the
user's words (G30), waivers.jsonl read back (G32, tests/data/g32_waivers.json)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spar.cli import main as spar_main
from tests import roundfactory as rf

WAIVER_ROWS = json.loads((Path(__file__).parent / "data" / "g32_waivers.json").read_text())["rows"]


def _round(repo, **kw):
    series = rf.fresh_series(repo)
    kw.setdefault("reviewers", [rf.reviewer("claude"), rf.reviewer("codex", status="unavailable",
                                                                    reason="authentication: not logged in")])
    return rf.make_round(series, "r1", repo=repo, **kw)


def _waive(capsys, round_dir, *args):
    code = spar_main(["waive", str(round_dir), *args])
    return code, capsys.readouterr()


def test_waives_an_unavailable_reviewer(repo, capsys):
    r = _round(repo)
    quote = "  Go ahead without codex, it is down today.\n"
    code, out = _waive(capsys, r, "--reviewer", "codex", "--user-quote", quote)
    assert code == 0, out.err
    (line,) = rf.read_jsonl(r / "waivers.jsonl")
    assert list(line) == ["reviewer", "preset", "user_quote", "at"]
    assert (line["reviewer"], line["preset"], line["user_quote"]) == ("codex", "codex", quote)
    assert line["at"].endswith("Z")
    # summary.md is rewritten to name the waived reviewer and the user's words
    assert "`codex` waived by the user: Go ahead without codex, it is down today." in (r / "summary.md").read_text()


@pytest.mark.parametrize("status", ["failed", "timeout", "invalid_output", "tool_violation", "awaiting_record"])
def test_every_not_completed_status_can_be_waived(repo, capsys, status):
    r = _round(repo, reviewers=[rf.reviewer("claude"), rf.reviewer("house", preset="command", status=status)])
    code, out = _waive(capsys, r, "--reviewer", "house", "--user-quote", "fine")
    assert code == 0, out.err
    assert rf.read_jsonl(r / "waivers.jsonl")[0]["preset"] == "command"


def test_second_waiver_appends(repo, capsys):
    r = _round(repo)
    assert _waive(capsys, r, "--reviewer", "codex", "--user-quote", "one")[0] == 0
    assert _waive(capsys, r, "--reviewer", "codex", "--user-quote", "two")[0] == 0
    assert [l["user_quote"] for l in rf.read_jsonl(r / "waivers.jsonl")] == ["one", "two"]


REFUSALS = [
    ("unknown name", {}, ["--reviewer", "gemini", "--user-quote", "ok"], "is not a required reviewer"),
    ("case differs", {}, ["--reviewer", "Codex", "--user-quote", "ok"], "is not a required reviewer"),
    ("completed reviewer", {}, ["--reviewer", "claude", "--user-quote", "ok"], "completed"),
    ("blank quote", {}, ["--reviewer", "codex", "--user-quote", " \t\n "], "--user-quote"),
    ("empty quote", {}, ["--reviewer", "codex", "--user-quote", ""], "--user-quote"),
    ("no quote", {}, ["--reviewer", "codex"], "--user-quote"),
    ("round not recorded", {"recorded": False}, ["--reviewer", "codex", "--user-quote", "ok"], "not been recorded"),
    ("dry run", {"dry_run": True}, ["--reviewer", "codex", "--user-quote", "ok"], "dry run"),
]


@pytest.mark.parametrize("name, kw, args, message", REFUSALS, ids=[r[0] for r in REFUSALS])
def test_refusals_write_nothing(repo, capsys, name, kw, args, message):
    r = _round(repo, **kw)
    before = rf.snapshot(r.parent)
    code, out = _waive(capsys, r, *args)
    assert code == 65
    assert message in out.err
    assert rf.snapshot(r.parent) == before


@pytest.mark.parametrize("break_it, message", [
    (lambda r: (r / "round.json").write_text("{"), "not JSON"),
    (lambda r: (r / "round.json").write_text('{"schema": "review-round/v2"}'), "not a review-round/v1 record"),
    (lambda r: (r / "round.json").unlink(), "no round.json"),
], ids=["corrupt", "other schema", "missing"])
def test_unreadable_round_refused(repo, capsys, break_it, message):
    r = _round(repo)
    break_it(r)
    before = rf.snapshot(r.parent)
    code, out = _waive(capsys, r, "--reviewer", "codex", "--user-quote", "ok")
    assert code == 65 and message in out.err
    assert rf.snapshot(r.parent) == before


def test_missing_round_folder_refused(repo, capsys):
    series = rf.fresh_series(repo)
    code, out = _waive(capsys, series / "nope", "--reviewer", "codex", "--user-quote", "ok")
    assert code == 65 and "no such folder" in out.err
    assert list(series.iterdir()) == []


@pytest.mark.parametrize("row", WAIVER_ROWS, ids=[r["name"] for r in WAIVER_ROWS])
def test_g32_waivers_file(repo, capsys, row):
    r = _round(repo)
    if row["text"] is not None:
        (r / "waivers.jsonl").write_text(row["text"])
    before = rf.snapshot(r.parent)
    code, out = _waive(capsys, r, "--reviewer", "codex", "--user-quote", "accepted")
    if row["readable"]:
        assert code == 0, out.err
        assert rf.read_jsonl(r / "waivers.jsonl")[-1]["user_quote"] == "accepted"
    else:
        assert code == 65
        assert "waivers.jsonl" in out.err
        assert rf.snapshot(r.parent) == before


@pytest.mark.parametrize("args", [[], ["--user-quote", "ok"], ["--reviewer"], ["--reviewer", "codex", "--user-quote", "ok", "--to", "x"]])
def test_usage_errors(repo, capsys, args):
    r = _round(repo)
    before = rf.snapshot(r.parent)
    code, _ = _waive(capsys, r, *args)
    assert code == 64
    assert rf.snapshot(r.parent) == before


def test_no_round_argument_is_a_usage_error(capsys):
    assert spar_main(["waive"]) == 64


@pytest.mark.parametrize("file, text, message", [
    ("ledger.jsonl", '{"finding": "claude-F1"', "ledger.jsonl:1"),
    ("findings.json", "[{", "findings.json: not JSON"),
], ids=["torn ledger", "corrupt findings"])
def test_records_of_the_summary_refuse_before_anything_is_written(repo, capsys, file, text, message):
    """summary.md names waived reviewers, so waive reads the round's findings and
    ledger for it; when they are unreadable the waiver is refused with nothing
    written, never appended and then reported as refused."""
    r = _round(repo)
    (r / file).write_text(text)
    before = rf.snapshot(r.parent)
    code, out = _waive(capsys, r, "--reviewer", "codex", "--user-quote", "go on")
    assert code == 65, out.err
    assert message in out.err
    assert rf.snapshot(r.parent) == before
    assert not (r / "waivers.jsonl").exists()
