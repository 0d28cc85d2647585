"""Cross-vendor verification's pure rules (spar/judge/verify_plan.py): which findings go
to which verifier, in which order, which are left unverified and why; and the verdict an
answer gives."""

from __future__ import annotations

from typing import Any

import pytest

from spar.judge.context import RoundContext
from spar.judge.verify_plan import EVIDENCE_LIMIT, LOCATION_LIMIT, Verifier, judge_answer, plan_verification

AUTHORS = {"opus": "claude", "gpt": "codex", "gem": "agy"}
CLAUDE, CODEX, AGY = Verifier("opus", "claude"), Verifier("gpt", "codex"), Verifier("gem", "agy")


def _finding(fid: str, cls: str = "defect", group: dict | None = None) -> Any:
    return {"id": fid, "reviewer": fid.split("-")[0], "class": cls, "location": "head/a.py:1", "group": group}


def _group(gid: str, members: list[str], vendors: list[str]) -> dict:
    return {"id": gid, "members": members, "vendors": vendors}


def _plan(findings, verifiers=(CLAUDE, CODEX, AGY), max_findings=None):
    plan = plan_verification(findings, AUTHORS, list(verifiers), max_findings)
    return [(c.finding, c.verifier.name) for c in plan.calls], plan.unverified


def test_every_defect_and_hardening_goes_to_another_vendor_spread_across_verifiers():
    findings = [_finding("opus-F1"), _finding("opus-F2", "hardening"), _finding("gpt-F1"), _finding("gem-F1"),
                _finding("gem-F2", "note"), _finding("gpt-F2", "requirement-question")]
    calls, unverified = _plan(findings)
    # defects first in findings.json order, then hardening; the least loaded eligible verifier takes each
    assert calls == [("opus-F1", "gpt"), ("gpt-F1", "opus"), ("gem-F1", "opus"), ("opus-F2", "gem")]
    assert unverified == []
    for fid, verifier in calls:
        assert AUTHORS[fid.split("-")[0]] != {"opus": "claude", "gpt": "codex", "gem": "agy"}[verifier]


def test_each_member_of_a_group_gets_a_call_of_its_own_by_a_vendor_outside_the_group_first():
    group = _group("G1", ["opus-F1", "gpt-F1"], ["claude", "codex"])
    findings = [_finding("gem-F1"), _finding("opus-F1", "hardening", group), _finding("gpt-F1", "defect", group)]
    plan = plan_verification(findings, AUTHORS, [CLAUDE, CODEX, AGY], None)
    # two vendors first, defect before hardening; each verdict covers the one claim its call shows
    assert [(c.finding, c.group, c.verifier.name) for c in plan.calls] == [
        ("gpt-F1", "G1", "gem"), ("opus-F1", "G1", "gem"), ("gem-F1", None, "opus")]


def test_a_group_of_every_verifier_vendor_has_each_member_checked_by_another_vendor_than_its_author():
    group = _group("G1", ["opus-F1", "gpt-F1"], ["claude", "codex"])
    findings = [_finding("opus-F1", "defect", group), _finding("gpt-F1", "defect", group)]
    assert _plan(findings, (CLAUDE, CODEX)) == ([("opus-F1", "gpt"), ("gpt-F1", "opus")], [])


def test_a_proposed_defect_spar_classed_a_note_is_verified_and_a_proposed_note_is_not():
    lowered = {**_finding("opus-F1", "note"), "proposed_class": "defect"}
    hardening = {**_finding("gpt-F1", "note"), "proposed_class": "hardening"}
    note = {**_finding("gem-F1", "note"), "proposed_class": "note"}
    question = {**_finding("gem-F2", "requirement-question"), "proposed_class": "requirement-question"}
    calls, unverified = _plan([hardening, note, lowered, question])
    assert calls == [("opus-F1", "gpt"), ("gpt-F1", "opus")] and unverified == []


