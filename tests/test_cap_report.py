"""spar cap-report: G34 usage/refusals, G32 refusals, both formats field by field,
and a cap reached then extended."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from spar import __version__
from spar.cli import main as spar_main
from tests import roundfactory as rf
from tests.gitrepo import git

ROOT = Path(__file__).resolve().parent.parent


def _report(capsys, *args):
    code = spar_main(["cap-report", *args])
    return code, capsys.readouterr()


def _attempt(status="completed", usage=None) -> dict:
    a = {"model": "", "started_at": "2024-01-01T00:00:00.000Z", "finished_at": "2024-01-01T00:00:10.000Z",
         "exit_code": 0, "status": status, "reason": "", "resets": None}
    if usage is not None:
        a.update(argv=["x"], usage=usage)
    return a


def _with_attempts(entry: dict, *attempts) -> dict:
    entry["attempts"] = list(attempts)
    return entry


# claude's two attempts (quota, then the fallback) and codex's one, in p1; c2's codex attempt is
# from before usage was recorded (no usage key: everything null)
P1_CLAUDE = [_attempt("unavailable", {"duration_seconds": 10.5, "input_tokens": 1000, "cached_input_tokens": 200,
                                      "output_tokens": 50, "cost_usd": 0.25}),
             _attempt("completed", {"duration_seconds": 2.25, "input_tokens": 100, "cached_input_tokens": None,
                                    "output_tokens": 5, "cost_usd": 0.125})]
P1_CODEX = [_attempt("failed", {"duration_seconds": 30.0, "input_tokens": None, "cached_input_tokens": None,
                                "output_tokens": None, "cost_usd": None})]
NO_USAGE = {"duration_seconds": None, "input_tokens": None, "cached_input_tokens": None, "output_tokens": None,
            "cost_usd": None}


def _series(repo):
    """Plan, code, rerun, dry run, unrecorded rounds and every kind of extension line."""
    series = rf.fresh_series(repo)
    caps = {"plan": 2, "plan_delta": 1, "code": 2}
    rf.make_round(series, "p1", repo=repo, stage="plan", caps=caps,
                  reviewers=[_with_attempts(rf.reviewer("claude"), *P1_CLAUDE),
                             _with_attempts(rf.reviewer("codex", status="failed"), *P1_CODEX)],
                  findings=[rf.finding("claude", 1, cls="requirement-question")])
    rf.make_round(series, "p2", repo=repo, stage="plan", caps=caps, packet_text="plan 2\n")
    rf.make_round(series, "c1", repo=repo, caps=caps, packet_text="code\n", findings=[
        rf.finding("claude", 1, introduced_by_change="yes"), rf.finding("claude", 2),
        rf.finding("codex", 1, cls="hardening"), rf.finding("codex", 2, cls="note", introduced_by_change="yes")])
    rf.make_round(series, "c2", repo=repo, caps=caps, packet_text="code\n",  # a rerun: not counted
                  reviewers=[_with_attempts(rf.reviewer("codex", status="timeout"), _attempt("timeout"))])
    rf.make_round(series, "c3", repo=repo, caps=caps, dry_run=True, packet_text="dry\n")
    rf.make_round(series, "c4", repo=repo, caps=caps, recorded=False, packet_text="pending\n")
    rf.add_extension(series, "plan", 1)
    rf.add_extension(series, "code", 1, "churn")
    rf.add_extension(series, "code", 2, "other", "vendor | outage\nday two")
    rf.add_extension(series, "code", 1)  # an old line: no recorded cause
    rf.add_extension(series, "plan-delta", 1)
    rf.add_extension(series, "code", 1, "recurring", "same bug")
    return series


def test_json_field_by_field(repo, capsys):
    series = _series(repo)
    code, captured = _report(capsys, str(series), "--format", "json")
    assert code == 0, captured.err
    doc = json.loads(captured.out)
    head = git(repo, "rev-parse", "HEAD").strip()
    base = git(repo, "rev-parse", "HEAD~1").strip()
    at = "2024-01-03T00:00:00.000Z"

    def row(name, stage, started, counted, reviewers, findings=None, new=None, dry=False, recorded=True):
        # rounds written before repeats existed: convergence unknown, except with no findings at all
        nothing = {"new": 0, "repeat": 0, "corroborated": 0, "groups": 0}
        return {"name": name, "stage": stage, "head": head, "base": base, "started_at": started, "counted": counted,
                "dry_run": dry, "recorded": recorded, "reviewers": reviewers, "findings": findings, "new_defects": new,
                "convergence": nothing if findings == zero else None, "groups": []}

    def rv(name, status, attempts=0, usage=NO_USAGE):
        return {"name": name, "preset": name, "status": status, "attempts": attempts, "usage": usage}

    completed = [rv("claude", "completed"), rv("codex", "completed")]
    pending = [rv("claude", "pending"), rv("codex", "pending")]
    claude_p1 = {"duration_seconds": 12.75, "input_tokens": 1100, "cached_input_tokens": 200, "output_tokens": 55,
                 "cost_usd": 0.375}
    codex_p1 = dict(NO_USAGE, duration_seconds=30.0)
    zero = {"defect": 0, "requirement-question": 0, "hardening": 0, "note": 0}
    assert doc == {
        "schema": "cap-report/v1",
        "series": str(series.resolve()),
        "spar_version": __version__,
        "caps_from": "c4",
        "stages": [
            {"stage": "plan", "project_cap": 2, "extended_by": 1, "cap": 3, "counted": 2, "counted_rounds": ["p1", "p2"],
             "remaining": 1, "extensions": [{"by": 1, "cause": None, "reason": None, "at": at}]},
            {"stage": "plan-delta", "project_cap": 1, "extended_by": 1, "cap": 2, "counted": 0, "counted_rounds": [],
             "remaining": 2, "extensions": [{"by": 1, "cause": None, "reason": None, "at": at}]},
            {"stage": "code", "project_cap": 2, "extended_by": 5, "cap": 7, "counted": 2, "counted_rounds": ["c1", "c4"],
             "remaining": 5, "extensions": [
                 {"by": 1, "cause": "churn", "reason": None, "at": at},
                 {"by": 2, "cause": "other", "reason": "vendor | outage\nday two", "at": at},
                 {"by": 1, "cause": None, "reason": None, "at": at},
                 {"by": 1, "cause": "recurring", "reason": "same bug", "at": at}]},
        ],
        "rounds": [
            row("p1", "plan", "2024-01-01T00:00:00.000Z", True,
                [rv("claude", "completed", 2, claude_p1), rv("codex", "failed", 1, codex_p1)],
                dict(zero, **{"requirement-question": 1}), 0),
            row("p2", "plan", "2024-01-01T00:01:00.000Z", True, completed, zero, 0),
            row("c1", "code", "2024-01-01T00:02:00.000Z", True, completed,
                {"defect": 2, "requirement-question": 0, "hardening": 1, "note": 1}, 1),
            row("c2", "code", "2024-01-01T00:03:00.000Z", False, [rv("codex", "timeout", 1)], zero, 0),
            row("c3", "code", "2024-01-01T00:04:00.000Z", False, pending, dry=True, recorded=False),
            row("c4", "code", "2024-01-01T00:05:00.000Z", True, pending, recorded=False),
        ],
        "code_extension_causes": {
            "churn": {"extensions": 1, "by": 1}, "recurring": {"extensions": 1, "by": 1},
            "unrelated": {"extensions": 0, "by": 0}, "hardening": {"extensions": 0, "by": 0},
            "other": {"extensions": 1, "by": 2}, "no_recorded_cause": {"extensions": 1, "by": 1}},
        # the totals are the sums of the attempts above (c2's attempt has no usage: nothing added)
        "usage": {
            "reviewers": [{"name": "claude", "rounds": 5, "attempts": 2, **claude_p1},
                          {"name": "codex", "rounds": 6, "attempts": 2, **codex_p1}],
            "series": {"attempts": 4, "duration_seconds": 42.75, "input_tokens": 1100, "cached_input_tokens": 200,
                       "output_tokens": 55, "cost_usd": 0.375}},
        "verdicts": [
            {"stage": "plan", "state": "unknown", "new_per_round": [0],
             "text": "plan: no trend yet (new findings per round: 0)"},
            {"stage": "code", "state": "unknown", "new_per_round": [],
             "text": "code: no round with known counts"},
        ],
        "scoreboard": [
            {"name": "claude", "presets": ["claude"], "raised": 3,
             "ended": {"fixed": 0, "answered": 0, "rejected": 0, "duplicate": 0, "deferred": 0, "open": 3},
             "fixed_or_answered": 0, "share_fixed_or_answered": 0.0,
             "seconds_per_fixed_or_answered": None, "cost_per_fixed_or_answered": None},
            {"name": "codex", "presets": ["codex"], "raised": 2,
             "ended": {"fixed": 0, "answered": 0, "rejected": 0, "duplicate": 0, "deferred": 1, "open": 1},
             "fixed_or_answered": 0, "share_fixed_or_answered": 0.0,
             "seconds_per_fixed_or_answered": None, "cost_per_fixed_or_answered": None},
        ],
        "noise": {"verified_rounds": 0, "reviewers": []},  # no round was verified
        # c4 stopped before recording (its reviewers still pending)
        "unfinished": [{"name": "c4", "why": "round.json was never marked recorded (the run stopped before its findings were recorded)"}],
        "coverage": {"rounds": 0, "changed_files": 0, "unseen": 0},  # rounds written before coverage
    }


def test_markdown_field_by_field(repo, capsys):
    series = _series(repo)
    code, captured = _report(capsys, str(series))
    assert code == 0, captured.err
    h = git(repo, "rev-parse", "HEAD").strip()[:12]
    at = "2024-01-03T00:00:00.000Z"
    header = "| round | head | counted | reviewers | defect | requirement-question | hardening | note | new defects |"
    rule = "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
    assert captured.out == "\n".join([
        f"# Cap report: {series.resolve()}", "",
        "Project caps as applied by round c4.", "",
        "## plan", "",
        "Cap 3 (project 2, extended by 1); 2 counted, 1 remaining.", "",
        "| extension | cause | reason | at |", "| --- | --- | --- | --- |",
        f"| +1 | no recorded cause | - | {at} |", "",
        header, rule,
        f"| p1 | {h} | yes | claude: completed, codex: failed | 0 | 1 | 0 | 0 | 0 |",
        f"| p2 | {h} | yes | claude: completed, codex: completed | 0 | 0 | 0 | 0 | 0 |", "",
        "## plan-delta", "",
        "Cap 2 (project 1, extended by 1); 0 counted, 2 remaining.", "",
        "| extension | cause | reason | at |", "| --- | --- | --- | --- |",
        f"| +1 | no recorded cause | - | {at} |", "",
        "No rounds.", "",
        "## code", "",
        "Cap 7 (project 2, extended by 5); 2 counted, 5 remaining.", "",
        "| extension | cause | reason | at |", "| --- | --- | --- | --- |",
        f"| +1 | churn | - | {at} |",
        f"| +2 | other | vendor \\| outage day two | {at} |",
        f"| +1 | no recorded cause | - | {at} |",
        f"| +1 | recurring | same bug | {at} |", "",
        header, rule,
        f"| c1 | {h} | yes | claude: completed, codex: completed | 2 | 0 | 1 | 1 | 1 |",
        f"| c2 | {h} | no (rerun) | codex: timeout | 0 | 0 | 0 | 0 | 0 |",
        f"| c3 | {h} | dry run | claude: pending, codex: pending | - | - | - | - | - |",
        f"| c4 | {h} | yes | claude: pending, codex: pending | - | - | - | - | - |", "",
        "## Code extension causes", "",
        "| cause | extensions | rounds added |", "| --- | --- | --- |",
        "| churn | 1 | 1 |", "| recurring | 1 | 1 |", "| unrelated | 0 | 0 |", "| hardening | 0 | 0 |",
        "| other | 1 | 2 |", "| no recorded cause | 1 | 1 |", "",
        "## Unfinished rounds", "", "| round | why |", "| --- | --- |",
        "| c4 | round.json was never marked recorded (the run stopped before its findings were recorded) |", "",
        "## Usage", "",
        "| reviewer | rounds | attempts | time | tokens | cost |", "| --- | --- | --- | --- | --- | --- |",
        "| claude | 5 | 2 | 12.8s | in 1,100 (cached 200) / out 55 | $0.3750 |",
        "| codex | 6 | 2 | 30.0s | - | - |",
        "| (all) | 6 | 4 | 42.8s | in 1,100 (cached 200) / out 55 | $0.3750 |", "",
        "## Convergence", "",
        "- plan: no trend yet (new findings per round: 0)",
        "- code: no round with known counts", "",
        "| round | stage | new | repeat | corroborated | groups |", "| --- | --- | --- | --- | --- | --- |",
        "| p2 | plan | 0 | 0 | 0 | 0 |", "| c2 | code | 0 | 0 | 0 | 0 |", "",
        "## Reviewer scoreboard", "",
        "| reviewer | presets | raised | fixed | answered | rejected | duplicate | deferred | open | fixed or answered "
        "| time per fixed/answered (s) | cost per fixed/answered (USD) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        "| claude | claude | 3 | 0 | 0 | 0 | 0 | 0 | 3 | 0% | unknown | unknown |",
        "| codex | codex | 2 | 0 | 0 | 0 | 0 | 1 | 1 | 0% | unknown | unknown |", "",
        "## Findings refuted by another vendor", "",
        "Not verified: no round of the series was verified.", ""])


def test_cap_reached_then_extended(repo, capsys):
    series = rf.fresh_series(repo)
    for n in range(1, 4):
        rf.make_round(series, f"c{n}", repo=repo, packet_text=f"code {n}\n")

    def code_stage():
        code, captured = _report(capsys, str(series), "--format=json")
        assert code == 0, captured.err
        return json.loads(captured.out)["stages"][2]

    stage = code_stage()
    assert (stage["cap"], stage["counted"], stage["remaining"]) == (3, 3, 0)
    assert spar_main(["extend", str(series), "--stage", "code", "--by", "2", "--cause", "unrelated",
                      "--reason", "CI outage"]) == 0
    capsys.readouterr()
    stage = code_stage()
    assert (stage["cap"], stage["counted"], stage["remaining"], stage["extended_by"]) == (5, 3, 2, 2)
    assert [(e["cause"], e["reason"]) for e in stage["extensions"]] == [("unrelated", "CI outage")]


def test_empty_series_uses_the_default_caps(repo, capsys):
    series = rf.fresh_series(repo)
    code, captured = _report(capsys, str(series), "--format", "json")
    doc = json.loads(captured.out)
    assert code == 0 and doc["caps_from"] is None and doc["rounds"] == []
    assert [(s["stage"], s["cap"], s["remaining"]) for s in doc["stages"]] == [("plan", 2, 2), ("plan-delta", 2, 2), ("code", 3, 3)]
    code, captured = _report(capsys, str(series))
    assert code == 0 and "No round yet: default project caps." in captured.out


@pytest.mark.parametrize("args", [[], ["--format", "json"], ["SERIES", "--format", "xml"], ["SERIES", "--format", "MD"],
                                  ["SERIES", "--format", ""], ["SERIES", "--format"], ["SERIES", "other"], ["SERIES", "--bogus"]])
def test_usage_errors(repo, capsys, args):
    series = rf.fresh_series(repo)
    code, captured = _report(capsys, *[str(series) if a == "SERIES" else a for a in args])
    assert code == 64, captured.err
    assert captured.out == ""


def test_usage_line_shows_series_as_required():
    """Issue 22 point 8: SERIES is required, and the usage line shows it so (not `[SERIES]`)."""
    proc = subprocess.run([sys.executable, "-m", "spar", "cap-report", "--help"], capture_output=True, text=True,
                          timeout=60, cwd=ROOT)
    usage = proc.stdout.split("\n\n", 1)[0]
    assert proc.returncode == 0 and usage.startswith("usage: spar cap-report")
    assert usage.rstrip().endswith(" SERIES") and "[SERIES]" not in usage


def test_missing_or_not_a_folder(tmp_path, capsys):
    code, captured = _report(capsys, str(tmp_path / "nope"))
    assert code == 65 and "does not exist" in captured.err
    (tmp_path / "file").write_text("x")
    code, captured = _report(capsys, str(tmp_path / "file"), "--format", "json")
    assert code == 65 and "is not a folder" in captured.err and captured.out == ""


BROKEN = [
    ("corrupt round.json", "c1/round.json", "{", "not JSON"),
    ("round.json of another schema", "c1/round.json", '{"schema": "review-gate/v1"}', "not a review-round/v1"),
    ("corrupt findings.json", "c1/findings.json", "[", "not JSON"),
    ("findings.json missing in a recorded round", "c1/findings.json", None, "findings.json: missing"),
    ("corrupt extensions.jsonl", "extensions.jsonl", '{"stage": "code"', "incomplete last line"),
    ("extension of an unknown stage", "extensions.jsonl", '{"stage": "review", "by": 1}\n', "stage is not one of"),
]


@pytest.mark.parametrize("name, file, text, message", BROKEN, ids=[b[0] for b in BROKEN])
@pytest.mark.parametrize("fmt", ["md", "json"])
def test_unreadable_records_refused(repo, capsys, name, file, text, message, fmt):
    series = rf.fresh_series(repo)
    rf.make_round(series, "c1", repo=repo)
    if text is None:
        (series / file).unlink()
    else:
        (series / file).write_text(text)
    before = rf.snapshot(series)
    code, captured = _report(capsys, str(series), "--format", fmt)
    assert code == 65, captured.out
    assert message in captured.err and captured.out == ""
    assert rf.snapshot(series) == before


@pytest.mark.parametrize("fmt", ["md", "json"])
def test_a_round_folder_is_not_a_series(repo, capsys, fmt):
    """A round given by mistake would read as an empty series with default caps."""
    series = rf.fresh_series(repo)
    r1 = rf.make_round(series, "c1", repo=repo)
    code, captured = _report(capsys, str(r1), "--format", fmt)
    assert code == 65 and captured.out == ""
    assert "is a round folder" in captured.err and str(series) in captured.err


def test_round_awaiting_a_native_record_is_recorded_but_not_finished(repo, capsys):
    """A round whose native reviewer awaits `spar record` has findings (it was
    recorded) and counts; its reviewer rows say what is still awaited."""
    series = rf.fresh_series(repo)
    rf.make_round(series, "c1", repo=repo, reviewers=[rf.reviewer("claude"),
                                                      rf.reviewer("native", status="awaiting_record")],
                  findings=[rf.finding("claude", 1, introduced_by_change="yes")])
    assert "finished_at" not in json.loads((series / "c1" / "round.json").read_text())
    code, captured = _report(capsys, str(series), "--format", "json")
    assert code == 0, captured.err
    (row,) = json.loads(captured.out)["rounds"]
    assert (row["recorded"], row["counted"], row["new_defects"]) == (True, True, 1)
    assert row["findings"] == {"defect": 1, "requirement-question": 0, "hardening": 0, "note": 0}
    assert [r["status"] for r in row["reviewers"]] == ["completed", "awaiting_record"]
