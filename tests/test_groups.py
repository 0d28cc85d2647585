"""Issue 23 point 1: one item per corroborated problem. Two vendors
report one defect through a real `spar run` (a fake `claude` CLI and a `command`
reviewer): one group in findings.json, summary.md and the HTML report; `spar triage
ROUND G1` disposes every member; the gate names the group once and counts as before."""

from __future__ import annotations

import json

import pytest

from spar.judge.repeats import name_groups
from tests.gitrepo import commit
from tests.runsetup import finding, make_setup, result

pytestmark = pytest.mark.slow

CODE = "".join(f"value_{n} = {n}\n" for n in range(1, 41))


def item(fid, line, claim):
    return finding(id=fid, location=f"head/shop.py:{line}", claim=claim, proposed_class="defect",
                   link_kind="none", link="", introduced_by_change="yes", regression="yes")


def load(path):
    return json.loads(path.read_text(encoding="utf-8"))


def ledger(round_dir):
    return [json.loads(x) for x in (round_dir / "ledger.jsonl").read_text().splitlines() if x.strip()]


def test_a_corroborated_defect_is_one_group_triaged_at_once(tmp_path):
    s = make_setup(tmp_path)
    head = commit(s.repo, {"shop.py": CODE}, message="shop")
    s.scenario({"claude": {"result": result(head=head, findings=[
        item("c1", 10, "total() ignores the discount for bulk orders"),
        item("c2", 20, "refund() accepts a negative amount")])}})
    s.configure([{"name": "claude", "preset": "claude"},
                 s.answer_reviewer("house", result(findings=[item("h1", 21, "Negative refund amounts are accepted by refund")]))])
    run = s.run("--base", s.base, out="reviews/r1")
    assert run.returncode == 0, run.stderr.decode()
    r1 = s.repo / "reviews" / "r1"
    found = {f["id"]: f for f in load(r1 / "findings.json")}
    group = {"id": "G1", "members": ["claude-F2", "house-F1"], "vendors": ["claude", "command"]}
    assert found["claude-F2"]["group"] == group and found["house-F1"]["group"] == group
    assert found["claude-F1"]["group"] is None

    summary = (r1 / "summary.md").read_text()
    groups_part = summary.split("## Groups")[1].split("## Findings")[0]
    assert groups_part.count("**G1**") == 1 and "(2 vendors: claude, command)" in groups_part
    assert "`claude-F2` (claude, defect): refund() accepts a negative amount" in groups_part
    assert "`house-F1` (house, defect): Negative refund amounts are accepted by refund" in groups_part

    report = s.spar("report", "reviews", "--out", "reviews/report.html")
    assert report.returncode == 0, report.stderr.decode()
    html = (s.repo / "reviews" / "report.html").read_text()
    assert html.count('id="r1/G1"') == 1
    in_group = html.split('id="r1/G1"')[1]
    assert in_group.index('id="r1/claude-F2"') < in_group.index('id="r1/house-F1"') < in_group.index('id="r1/claude-F1"')

    cap = s.spar("cap-report", "reviews", "--format", "json")
    assert cap.returncode == 0, cap.stderr.decode()
    (row,) = json.loads(cap.stdout)["rounds"]
    assert row["groups"] == [group] and row["convergence"]["groups"] == 1
    cap_md = s.spar("cap-report", "reviews").stdout.decode()
    assert cap_md.count("| r1 | G1 | 2 (claude, command) | claude-F2, house-F1 |") == 1

    # the gate: both members counted open, the group named once
    gate = s.spar("gate", "reviews/r1", "--out", "reviews/gate.json")
    assert gate.returncode == 1
    doc = load(s.repo / "reviews" / "gate.json")
    assert sorted(doc["open"]) == ["r1/claude-F1", "r1/claude-F2", "r1/house-F1"]
    assert doc["reasons"] == [  # in findings.json order, the group at its first member's place
        "round reviews/r1: finding claude-F1 (defect) has no standing disposition",
        "round reviews/r1: group G1 (findings claude-F2 (defect), house-F1 (defect)) has no standing disposition"]

    done = s.spar("triage", "reviews/r1", "G1", "--to", "rejected", "--evidence", "refund() checks the sign")
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.decode().splitlines() == ["round r1: claude-F2 -> rejected",
                                                 "round r1: house-F1 -> duplicate --of r1/claude-F2"]
    assert [(x["finding"], x["disposition"], x.get("of"), x.get("evidence")) for x in ledger(r1)] == [
        ("claude-F2", "rejected", None, "refund() checks the sign"),
        ("house-F1", "duplicate", "r1/claude-F2", None)]
    gate = s.spar("gate", "reviews/r1", "--out", "reviews/gate.json")
    assert load(s.repo / "reviews" / "gate.json")["open"] == ["r1/claude-F1"]
    assert s.spar("triage", "reviews/r1", "claude-F1", "--to", "rejected", "--evidence", "applied").returncode == 0
    gate = s.spar("gate", "reviews/r1", "--out", "reviews/gate.json")
    assert gate.returncode == 0, load(s.repo / "reviews" / "gate.json")["reasons"]

    # a group the round does not have, or one whose first member cannot take the disposition,
    # writes nothing
    before = (r1 / "ledger.jsonl").read_bytes()
    missing = s.spar("triage", "reviews/r1", "G2", "--to", "rejected", "--evidence", "x")
    assert missing.returncode == 65 and 'no finding or group "G2"' in missing.stderr.decode()
    wrong = s.spar("triage", "reviews/r1", "G1", "--to", "answered", "--user-quote", "x")
    assert wrong.returncode == 65
    assert (r1 / "ledger.jsonl").read_bytes() == before


