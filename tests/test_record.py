"""spar record: a native reviewer's result (and transcript) recorded like spar run
records results; refusals write nothing."""

from __future__ import annotations

import json

import pytest

from spar.cli import main as spar_main
from spar.records import readers
from tests import roundfactory as rf
from tests.gitrepo import git

ANGLES = ("criteria", "correctness", "checks", "contracts", "risk")


def _item(n, **kw):
    item = {"id": f"N{n}", "proposed_class": "defect", "angle": "correctness", "location": "head/app/main.py:1",
            "claim": f"claim {n}", "failure_scenario": "empty input crashes", "evidence": "line 1", "link_kind": "none",
            "link": "", "introduced_by_change": "no", "regression": "no", "check_impact": "none", "confidence": "high"}
    item.update(kw)
    return item


def _result(repo, findings, verdict="blocking_findings"):
    return {"reviewed_head": git(repo, "rev-parse", "HEAD").strip()[:10], "verdict": verdict,
            "angles_checked": [{"angle": a, "result": "looked"} for a in ANGLES], "angles_unchecked": [],
            "findings": findings, "limits": ""}


FINDINGS = [
    _item(1, introduced_by_change="yes", regression="yes"),                   # rule 5: defect
    _item(2, proposed_class="hardening", location="head/tests/test_main.py:1"),  # rule 3: hardening, auto-deferred
    _item(3, proposed_class="requirement-question"),                          # rule 4
    _item(4, location="head/app/missing.py:1"),                               # unreadable location: stays defect
]


def _round(repo, reviewers=None, **kw):
    series = rf.fresh_series(repo)
    reviewers = reviewers or [rf.reviewer("claude"), rf.reviewer("native", status="awaiting_record", reason="")]
    return rf.make_round(series, "r1", repo=repo, reviewers=reviewers,
                         findings=[rf.finding("claude", 1, cls="note")], **kw)


def _record(capsys, round_dir, *args):
    code = spar_main(["record", str(round_dir), *args])
    return code, capsys.readouterr()


def test_native_result_recorded(repo, capsys, tmp_path):
    r = _round(repo)
    before = json.loads((r / "round.json").read_text())
    assert "finished_at" not in before
    result = tmp_path / "result.json"
    result.write_text(json.dumps(_result(repo, FINDINGS)))
    code, out = _record(capsys, r, "--reviewer", "native", "--result", str(result))
    assert code == 0, out.err
    rj = readers.read_round(r)
    native = rj["reviewers"][1]
    assert native["status"] == "completed" and native["reason"] == "" and native["finding_count"] == 4
    assert native["verdict"] == "blocking_findings"
    assert rj["finished_at"] == rj["recorded_at"]
    findings = readers.read_findings(r)
    assert [f["id"] for f in findings] == ["claude-F1", "native-F1", "native-F2", "native-F3", "native-F4"]
    assert [f["class"] for f in findings[1:]] == ["defect", "hardening", "requirement-question", "defect"]
    assert [f["reviewer_id"] for f in findings[1:]] == ["N1", "N2", "N3", "N4"]
    assert findings[4]["location_unreadable"] is True and findings[4]["path"] == ""
    assert findings[2]["in_check_paths"] is True
    ledger = readers.read_ledger(r)
    assert [(l["finding"], l["disposition"], l["auto"]) for l in ledger] == [("native-F2", "deferred", True)]
    assert "native-F1" in (r / "summary.md").read_text()


