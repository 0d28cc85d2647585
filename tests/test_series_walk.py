"""A whole series walked as a user would, with real `spar` processes (issue 5).

Code round with a defect, a requirement-question and hardening, and a codex
reviewer refused by its quota -> gate blocked with every reason -> waiver of
the unavailable reviewer, triage answered and fixed -> a second round after
the fix -> gate passed -> a third round refused by the cap, extended, run ->
cap-report in both formats checked field by field. Runs on trio and asyncio.
"""

from __future__ import annotations

import json

import pytest

from tests.gitrepo import commit, git
from tests.test_run_helpers import BACKENDS, finding, make_setup, result

CODEX_QUOTA = "You've hit your usage limit. Upgrade to Pro or try again at 12:16 PM."


def _alpha_findings():
    return [
        # rule 5: introduced by the change and a regression -> defect
        finding(id="d1", location="head/calc.py:6", introduced_by_change="yes", regression="yes",
                link_kind="criterion", link="AC-2"),
        # rule 4: requirement-question
        finding(id="q1", proposed_class="requirement-question", location="head/calc.py:5", link_kind="none",
                link="", introduced_by_change="unknown", regression="unknown", claim="should divide round?"),
        # rule 3: in check paths -> hardening, deferred automatically
        finding(id="h1", proposed_class="hardening", location="head/tests/test_calc.py:9", link_kind="none",
                link="", introduced_by_change="no", regression="no", claim="no test for divide(1, 0)"),
    ]


def _codex_answers(setup, head: str) -> None:
    ok = result(head=head, findings=[], verdict="no_blocking_findings")
    setup.scenario({"codex": {"result": ok}})


def _gate(setup, *rounds: str, out: str = "reviews/gate.json"):
    proc = setup.spar("gate", *rounds, "--out", out)
    gate = json.loads((setup.repo / out).read_text())
    return proc, gate