def test_groups_are_numbered_most_vendors_first():
    """Issue 23 point 1: G1 is the group of most vendors, each member carries the same group."""
    findings = [
        {"id": "a-F1", "reviewer": "a", "corroborated_by": ["b-F1"], "vendor_count": 2},
        {"id": "a-F2", "reviewer": "a", "corroborated_by": ["b-F2", "c-F1"], "vendor_count": 3},
        {"id": "b-F1", "reviewer": "b", "corroborated_by": ["a-F1"], "vendor_count": 2},
        {"id": "b-F2", "reviewer": "b", "corroborated_by": ["a-F2", "c-F1"], "vendor_count": 3},
        {"id": "c-F1", "reviewer": "c", "corroborated_by": ["a-F2", "b-F2"], "vendor_count": 3},
        {"id": "c-F2", "reviewer": "c", "corroborated_by": [], "vendor_count": 1},
    ]
    named = name_groups(findings, {"a": "claude", "b": "codex", "c": "agy"})  # type: ignore[arg-type]
    assert named["a-F2"] == {"id": "G1", "members": ["a-F2", "b-F2", "c-F1"], "vendors": ["agy", "claude", "codex"]}
    assert named["b-F1"] == {"id": "G2", "members": ["a-F1", "b-F1"], "vendors": ["claude", "codex"]}
    assert "c-F2" not in named


def test_two_vendors_one_defect_is_one_item_in_every_export(tmp_path):
    """Issue 23's first "Done when": fake claude, codex and agy CLIs; claude and codex report
    one defect, agy another: one group in findings.json and summary.md, one SARIF result
    with related locations (valid SARIF 2.1.0), one Code Climate issue, one rdjsonl
    diagnostic; `spar triage ROUND G1` gives each member its ledger line; the gate passes."""
    import jsonschema

    from tests.test_export import sarif_schema

    s = make_setup(tmp_path)
    head = commit(s.repo, {"shop.py": CODE}, message="shop")
    s.scenario({
        "claude": {"result": result(head=head, findings=[item("c1", 20, "refund() accepts a negative amount")])},
        "codex": {"result": result(head=head, findings=[item("x1", 21, "Negative refund amounts are accepted by refund")])},
        "agy": {"result": result(head=head, findings=[item("a1", 30, "total() rounds the tax twice")])},
    })
    s.configure([{"name": "claude", "preset": "claude"}, {"name": "codex", "preset": "codex"},
                 {"name": "agy", "preset": "agy"}])
    run = s.run("--base", s.base, out="reviews/r1")
    assert run.returncode == 0, run.stderr.decode()
    r1 = s.repo / "reviews" / "r1"
    found = {f["id"]: f for f in load(r1 / "findings.json")}
    group = {"id": "G1", "members": ["claude-F1", "codex-F1"], "vendors": ["claude", "codex"]}
    assert found["claude-F1"]["group"] == group and found["codex-F1"]["group"] == group
    assert found["agy-F1"]["group"] is None
    groups_part = (r1 / "summary.md").read_text().split("## Groups")[1].split("## Findings")[0]
    assert groups_part.count("**G1**") == 1 and "`codex-F1` (codex, defect)" in groups_part

    def export(fmt):
        done = s.spar("export", "reviews/r1", "--format", fmt)
        assert done.returncode == 0, done.stderr.decode()
        text = done.stdout.decode()
        return [json.loads(x) for x in text.splitlines()] if fmt == "rdjsonl" else json.loads(text)

    sarif = export("sarif")
    jsonschema.validate(sarif, sarif_schema())
    results = [r for run_ in sarif["runs"] for r in run_["results"]]
    assert len(results) == 2
    (grouped,) = [r for r in results if r.get("relatedLocations")]
    assert grouped["properties"]["finding"] == "claude-F1"
    assert [loc["physicalLocation"]["region"]["startLine"] for loc in grouped["relatedLocations"]] == [20, 21]
    issues = export("codeclimate")
    assert len(issues) == 2 and sum(1 for i in issues if i.get("other_locations")) == 1
    diagnostics = export("rdjsonl")
    assert len(diagnostics) == 2
    (one,) = [d for d in diagnostics if d.get("related_locations")]
    assert one["related_locations"][0]["message"] == "r1/codex-F1 (codex)"

    done = s.spar("triage", "reviews/r1", "G1", "--to", "rejected", "--evidence", "refund() checks the sign")
    assert done.returncode == 0, done.stderr.decode()
    assert [(x["finding"], x["disposition"], x.get("of")) for x in ledger(r1)] == [
        ("claude-F1", "rejected", None), ("codex-F1", "duplicate", "r1/claude-F1")]
    assert s.spar("gate", "reviews/r1", "--out", "reviews/gate.json").returncode == 1  # agy-F1 is open
    assert s.spar("triage", "reviews/r1", "agy-F1", "--to", "rejected", "--evidence", "rounded once").returncode == 0
    gate = s.spar("gate", "reviews/r1", "--out", "reviews/gate.json")
    assert gate.returncode == 0, load(s.repo / "reviews" / "gate.json")["reasons"]
