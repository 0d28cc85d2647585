"""`spar triage --repeats` settles a later finding by an earlier decision only when the two
can be the same problem: a more severe proposed class, or a claim naming code the earlier
claim does not, makes it a possible repeat that a person (or --force) decides
(issue 25 hole 5)."""

from __future__ import annotations

import json

import pytest

from spar.cli import main as spar_main
from spar.judge.repeats import held_back, identifiers
from spar.judge.similar import Place, same_finding
from tests import roundfactory as rf
from tests.test_series_memory import native_answer

VAGUE = "the divide function returns wrong results"
LATER = "the divide function deletes user files"


def test_identifiers_are_code_spans_and_code_looking_tokens():
    """issue 25 hole 5: what a claim names as code."""
    assert identifiers("`rm -rf` via os.remove, safe_div() and parseInt; e.g. the divide function") == {
        "rm -rf", "os.remove", "safe_div", "parseInt"}
    assert identifiers(VAGUE) == identifiers(LATER) == set()


@pytest.mark.parametrize("later_class, later, earlier_class, earlier, why", [
    ("defect", LATER, "note", VAGUE, "it is proposed as defect, more severe than the earlier note"),
    ("requirement-question", LATER, "hardening", VAGUE, "more severe than the earlier hardening"),
    ("defect", VAGUE + " and calls `os.remove`", "defect", VAGUE, "names `os.remove`, which the earlier"),
    ("defect", "divide() returns wrong results", "defect", "divide returns wrong results", None),
    ("note", LATER, "defect", VAGUE, None),  # less severe, nothing new named: may be settled
])
def test_held_back(later_class, later, earlier_class, earlier, why):
    """issue 25 hole 5: the two rules, and what still may be settled."""
    got = held_back(later_class, later, earlier_class, earlier)
    assert (got is None) if why is None else (why in got)


def test_planted_vague_claim_does_not_settle_a_later_blocking_one(tmp_path, capsys):
    """issue 25 hole 5, as found: a vague claim ("the divide function returns wrong results",
    proposed as a note) was rejected; a later blocking defect on the same lines ("the divide
    function deletes user files", similarity 0.40) is found as its repeat, but --repeats
    only lists it and the gate stays blocked; --force marks it."""
    place = Place("head", "app/main.py", 1, 1)
    assert same_finding(place, VAGUE, place, LATER) == pytest.approx(0.4)
    repo, series = rf.series_repo(tmp_path)
    (repo / "gates").mkdir(exist_ok=True)
    r1 = rf.make_round(series, "r1", repo=repo, findings=[
        rf.finding("claude", 1, cls="note", claim=VAGUE)],
        ledger=[rf.ledger_line("claude-F1", "rejected", evidence="it returns the right results")])
    r2 = rf.make_round(series, "r2", repo=repo, packet_text="r2\n",
                       reviewers=[rf.reviewer("claude"), rf.reviewer("native", status="awaiting_record")])
    path = tmp_path / "answer.json"
    path.write_text(json.dumps(native_answer(repo, LATER)))
    assert spar_main(["record", str(r2), "--reviewer", "native", "--result", str(path)]) == 0, capsys.readouterr()
    (found,) = json.loads((r2 / "findings.json").read_text())
    assert found["class"] == "defect"
    assert found["repeat_of"] == {"round": "r1", "finding": "claude-F1", "disposition": "rejected"}
    capsys.readouterr()

    assert spar_main(["triage", str(r2), "--repeats"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "round r2: native-F1: possible repeat of r1/claude-F1 (rejected), not marked: it is proposed as defect, "
        "more severe than the earlier note (triage it by hand, or --repeats --force)",
        "round r2: no repeat to settle"]
    assert rf.read_jsonl(r2 / "ledger.jsonl") == []
    gate = str(repo / "gates" / "g.json")
    assert spar_main(["gate", str(r1), str(r2), "--out", gate]) != 0
    assert "r2/native-F1" in json.loads((repo / "gates" / "g.json").read_text())["open"]
    capsys.readouterr()

    assert spar_main(["triage", str(r2), "--repeats", "--force"]) == 0
    assert capsys.readouterr().out == "round r2: native-F1 -> duplicate --of r1/claude-F1 (rejected)\n"


def test_force_goes_with_repeats_only(tmp_path, capsys):
    """issue 25 hole 5: --force says nothing without --repeats, so it is a usage error."""
    repo, series = rf.series_repo(tmp_path)
    r1 = rf.make_round(series, "r1", repo=repo, findings=[rf.finding("claude", 1)])
    assert spar_main(["triage", str(r1), "claude-F1", "--to", "rejected", "--evidence", "no", "--force"]) == 64
    assert "--force goes with --repeats only" in capsys.readouterr().err
    assert rf.read_jsonl(r1 / "ledger.jsonl") == []