def test_no_verifier_of_another_vendor_leaves_the_finding_unverified():
    assert _plan([_finding("opus-F1"), _finding("gpt-F1")], (CLAUDE,)) == (
        [("gpt-F1", "opus")], [("opus-F1", "no_other_vendor")])


def test_max_findings_leaves_the_rest_unverified_in_plan_order():
    findings = [_finding("opus-F1", "hardening"), _finding("opus-F2"), _finding("gpt-F1"), _finding("gem-F1")]
    calls, unverified = _plan(findings, max_findings=2)
    assert [c[0] for c in calls] == ["opus-F2", "gpt-F1"]
    assert unverified == [("gem-F1", "max_findings"), ("opus-F1", "max_findings")]
    plan = plan_verification(findings + [_finding("opus-F3", "note")], AUTHORS, [CODEX], None)
    assert plan.order == ["opus-F2", "gpt-F1", "gem-F1", "opus-F1"]  # notes are not considered


CTX = RoundContext(head_files={"a.py": "100644"}, base_files={}, documents=[], check_paths=[], criteria_ids=set())


@pytest.mark.parametrize(("answer", "expected"), [
    ({"verdict": "confirmed", "evidence": "line 1 divides", "location": "head/a.py:1"},
     ("confirmed", "line 1 divides", "head/a.py:1", "")),
    ({"verdict": "refuted", "evidence": "guarded above", "location": None}, ("refuted", "guarded above", None, "")),
    ({"verdict": "unsure", "evidence": "cannot tell", "location": " "}, ("unsure", "cannot tell", None, "")),
    ({"verdict": "refuted", "evidence": "x"}, ("refuted", "x", None, "")),
    ({"verdict": "maybe", "evidence": "x"}, ("unsure", "", None, 'verdict "maybe" is not one of')),
    ({"evidence": "x"}, ("unsure", "", None, "verdict missing or not a string")),
    ({"verdict": "confirmed", "evidence": "  "}, ("unsure", "", None, "evidence is missing, blank")),
    ({"verdict": "confirmed", "evidence": "x", "why": "y"}, ("unsure", "", None, 'the answer has key "why"')),
    ({"verdict": "confirmed", "evidence": "x", "location": 3}, ("unsure", "", None, "location is not a string")),
    ({"verdict": "confirmed", "evidence": "x", "location": "head/b.py:1"},
     ("unsure", "", None, 'location "head/b.py:1" cannot be read (no target "b.py")')),
    (None, ("unsure", "", None, "not a JSON object")),
])
def test_the_answer_rule(answer, expected):
    v = judge_answer(answer, CTX)
    assert (v.verdict, v.evidence, v.location) == expected[:3]
    assert expected[3] in v.reason and (v.reason == "") == (expected[3] == "")


def test_an_answer_over_a_cap_is_unsure_and_its_reason_quotes_only_a_start():
    """A verifier's fields are capped (the evidence, the location), and a reason quotes no
    more than the start of what the verifier wrote (a 3 MiB verdict or key)."""
    huge = "y" * (3 * 1024 * 1024)
    for answer, says in (({"verdict": "refuted", "evidence": "x" * (EVIDENCE_LIMIT + 1)},
                          f"evidence is {EVIDENCE_LIMIT + 1} characters, more than the {EVIDENCE_LIMIT}"),
                         ({"verdict": "refuted", "evidence": "x", "location": "head/a.py:1" + " " * LOCATION_LIMIT},
                          f"location is {LOCATION_LIMIT + 11} characters"),
                         ({"verdict": huge, "evidence": "x"}, 'verdict "yyyy'),
                         ({"verdict": "refuted", "evidence": "x", huge: 1}, 'the answer has key "yyyy')):
        v = judge_answer(answer, CTX)
        assert (v.verdict, v.evidence) == ("unsure", "") and says in v.reason and len(v.reason) < 200
    assert judge_answer({"verdict": "refuted", "evidence": "x" * EVIDENCE_LIMIT}, CTX).verdict == "refuted"