@pytest.mark.parametrize("backend", BACKENDS)
def test_whole_series(tmp_path, backend):
    s = make_setup(tmp_path, backend)
    alpha = s.answer_reviewer("alpha", result(findings=_alpha_findings()))
    s.configure([alpha, {"name": "codex", "preset": "codex"}], timeout=60)
    s.scenario({"codex": {"refusal": CODEX_QUOTA}})

    # ---- round 1: alpha completes with three findings, codex refused by quota
    proc = s.run("--criteria", "docs/criteria.md", out="reviews/r1")
    assert proc.returncode == 1, proc.stderr.decode()
    r1 = s.repo / "reviews/r1"
    rj = json.loads((r1 / "round.json").read_text())
    by_name = {r["name"]: r for r in rj["reviewers"]}
    assert by_name["alpha"]["status"] == "completed"
    assert by_name["codex"]["status"] == "unavailable"
    assert by_name["codex"]["reason"].startswith("quota or rate limit: ")
    assert by_name["codex"]["resets"] == "12:16 PM"
    assert rj["counted"] is True and "finished_at" in rj
    findings = {f["id"]: f for f in json.loads((r1 / "findings.json").read_text())}
    assert {k: f["class"] for k, f in findings.items()} == {
        "alpha-F1": "defect", "alpha-F2": "requirement-question", "alpha-F3": "hardening"}
    assert findings["alpha-F3"]["in_check_paths"] is True
    ledger = [json.loads(l) for l in (r1 / "ledger.jsonl").read_text().splitlines()]
    assert [(l["finding"], l["disposition"], l["auto"]) for l in ledger] == [("alpha-F3", "deferred", True)]

    # ---- gate: blocked by the missing reviewer and both open findings
    proc, gate = _gate(s, "reviews/r1")
    assert proc.returncode == 1, proc.stderr.decode()
    assert gate["schema"] == "review-gate/v1" and gate["state"] == "blocked"
    reasons = "\n".join(gate["reasons"])
    assert "codex" in reasons and "alpha-F1" in reasons and "alpha-F2" in reasons
    assert len(gate["reasons"]) == 3
    assert gate["open"] == ["r1/alpha-F1", "r1/alpha-F2"]
    assert gate["findings"] == {"defect": 1, "requirement-question": 1, "hardening": 1, "note": 0}
    assert gate["auto_deferred"] == 1
    assert gate["previous_gate_digest"] is None
    first_gate_bytes = (s.repo / "reviews/gate.json").read_bytes()

    # ---- the user waives codex, answers the question; the defect gets fixed
    assert s.spar("waive", "reviews/r1", "--reviewer", "codex",
                  "--user-quote", "codex is out of quota today, go on").returncode == 0
    assert s.spar("triage", "reviews/r1", "alpha-F2", "--to", "answered",
                  "--user-quote", "no rounding, plain float").returncode == 0
    fixed = {"calc.py": "def add(a, b):\n    return a + b\n\n\ndef divide(a, b):\n"
                        "    if b == 0:\n        raise ValueError(\"b must not be 0\")\n    return a / b\n"}
    head2 = commit(s.repo, fixed, message="divide refuses 0")
    proc = s.spar("triage", "reviews/r1", "alpha-F1", "--to", "fixed", "--commit", head2[:10],
                  "--failed-before", "test_divide_zero failed", "--passed-after", "test_divide_zero passes")
    assert proc.returncode == 0, proc.stderr.decode()
    ledger = [json.loads(l) for l in (r1 / "ledger.jsonl").read_text().splitlines()]
    assert ledger[-1]["commit"] == head2  # resolved to the full commit ID

    # ---- round 2 after the fix: both reviewers complete, no findings
    s.configure([s.answer_reviewer("alpha", result(findings=[], verdict="no_blocking_findings")),
                 {"name": "codex", "preset": "codex"}], timeout=60)
    _codex_answers(s, head2)
    proc = s.run("--criteria", "docs/criteria.md", "--base", s.base, out="reviews/r2")
    assert proc.returncode == 0, proc.stderr.decode()

    proc, gate = _gate(s, "reviews/r1", "reviews/r2")
    assert proc.returncode == 0, (proc.stderr.decode(), gate["reasons"])
    assert gate["state"] == "passed" and gate["reasons"] == []
    assert gate["head"] == head2 and gate["base"] == s.base
    assert [r["name"] for r in gate["rounds"]] == ["r1", "r2"]
    assert all(r["counted"] for r in gate["rounds"])
    assert gate["required_reviewers"] == ["alpha", "codex"] and gate["completed"] == ["alpha", "codex"]
    assert gate["open"] == []
    import hashlib
    assert gate["previous_gate_digest"] == hashlib.sha256(first_gate_bytes).hexdigest()

    # a series round left out of the list blocks
    proc, gate = _gate(s, "reviews/r2", out="reviews/gate-partial.json")
    assert proc.returncode == 1
    assert any("round r1 of the series is not in the gate list" in r for r in gate["reasons"])

    # ---- round 3: the code cap (2) is reached; extend by one, then it runs
    head3 = commit(s.repo, {"README.md": "calc\n"}, message="docs")
    _codex_answers(s, head3)
    proc = s.run("--criteria", "docs/criteria.md", "--base", s.base, out="reviews/r3")
    assert proc.returncode == 65
    err = proc.stderr.decode()
    assert "spar extend" in err and "2" in err
    assert not (s.repo / "reviews/r3").exists()
    proc = s.spar("extend", "reviews", "--stage", "code", "--by", "1", "--cause", "churn",
                  "--reason", "docs-only change after the fix")
    assert proc.returncode == 0, proc.stderr.decode()
    proc = s.run("--criteria", "docs/criteria.md", "--base", s.base, out="reviews/r3")
    assert proc.returncode == 0, proc.stderr.decode()

    # ---- cap-report, JSON field by field
    proc = s.spar("cap-report", "reviews", "--format", "json")
    assert proc.returncode == 0, proc.stderr.decode()
    report = json.loads(proc.stdout)
    assert report["schema"] == "cap-report/v1"
    code = next(st for st in report["stages"] if st["stage"] == "code")
    assert (code["project_cap"], code["extended_by"], code["cap"], code["counted"], code["remaining"]) == (2, 1, 3, 3, 0)
    assert code["counted_rounds"] == ["r1", "r2", "r3"]
    (ext,) = code["extensions"]
    assert (ext["by"], ext["cause"], ext["reason"]) == (1, "churn", "docs-only change after the fix")
    plan = next(st for st in report["stages"] if st["stage"] == "plan")
    assert (plan["cap"], plan["counted"], plan["remaining"]) == (2, 0, 2)
    rounds = {r["name"]: r for r in report["rounds"]}
    assert [r["name"] for r in report["rounds"]] == ["r1", "r2", "r3"]
    assert rounds["r1"]["head"] == s.head and rounds["r2"]["head"] == head2 and rounds["r3"]["head"] == head3
    assert {r["name"]: r["status"] for r in rounds["r1"]["reviewers"]} == {"alpha": "completed", "codex": "unavailable"}
    assert rounds["r1"]["findings"] == {"defect": 1, "requirement-question": 1, "hardening": 1, "note": 0}
    assert rounds["r1"]["new_defects"] == 1
    assert rounds["r2"]["findings"] == {"defect": 0, "requirement-question": 0, "hardening": 0, "note": 0}
    assert report["code_extension_causes"]["churn"] == {"extensions": 1, "by": 1}
    assert report["code_extension_causes"]["no_recorded_cause"] == {"extensions": 0, "by": 0}

    # ---- cap-report, Markdown for people: a table per stage with the same numbers
    proc = s.spar("cap-report", "reviews")
    assert proc.returncode == 0
    md = proc.stdout.decode()
    assert "code" in md and "churn" in md and "docs-only change after the fix" in md
    assert md.count("| --- ") >= 3  # tables
    assert git(s.repo, "status", "--porcelain").strip() == ""  # records are ignored, never tracked
