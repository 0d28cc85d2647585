"""Records as Spar writes them pass the record rules, and each one-change near miss of
them is refused (G32): what the readers apply to every findings.json and ledger line."""

from __future__ import annotations

import pytest

from spar.errors import RecordError
from spar.records import jsonl, record_rules


def _readers_rules(findings: list, round_json) -> str | None:
    """What read_findings names, rule by rule."""
    for number, finding in enumerate(findings, start=1):
        if not isinstance(finding, dict) or not isinstance(finding.get("id"), str):
            return f"finding {number} is not an object with an id"
    return record_rules.findings_problem(findings, round_json)


def _spar_findings(size: int) -> tuple[list[dict], dict]:
    classes = record_rules.CLASSES
    findings = [{"id": f"{name}-F{n}", "reviewer": name, "class": classes[n % 4], "in_check_paths": n % 2 == 0,
                 "location_unreadable": n % 3 == 0, "claim": "c"}
                for name in ("claude", "codex") for n in range(1, size + 1)]
    return findings, {"reviewers": [{"name": "claude", "status": "completed"}, {"name": "codex", "status": "completed"},
                                    {"name": "agy", "status": "failed"}]}


COMMIT = "0123456789abcdef" * 2 + "01234567"
# one line of each shape Spar writes (automatic deferral, then triage by disposition)
WRITTEN = [
    {"finding": "claude-F2", "disposition": "deferred", "auto": True, "at": "t"},
    {"finding": "claude-F1", "disposition": "fixed", "auto": False, "at": "t", "commit": COMMIT,
     "failed_before": "f", "passed_after": "p"},
    {"finding": "claude-F1", "disposition": "duplicate", "auto": False, "at": "t", "of": "r1/claude-F1"},
    {"finding": "claude-F1", "disposition": "rejected", "auto": False, "at": "t", "evidence": "e"},
    {"finding": "claude-F1", "disposition": "deferred", "auto": False, "at": "t", "user_quote": "q"},
    {"finding": "codex-F1", "disposition": "answered", "auto": False, "at": "t", "user_quote": "q"},
]
FINDINGS_BY_ID = {
    "claude-F1": {"id": "claude-F1", "class": "defect"},
    "claude-F2": {"id": "claude-F2", "class": "hardening", "location_unreadable": False},
    "codex-F1": {"id": "codex-F1", "class": "requirement-question"},
}


def test_records_as_spar_writes_them_pass_the_rules():
    findings, round_json = _spar_findings(30)
    assert _readers_rules(findings, round_json) is None
    assert record_rules.ledger_problem(WRITTEN, FINDINGS_BY_ID) is None
    findings[7]["in_check_paths"] = 1  # `1 in (True, False)` is True in Python: the rule must not say so
    assert record_rules.findings_problem(findings, round_json) == \
        "finding 8 (claude-F8): in_check_paths is not true or false"


# one change each from a record Spar writes, that the rules refuse
FINDING_NEAR_MISSES = [
    ("newline in the reviewer", {"id": "x\ny-F1", "reviewer": "x\ny"}),
    ("number with a leading 0", {"id": "claude-F01"}),
    ("number 0", {"id": "claude-F0"}),
    ("number not ASCII", {"id": "claude-F\uff11"}),
    ("no number", {"id": "claude-F"}),
    ("another reviewer's id", {"id": "codex-F1"}),
    ("reviewer a prefix of the id's", {"id": "claudex-F1"}),
    ("two -F", {"id": "claude-F1-F2"}),
    ("empty reviewer", {"id": "-F1", "reviewer": ""}),
    ("reviewer not text", {"reviewer": 3}),
    ("unknown class", {"class": "bogus"}),
    ("class a list", {"class": ["defect"]}),
    ("in_check_paths 1", {"in_check_paths": 1}),
    ("location_unreadable 0", {"location_unreadable": 0}),
    ("location_unreadable null", {"location_unreadable": None}),
    ("reviewer that did not complete", {"id": "agy-F1", "reviewer": "agy"}),
]


@pytest.mark.parametrize("change", [c for _, c in FINDING_NEAR_MISSES], ids=[n for n, _ in FINDING_NEAR_MISSES])
def test_findings_near_misses_take_the_rules(change):
    findings, round_json = _spar_findings(2)
    findings[0] = {**findings[0], **change}
    reviewer = findings[0]["reviewer"]
    if isinstance(reviewer, str) and reviewer != "agy":  # completed, so the id is what is refused
        round_json["reviewers"].append({"name": reviewer, "status": "completed"})
    assert _readers_rules(findings, round_json) is not None


def _written(disposition: str, auto: bool = False) -> dict:
    return next(line for line in WRITTEN if line["disposition"] == disposition and line["auto"] is auto)


