"""G1–G6 and the standpoint report (rows: tests/data/result_forms.json)."""

from __future__ import annotations

import copy
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spar.config.model import ANGLES
from spar.judge.result import InvalidOutput, is_could_not_review, validate_result
from tests.test_locations import load

DATA = load("result_forms.json")
ROWS = DATA["rows"]
HEAD = DATA["packet_head"]
_MISSING = object()


def _get(obj, path):
    for key in path:
        obj = obj[key]
    return obj


def _set(obj, path, value):
    parent = _get(obj, path[:-1])
    key = path[-1]
    if isinstance(parent, list) and key == len(parent):
        parent.append(value)
    else:
        parent[key] = value


def _delete(obj, path):
    del _get(obj, path[:-1])[path[-1]]


def build(row):
    obj = copy.deepcopy(row["replace"]) if "replace" in row else copy.deepcopy(DATA["template"])
    for path in row.get("delete", []):
        _delete(obj, path)
    for path, value in row.get("set", []):
        _set(obj, path, value)
    return obj


def run(row, obj=_MISSING):
    mode = row.get("standpoints", False)
    return validate_result(
        build(row) if obj is _MISSING else obj, packet_head=HEAD,
        requested_angles=row.get("requested", list(ANGLES)),
        standpoints_active=mode in ("assigned", "unassigned"), assigned=mode == "assigned")


@pytest.mark.parametrize("row", ROWS, ids=[f"{r['row']}: {r['name']}" for r in ROWS])
def test_result_rows(row):
    if row["ok"]:
        got = run(row)
        for path, value in row.get("expect", []):
            assert _get(got, path) == value
        assert is_could_not_review(got) is row.get("could_not_review", False)
        # the accepted result keeps exactly the G1 keys plus standpoint_report
        assert list(got) == ["reviewed_head", "verdict", "angles_checked", "angles_unchecked",
                             "findings", "limits", "standpoint_report"]
        # and is JSON data equal to what was given (apart from the normalized report)
        given_obj = build(row)
        given_obj.pop("standpoint_report", None)
        got_obj = dict(got)
        got_obj.pop("standpoint_report")
        assert json.dumps(got_obj, sort_keys=True) == json.dumps(given_obj, sort_keys=True)
    else:
        with pytest.raises(InvalidOutput) as err:
            run(row)
        assert row["reason"] in err.value.reason
        assert str(err.value) == err.value.reason


def test_rows_cover_every_row_of_the_contract():
    assert {r["row"] for r in ROWS} == {"G1", "G2", "G3", "G4", "G5", "G6", "standpoint"}


def test_accepted_result_is_a_copy():
    obj = build({"row": "G1", "name": "t"})
    got = run({"row": "G1"}, obj)
    got["findings"][0]["claim"] = "changed"
    got["angles_checked"].append({"angle": "risk", "result": "x"})
    assert obj["findings"][0]["claim"] == "off by one"
    assert len(obj["angles_checked"]) == 4


def test_reason_does_not_depend_on_key_order():
    obj = build({"row": "G1"})
    obj["zeta"] = 1
    obj["alpha"] = 2
    reversed_obj = dict(reversed(list(obj.items())))
    reasons = set()
    for o in (obj, reversed_obj):
        with pytest.raises(InvalidOutput) as err:
            run({"row": "G1"}, o)
        reasons.add(err.value.reason)
    assert reasons == {'unknown key "alpha"'}


finding_keys = list(DATA["template"]["findings"][0])


@settings(max_examples=150, deadline=None)
@given(st.integers(min_value=0, max_value=1), st.sampled_from(finding_keys),
       st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False),
                 st.lists(st.text(max_size=2), max_size=2), st.dictionaries(st.text(max_size=2), st.integers(), max_size=2)))
def test_any_non_string_finding_value_is_invalid_and_named(index, key, value):
    obj = build({"row": "G5"})
    obj["findings"][index][key] = value
    with pytest.raises(InvalidOutput) as err:
        run({"row": "G5"}, obj)
    assert err.value.reason.startswith(f"findings[{index}].{key}: ")


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(st.text(max_size=12))
def test_any_verdict_string_outside_the_enumeration_is_invalid(text):
    obj = build({"row": "G3"})
    obj["verdict"] = text
    if text in ("no_blocking_findings", "blocking_findings", "could_not_review"):
        assert run({"row": "G3"}, obj)["verdict"] == text
    else:
        with pytest.raises(InvalidOutput) as err:
            run({"row": "G3"}, obj)
        assert err.value.reason.startswith("verdict: ")


def _parsed(text_edit) -> dict:
    """The template as a reviewer's JSON text, edited as text, parsed as the presets parse it."""
    return json.loads(text_edit(json.dumps(DATA["template"], ensure_ascii=True)))


def test_lone_surrogates_are_replaced_as_go_decodes_them():
    """JSON `\\ud800` (a lone UTF-16 surrogate) is a string Python keeps as is but
    UTF-8 cannot hold; Go's encoding/json reads it as U+FFFD. The accepted result
    holds U+FFFD, so it can be written to findings.json."""
    obj = _parsed(lambda t: t.replace('"claim": "', '"claim": "\\ud800x\\udfff', 1)
                  .replace('"limits": "', '"limits": "\\udcff', 1))
    got = run({"row": "G5"}, obj)
    assert got["findings"][0]["claim"].startswith("\ufffdx\ufffd")
    assert got["limits"].startswith("\ufffd")
    json.dumps(got, ensure_ascii=False).encode("utf-8")  # would raise with a surrogate left in
    # a surrogate pair is one character and stays as it is
    pair = run({"row": "G5"}, _parsed(lambda t: t.replace('"claim": "', '"claim": "\\ud83d\\ude00', 1)))
    assert pair["findings"][0]["claim"].startswith("\U0001F600")


def test_a_repeated_key_keeps_its_last_value():
    """Decision (documented in spar.judge.result): a repeated key is not invalid_output;
    the last value counts, as in Go's encoding/json."""
    text = json.dumps(DATA["template"])
    obj = json.loads(text.replace('"verdict": ', '"verdict": "no_such_verdict", "verdict": ', 1))
    assert run({"row": "G3"}, obj)["verdict"] == DATA["template"]["verdict"]
    obj = json.loads(text.replace('"verdict": ', '"verdict": "blocking_findings", "verdict": 7, "x": 1, "verdict": ', 1))
    with pytest.raises(InvalidOutput) as err:
        run({"row": "G3"}, obj)
    assert err.value.reason == 'unknown key "x"'
