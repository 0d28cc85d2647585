"""verifications.json read back: what Spar writes reads, what it could not have written is named."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from spar.errors import RecordError
from spar.records.readers import read_verifications


def _call(number: int, finding: str, **changes: Any) -> dict[str, Any]:
    call = {"call": f"V{number}", "finding": finding, "group": None, "verifier": "codex", "preset": "codex",
            "status": "completed", "verdict": "confirmed", "evidence": "line 3 divides by zero",
            "location": "src/a.py:3", "reason": "", "attempts": []}
    call.update(changes)
    return call


def _record(calls: list[dict[str, Any]], unverified: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"schema": "spar-verifications/v1", "round": "r1", "started_at": "2026-12-03T10:00:00Z",
            "finished_at": "2026-12-03T10:01:00Z", "verifiers": ["codex"], "max_findings": None,
            "max_cost_usd": None, "calls": calls, "unverified": unverified or []}


def _write(tmp_path: Path, record: object) -> Path:
    (tmp_path / "verifications.json").write_text(json.dumps(record))
    return tmp_path


def test_a_round_never_verified_reads_as_none(tmp_path: Path) -> None:
    assert read_verifications(tmp_path) is None


def test_a_written_record_reads_back(tmp_path: Path) -> None:
    record = _record([_call(1, "claude-F1"), _call(2, "claude-F2", verdict="unsure", status="timeout",
                                                   evidence="", reason="timed out after 60 s")],
                     [{"finding": "claude-F3", "why": "max_findings"}])
    findings: Any = [{"id": f"claude-F{n}"} for n in (1, 2, 3)]
    assert read_verifications(_write(tmp_path, record), findings) == record


@pytest.mark.parametrize(("record", "problem"), [
    (["not", "an", "object"], "not a JSON object"),
    ({**_record([]), "schema": "other/v1"}, "not a spar-verifications/v1 record"),
    (_record([_call(2, "claude-F1")]), "call 1: not an object with call V1"),
    (_record([_call(1, "claude-F1", verdict="maybe")]), "verdict 'maybe' is not one of"),
    (_record([_call(1, "claude-F1", status="timeout")]), "a verdict other than unsure from a call that did not complete"),
    (_record([_call(1, "claude-F1", status="pending", verdict="unsure")]), "status 'pending'"),
    (_record([_call(1, "claude-F1"), _call(2, "claude-F1")]), "call 2: finding claude-F1 is named twice"),
    (_record([_call(1, "claude-F1")], [{"finding": "claude-F1", "why": "max_cost_usd"}]), "unverified 1: finding claude-F1"),
    (_record([], [{"finding": "claude-F2", "why": "tired"}]), "unverified 1: why is not one of"),
    (_record([_call(1, "claude-F9")]), "finding claude-F9 is not a finding of the round"),
    (_record([_call(1, "claude-F1", attempts=[{"argv": []}])]), "attempt 1: argv is not a list of strings"),
])
def test_a_record_spar_could_not_have_written_is_named(tmp_path: Path, record: object, problem: str) -> None:
    findings: Any = [{"id": "claude-F1"}, {"id": "claude-F2"}]
    with pytest.raises(RecordError, match="verifications.json: .*" + problem.replace("(", r"\(")):
        read_verifications(_write(tmp_path, record), findings)


def test_the_line_says_nothing_was_to_verify_rather_than_counting_no_calls() -> None:
    """stderr's line after a verification: calls and verdicts when there were calls; with
    none, that nothing was to be verified, or (the notes before it saying why) that no call
    was made; never "0 call(s)"."""
    from spar.verify.verification import verdict_line

    assert verdict_line(_record([_call(1, "claude-F1"), _call(2, "claude-F2", verdict="unsure")])) == (
        "verification of round r1: 2 call(s): 1 confirmed, 0 refuted, 1 unsure")
    assert verdict_line(_record([])) == (
        "verification of round r1: nothing to verify (no finding proposed or classed defect or hardening)")
    left = _record([], [{"finding": "claude-F1", "why": "no_other_vendor"}])
    assert verdict_line(left) == "verification of round r1: no call made"