def test_finished_only_when_no_reviewer_awaits(repo, capsys, tmp_path):
    r = _round(repo, reviewers=[rf.reviewer("claude"), rf.reviewer("a", preset="native", status="awaiting_record"),
                                rf.reviewer("b", preset="native", status="awaiting_record")])
    result = tmp_path / "result.json"
    result.write_text(json.dumps(_result(repo, [_item(1)])))
    assert _record(capsys, r, "--reviewer", "b", "--result", str(result))[0] == 0
    rj = readers.read_round(r)
    assert "finished_at" not in rj and rj["recorded_at"]
    assert [f["id"] for f in readers.read_findings(r)] == ["claude-F1", "b-F1"]
    assert _record(capsys, r, "--reviewer", "a", "--result", str(result))[0] == 0
    rj = readers.read_round(r)
    assert rj["finished_at"]
    # reviewer order, not recording order
    assert [f["id"] for f in readers.read_findings(r)] == ["claude-F1", "a-F1", "b-F1"]


@pytest.mark.parametrize("content, status, reason", [
    (None, "invalid_output", "missing key limits"),
    (b"{not json", "invalid_output", "not one JSON object"),
    (b"[1, 2]", "invalid_output", "not a JSON object"),
    ("could", "failed", "could_not_review"),
], ids=["missing key", "not JSON", "array", "could_not_review"])
def test_result_that_does_not_complete(repo, capsys, tmp_path, content, status, reason):
    r = _round(repo)
    result = tmp_path / "result.json"
    if content is None:
        bad = _result(repo, [])
        del bad["limits"]
        result.write_text(json.dumps(bad))
    elif content == "could":
        result.write_text(json.dumps(_result(repo, [], verdict="could_not_review")))
    else:
        result.write_bytes(content)
    code, out = _record(capsys, r, "--reviewer", "native", "--result", str(result))
    assert code == 1, out.err
    native = readers.read_round(r)["reviewers"][1]
    assert native["status"] == status and reason in native["reason"]
    assert "finding_count" not in native
    assert [f["id"] for f in readers.read_findings(r)] == ["claude-F1"]
    assert readers.read_round(r)["finished_at"]


def test_a_failed_reviewer_can_be_recorded_by_hand(repo, capsys, tmp_path):
    r = _round(repo, reviewers=[rf.reviewer("claude"), rf.reviewer("codex", status="timeout")])
    result = tmp_path / "result.json"
    result.write_text(json.dumps(_result(repo, [_item(1, proposed_class="note")])))
    code, out = _record(capsys, r, "--reviewer", "codex", "--result", str(result))
    assert code == 0, out.err
    assert readers.read_round(r)["reviewers"][1]["status"] == "completed"
    assert [f["id"] for f in readers.read_findings(r)] == ["claude-F1", "codex-F1"]


def test_a_reviewer_recorded_by_hand_got_to_review(repo, capsys, tmp_path):
    """A result recorded over a reviewer that never got to review clears its `not_run`: the
    round stays one Spar could have written, and the stop hook no longer tells the person."""
    unavailable = {**rf.reviewer("codex", status="unavailable", reason="quota or rate limit: out"), "not_run": "quota"}
    r = _round(repo, reviewers=[rf.reviewer("claude"), unavailable])
    result = tmp_path / "result.json"
    result.write_text(json.dumps(_result(repo, [_item(1, proposed_class="note")])))
    code, out = _record(capsys, r, "--reviewer", "codex", "--result", str(result))
    assert code == 0, out.err
    codex = readers.read_round(r)["reviewers"][1]
    assert (codex["status"], codex["not_run"]) == ("completed", None)


def _transcript(repo, round_dir, result, extra_tools=()):
    ws = str(round_dir / "workspace")
    lines = [
        {"type": "user", "cwd": ws, "message": {"role": "user", "content": "Review per prompt.md"}},
        {"type": "assistant", "cwd": ws, "message": {"model": "claude-test-model", "content": [
            {"type": "tool_use", "name": "Read", "input": {"file_path": str(round_dir / "native" / "prompt.md")}}]}},
        {"type": "assistant", "cwd": ws, "message": {"model": "claude-test-model", "content": [
            {"type": "tool_use", "name": "Read", "input": {"file_path": "head/app/main.py"}}]}},
    ]
    for tool, inp in extra_tools:
        lines.append({"type": "assistant", "cwd": ws, "message": {"model": "claude-test-model", "content": [
            {"type": "tool_use", "name": tool, "input": inp}]}})
    if result is not None:
        lines.append({"type": "assistant", "cwd": ws, "message": {"model": "claude-test-model", "content": [
            {"type": "tool_use", "name": "StructuredOutput", "input": result}]}})
    return "\n".join(json.dumps(l) for l in lines) + "\n"


