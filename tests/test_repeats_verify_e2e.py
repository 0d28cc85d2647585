"""With [verify], a repeat `spar triage --repeats` could settle is first put to a verifier of
another vendor ("the same problem as the earlier finding?"), end to end with the fake CLIs:
`spar run` writes repeat-checks.json after the verification, --repeats settles only a
repeat called the same problem, and `spar verify` asks again."""

from __future__ import annotations

import json

import pytest

from tests.runsetup import make_setup, result

pytestmark = pytest.mark.slow

REPEAT_PROMPT = "Is a finding of a code review the same problem as an earlier one?"


def _scenario(s, same: str) -> None:
    """claude reviews (its one finding: divide by zero at calc.py:6); codex verifies: unsure
    of the finding, `same` of the repeat."""
    s.scenario({"claude": {"result": result(head=s.head)},
                "codex": {"result": result(head=s.head), "by_prompt": {
                    REPEAT_PROMPT: {"result": {"verdict": same, "evidence": "both are divide(1, 0) at line 6"}},
                    "ID: `claude-F1`": {"result": {"verdict": "unsure", "evidence": "cannot run it",
                                                   "location": None}}}}})


def test_a_repeat_is_settled_only_when_a_verifier_of_another_vendor_calls_it_the_same(tmp_path):
    s = make_setup(tmp_path)
    s.configure([{"name": "claude", "preset": "claude"}, {"name": "codex", "preset": "codex"}])
    with s.config.open("a", encoding="utf-8") as f:
        f.write('\n[verify]\nreviewers = ["codex"]\n')
    _scenario(s, "different")
    first = s.run("--criteria", "docs/criteria.md", "--reviewers", "claude", out="reviews/r1")
    assert first.returncode == 0, first.stderr.decode()
    r1, r2 = s.repo / "reviews" / "r1", s.repo / "reviews" / "r2"
    assert not (r1 / "repeat-checks.json").read_text().count('"call"')  # nothing repeated yet
    done = s.spar("triage", "reviews/r1", "claude-F1", "--to", "rejected", "--evidence", "b is checked")
    assert done.returncode == 0, done.stderr.decode()

    before = len(s.fake_calls())
    second = s.run("--criteria", "docs/criteria.md", "--reviewers", "claude", out="reviews/r2")
    assert second.returncode == 0, second.stderr.decode()
    # the command's one guard started the reviewer, the verifiers and the repeat's verifier
    calls = s.fake_calls()[before:]
    assert {c["prog"] for c in calls} == {"claude", "codex"} and len(calls) >= 3, calls
    guards = {c["keeper_parent"] for c in calls}
    assert len(guards) == 1 and None not in guards, calls
    assert "repeats of round r2 put to verifiers: 1 call(s): 0 same, 1 different, 0 unsure" in second.stderr.decode()
    checks = json.loads((r2 / "repeat-checks.json").read_text())
    (call,) = checks["calls"]
    assert (call["call"], call["finding"], call["earlier"], call["verifier"], call["verdict"]) == (
        "R1", "claude-F1", "r1/claude-F1", "codex", "different")
    assert "r1/claude-F1 (rejected; checked: different by codex (R1))" in (r2 / "summary.md").read_text()
    asked = (r2 / "verify" / "repeats" / "R1" / "input.md").read_text()
    assert asked.startswith("# " + REPEAT_PROMPT.removesuffix("?")) and "- Finding: `r1/claude-F1`" in asked
    rep = s.spar("triage", "reviews/r2", "--repeats")
    assert rep.returncode == 0, rep.stderr.decode()
    assert rep.stdout.decode().splitlines() == [
        "round r2: claude-F1: possible repeat of r1/claude-F1 (rejected), not marked: a verifier of another "
        "vendor, codex (R1), says it is another problem (triage it by hand, or --repeats --force)",
        "round r2: no repeat to settle"]
    assert s.spar("gate", "reviews/r1", "reviews/r2", "--out", "reviews/gate.json").returncode == 1

    _scenario(s, "same")
    again = s.spar("verify", "reviews/r2")
    assert again.returncode == 0, again.stderr.decode()
    assert json.loads((r2 / "repeat-checks.json").read_text())["calls"][0]["verdict"] == "same"
    assert "r1/claude-F1 (rejected; checked: same by codex (R1))" in (r2 / "summary.md").read_text()
    rep = s.spar("triage", "reviews/r2", "--repeats")
    assert rep.stdout.decode() == "round r2: claude-F1 -> duplicate --of r1/claude-F1 (rejected)\n"
    assert s.spar("gate", "reviews/r1", "reviews/r2", "--out", "reviews/gate.json").returncode == 0


def test_one_max_cost_usd_bounds_the_verification_and_the_repeat_checks_after_it(tmp_path):
    """max_cost_usd is one budget for the [verify] table: codex reports no cost, so once its
    verification call ran no further call starts, and the repeat is left unchecked
    (max_cost_usd), never settled, where a budget of its own would have asked it."""
    s = make_setup(tmp_path)
    s.configure([{"name": "claude", "preset": "claude"}, {"name": "codex", "preset": "codex"}])
    with s.config.open("a", encoding="utf-8") as f:
        f.write('\n[verify]\nreviewers = ["codex"]\nmax_cost_usd = 5.0\n')
    _scenario(s, "same")
    assert s.run("--criteria", "docs/criteria.md", "--reviewers", "claude", out="reviews/r1").returncode == 0
    done = s.spar("triage", "reviews/r1", "claude-F1", "--to", "rejected", "--evidence", "b is checked")
    assert done.returncode == 0, done.stderr.decode()

    second = s.run("--criteria", "docs/criteria.md", "--reviewers", "claude", out="reviews/r2")
    assert second.returncode == 0, second.stderr.decode()
    r2 = s.repo / "reviews" / "r2"
    verified = json.loads((r2 / "verifications.json").read_text())
    assert [c["verifier"] for c in verified["calls"]] == ["codex"]  # it ran, and reported no cost
    checks = json.loads((r2 / "repeat-checks.json").read_text())
    assert checks["calls"] == []
    assert checks["unchecked"] == [{"finding": "claude-F1", "earlier": "r1/claude-F1", "why": "max_cost_usd"}]
    assert "r1/claude-F1 (rejected; not checked: max_cost_usd reached)" in (r2 / "summary.md").read_text()
    rep = s.spar("triage", "reviews/r2", "--repeats")
    assert rep.returncode == 0, rep.stderr.decode()
    assert "not marked" in rep.stdout.decode() and "duplicate --of" not in rep.stdout.decode()
