"""summary.md: reviewers, standpoints (only when given), findings with class, location mark and
disposition, smallest fixes."""

from __future__ import annotations

from spar.round.summary import counts_text, render_summary


def reviewer(name, status="completed", **kw):
    entry = {"name": name, "preset": "command", "status": status, "reason": "" if status == "completed" else "boom",
             "resets": None, "model": "", "effort": "", "timeout_seconds": 900, "observed_model": None,
             "attempts": [{"model": ""}], "warnings": [], "standpoint": None, "standpoint_report": None}
    if status == "completed":
        entry.update(verdict="blocking_findings", reviewed_head="abc1234",
                     angles_checked=[{"angle": "criteria", "result": "ok"}],
                     angles_unchecked=[{"angle": "risk", "reason": "no time"}], limits="", finding_count=2)
    entry.update(kw)
    return entry


def round_json(**kw):
    rj = {"schema": "review-round/v1", "name": "code-1", "stage": "code", "base": "a" * 40, "head": "b" * 40,
          "counted": True, "dry_run": False, "started_at": "2024-01-01T00:00:00.000Z",
          "recorded_at": "2024-01-01T00:01:00.000Z", "finished_at": "2024-01-01T00:01:00.000Z",
          "standpoints": [], "standpoints_uncovered": [], "warnings": [],
          "reviewers": [reviewer("alpha", observed_model="model-x"), reviewer("beta", "timeout", resets="12pm")]}
    rj.update(kw)
    return rj


def finding(fid, cls, **kw):
    f = {"id": fid, "reviewer": "alpha", "class": cls, "angle": "correctness", "location": "head/a.py:3",
         "claim": "a | b claim\nsecond line", "link_kind": "none", "link": "", "location_unreadable": False,
         "smallest_fix": ""}
    f.update(kw)
    return f


FINDINGS = [
    finding("alpha-F1", "defect", link_kind="criterion", link="AC-2", smallest_fix="check b == 0"),
    finding("alpha-F2", "hardening", location="tests/t.py:1"),
    finding("alpha-F3", "hardening", location="head/t.py:10:5", location_unreadable=True),
    finding("alpha-F4", "note"),
]
LEDGER = [
    {"finding": "alpha-F2", "disposition": "deferred", "auto": True, "at": "t"},
    {"finding": "alpha-F1", "disposition": "rejected", "auto": False, "at": "t", "evidence": "x"},
    {"finding": "alpha-F1", "disposition": "deferred", "auto": False, "at": "t", "user_quote": "ok"},
]


def table_row(text, first_cell):
    return next(line for line in text.splitlines() if line.startswith(f"| {first_cell} |"))


def test_reviewers_table():
    text = render_summary(round_json(), FINDINGS, LEDGER)
    alpha = table_row(text, "alpha")
    assert "| completed |" in alpha and "model-x" in alpha and "blocking_findings" in alpha
    beta = table_row(text, "beta")
    assert "| timeout |" in beta and "boom (resets 12pm)" in beta and "unknown" in beta


def test_findings_table_class_location_mark_and_disposition():
    text = render_summary(round_json(), FINDINGS, LEDGER)
    f1 = table_row(text, "alpha-F1")
    assert "| defect |" in f1 and "| deferred |" in f1 and "criterion AC-2" in f1
    assert "a \\| b claim second line" in f1
    assert "| deferred (auto) |" in table_row(text, "alpha-F2")
    f3 = table_row(text, "alpha-F3")
    assert "`head/t.py:10:5` (unreadable location)" in f3 and f3.endswith("| - |")
    assert "(unreadable location)" not in table_row(text, "alpha-F4")
    assert "1 defect, 0 requirement-question, 2 hardening, 1 note." in text


def test_smallest_fixes():
    text = render_summary(round_json(), FINDINGS, LEDGER)
    section = text.split("## Smallest fixes", 1)[1]
    assert "- `alpha-F1`: check b == 0" in section
    assert "alpha-F2" not in section
    assert "No finding gives one." in render_summary(round_json(), [finding("alpha-F1", "note")], [])


def test_angles_of_completed_reviewers():
    text = render_summary(round_json(), [], [])
    assert "- `alpha`: checked criteria; not checked risk (no time)" in text
    assert "`beta`" not in text.split("## Angles", 1)[1]


def test_standpoints_only_in_standpoint_rounds():
    plain = render_summary(round_json(), FINDINGS, LEDGER)
    assert "Standpoint" not in plain and "standpoint" not in plain
    rj = round_json(
        standpoints=[{"reviewer": "alpha", "text": "races\nand locks"}, {"reviewer": "beta", "text": "perf"},
                     {"reviewer": "gamma", "text": "docs"}],
        standpoints_uncovered=["beta", "gamma"],
        reviewers=[reviewer("alpha", standpoint="races\nand locks",
                            standpoint_report={"checked": False, "detail": "no lock code"}),
                   reviewer("beta", "failed", standpoint="perf")],
    )
    text = render_summary(rj, [], [])
    section = text.split("## Standpoints", 1)[1]
    assert "> races\n> and locks" in section
    assert "Report (not checked): no lock code" in section
    assert "No report (status failed)." in section
    assert "Not a reviewer of this round." in section
    assert "Standpoints without a completed reviewer: `beta`, `gamma`" in section


def test_unfinished_round_says_so():
    rj = round_json(reviewers=[reviewer("nat", "awaiting_record", preset="native")])
    del rj["finished_at"]
    text = render_summary(rj, [], [])
    assert "- Finished: not yet (a reviewer awaits a record)" in text
    assert "| awaiting_record |" in table_row(text, "nat")


