"""The cheap paths the readers take over a long series agree with the rule-by-rule
paths that name a problem (G32): a record the cheap path accepts is one the rules
accept, records as Spar writes them take the cheap path, and a refused record is
named exactly as before."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spar.errors import RecordError
from spar.records import jsonl, record_rules
from spar.records.record_rules import OPTION_FLAGS, RULES

NAMES = ["claude", "codex", "a-F1", "x\ny", "", "claude ", "é"]
NUMBERS = ["1", "12", "0", "01", "\uff11", "1-F2", "", "x", "9" * 30]
STATUSES = ["completed", "failed", "pending"]
ODD = [None, 1, 0, 1.0, "true", ["defect"], {"a": 1}]
TEXTS = ["x", "", "  ", " x", "\u3000", "x ", "a" * 40, "ab" * 20, "0" * 64, "A" * 40, "f" * 41,
         "r1/claude-F1", "r1/", "/claude-F1", "a/b/c", "claude-F1"]


def _maybe(key: str, values: list) -> st.SearchStrategy:
    return st.one_of(st.just({}), st.sampled_from(values).map(lambda v: {key: v}))


FINDING_VALUES = {
    "id": ["claude-F1", "claude-F2", "codex-F1", *[f"{r}-F{n}" for r in NAMES for n in NUMBERS], 5, None],
    "reviewer": [*NAMES, None, 3],
    "class": [*record_rules.CLASSES, "bogus", *ODD],
    "in_check_paths": [True, False, *ODD],
    "location_unreadable": [True, False, *ODD],
}


@st.composite
def findings_and_round(draw):
    """Findings as Spar writes them, then up to three changes (a value, a removed key,
    a finding that is not an object), against round.json reviewers or none."""
    reviewers = draw(st.lists(st.tuples(st.sampled_from(NAMES), st.sampled_from(STATUSES)), max_size=3))
    round_json = draw(st.sampled_from([None, {"reviewers": [{"name": n, "status": s} for n, s in reviewers]},
                                       {"reviewers": [{"name": "claude", "status": "completed"},
                                                      {"name": "codex", "status": "completed"}]}]))
    findings: list = [dict(f) for f in _spar_findings(2)[0][: draw(st.integers(0, 4))]]
    for _ in range(draw(st.integers(0, 3)) if findings else 0):
        index = draw(st.integers(0, len(findings) - 1))
        key = draw(st.sampled_from(sorted(FINDING_VALUES)))
        choice = draw(st.integers(0, 9))
        if choice == 0:
            findings[index] = draw(st.sampled_from(ODD))
        elif isinstance(findings[index], dict) and choice == 2:  # another reviewer, its id in step
            reviewer = draw(st.sampled_from(NAMES))
            findings[index].update(reviewer=reviewer, id=f"{reviewer}-F{draw(st.sampled_from(NUMBERS))}")
        elif isinstance(findings[index], dict) and choice == 1:
            findings[index].pop(key, None)
        elif isinstance(findings[index], dict):
            findings[index][key] = draw(st.sampled_from(FINDING_VALUES[key]))
    return findings, round_json


def _readers_rules(findings: list, round_json) -> str | None:
    """What read_findings names, rule by rule."""
    for number, finding in enumerate(findings, start=1):
        if not isinstance(finding, dict) or not isinstance(finding.get("id"), str):
            return f"finding {number} is not an object with an id"
    return record_rules.findings_problem(findings, round_json)


@settings(max_examples=400, deadline=None)
@given(findings_and_round())
def test_findings_cheap_path_accepts_only_what_the_rules_accept(case):
    findings, round_json = case
    if record_rules.findings_possible(findings, round_json):
        assert _readers_rules(findings, round_json) is None


def _spar_findings(size: int) -> tuple[list[dict], dict]:
    classes = record_rules.CLASSES
    findings = [{"id": f"{name}-F{n}", "reviewer": name, "class": classes[n % 4], "in_check_paths": n % 2 == 0,
                 "location_unreadable": n % 3 == 0, "claim": "c"}
                for name in ("claude", "codex") for n in range(1, size + 1)]
    return findings, {"reviewers": [{"name": "claude", "status": "completed"}, {"name": "codex", "status": "completed"},
                                    {"name": "agy", "status": "failed"}]}


def test_findings_as_spar_writes_them_take_the_cheap_path():
    findings, round_json = _spar_findings(30)
    assert record_rules.findings_possible(findings, round_json)
    assert record_rules.findings_possible(findings, None)
    findings[7]["in_check_paths"] = 1  # `1 in (True, False)` is True in Python: the cheap path must not say so
    assert not record_rules.findings_possible(findings, round_json)
    assert record_rules.findings_problem(findings, round_json) == \
        "finding 8 (claude-F8): in_check_paths is not true or false"


def test_the_ids_read_are_remembered_up_to_a_bound(monkeypatch):
    """The cheap path remembers whose `<reviewer>-F<n>` each id is (ids come back round
    after round), but never more than a bound, however many ids a series holds."""
    monkeypatch.setattr(record_rules, "_ID_OWNERS", {})
    monkeypatch.setattr(record_rules, "_ID_OWNERS_MAX", 10)
    round_json = {"reviewers": [{"name": "claude", "status": "completed"}]}
    for start in range(1, 40, 3):
        findings = [{"id": f"claude-F{n}", "reviewer": "claude", "class": "note"} for n in range(start, start + 3)]
        assert record_rules.findings_possible(findings, round_json)
        assert 0 < len(record_rules._ID_OWNERS) <= 10
    assert not record_rules.findings_possible([{"id": "claude-F1", "reviewer": "codex", "class": "note"}],
                                              {"reviewers": [{"name": "codex", "status": "completed"}]})


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
VALUES = {
    "finding": ["claude-F1", "claude-F2", "codex-F1", "gone-F1", "", 5],
    "disposition": [*RULES, "bogus", *ODD],
    "auto": [True, False, *ODD],
    "at": ["2024-01-02T00:00:00.000Z", *ODD],
    "note": ["kept as written"],
    **{key: [*TEXTS, None, 5] for key in OPTION_FLAGS},
}


@st.composite
def ledger_line(draw):
    """A line Spar writes, then up to three changes: a key set to another value, or removed."""
    line = dict(draw(st.sampled_from(WRITTEN)))
    for _ in range(draw(st.integers(0, 3))):
        # mostly a key the line has: the cheap path's own checks are on those
        key = draw(st.sampled_from(sorted(line) if draw(st.integers(0, 3)) else sorted(VALUES)))
        if draw(st.integers(0, 4)) == 0:
            line.pop(key, None)
        else:
            line[key] = draw(st.sampled_from(VALUES[key]))
    return line


FINDINGS_BY_ID = {
    "claude-F1": {"id": "claude-F1", "class": "defect"},
    "claude-F2": {"id": "claude-F2", "class": "hardening", "location_unreadable": False},
    "codex-F1": {"id": "codex-F1", "class": "requirement-question"},
}


def _plain(line, findings):
    """Whether the cheap pass clears the line alone."""
    return record_rules._first_not_plain([line], findings) is None


@settings(max_examples=400, deadline=None)
@given(st.lists(ledger_line(), max_size=4), st.booleans())
def test_ledger_cheap_path_names_exactly_what_the_rules_name(lines, with_findings):
    findings = FINDINGS_BY_ID if with_findings else None
    expected = next(((n, p) for n, line in enumerate(lines, start=1)
                     if (p := record_rules.ledger_line_problem(line, findings))), None)
    assert record_rules.ledger_problem(lines, findings) == expected
    for line in lines:
        if _plain(line, findings):
            assert record_rules.ledger_line_problem(line, findings) is None


def test_ledger_lines_as_spar_writes_them_take_the_cheap_path():
    assert all(_plain(line, FINDINGS_BY_ID) for line in WRITTEN)
    assert record_rules.ledger_problem(WRITTEN, FINDINGS_BY_ID) is None


# one change each from a record Spar writes, that the rules refuse: the cheap path must not accept it
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
    assert not record_rules.findings_possible(findings, round_json)


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
    assert not _plain(line, FINDINGS_BY_ID)
    assert record_rules.ledger_problem([WRITTEN[0], line], FINDINGS_BY_ID)[0] == 2


def test_jsonl_never_joins_a_string_cut_by_a_newline():
    # two lines that are one object only if the newline were read as part of the string
    data = b'{"a":"x\ny"}\n{"b":1},{"c":2}\n'
    with pytest.raises(RecordError, match=r"f\.jsonl:1: not JSON"):
        jsonl.parse_records(data, "f.jsonl")
