"""`spar triage --repeats` settles a repeat only when its claim restates the earlier claim's
failure (a stricter rule than grouping: spar/judge/settle.py), and never settles a finding a
verifier of another vendor confirmed by a rejection or a refutation without --force."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from spar.cli import main as spar_main
from spar.judge.repeat_plan import Candidate, check_problem, judge_repeat_answer, plan_repeat_checks
from spar.judge.settle import MIN_FAILURE_SHARED, RESTATES_AT, claim_problem, restates, verdict_problem
from spar.judge.similar import SIMILAR_AT, Place, claim_similarity, same_finding
from spar.judge.verdicts import Verdict
from spar.judge.verify_plan import Verifier
from spar.records.repeat_checks import repeat_checks_problem
from tests import roundfactory as rf
from tests.gitrepo import commit, git

ROOT = Path(__file__).resolve().parent.parent
DATA = json.loads((ROOT / "tests" / "data" / "repeats.json").read_text(encoding="utf-8"))
VAGUE = "the divide function returns wrong results"
LATER = "the divide function deletes user files"


def test_the_settling_numbers_are_the_data():
    assert (DATA["restates_at"], DATA["min_failure_shared"]) == (RESTATES_AT, MIN_FAILURE_SHARED)
    assert RESTATES_AT > SIMILAR_AT  # stricter than grouping, which keeps its own number


@pytest.mark.parametrize("case", DATA["settle"], ids=lambda c: c["later"][:40])
def test_restates_on_the_data_pairs(case):
    assert restates(case["later"], case["earlier"]) is case["restates"], case["why"]


def test_grouping_pairs_what_settling_does_not():
    """The issue's case: grouped (Dice 0.4 at one place), not a restatement."""
    place = Place("head", "calc.py", 1, 2)
    assert same_finding(place, VAGUE, place, LATER) == pytest.approx(0.4)
    assert not restates(LATER, VAGUE)
    why = claim_problem("requirement-question", LATER, "defect", VAGUE)
    assert why == "its claim shares the earlier claim's subject, not the failure it describes"
    reworded = "divide does not refuse a zero divisor, it returns the wrong results"
    assert claim_problem("defect", reworded, "defect", VAGUE) is None


def test_a_claim_sharing_the_failure_but_too_far_is_not_settled():
    later = ("Stale entries stay readable after every write because invalidation runs before the commit and "
             "readers race the writer under heavy load")
    earlier = "Stale entries remain"
    assert claim_similarity(later, earlier) < RESTATES_AT
    assert "too far from the earlier one" in claim_problem("defect", later, "defect", earlier)


