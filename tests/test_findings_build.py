"""findings.json entries (docs/records.md) and automatic deferrals, from a validated
result in a real repository (the g7 setup of tests/data/locations.json)."""

from __future__ import annotations

import json

import pytest

from spar.judge.findings import auto_deferrals, build_findings
from spar.judge.result import validate_result
from tests.test_locations import setup_contexts

HEAD_KEYS = ["id", "reviewer", "reviewer_id", "proposed_class", "angle", "location", "claim",
             "failure_scenario", "evidence", "link_kind", "link", "introduced_by_change",
             "regression", "check_impact", "confidence"]
TAIL_KEYS = ["path", "in_check_paths", "location_unreadable", "class", "class_reason",
             "claimed_link_kind", "claimed_link"]


@pytest.fixture(scope="module")
def g7(tmp_path_factory):
    return setup_contexts(tmp_path_factory, "locations.json")["g7"]


def _item(**over) -> dict:
    item = {"id": "R-1", "proposed_class": "defect", "angle": "correctness",
            "location": "head/app/main.go:5", "claim": "prints twice", "failure_scenario": "run it",
            "evidence": "line 6", "link_kind": "criterion", "link": "AC-1",
            "introduced_by_change": "yes", "regression": "no", "check_impact": "none",
            "confidence": "high"}
    item.update(over)
    return item


def _result(items: list[dict]) -> dict:
    obj = {"reviewed_head": "abcdef0", "verdict": "blocking_findings",
           "angles_checked": [{"angle": a, "result": "ok"} for a in
                              ("criteria", "correctness", "checks", "contracts", "risk")],
           "angles_unchecked": [], "findings": items, "limits": ""}
    return validate_result(obj, packet_head="abcdef0" + "1" * 33, requested_angles=["risk"],
                           standpoints_active=False, assigned=False)


def test_entries_match_the_record_format(g7):
    items = [
        _item(smallest_fix="print once"),  # confirmed criterion link, outside check paths
        _item(id="R-2", location="head/checks/t.py:3", link="AC-9", proposed_class="note",
              check_impact="false_pass", smallest_fix=""),
        _item(id="R-3", location="head/checks/t.py:10:5", proposed_class="hardening",
              link_kind="none", link=""),
        _item(id="R-4", location="checks/", proposed_class="hardening", link_kind="rule",
              link="AGENTS.md:1-2", angle="contracts"),
    ]
    entries = build_findings("claude-2", _result(items), g7.ctx)
    assert [e["id"] for e in entries] == ["claude-2-F1", "claude-2-F2", "claude-2-F3", "claude-2-F4"]
    first, second, third, fourth = entries
    assert list(first) == HEAD_KEYS + ["smallest_fix"] + TAIL_KEYS
    assert list(third) == HEAD_KEYS + TAIL_KEYS  # smallest_fix absent stays absent
    assert first == {
        "id": "claude-2-F1", "reviewer": "claude-2", "reviewer_id": "R-1",
        "proposed_class": "defect", "angle": "correctness", "location": "head/app/main.go:5",
        "claim": "prints twice", "failure_scenario": "run it", "evidence": "line 6",
        "link_kind": "criterion", "link": "AC-1", "introduced_by_change": "yes",
        "regression": "no", "check_impact": "none", "confidence": "high",
        "smallest_fix": "print once", "path": "app/main.go", "in_check_paths": False,
        "location_unreadable": False, "class": "defect", "class_reason": "rule 7: proposed defect",
        "claimed_link_kind": "criterion", "claimed_link": "AC-1",
    }
    # AC-9 is not a criterion of the round: unconfirmed, the claim kept
    assert (second["link_kind"], second["link"]) == ("none", "")
    assert (second["claimed_link_kind"], second["claimed_link"]) == ("criterion", "AC-9")
    assert second["smallest_fix"] == ""
    assert (second["class"], second["class_reason"]) == ("defect", "rule 1: false_pass in check paths")
    assert third["location_unreadable"] is True and third["path"] == ""
    assert third["class"] == "hardening"
    assert third["class_reason"] == 'unreadable location (no target "checks/t.py:10"): rule 7: proposed hardening'
    assert (fourth["path"], fourth["in_check_paths"], fourth["class"]) == ("checks", True, "hardening")
    assert (fourth["link_kind"], fourth["link"]) == ("rule", "AGENTS.md:1-2")
    # hardening with a readable location is deferred; the unreadable one is not (§4)
    assert auto_deferrals(entries) == ["claude-2-F4"]
    json.dumps(entries)  # plain JSON data


def test_numbering_restarts_per_reviewer_and_follows_the_reviewer_order(g7):
    items = [_item(id=f"mine-{i}", location=loc) for i, loc in
             enumerate(["app/main.go", "old.go", "", "PLAN.md:2"], 1)]
    a = build_findings("a", _result(items), g7.ctx)
    b = build_findings("b", _result(items[:1]), g7.ctx)
    assert [(e["id"], e["reviewer_id"], e["path"]) for e in a] == [
        ("a-F1", "mine-1", "app/main.go"), ("a-F2", "mine-2", "old.go"), ("a-F3", "mine-3", ""),
        ("a-F4", "mine-4", "docs/specs/x/PLAN.md")]
    assert a[2]["location_unreadable"] is True
    assert [e["id"] for e in b] == ["b-F1"]
    assert build_findings("c", _result([]), g7.ctx) == []


def test_root_location_is_never_a_check_path(g7):
    g7.ctx.check_paths.append("**")
    try:
        entries = build_findings("r", _result([_item(location="head/", proposed_class="hardening"),
                                               _item(location="app", proposed_class="note")]), g7.ctx)
    finally:
        g7.ctx.check_paths.pop()
    assert (entries[0]["path"], entries[0]["in_check_paths"]) == ("", False)
    assert entries[0]["class"] == "hardening" and entries[0]["class_reason"] == "rule 7: proposed hardening"
    assert (entries[1]["path"], entries[1]["in_check_paths"], entries[1]["class"]) == ("app", True, "hardening")


def test_auto_deferrals_read_older_records():
    # G32: a finding without location_unreadable had its location read
    findings = [{"id": "a-F1", "class": "hardening"},
                {"id": "a-F2", "class": "hardening", "location_unreadable": True},
                {"id": "a-F3", "class": "defect", "location_unreadable": False},
                {"id": "a-F4", "class": "note"},
                {"id": "a-F5", "class": "hardening", "location_unreadable": False}]
    assert auto_deferrals(findings) == ["a-F1", "a-F5"]
