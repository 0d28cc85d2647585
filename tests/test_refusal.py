"""Contract §5 / G13: refusal phrases, reset phrases, the recorded reason."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from spar.judge.refusal import (
    AUTH_PHRASES,
    MAX_MESSAGE,
    QUOTA_PHRASES,
    Refusal,
    detect_refusal,
    find_resets,
    reason_for,
)

ROOT = Path(__file__).resolve().parent.parent
DATA = json.loads((ROOT / "tests/data/refusals.json").read_text(encoding="utf-8"))
CONTRACT = ROOT / "tests/data/contract/spar-input-excerpts.md"  # the contract's §5 rows, copied

PHRASES = [(p, "quota") for p in DATA["quota_phrases"]] + [(p, "auth") for p in DATA["auth_phrases"]]
CASINGS = [str, str.upper, str.lower, str.title]


def _contract_phrases(row_start: str) -> list[str]:
    line = next(l for l in CONTRACT.read_text(encoding="utf-8").splitlines() if l.startswith(row_start))
    cell = line[len(row_start):].split(" unavailable, reason", 1)[0]
    cell = re.sub(r" \(up to four symbols[^)]*\)", "", cell)
    return [p.strip() for p in cell.split(", ")]


def test_data_lists_every_contract_phrase():
    assert _contract_phrases("Usage or rate limit ") == DATA["quota_phrases"]
    assert _contract_phrases("Authentication ") == DATA["auth_phrases"]
    # the module's literal phrases are the contract's, minus the code/status forms
    number_forms = {"code 429", "status 429", "code 401", "status 401"}
    assert [p for p in DATA["quota_phrases"] if p not in number_forms] == list(QUOTA_PHRASES)
    assert [p for p in DATA["auth_phrases"] if p not in number_forms] == list(AUTH_PHRASES)


@pytest.mark.parametrize("casing", CASINGS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("phrase, kind", PHRASES, ids=[p for p, _ in PHRASES])
def test_every_phrase_in_any_case(phrase, kind, casing):
    line = f"reviewer said: {casing(phrase)} (see logs)"
    found = detect_refusal(["starting\n", line + "\n"])
    assert found == Refusal(kind, line, None)


@pytest.mark.parametrize("row", DATA["messages"], ids=lambda r: (r["texts"] or ["<none>"])[0][:50])
def test_messages(row):
    found = detect_refusal(row["texts"])
    if row["kind"] is None:
        assert found is None
    else:
        assert found == Refusal(row["kind"], row["message"], row["resets"])


@pytest.mark.parametrize("row", DATA["resets"], ids=lambda r: r["text"][:40])
def test_find_resets(row):
    assert find_resets(row["text"]) == row["resets"]


def test_reset_needs_a_refusal():
    assert detect_refusal(["Your free trial resets at 5pm."]) is None


def test_reason_for():
    assert reason_for(Refusal("quota", "Quota exceeded.", None)) == "quota or rate limit: Quota exceeded."
    assert reason_for(Refusal("auth", "Not logged in", None)) == "authentication: Not logged in"


@pytest.mark.parametrize("before, after", [(0, 900), (20, 900), (150, 900), (900, 20), (900, 0), (400, 400)])
def test_long_line_is_cut_around_the_phrase(before, after):
    line = "a" * before + "Rate limit reached" + "b" * after
    found = detect_refusal([line])
    assert found is not None
    assert len(found.message) == MAX_MESSAGE
    assert "Rate limit reached" in found.message
    core = found.message.strip("…")
    assert core in line
    # `…` marks exactly the ends that were cut
    assert found.message.startswith("…") == (not line.startswith(core))
    assert found.message.endswith("…") == (not line.endswith(core))


def test_exactly_max_length_is_kept_whole():
    line = "rate limit " + "x" * (MAX_MESSAGE - len("rate limit "))
    assert detect_refusal([line]).message == line
