"""G9 criterion IDs: AC-<digits> with no ASCII letter or digit right before or after."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spar.judge.criteria import find_ids, ids_of_documents

CASES = [
    ("AC-1", ["AC-1"]),
    ("AC-1,AC-2", ["AC-1", "AC-2"]),
    ("AC-1;AC-2 AC-3", ["AC-1", "AC-2", "AC-3"]),
    ("AC-01 and AC-1", ["AC-01", "AC-1"]),  # literal: two different IDs
    ("AC-2 then AC-1 then AC-2", ["AC-2", "AC-1"]),  # first appearance, no duplicates
    ("xAC-1", []),
    ("AC-1x", []),
    ("9AC-1", []),
    ("AC-19", ["AC-19"]),
    ("AC-", []),
    ("AC-x1", []),
    ("ac-1 Ac-2", []),
    ("(AC-4)", ["AC-4"]),
    ("AC-5.", ["AC-5"]),
    ("_AC-6_", ["AC-6"]),  # underscore is neither a letter nor a digit
    ("éAC-7é", ["AC-7"]),  # only ASCII letters block
    ("AC-8-AC-9", ["AC-8", "AC-9"]),
    ("AC-\u0663", []),  # Arabic-Indic digit is not an ASCII digit
    ("AC-1\u0663", ["AC-1"]),
    ("AC-00012", ["AC-00012"]),
    ("# Criteria\n\n- AC-1: greet\n- AC-2: exit 0\n", ["AC-1", "AC-2"]),
    ("", []),
]


@pytest.mark.parametrize("text,ids", CASES)
def test_find_ids(text, ids):
    assert find_ids(text) == ids


def test_ids_of_documents_in_order_across_documents():
    docs = [b"AC-2 first\nAC-1\n", "AC-3 and AC-2 again", b"\xff\xfeAC-4\xff"]
    assert ids_of_documents(docs) == ["AC-2", "AC-1", "AC-3", "AC-4"]
    assert ids_of_documents([]) == []


_ascii_alnum = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")


@settings(max_examples=300, deadline=None)
@given(st.text(st.sampled_from(list("AC-0123x ,;é_\n")), max_size=40))
def test_every_found_id_has_clean_boundaries(text):
    found = find_ids(text)
    assert len(found) == len(set(found))
    for ident in found:
        assert re.fullmatch(r"AC-[0-9]+", ident)
        # at least one occurrence with no ASCII letter/digit on either side
        ok = False
        for m in re.finditer(re.escape(ident), text):
            before = text[m.start() - 1] if m.start() else ""
            after = text[m.end()] if m.end() < len(text) else ""
            if before not in _ascii_alnum and after not in _ascii_alnum:
                ok = True
        assert ok


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=10**6), min_size=1, max_size=5),
       st.sampled_from([",", ", ", ";", " and ", "\n", "/"]))
def test_joined_ids_are_each_read(numbers, sep):
    ids = [f"AC-{n}" for n in numbers]
    assert find_ids(sep.join(ids)) == list(dict.fromkeys(ids))