LEDGER_NEAR_MISSES = [
    ("commit in capitals", "fixed", {"commit": "A" * 40}),
    ("commit of 41", "fixed", {"commit": "a" * 41}),
    ("commit not hex", "fixed", {"commit": "g" * 40}),
    ("blank evidence", "rejected", {"evidence": "\u3000 "}),
    ("empty evidence", "rejected", {"evidence": ""}),
    ("of without a round", "duplicate", {"of": "/claude-F1"}),
    ("of without an id", "duplicate", {"of": "r1/"}),
    ("of with two slashes", "duplicate", {"of": "r1/a/b"}),
    ("answered defect", "answered", {"finding": "claude-F1"}),
    ("fixed requirement-question", "fixed", {"finding": "codex-F1"}),
    ("finding not in findings.json", "rejected", {"finding": "gone-F1"}),
    ("auto 1", "rejected", {"auto": 1}),
    ("at not text", "rejected", {"at": 5}),
    ("an option of another disposition", "rejected", {"of": "r1/claude-F1"}),
    ("automatic defect", "auto", {"finding": "claude-F1"}),
    ("automatic with an option", "auto", {"evidence": "e"}),
]


@pytest.mark.parametrize("disposition, change", [(d, c) for _, d, c in LEDGER_NEAR_MISSES],
                         ids=[n for n, _, _ in LEDGER_NEAR_MISSES])
def test_ledger_near_misses_take_the_rules(disposition, change):
    line = {**(_written("deferred", True) if disposition == "auto" else _written(disposition)), **change}
    assert record_rules.ledger_line_problem(line, FINDINGS_BY_ID) is not None
    assert record_rules.ledger_problem([WRITTEN[0], line], FINDINGS_BY_ID)[0] == 2


def test_jsonl_never_joins_a_string_cut_by_a_newline():
    # two lines that are one object only if the newline were read as part of the string
    data = b'{"a":"x\ny"}\n{"b":1},{"c":2}\n'
    with pytest.raises(RecordError, match=r"f\.jsonl:1: not JSON"):
        jsonl.parse_records(data, "f.jsonl")


def _reviewer(status: str, not_run, **attempt) -> dict:
    entry = {"name": "claude", "preset": "claude", "status": status, "not_run": not_run,
             "attempts": [{"status": status, "not_run": not_run, **attempt}]}
    if status == "completed":
        entry["verdict"] = "no_blocking_findings"
    return {"reviewers": [entry]}


# why a reviewer never got to review, as the runner writes it (and rounds written before: absent)
NOT_RUN_WRITTEN = [("failed", "not_started"), ("failed", "sandbox"), ("failed", "egress"), ("timeout", "egress"),
                   ("unavailable", "quota"), ("unavailable", "not_installed"), ("failed", "version_check"),
                   ("timeout", "version_check"), ("failed", None), ("completed", None), ("awaiting_record", None)]
NOT_RUN_NEAR_MISSES = [
    ("a reviewer that completed", "completed", "quota", "with status 'completed'"),
    ("one that has yet to run", "pending", "sandbox", "with status 'pending'"),
    ("a kind Spar never writes", "failed", "sandboxed", "not_run 'sandboxed' is not one Spar writes"),
    ("not a string", "failed", 3, "not_run 3 is not one Spar writes"),
    ("unavailable without a kind", "unavailable", None, "status unavailable with not_run null"),
]


@pytest.mark.parametrize(("status", "not_run"), NOT_RUN_WRITTEN)
def test_not_run_as_the_runner_writes_it_passes(status, not_run):
    assert record_rules.round_problem(_reviewer(status, not_run)) is None
    older = _reviewer(status, not_run)
    del older["reviewers"][0]["not_run"], older["reviewers"][0]["attempts"][0]["not_run"]
    assert record_rules.round_problem(older) is None


@pytest.mark.parametrize(("what", "status", "not_run", "problem"), NOT_RUN_NEAR_MISSES,
                         ids=[m[0] for m in NOT_RUN_NEAR_MISSES])
def test_not_run_near_misses_take_the_rules(what, status, not_run, problem):
    """The stop hook tells the person from `not_run`: a value beside a status that says the
    reviewer ran (or has yet to) would stop an agent that could go on."""
    told = record_rules.round_problem(_reviewer(status, not_run))
    assert told is not None and told.startswith("reviewer claude: ") and problem in told, told
    only_attempt = _reviewer(status, not_run)
    del only_attempt["reviewers"][0]["not_run"]
    told = record_rules.round_problem(only_attempt)
    assert told is not None and told.startswith("reviewer claude, attempt 1: ") and problem in told, told