def test_counts_text_and_bytes_stable():
    assert counts_text(FINDINGS) == "1 defect, 0 requirement-question, 2 hardening, 1 note"
    assert render_summary(round_json(), FINDINGS, LEDGER) == render_summary(round_json(), FINDINGS, LEDGER)


def test_reviewer_control_characters_are_escaped_in_the_summary():
    """summary.md is read with `cat`: a reviewer's screen clear or OSC 52 clipboard write
    (claim, smallest fix, reason, angle reason) is shown escaped, never written raw."""
    evil = "x \x1b[2J\x1b]52;c;SGVsbG8=\x07 \x9b1m \u202e y"
    rj = round_json(reviewers=[reviewer("alpha", angles_unchecked=[{"angle": "risk", "reason": evil}]),
                               reviewer("beta", "failed", reason=evil)])
    text = render_summary(rj, [finding("alpha-F1", "defect", claim=evil, smallest_fix=evil)], [])
    assert not any(ch in text for ch in "\x1b\x07\x9b\u202e")
    assert text.count("x \\e[2J\\e]52;c;SGVsbG8=\\a \\x9b1m \\u202e y") == 4
    assert "\n| alpha-F1 | defect |" in text  # newlines of the document itself stay


def test_a_class_changed_from_the_proposed_one_names_the_rule():
    """Issue 22 point 8: summary.md says why Spar's class differs from the reviewer's proposed
    class (the rule in class_reason); a finding left as proposed is not listed."""
    findings = [
        finding("alpha-F1", "note", proposed_class="defect",
                class_reason="rule 6: proposed defect without a confirmed link"),
        finding("alpha-F2", "hardening", proposed_class="hardening", class_reason="rule 7: proposed hardening"),
        finding("alpha-F3", "hardening", proposed_class="note", location="tests/t.py:1",
                class_reason="rule 3: in check paths"),
    ]
    text = render_summary(round_json(), findings, [])
    section = text.split("## Classes Spar changed\n\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert section == [
        "- `alpha-F1`: proposed defect, classed note, by rule 6: proposed defect without a confirmed link",
        "- `alpha-F3`: proposed note, classed hardening, by rule 3: in check paths",
    ]
    assert "## Classes Spar changed" not in render_summary(round_json(), findings[1:2], [])


def test_an_unavailable_reviewer_that_spent_nothing_shows_not_measured():
    """A CLI that cannot log in still prints a usage of zeros: nothing ran, so the summary
    says "not measured" rather than `in 0 / out 0 | $0.0000`."""
    zeros = {"duration_seconds": 1.2, "input_tokens": 0, "cached_input_tokens": 0, "output_tokens": 0,
             "cost_usd": 0.0}
    spent = dict(zeros, input_tokens=1200, output_tokens=30, cost_usd=0.01)
    rj = round_json(reviewers=[
        reviewer("noauth", "unavailable", preset="claude", attempts=[{"model": "", "usage": zeros}]),
        reviewer("quota", "unavailable", preset="claude", attempts=[{"model": "", "usage": spent}]),
        reviewer("slow", "timeout", preset="claude", attempts=[{"model": "", "usage": zeros}]),
    ])
    text = render_summary(rj, [], [])
    assert "| 1.2s | not measured | not measured |" in table_row(text, "noauth")
    assert "| in 1,200 / out 30 | $0.0100 |" in table_row(text, "quota")  # it did spend: shown
    assert "| in 0 / out 0 | $0.0000 |" in table_row(text, "slow")  # it ran: zero is what it reported


def test_the_model_of_a_reviewer_without_one_says_who_picks_it():
    rj = round_json(reviewers=[reviewer("cmd", "completed"), reviewer("cli", "completed", preset="claude"),
                               reviewer("set", "completed", preset="claude", model="opus"),
                               reviewer("host", "completed", preset="native")])
    text = render_summary(rj, [], [])
    assert "| native | completed | (the host's) |" in table_row(text, "host")
    assert "| command | completed | (set by the command) |" in table_row(text, "cmd")
    assert "| claude | completed | (default) |" in table_row(text, "cli")
    assert "| claude | completed | opus |" in table_row(text, "set")


def test_the_repeat_column_says_what_a_verifier_of_another_vendor_said_of_each_repeat():
    earlier = {"round": "r1", "finding": "beta-F1", "disposition": "rejected"}
    findings = [finding("alpha-F1", "defect", repeat_of=earlier),
                finding("alpha-F2", "defect", repeat_of={**earlier, "finding": "beta-F2"}),
                finding("alpha-F3", "defect", repeat_of={**earlier, "finding": "beta-F3", "disposition": None}),
                finding("alpha-F4", "note")]
    checks = {"schema": "spar-repeat-checks/v1", "round": "code-1", "started_at": "t", "finished_at": "t",
              "verifiers": ["codex"], "unchecked": [{"finding": "alpha-F2", "earlier": "r1/beta-F2",
                                                     "why": "max_findings"}],
              "calls": [{"call": "R1", "finding": "alpha-F1", "earlier": "r1/beta-F1", "verifier": "codex",
                         "preset": "codex", "status": "completed", "verdict": "different",
                         "evidence": "another line", "reason": "", "attempts": []}]}
    text = render_summary(round_json(), findings, [], repeat_checks=checks)
    assert "| r1/beta-F1 (rejected; checked: different by codex (R1)) |" in table_row(text, "alpha-F1")
    assert "| r1/beta-F2 (rejected; not checked: over [verify] max_findings) |" in table_row(text, "alpha-F2")
    assert "| r1/beta-F3 (no disposition) |" in table_row(text, "alpha-F3")  # no check planned: as before
    assert "| r1/beta-F1 (rejected) |" in table_row(render_summary(round_json(), findings, []), "alpha-F1")
