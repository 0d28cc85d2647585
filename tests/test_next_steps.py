"""A blocked gate ends with what to do about it: the steps `spar gate` prints (`next:`) and the
report's page lists, from the gate document alone (`spar/judge/next_steps.py`)."""

from __future__ import annotations

import json
import shlex

from spar.cli import main
from spar.judge.next_steps import next_steps
from tests import roundfactory as rf


def _doc(**extra) -> dict:
    doc = {"state": "blocked", "reasons": ["x"], "open": [], "stages": [],
           "rounds": [{"name": "code 1; rm -rf ~", "path": "/r/code 1; rm -rf ~"}]}
    doc.update(extra)
    return doc


def test_open_findings_get_the_triage_commands_quoted_for_the_shell():
    (step,) = next_steps(_doc(open=["code 1; rm -rf ~/claude-F1", "code 1; rm -rf ~/codex-F2"]))
    folder = shlex.quote("/r/code 1; rm -rf ~")
    assert "settle each of the 2 open finding(s)" in step
    assert f"spar triage {folder} claude-F1 --to fixed --commit REV" in step
    assert "--to answered --user-quote TEXT" in step and "--to rejected --evidence TEXT" in step


def test_reviewers_neither_completed_nor_waived_get_rerun_and_waive():
    stages = [{"stage": "code", "round": "r2", "path": "/s/r2", "required_reviewers": ["claude", "codex", "agy"],
               "completed": ["claude"], "waived": ["agy"]}]
    (step,) = next_steps(_doc(stages=stages))
    assert "lacks reviewer(s) codex" in step and "spar run --reviewers codex" in step
    assert "spar waive /s/r2 --reviewer NAME --user-quote TEXT" in step


def test_a_passed_gate_or_a_damaged_document_has_no_steps():
    assert next_steps({"state": "passed", "open": ["r/x"]}) == []
    assert next_steps(_doc(open=[5, "no-slash"], stages=["bad", {"required_reviewers": None}], rounds=None)) == []


def test_spar_gate_and_the_report_end_a_blocked_verdict_with_them(tmp_path, capsys):
    repo, series = rf.series_repo(tmp_path)
    rf.make_round(series, "code-1", repo=repo, findings=[rf.finding("claude", 1)],
                  reviewers=[rf.reviewer("claude"), rf.reviewer("codex", status="timeout")])
    assert main(["gate", "--series", str(series), "--out", str(repo / "gates" / "g.json")]) == 1
    out = capsys.readouterr().out
    nexts = [line for line in out.splitlines() if line.startswith("  next: ")]
    assert len(nexts) == 2 and "spar triage" in nexts[0] and "spar waive" in nexts[1]
    doc = json.loads((repo / "gates" / "g.json").read_text())
    assert "next" not in json.dumps(list(doc))  # the gate file itself is as it was
    assert main(["report", str(series), "--out", str(tmp_path / "page.html")]) in (0, 1)
    page = (tmp_path / "page.html").read_text()
    assert "What to do:" in page and "spar waive" in page


def test_the_folders_in_every_reason_are_quoted_for_a_shell():
    """The commands a reason holds are pasted by a person or an agent: a folder with spaces or
    shell signs is one quoted word (`rm -rf My Docs/r1` would remove two other paths)."""
    from spar.judge import gate as judgement
    item = judgement.ListedRound(arg="My Docs/$(x)/r1", path="/p/r1", series_arg="My Docs/$(x)", series="/p",
                                 name="r1", error="round.json: not JSON")
    (reason,) = judgement.listed_round_reasons(item)
    assert "rm -rf 'My Docs/$(x)/r1';" in reason and "chmod -R u+w 'My Docs/$(x)/r1' first" in reason
    listing = judgement.SeriesListing(path="/p", arg="My Docs/$(x)",
                                      rounds=[judgement.ListingRound("r2", {"finished_at": "t"})])
    (unlisted,) = judgement.unlisted_round_reasons(set(), [listing])
    assert unlisted.endswith("(spar gate --series 'My Docs/$(x)')")