def test_transcript_warnings_and_result(repo, capsys, tmp_path):
    r = _round(repo)
    t = tmp_path / "t.jsonl"
    t.write_text(_transcript(repo, r, _result(repo, [_item(1)]),
                             extra_tools=[("Bash", {"command": "ls"}), ("Read", {"file_path": "/etc/hostname"})]))
    code, out = _record(capsys, r, "--reviewer", "native", "--transcript", str(t))
    assert code == 0, out.err
    native = readers.read_round(r)["reviewers"][1]
    assert native["status"] == "completed"
    assert native["observed_model"] == "claude-test-model"
    assert {"kind": "tool_not_allowed", "tool": "Bash"} in native["warnings"]
    assert {"kind": "read_outside_workspace", "tool": "Read"} in native["warnings"]
    assert all(set(w) == {"kind", "tool"} for w in native["warnings"])
    assert [f["id"] for f in readers.read_findings(r)][-1] == "native-F1"


def test_transcript_with_result_file(repo, capsys, tmp_path):
    r = _round(repo)
    t = tmp_path / "t.jsonl"
    t.write_text(_transcript(repo, r, None))
    result = tmp_path / "result.json"
    result.write_text(json.dumps(_result(repo, [_item(1), _item(2)])))
    code, out = _record(capsys, r, "--reviewer", "native", "--transcript", str(t), "--result", str(result))
    assert code == 0, out.err
    native = readers.read_round(r)["reviewers"][1]
    assert native["finding_count"] == 2 and native["warnings"] == []


def test_transcript_without_a_result(repo, capsys, tmp_path):
    r = _round(repo)
    t = tmp_path / "t.jsonl"
    t.write_text(_transcript(repo, r, None))
    code, _out = _record(capsys, r, "--reviewer", "native", "--transcript", str(t))
    assert code == 1
    native = readers.read_round(r)["reviewers"][1]
    assert native["status"] == "invalid_output" and "no result object" in native["reason"]


REFUSALS = [
    ("unknown reviewer", {}, ["--reviewer", "gemini"], "is not a reviewer of round"),
    ("name in another case", {}, ["--reviewer", "Native"], "is not a reviewer of round"),
    ("completed reviewer", {}, ["--reviewer", "claude"], "already completed"),
    ("dry run", {"dry_run": True}, ["--reviewer", "native"], "dry run"),
]


@pytest.mark.parametrize("name, kw, args, message", REFUSALS, ids=[r[0] for r in REFUSALS])
def test_refusals_write_nothing(repo, capsys, tmp_path, name, kw, args, message):
    r = _round(repo, **kw)
    result = tmp_path / "result.json"
    result.write_text(json.dumps(_result(repo, [_item(1)])))
    before = rf.snapshot(r.parent)
    code, out = _record(capsys, r, *args, "--result", str(result))
    assert code == 65, out.err
    assert message in out.err
    assert rf.snapshot(r.parent) == before


@pytest.mark.parametrize("file, text, message", [
    ("round.json", "{", "not JSON"),
    ("findings.json", "{}", "not a JSON array"),
    ("ledger.jsonl", "x\n", "ledger.jsonl:1"),
], ids=["round.json", "findings.json", "ledger.jsonl"])
def test_unreadable_records_refused(repo, capsys, tmp_path, file, text, message):
    r = _round(repo)
    (r / file).write_text(text)
    result = tmp_path / "result.json"
    result.write_text(json.dumps(_result(repo, [_item(1)])))
    before = rf.snapshot(r.parent)
    code, out = _record(capsys, r, "--reviewer", "native", "--result", str(result))
    assert code == 65 and message in out.err
    assert rf.snapshot(r.parent) == before