def readme_example() -> tuple[str, list[tuple[str, str, str]]]:
    """README's second-round example: the earlier claim it names, and (class, claim, repeat of)
    of each row of its table."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    earlier = re.search(r'settled\s+the\s+two\s+repeats\s+of\s+a\s+rejected\s+finding\s+\(`r1/claude-F1`:\s+"([^"]+)"\)', text)
    assert earlier is not None
    block = text[earlier.end():].split("```", 2)[1]
    rows = [[c.strip() for c in line.strip("|").split(" | ")] for line in block.splitlines()
            if line.startswith("| ") and "-F" in line]
    return earlier.group(1), [(r[1], r[4], r[7]) for r in rows]


def test_the_readme_examples_repeats_are_still_settled():
    earlier, rows = readme_example()
    repeats = [(cls, claim) for cls, claim, of in rows if of != "-"]
    assert len(repeats) == 2
    for cls, claim in repeats:
        assert claim_problem(cls, claim, "defect", earlier) is None, claim


def _verdict(verdict: str, preset: str) -> Verdict:
    return Verdict(verdict, preset, preset, "V1", "line 4 divides by b", "", "codex-F1", None)


@pytest.mark.parametrize("verdict, decided, refuted_chain, held", [
    (_verdict("confirmed", "claude"), "rejected", [], "the decision it would inherit is rejected"),
    (_verdict("confirmed", "claude"), "fixed", ["r1/house-F1"], "r1/house-F1 was refuted by a verifier"),
    (_verdict("confirmed", "claude"), "fixed", [], None),
    (_verdict("confirmed", "codex"), "rejected", [], None),  # its own vendor's word
    (_verdict("unsure", "claude"), "rejected", [], None),
    (None, "rejected", [], None),
])
def test_a_confirmed_finding_is_not_settled_by_a_rejection(verdict, decided, refuted_chain, held):
    got = verdict_problem(verdict, "codex", decided, refuted_chain)
    assert (got is None) if held is None else (held in got and "confirmed by claude (V1)" in got)


# ------------------------------------------------------------------ end to end, in process

LINES = "".join(f"def f{n}(a, b):\n    return a / b\n" for n in range(1, 6))


def _series(tmp_path):
    repo, series = rf.series_repo(tmp_path)
    commit(repo, {"app/main.py": LINES}, message="more code")
    return repo, series


def _answer(repo, claim, cls="defect", line=2):
    fields = {"introduced_by_change": "yes", "regression": "yes"}
    if cls == "requirement-question":
        fields = {"introduced_by_change": "no", "regression": "no"}
    return {"reviewed_head": git(repo, "rev-parse", "HEAD").strip(), "verdict": "blocking_findings",
            "angles_checked": [{"angle": a, "result": "ok"}
                               for a in ("criteria", "correctness", "checks", "contracts", "risk")],
            "angles_unchecked": [], "limits": "", "findings": [{
                "id": "N1", "proposed_class": cls, "angle": "correctness", "location": f"head/app/main.py:{line}",
                "claim": claim, "failure_scenario": "a caller loses data", "evidence": f"line {line}",
                "link_kind": "none", "link": "", "check_impact": "none", "confidence": "high", **fields}]}


def _two_rounds(tmp_path, capsys, earlier, later, later_class):
    """r1: claude's `earlier` at line 1, rejected; r2: native's `later` at line 2, recorded."""
    repo, series = _series(tmp_path)
    r1 = rf.make_round(series, "r1", repo=repo, findings=[rf.finding("claude", 1, claim=earlier)],
                       ledger=[rf.ledger_line("claude-F1", "rejected", evidence="too vague to act on")])
    r2 = rf.make_round(series, "r2", repo=repo, packet_text="r2\n",
                       reviewers=[rf.reviewer("claude"), rf.reviewer("native", status="awaiting_record")])
    path = tmp_path / "answer.json"
    path.write_text(json.dumps(_answer(repo, later, later_class)))
    assert spar_main(["record", str(r2), "--reviewer", "native", "--result", str(path)]) == 0, capsys.readouterr()
    (found,) = json.loads((r2 / "findings.json").read_text())
    assert found["repeat_of"] == {"round": "r1", "finding": "claude-F1", "disposition": "rejected"}
    capsys.readouterr()
    return repo, r1, r2


def _gate(repo, *rounds) -> dict:
    out = repo / "gates" / "g.json"
    spar_main(["gate", *map(str, rounds), "--out", str(out)])
    return json.loads(out.read_text())


def test_the_divide_case_is_recorded_a_repeat_but_not_settled(tmp_path, capsys):
    """Round 1's vague claim was rejected; round 2's blocking requirement-question on the next
    line is its repeat by the grouping rule, but --repeats only lists it and the gate stays
    blocked; --force marks it."""
    repo, r1, r2 = _two_rounds(tmp_path, capsys, VAGUE, LATER, "requirement-question")
    assert spar_main(["triage", str(r2), "--repeats"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "round r2: native-F1: possible repeat of r1/claude-F1 (rejected), not marked: its claim shares the "
        "earlier claim's subject, not the failure it describes (triage it by hand, or --repeats --force)",
        "round r2: no repeat to settle"]
    assert rf.read_jsonl(r2 / "ledger.jsonl") == []
    gate = _gate(repo, r1, r2)
    assert gate["state"] == "blocked" and "r2/native-F1" in gate["open"]
    capsys.readouterr()
    assert spar_main(["triage", str(r2), "--repeats", "--force"]) == 0
    assert capsys.readouterr().out == "round r2: native-F1 -> duplicate --of r1/claude-F1 (rejected)\n"


def test_a_true_repeat_is_settled_and_the_gate_passes(tmp_path, capsys):
    """README's example: "refund() takes negative amounts" repeats the rejected "refund()
    accepts a negative amount"; --repeats settles it."""
    earlier, rows = readme_example()
    later = next(claim for _, claim, of in rows if of != "-" and claim.startswith("refund() takes"))
    repo, r1, r2 = _two_rounds(tmp_path, capsys, earlier, later, "defect")
    assert spar_main(["triage", str(r2), "--repeats"]) == 0
    assert capsys.readouterr().out == "round r2: native-F1 -> duplicate --of r1/claude-F1 (rejected)\n"
    assert _gate(repo, r1, r2)["state"] == "passed"


