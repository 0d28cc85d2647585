"""G8 rule/contract links and G9 criterion links over real temporary git repositories
(rows: tests/data/links.json; the §6 link table is one row per form)."""

from __future__ import annotations

import pytest

from spar.judge.context import RoundContext, RoundDoc, count_lines
from spar.judge.findings import build_finding
from spar.judge.locate import check_link, confirm_link
from tests.test_locations import load, setup_contexts

DATA = load("links.json")
ROWS = DATA["rows"]


@pytest.fixture(scope="module")
def setups(tmp_path_factory):
    return setup_contexts(tmp_path_factory, "links.json")


def _item(kind: str, link: str) -> dict:
    return {"id": "x", "proposed_class": "note", "angle": "contracts", "location": "head/AGENTS.md",
            "claim": "c", "failure_scenario": "f", "evidence": "e", "link_kind": kind, "link": link,
            "introduced_by_change": "no", "regression": "no", "check_impact": "contract_violation",
            "confidence": "high"}


@pytest.mark.parametrize("row", ROWS, ids=[f"{r.get('setup', 'links')}:{r['kind']}:{r['link']!r}" for r in ROWS])
def test_link_rows(setups, row):
    s = setups[row.get("setup", "links")]
    link = s.fill(row["link"])
    got = check_link(row["kind"], link, s.ctx)
    assert got.confirmed is row["confirmed"], got.why
    assert confirm_link(row["kind"], link, s.ctx) is row["confirmed"]
    if row["confirmed"]:
        assert got.target == row["target"] and got.why == ""
    else:
        assert got.why != ""
    # in the finding record: unconfirmed -> none/"", the claim kept either way
    entry = build_finding("rev", 3, _item(row["kind"], link), s.ctx)
    assert (entry["claimed_link_kind"], entry["claimed_link"]) == (row["kind"], link)
    if row["confirmed"]:
        assert (entry["link_kind"], entry["link"]) == (row["kind"], link)
    else:
        assert (entry["link_kind"], entry["link"]) == ("none", "")


def test_every_contract_form_is_a_row():
    assert len([r for r in ROWS if r["source"] == "contract"]) == 20
    keys = [(r.get("setup", "links"), r["kind"], r["link"]) for r in ROWS]
    assert len(set(keys)) == len(keys)


def test_criteria_ids_come_from_the_criteria_documents(setups):
    # AC-01x and xAC-7 in the criteria text are not IDs (G9)
    assert setups["links"].ctx.criteria_ids == {"AC-1", "AC-2", "AC-10"}


def test_head_file_modes_in_the_context(setups):
    files = setups["links"].ctx.head_files
    assert files["tools/run.sh"] == "100755"
    assert files["contracts/link.md"] == "120000"
    assert files["contracts/x.md"] == "100644"
    assert "vendor/sub" not in files and "base-only.md" not in files


@pytest.mark.parametrize("text,lines", [(b"", 0), (b"a", 1), (b"a\n", 1), (b"a\nb", 2),
                                        (b"\n\n", 2), (b"a\r\nb\r\n", 2), (b"\n", 1)])
def test_line_count(text, lines):
    assert count_lines(text) == lines
    assert RoundDoc("rules", "r.md", "/abs/r.md", "r.md", text).lines == lines


def _plain_ctx(reader) -> RoundContext:
    return RoundContext(head_files={"c/x.md": "100644"}, base_files={}, documents=[],
                        check_paths=[], criteria_ids=set(), read_head_blob=reader)


def test_head_file_lines_need_its_bytes():
    # without a reader the head file is a target, but its lines cannot be confirmed
    assert confirm_link("contract", "c/x.md", _plain_ctx(None)) is True
    assert confirm_link("contract", "c/x.md:1", _plain_ctx(None)) is False
    reads = []

    def reader(path):
        reads.append(path)
        return b"one\ntwo\n"

    ctx = _plain_ctx(reader)
    assert confirm_link("contract", "c/x.md:2", ctx) is True
    assert confirm_link("contract", "c/x.md:3", ctx) is False
    assert reads == ["c/x.md", "c/x.md"]
    assert confirm_link("contract", "c/x.md", ctx) is True and len(reads) == 2  # no line: no read


def test_same_file_given_twice_is_one_document():
    text = b"1\n2\n"
    docs = [RoundDoc("rules", "AGENTS.md", "/r/AGENTS.md", "AGENTS.md", text),
            RoundDoc("rules", "AGENTS.md", "/r/AGENTS.md", "AGENTS.md", text)]
    ctx = RoundContext({}, {}, docs, [], set())
    assert confirm_link("rule", "AGENTS.md:2", ctx) is True