@pytest.mark.parametrize("which", ["--result", "--transcript"])
def test_unreadable_input_file_refused(repo, capsys, tmp_path, which):
    r = _round(repo)
    before = rf.snapshot(r.parent)
    code, out = _record(capsys, r, "--reviewer", "native", which, str(tmp_path / "missing"))
    assert code == 65 and "cannot be read" in out.err
    assert rf.snapshot(r.parent) == before


def test_transcript_without_json_lines_refused(repo, capsys, tmp_path):
    r = _round(repo)
    t = tmp_path / "t.jsonl"
    t.write_text("not json\n[1]\n")
    before = rf.snapshot(r.parent)
    code, out = _record(capsys, r, "--reviewer", "native", "--transcript", str(t))
    assert code == 65 and "unreadable transcript" in out.err
    assert rf.snapshot(r.parent) == before


@pytest.mark.parametrize("args", [["--reviewer", "native"], ["--result", "x.json"], [], ["--reviewer", "native", "--result"]])
def test_usage_errors(repo, capsys, args):
    r = _round(repo)
    before = rf.snapshot(r.parent)
    code, _ = _record(capsys, r, *args)
    assert code == 64
    assert rf.snapshot(r.parent) == before


def test_transcript_line_separators_inside_json_strings(repo, capsys, tmp_path):
    """JSON writers leave U+2028, U+2029 and U+0085 raw inside strings; only a
    newline ends a transcript line, so the result line survives whole."""
    r = _round(repo)
    t = tmp_path / "t.jsonl"
    claim = "two\u2028lines\u2029and\x85more"
    text = _transcript(repo, r, _result(repo, [_item(1, claim=claim)]))
    t.write_text(text.replace("\\u2028", "\u2028").replace("\\u2029", "\u2029").replace("\\u0085", "\x85"),
                 encoding="utf-8")
    assert "\u2028" in t.read_text(encoding="utf-8")
    code, out = _record(capsys, r, "--reviewer", "native", "--transcript", str(t))
    assert code == 0, out.err
    assert readers.read_findings(r)[-1]["claim"] == claim


def test_recorded_round_that_lost_its_findings_is_refused(repo, capsys, tmp_path):
    """G32: a round.json that says recorded without findings.json is unreadable;
    reading it as "no findings" would drop claude-F1 for good."""
    r = _round(repo)
    (r / "findings.json").unlink()
    result = tmp_path / "result.json"
    result.write_text(json.dumps(_result(repo, [_item(1)])))
    before = rf.snapshot(r.parent)
    code, out = _record(capsys, r, "--reviewer", "native", "--result", str(result))
    assert code == 65, out.err
    assert "findings.json: missing" in out.err
    assert rf.snapshot(r.parent) == before


def test_round_not_recorded_yet_takes_its_first_result(repo, capsys, tmp_path):
    """A round that stopped before recording (reviewers pending, no findings.json)
    can still get a result by hand; it is then recorded but not finished."""
    r = _round(repo, recorded=False)
    result = tmp_path / "result.json"
    result.write_text(json.dumps(_result(repo, [_item(1)])))
    code, out = _record(capsys, r, "--reviewer", "native", "--result", str(result))
    assert code == 0, out.err
    rj = readers.read_round(r)
    assert rj["recorded_at"] and "finished_at" not in rj
    assert [f["id"] for f in readers.read_findings(r)] == ["native-F1"]