# ------------------------------------------------------------------ a decoy's rejection and a confirmation

DECOY = "divide returns infinity when b is 0"
REAL = "divide raises ZeroDivisionError when b is 0 where AC-2 asks for ValueError"


def _finding(name, n, claim, **extra):
    f = rf.finding(name, n, claim=claim)
    f.update(repeat_of=None, corroborated_by=[], group=None, vendor_count=1)
    f.update(extra)
    return f


def _confirmed(round_name: str, finding: str, verifier: str, preset: str) -> dict:
    at = "2026-12-03T10:00:00.000Z"
    return {"schema": "spar-verifications/v1", "round": round_name, "started_at": at, "finished_at": at,
            "verifiers": [verifier], "max_findings": None, "max_cost_usd": None, "unverified": [],
            "calls": [{"call": "V1", "finding": finding, "group": None, "verifier": verifier, "preset": preset,
                       "status": "completed", "verdict": "confirmed", "evidence": "line 2 divides by b unchecked",
                       "location": None, "reason": "", "attempts": []}]}


def test_a_confirmed_repeat_of_a_rejected_decoy_chain_is_not_settled(tmp_path, capsys):
    """Round 1: the decoy (first in order) rejected and codex's real defect, grouped with it,
    `duplicate --of` it. Round 2: codex raises the defect again, a verifier of another vendor
    confirms it; --repeats leaves it for a person, the gate over both rounds stays blocked."""
    repo, series = _series(tmp_path)
    group = {"id": "G1", "members": ["claude-F2", "codex-F2"], "vendors": ["claude", "codex"]}
    r1 = rf.make_round(series, "r1", repo=repo, findings=[
        _finding("claude", 2, DECOY, corroborated_by=["codex-F2"], group=group, vendor_count=2),
        _finding("codex", 2, REAL, corroborated_by=["claude-F2"], group=group, vendor_count=2)],
        ledger=[rf.ledger_line("claude-F2", "rejected", evidence="refuted by codex (V1): it raises"),
                rf.ledger_line("codex-F2", "duplicate", of="r1/claude-F2")])
    repeat = {"round": "r1", "finding": "codex-F2", "disposition": "duplicate"}
    r2 = rf.make_round(series, "r2", repo=repo, findings=[_finding("codex", 2, REAL, repeat_of=repeat)])
    (r2 / "verifications.json").write_text(json.dumps(_confirmed("r2", "codex-F2", "claude", "claude")))
    capsys.readouterr()
    assert spar_main(["triage", str(r2), "--repeats"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "round r2: codex-F2: possible repeat of r1/codex-F2 (rejected), not marked: a verifier of another vendor "
        "confirmed it (confirmed by claude (V1)), and the decision it would inherit is rejected "
        "(triage it by hand, or --repeats --force)",
        "round r2: no repeat to settle"]
    gate = _gate(repo, r1, r2)
    assert gate["state"] == "blocked" and gate["open"] == ["r2/codex-F2"]
    capsys.readouterr()
    assert spar_main(["triage", str(r2), "--repeats", "--force"]) == 0
    assert capsys.readouterr().out == "round r2: codex-F2 -> duplicate --of r1/codex-F2 (rejected)\n"


def test_a_repeat_confirmed_by_its_own_vendor_is_settled_as_before(tmp_path, capsys):
    repo, series = _series(tmp_path)
    rf.make_round(series, "r1", repo=repo, findings=[_finding("codex", 2, REAL)],
                  ledger=[rf.ledger_line("codex-F2", "rejected", evidence="AC-2 was changed")])
    repeat = {"round": "r1", "finding": "codex-F2", "disposition": "rejected"}
    r2 = rf.make_round(series, "r2", repo=repo, findings=[_finding("codex", 2, REAL, repeat_of=repeat)])
    (r2 / "verifications.json").write_text(json.dumps(_confirmed("r2", "codex-F2", "codex-check", "codex")))
    capsys.readouterr()
    assert spar_main(["triage", str(r2), "--repeats"]) == 0
    assert capsys.readouterr().out == "round r2: codex-F2 -> duplicate --of r1/codex-F2 (rejected)\n"


# ------------------------------------------------------------------ repeats put to a verifier (pure)

def _candidate(n: int, reviewer: str, claim: str, earlier: str, decided: str | None = "rejected") -> Candidate:
    return Candidate(_finding(reviewer, n, claim), f"r1/old-F{n}", _finding("old", n, earlier), decided)


def test_only_repeats_triage_could_settle_are_put_to_another_vendor():
    refund = "refund() accepts a negative amount"
    cands = [_candidate(1, "codex", "refund() takes negative amounts", refund),
             _candidate(2, "codex", LATER, VAGUE),  # shares only the subject: a person decides anyway
             _candidate(3, "codex", refund, refund, decided=None),  # nothing decided to inherit
             _candidate(4, "claude", refund, refund),
             _candidate(5, "claude", refund, refund)]
    verifiers = [Verifier("claude", "claude"), Verifier("codex-2", "codex"), Verifier("agy", "agy")]
    calls, left = plan_repeat_checks(cands, {"codex": "codex", "claude": "claude"}, verifiers, None)
    assert [(c.finding["id"], c.earlier_key, c.verifier.name) for c in calls] == [
        ("codex-F1", "r1/old-F1", "claude"), ("claude-F4", "r1/old-F4", "codex-2"), ("claude-F5", "r1/old-F5", "agy")]
    assert left == []
    calls, left = plan_repeat_checks(cands, {"codex": "codex", "claude": "claude"}, [Verifier("c", "claude")], 0)
    assert calls == [] and [(c.finding["id"], why) for c, why in left] == [
        ("codex-F1", "max_findings"), ("claude-F4", "no_other_vendor"), ("claude-F5", "no_other_vendor")]


@pytest.mark.parametrize("answer, verdict, reason", [
    ({"verdict": "same", "evidence": "both say refund() takes a negative amount"}, "same", ""),
    ({"verdict": "different", "evidence": "one is about deleting files"}, "different", ""),
    ({"verdict": "same", "evidence": "  "}, "unsure", "evidence is missing, blank or not a string"),
    ({"verdict": "confirmed", "evidence": "x"}, "unsure", 'verdict "confirmed" is not one of same, different'),
    ({"verdict": "same", "evidence": "x", "settle": True}, "unsure", 'key "settle", which is not one of'),
    ([1], "unsure", "the answer is not a JSON object"),
])
def test_a_repeat_answer_is_judged_strictly(answer, verdict, reason):
    got = judge_repeat_answer(answer)
    assert got[0] == verdict and reason in got[2]


def test_a_checked_round_settles_only_what_a_verifier_called_the_same():
    calls = [{"call": "R1", "finding": "a", "verifier": "codex", "verdict": "same"},
             {"call": "R2", "finding": "b", "verifier": "codex", "verdict": "different"},
             {"call": "R3", "finding": "c", "verifier": "codex", "verdict": "unsure"}]
    unchecked = [{"finding": "d", "earlier": "r1/x", "why": "no_other_vendor"}]
    assert check_problem("a", calls, unchecked) is None
    assert check_problem("b", calls, unchecked) == "a verifier of another vendor, codex (R2), says it is another problem"
    assert "could not tell" in check_problem("c", calls, unchecked)
    assert check_problem("d", calls, unchecked).endswith("(no_other_vendor)")
    assert "run `spar verify` again" in check_problem("e", calls, unchecked)


def test_the_repeat_checks_record_is_read_strictly():
    call = {"call": "R1", "finding": "a", "earlier": "r1/x", "verifier": "codex", "preset": "codex",
            "status": "completed", "verdict": "same", "evidence": "e", "reason": "", "attempts": []}
    record = {"schema": "spar-repeat-checks/v1", "calls": [call], "unchecked": []}
    assert repeat_checks_problem(record, {"a"}) is None
    assert "not a finding of the round" in repeat_checks_problem(record, {"b"})
    assert "verdict is not one of" in repeat_checks_problem({**record, "calls": [{**call, "verdict": "yes"}]}, {"a"})
    twice = {**record, "unchecked": [{"finding": "a", "earlier": "r1/x", "why": "max_findings"}]}
    assert "named twice" in repeat_checks_problem(twice, {"a"})


def test_a_confirmed_repeat_of_a_refuted_finding_is_not_settled(tmp_path, capsys):
    """The earlier finding was refuted by a verifier in its round and then deferred by hand;
    a later repeat a verifier of another vendor confirmed is left for a person."""
    repo, series = _series(tmp_path)
    rf.make_round(series, "r1", repo=repo, findings=[_finding("claude", 2, REAL)],
                  ledger=[rf.ledger_line("claude-F2", "deferred", user_quote="after the release")])
    refuted = _confirmed("r1", "claude-F2", "codex", "codex")
    refuted["calls"][0]["verdict"] = "refuted"
    (series / "r1" / "verifications.json").write_text(json.dumps(refuted))
    repeat = {"round": "r1", "finding": "claude-F2", "disposition": "deferred"}
    r2 = rf.make_round(series, "r2", repo=repo, findings=[_finding("codex", 2, REAL, repeat_of=repeat)])
    (r2 / "verifications.json").write_text(json.dumps(_confirmed("r2", "codex-F2", "claude", "claude")))
    capsys.readouterr()
    assert spar_main(["triage", str(r2), "--repeats"]) == 0
    out = capsys.readouterr().out
    assert "codex-F2: possible repeat of r1/claude-F2 (deferred), not marked: a verifier of another vendor " \
           "confirmed it (confirmed by claude (V1)), and r1/claude-F2 was refuted by a verifier" in out
    assert rf.read_jsonl(r2 / "ledger.jsonl") == []


def test_a_verified_round_whose_repeats_were_never_asked_settles_none(tmp_path, capsys):
    """round.json says the round was verified, but repeat-checks.json is missing (the checks
    were stopped, or an older Spar verified it): no repeat is settled unasked."""
    repo, series = _series(tmp_path)
    rf.make_round(series, "r1", repo=repo, findings=[_finding("claude", 2, REAL)],
                  ledger=[rf.ledger_line("claude-F2", "rejected", evidence="AC-2 was changed")])
    repeat = {"round": "r1", "finding": "claude-F2", "disposition": "rejected"}
    index = {"file": "verifications.json", "sha256": "0" * 64, "calls": [], "cost_usd": None}
    r2 = rf.make_round(series, "r2", repo=repo, findings=[_finding("codex", 2, REAL, repeat_of=repeat)],
                       extra={"verification": index})
    capsys.readouterr()
    assert spar_main(["triage", str(r2), "--repeats"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == (
        "round r2: codex-F2: possible repeat of r1/claude-F2 (rejected), not marked: no verifier of another vendor "
        "was asked whether it is the same problem (run `spar verify` again) (triage it by hand, or --repeats --force)")
