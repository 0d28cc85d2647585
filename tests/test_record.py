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


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    return rf.series_repo(tmp_path_factory.mktemp("record"))[0]


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
    (b"{not json", "invalid_output", "not JSON"),
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
    code, out = _record(capsys, r, "--reviewer", "native", "--transcript", str(t))
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
