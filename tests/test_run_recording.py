"""spar.round.recording as `spar record` uses it: a native result recorded into a round `spar run` wrote."""

from __future__ import annotations

import json

import pytest

from spar.records import readers
from spar.round.recording import (
    context_for_round,
    merge_findings,
    record_reviewer_result,
    write_round_outputs,
)
from tests.runsetup import finding, make_setup, result

pytestmark = pytest.mark.slow


@pytest.fixture
def waiting_round(tmp_path):
    s = make_setup(tmp_path)
    s.configure([s.example_reviewer("example"), {"name": "host", "preset": "native"}])
    proc = s.run("--criteria", "docs/criteria.md")
    assert proc.returncode == 1, proc.stderr.decode()
    return s, s.repo / "reviews" / "r1"


def record(round_dir, name, answer):
    rj = readers.read_round(round_dir)
    existing = readers.read_findings(round_dir)
    new = record_reviewer_result(rj, name, answer, context_for_round(rj))
    merged = merge_findings(existing, name, new, [r["name"] for r in rj["reviewers"]])
    write_round_outputs(round_dir, rj, merged, new)
    return rj, merged


def test_native_result_completes_the_round(waiting_round):
    s, rd = waiting_round
    before_ledger = (rd / "ledger.jsonl").read_text()
    answer = result(head=s.head, findings=[
        finding(),
        finding(id="h2", proposed_class="hardening", location="head/tests/test_calc.py:2", link_kind="none",
                link=""),
    ])
    _rj, merged = record(rd, "host", answer)
    assert [f["id"] for f in merged] == ["example-F1", "example-F2", "host-F1", "host-F2"]
    on_disk = readers.read_round(rd)
    assert on_disk["finished_at"] == on_disk["recorded_at"]
    host = next(r for r in on_disk["reviewers"] if r["name"] == "host")
    assert host["status"] == "completed" and host["finding_count"] == 2
    ledger = (rd / "ledger.jsonl").read_text()
    assert ledger.startswith(before_ledger)
    added = [json.loads(x) for x in ledger[len(before_ledger):].splitlines()]
    assert [(x["finding"], x["auto"]) for x in added] == [("host-F2", True)]
    assert "| host-F2 | hardening |" in (rd / "summary.md").read_text()


def test_rejudging_gives_what_the_run_gave(waiting_round):
    """context_for_round rebuilds the judging context from round.json alone."""
    s, rd = waiting_round
    # repeat_of / corroborated_by / vendor_count / group are given across the round afterwards (history.annotate)
    series_keys = ("repeat_of", "corroborated_by", "vendor_count", "group")
    run_findings = [{k: v for k, v in f.items() if k not in series_keys}
                    for f in readers.read_findings(rd) if f["reviewer"] == "example"]
    answer = json.loads((rd / "example" / "stdout.log").read_text())
    # the working tree moves on: the round keeps judging as it did
    (s.repo / "docs" / "criteria.md").write_text("nothing here\n")
    rj = readers.read_round(rd)
    assert record_reviewer_result(rj, "example", answer, context_for_round(rj)) == run_findings


def test_invalid_native_result(waiting_round):
    s, rd = waiting_round
    _rj, merged = record(rd, "host", result(head=s.head, extra=1))
    host = next(r for r in readers.read_round(rd)["reviewers"] if r["name"] == "host")
    assert host["status"] == "invalid_output" and '"extra"' in host["reason"]
    assert [f["reviewer"] for f in merged] == ["example", "example"]
    assert "finished_at" in readers.read_round(rd)
