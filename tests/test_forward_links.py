"""A duplicate link into a later round: `spar triage` refuses to write one, and every reader
refuses what triage refuses, through one rule (spar.judge.dispositions.link_problem):
the gate blocks on it, cap-report and report refuse the series (issue 25 hole 8)."""

from __future__ import annotations

import json

import pytest

from spar.cli import main as spar_main
from spar.judge.dispositions import link_problem, trace
from tests import roundfactory as rf


@pytest.fixture
def forged(tmp_path):
    """r1's blocking defect forged a duplicate of r2's rejected finding: a line triage
    refuses, appended to r1's ledger by hand."""
    repo, series = rf.series_repo(tmp_path)
    r1 = rf.make_round(series, "r1", repo=repo, findings=[rf.finding("claude", 1)])
    r2 = rf.make_round(series, "r2", repo=repo, packet_text="r2\n", findings=[rf.finding("claude", 1)],
                       ledger=[rf.ledger_line("claude-F1", "rejected", evidence="not a bug")])
    return repo, series, r1, r2


def _forge(r1):
    with open(r1 / "ledger.jsonl", "a", encoding="utf-8") as fh:
        fh.write(json.dumps(rf.ledger_line("claude-F1", "duplicate", of="r2/claude-F1")) + "\n")


def test_link_problem_is_the_rule():
    """issue 25 hole 8: same round and earlier rounds may be named; a later one may not;
    a round whose place is not known is another rule's matter."""
    places = {"r1": ("2024-01-01T00:00:00.000Z", "r1"), "r2": ("2024-01-01T00:01:00.000Z", "r2")}.get
    assert link_problem("r2", "r1", places) is None
    assert link_problem("r1", "r1", places) is None
    assert link_problem("r1", "gone", places) is None
    assert link_problem("r1", "r2", places) == "round r2 is not an earlier round of the series than r1"
    lines = {("r1", "F1"): {"disposition": "duplicate", "of": "r2/F1"}, ("r2", "F1"): {"disposition": "rejected"}}
    walked = trace(("r1", "F1"), lambda key: ("ok", lines[key]), position=places)
    assert walked.state == "refused" and "round r2 is not an earlier round" in walked.detail
    assert trace(("r1", "F1"), lambda key: ("ok", lines[key])).state == "disposed"  # without the rule


def test_triage_refuses_the_link(forged, capsys):
    """issue 25 hole 8: what triage refuses (the reference for every reader below)."""
    _, _, r1, _ = forged
    assert spar_main(["triage", str(r1), "claude-F1", "--to", "duplicate", "--of", "r2/claude-F1"]) == 65
    assert "round r2 is not an earlier round of the series than r1" in capsys.readouterr().err


@pytest.mark.parametrize("order", ["series order", "reversed"])
def test_gate_blocks_on_a_forged_link_into_a_later_round(forged, capsys, order):
    """issue 25 hole 8, as found: the gate passed a round whose defect was a forged duplicate
    of a later round's rejected finding. Now blocked, naming the link, in either list order."""
    repo, _, r1, r2 = forged
    _forge(r1)
    listed = [str(r1), str(r2)] if order == "series order" else [str(r2), str(r1)]
    out = repo / "gates" / "g.json"
    assert spar_main(["gate", *listed, "--out", str(out)]) == 1
    gate = json.loads(out.read_text())
    assert gate["state"] == "blocked" and gate["open"] == ["r1/claude-F1"]
    (reason,) = gate["reasons"]
    assert "finding claude-F1 (defect) cannot be traced: its link to r2/claude-F1 is one triage refuses: " \
           "round r2 is not an earlier round of the series than r1" in reason


@pytest.mark.parametrize("command", ["cap-report", "report"])
def test_cap_report_and_report_refuse_a_forged_link(forged, capsys, tmp_path, command):
    """issue 25 hole 8: cap-report and report read the forged line without complaint; now
    they refuse the series (65) naming the ledger line, as for any line Spar cannot write."""
    _, series, r1, _ = forged
    _forge(r1)
    args = [command, str(series)] + (["--out", str(tmp_path / "report.html")] if command == "report" else [])
    assert spar_main(args) == 65
    err = capsys.readouterr().err
    assert "ledger.jsonl" in err and "duplicate of r2/claude-F1, which triage refuses: round r2 is not an " \
           "earlier round of the series than r1" in err