def test_round_named_through_a_symbolic_link(repo, capsys, tmp_path):
    """The host's subagent works from a physical folder, so its transcript spells
    the real path; `spar record` may be given another spelling of the same round."""
    r = _round(repo)
    link = tmp_path / "linked-series"
    link.symlink_to(r.parent, target_is_directory=True)
    t = tmp_path / "t.jsonl"
    t.write_text(_transcript(repo, r, _result(repo, [_item(1)])))  # real paths
    code, out = _record(capsys, link / r.name, "--reviewer", "native", "--transcript", str(t))
    assert code == 0, out.err
    assert readers.read_round(r)["reviewers"][1]["warnings"] == []
    # a read outside the workspace is still one, whichever spelling is used
    r2 = _round(repo)
    link2 = tmp_path / "linked-series-2"
    link2.symlink_to(r2.parent, target_is_directory=True)
    t.write_text(_transcript(repo, r2, _result(repo, [_item(1)]), extra_tools=[("Grep", {"path": str(r2.parent)})]))
    code, out = _record(capsys, link2 / r2.name, "--reviewer", "native", "--transcript", str(t))
    assert code == 0, out.err
    assert readers.read_round(r2)["reviewers"][1]["warnings"] == [{"kind": "read_outside_workspace", "tool": "Grep"}]


def test_repository_that_is_gone_is_refused(repo, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # not inside a repository that could stand in for it
    r = _round(repo)
    rj = json.loads((r / "round.json").read_text())
    rj["repository"] = str(tmp_path / "moved-away")
    (r / "round.json").write_text(json.dumps(rj))
    result = tmp_path / "result.json"
    result.write_text(json.dumps(_result(repo, [_item(1)])))
    before = rf.snapshot(r.parent)
    code, out = _record(capsys, r, "--reviewer", "native", "--result", str(result))
    assert code == 65, out.err
    assert "cannot read the commits of its repository" in out.err and "Traceback" not in out.err
    assert rf.snapshot(r.parent) == before


def test_repository_moved_since_the_round(tmp_path, capsys, monkeypatch):
    import os

    repo, series = rf.series_repo(tmp_path / "old")
    r = rf.make_round(series, "r1", repo=repo, reviewers=[rf.reviewer("claude"),
                                                          rf.reviewer("native", status="awaiting_record")])
    moved = tmp_path / "moved"
    os.rename(repo, moved)
    result = tmp_path / "result.json"
    result.write_text(json.dumps(_result(moved, [_item(1)])))
    monkeypatch.chdir(moved)
    code, out = _record(capsys, moved / "reviews" / r.name, "--reviewer", "native", "--result", str(result))
    assert code == 0, out.err
    assert readers.read_findings(moved / "reviews" / r.name)[-1]["path"] == "app/main.py"


def test_unreadable_waivers_never_leave_a_half_recorded_round(repo, capsys, tmp_path):
    # waivers.jsonl is judged only by waive and gate (G32): recording goes on, whole,
    # and summary.md simply names no waiver
    r = _round(repo)
    (r / "waivers.jsonl").write_text('{"reviewer": "claude"')
    result = tmp_path / "result.json"
    result.write_text(json.dumps(_result(repo, FINDINGS)))
    code, out = _record(capsys, r, "--reviewer", "native", "--result", str(result))
    assert code == 0, out.err
    rj = readers.read_round(r)
    assert rj["reviewers"][1]["status"] == "completed" and "finished_at" in rj
    assert [f["id"] for f in readers.read_findings(r)][1:] == ["native-F1", "native-F2", "native-F3", "native-F4"]
    assert "waived by the user" not in (r / "summary.md").read_text()


def test_torn_ledger_refuses_before_any_write(repo, capsys, tmp_path):
    r = _round(repo)
    (r / "ledger.jsonl").write_text('{"finding": "claude-F1", "disposition": "rej')
    result = tmp_path / "result.json"
    result.write_text(json.dumps(_result(repo, FINDINGS)))
    before = rf.snapshot(r.parent)
    code, out = _record(capsys, r, "--reviewer", "native", "--result", str(result))
    assert code == 65 and "ledger.jsonl" in out.err
    assert rf.snapshot(r.parent) == before
