"""schema.json: JSON Schema 2020-12 of G1 in codex's strict form, in step with the validator."""

from __future__ import annotations

import json

import pytest

from spar.config.model import ANGLES
from spar.judge import result as rules
from spar.judge.result import validate_result
from spar.round.schema import result_schema, schema_text, without_dialect

HEAD = "0123456789abcdef0123456789abcdef01234567"


def objects(node, where="$"):
    """Every object schema in the tree, with where it is."""
    if isinstance(node, dict):
        types = node.get("type")
        if types == "object" or (isinstance(types, list) and "object" in types):
            yield where, node
        for key, value in node.items():
            yield from objects(value, f"{where}.{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from objects(value, f"{where}[{i}]")


def conforms(value, schema) -> bool:
    """The subset of JSON Schema schema.json uses: type, enum, properties, required,
    additionalProperties false, items."""
    types = schema.get("type")
    types = types if isinstance(types, list) else [types]
    kind = {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}.get(type(value))
    if kind not in types:
        return False
    if "enum" in schema and value not in schema["enum"]:
        return False
    if kind == "object":
        props = schema.get("properties", {})
        if any(k not in value for k in schema.get("required", [])):
            return False
        if schema.get("additionalProperties") is False and any(k not in props for k in value):
            return False
        return all(conforms(value[k], props[k]) for k in value)
    if kind == "array":
        return all(conforms(v, schema["items"]) for v in value)
    return True


def finding(**kw):
    item = {"id": "x1", "proposed_class": "defect", "angle": "correctness", "location": "head/a.py:1",
            "claim": "c", "failure_scenario": "f", "evidence": "e", "link_kind": "none", "link": "",
            "introduced_by_change": "yes", "regression": "no", "check_impact": "none",
            "confidence": "high", "smallest_fix": ""}
    item.update(kw)
    return item


def result(**kw):
    value = {"reviewed_head": HEAD[:7], "verdict": "blocking_findings",
             "angles_checked": [{"angle": a, "result": "ok"} for a in ANGLES],
             "angles_unchecked": [], "findings": [finding()], "limits": ""}
    value.update(kw)
    return value


@pytest.mark.parametrize("standpoints", [False, True])
def test_strict_mode_every_object(standpoints):
    schema = result_schema(standpoints)
    found = list(objects(schema))
    assert len(found) == (5 if standpoints else 4)
    for where, node in found:
        assert node["additionalProperties"] is False, where
        assert node["required"] == list(node["properties"]), where


def test_top_level_shape():
    schema = result_schema(False)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["type"] == "object"
    assert tuple(schema["properties"]) == rules.RESULT_KEYS
    assert "standpoint" not in schema_text(False)


def test_finding_keys_and_enums_match_the_validator():
    props = result_schema(False)["properties"]["findings"]["items"]["properties"]
    assert tuple(props) == rules.FINDING_KEYS + rules.FINDING_OPTIONAL
    assert props["smallest_fix"] == {**props["smallest_fix"], "type": "string"}
    for key, allowed in rules.FINDING_ENUMS.items():
        assert props[key]["enum"] == list(allowed), key
    top = result_schema(False)["properties"]
    assert top["verdict"]["enum"] == list(rules.VERDICTS)
    for key, (angle_key, text_key) in (("angles_checked", ("angle", "result")),
                                        ("angles_unchecked", ("angle", "reason"))):
        item = top[key]["items"]
        assert list(item["properties"]) == [angle_key, text_key]
        assert item["properties"]["angle"]["enum"] == list(ANGLES)


def test_standpoint_report_only_in_standpoint_rounds():
    report = result_schema(True)["properties"]["standpoint_report"]
    assert report["type"] == ["object", "null"]
    assert report["properties"] == {"checked": {"type": "boolean"}, "detail": report["properties"]["detail"]}
    assert report["properties"]["detail"]["type"] == "string"
    assert "standpoint_report" in result_schema(True)["required"]
    assert "standpoint_report" not in result_schema(False)["properties"]


def test_text_is_stable_json():
    assert schema_text(True) == schema_text(True)
    assert schema_text(False).endswith("}\n")
    assert json.loads(schema_text(True)) == result_schema(True)


@pytest.mark.parametrize("value, standpoints, assigned", [
    (result(), False, False),
    (result(findings=[]), False, False),
    (result(standpoint_report={"checked": False, "detail": "could not"}), True, True),
    (result(standpoint_report=None), True, False),
])
def test_schema_conforming_results_pass_the_validator(value, standpoints, assigned):
    assert conforms(value, result_schema(standpoints))
    validate_result(value, packet_head=HEAD, requested_angles=list(ANGLES),
                    standpoints_active=standpoints, assigned=assigned)


@pytest.mark.parametrize("value", [
    result(extra="x"),
    result(findings=[finding(confidence="sure")]),
    result(findings=[finding(unknown="x")]),
    result(verdict="fine"),
    result(standpoint_report={"checked": True, "detail": "x"}),
])
def test_schema_rejects_what_the_validator_rejects(value):
    assert not conforms(value, result_schema(False))


# JSON Schema 2020-12 keywords schema.json may use, with the shape the meta-schema requires
_TYPES = {"object", "array", "string", "number", "integer", "boolean", "null"}


def _well_formed(node, where="$"):
    assert isinstance(node, dict), where
    allowed = {"$schema", "title", "description", "type", "properties", "required", "additionalProperties",
               "items", "enum"}
    assert set(node) <= allowed, (where, set(node) - allowed)
    if "type" in node:
        types = node["type"] if isinstance(node["type"], list) else [node["type"]]
        assert types and set(types) <= _TYPES and len(set(types)) == len(types), where
    for key in ("title", "description"):
        assert isinstance(node.get(key, ""), str), where
    if "enum" in node:
        assert isinstance(node["enum"], list) and node["enum"], where
        assert len({json.dumps(v) for v in node["enum"]}) == len(node["enum"]), where
        assert all(isinstance(v, str) for v in node["enum"]) and node.get("type") == "string", where
    if "required" in node:
        assert isinstance(node["required"], list) and len(set(node["required"])) == len(node["required"]), where
        assert set(node["required"]) <= set(node.get("properties", {})), where
    if "additionalProperties" in node:
        assert isinstance(node["additionalProperties"], bool), where
    for name, sub in node.get("properties", {}).items():
        _well_formed(sub, f"{where}.{name}")
    if "items" in node:
        _well_formed(node["items"], f"{where}[]")


@pytest.mark.parametrize("standpoints", [False, True])
def test_every_node_is_a_well_formed_2020_12_schema(standpoints):
    schema = json.loads(schema_text(standpoints))
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    _well_formed(schema)


def test_the_schema_claude_gets_has_no_dialect_key_and_is_otherwise_the_same():
    text = schema_text(False)
    sent = json.loads(without_dialect(text))
    assert "$schema" not in sent
    assert sent == {k: v for k, v in json.loads(text).items() if k != "$schema"}
    assert without_dialect("[1]") == "[1]" and without_dialect("not json") == "not json"
