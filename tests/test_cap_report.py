"""spar cap-report: G34 usage/refusals, G32 refusals, both formats field by field,
and a cap reached then extended."""

from __future__ import annotations

import json

import pytest

from spar import __version__
from spar.cli import main as spar_main
from tests import roundfactory as rf
from tests.gitrepo import git


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    return rf.series_repo(tmp_path_factory.mktemp("capreport"))[0]


def _report(capsys, *args):
    code = spar_main(["cap-report", *args])
    return code, capsys.readouterr()


def _series(repo):
    """Plan, code, rerun, dry run, unrecorded rounds and every kind of extension line."""
    series = rf.fresh_series(repo)
    caps = {"plan": 2, "plan_delta": 1, "code": 2}
    rf.make_round(series, "p1", repo=repo, stage="plan", caps=caps,
                  reviewers=[rf.reviewer("claude"), rf.reviewer("codex", status="failed")],
                  findings=[rf.finding("claude", 1, cls="requirement-question")])
    rf.make_round(series, "p2", repo=repo, stage="plan", caps=caps, packet_text="plan 2\n")
    rf.make_round(series, "c1", repo=repo, caps=caps, packet_text="code\n", findings=[
        rf.finding("claude", 1, introduced_by_change="yes"), rf.finding("claude", 2),
        rf.finding("codex", 1, cls="hardening"), rf.finding("codex", 2, cls="note", introduced_by_change="yes")])
    rf.make_round(series, "c2", repo=repo, caps=caps, packet_text="code\n",
                  reviewers=[rf.reviewer("codex", status="timeout")])  # a rerun: not counted
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
        return {"name": name, "stage": stage, "head": head, "base": base, "started_at": started, "counted": counted,
                "dry_run": dry, "recorded": recorded, "reviewers": reviewers, "findings": findings, "new_defects": new}

    completed = [{"name": "claude", "preset": "claude", "status": "completed"},
                 {"name": "codex", "preset": "codex", "status": "completed"}]
    pending = [{"name": "claude", "preset": "claude", "status": "pending"},
               {"name": "codex", "preset": "codex", "status": "pending"}]
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
                [{"name": "claude", "preset": "claude", "status": "completed"}, {"name": "codex", "preset": "codex", "status": "failed"}],
                dict(zero, **{"requirement-question": 1}), 0),
            row("p2", "plan", "2024-01-01T00:01:00.000Z", True, completed, zero, 0),
            row("c1", "code", "2024-01-01T00:02:00.000Z", True, completed,
                {"defect": 2, "requirement-question": 0, "hardening": 1, "note": 1}, 1),
            row("c2", "code", "2024-01-01T00:03:00.000Z", False, [{"name": "codex", "preset": "codex", "status": "timeout"}], zero, 0),
            row("c3", "code", "2024-01-01T00:04:00.000Z", False, pending, dry=True, recorded=False),
            row("c4", "code", "2024-01-01T00:05:00.000Z", True, pending, recorded=False),
        ],
        "code_extension_causes": {
            "churn": {"extensions": 1, "by": 1}, "recurring": {"extensions": 1, "by": 1},
            "unrelated": {"extensions": 0, "by": 0}, "hardening": {"extensions": 0, "by": 0},
            "other": {"extensions": 1, "by": 2}, "no_recorded_cause": {"extensions": 1, "by": 1}},
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
        "| other | 1 | 2 |", "| no recorded cause | 1 | 1 |", ""])


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
