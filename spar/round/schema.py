"""`schema.json`: JSON Schema 2020-12 of the G1 result object.

Written in the strict form codex's `--output-schema` needs: every property is
in `required` and `additionalProperties` is false. So `smallest_fix` is listed
as required (the runtime check still accepts it absent; "" means no direction)
and, in standpoint rounds only, `standpoint_report` is `["object","null"]`
(an unassigned reviewer answers null). The runtime checks stay in
`spar.judge.result`; this file only guides the reviewers' CLIs.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from spar.config.model import ANGLES

# one source for every enumeration and key: the validator's
from spar.judge.result import (
    CHECK_IMPACTS,
    CLASSES,
    CONFIDENCES,
    FINDING_KEYS,
    FINDING_OPTIONAL,
    LINK_KINDS,
    RESULT_KEYS,
    VERDICTS,
    YES_NO_UNKNOWN,
)


def _string(description: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "string"}
    if description:
        out["description"] = description
    return out


def _enum(values: Iterable[str], description: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "string", "enum": list(values)}
    if description:
        out["description"] = description
    return out


def _object(properties: dict[str, Any], description: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }
    if description:
        out["description"] = description
    return out


def _finding() -> dict[str, Any]:
    props = {
        "id": _string("your own id for this finding"),
        "proposed_class": _enum(CLASSES),
        "angle": _enum(ANGLES),
        "location": _string("where: head/PATH:LINE, base/PATH:LINE, head/PATH:START-END, or a document name"),
        "claim": _string("what is wrong"),
        "failure_scenario": _string("how it fails; not blank"),
        "evidence": _string("what you read that shows it"),
        "link_kind": _enum(LINK_KINDS),
        "link": _string('AC-n for criterion; PATH[:LINE[-END]] for rule/contract; "" for none'),
        "introduced_by_change": _enum(YES_NO_UNKNOWN),
        "regression": _enum(YES_NO_UNKNOWN),
        "check_impact": _enum(CHECK_IMPACTS),
        "confidence": _enum(CONFIDENCES),
        "smallest_fix": _string('the smallest change that would fix it; "" for no direction'),
    }
    # the validator's key order, so the two can never drift apart silently
    return _object({key: props[key] for key in FINDING_KEYS + FINDING_OPTIONAL})


def result_schema(standpoints: bool) -> dict[str, Any]:
    """The schema as a dict; `standpoints` adds `standpoint_report` (standpoint rounds only)."""
    props: dict[str, Any] = {
        "reviewed_head": _string("the head commit ID of the packet (7 or more leading characters)"),
        "verdict": _enum(VERDICTS),
        "angles_checked": {
            "type": "array",
            "items": _object({"angle": _enum(ANGLES), "result": _string()}),
        },
        "angles_unchecked": {
            "type": "array",
            "items": _object({"angle": _enum(ANGLES), "reason": _string()}),
        },
        "findings": {"type": "array", "items": _finding()},
        "limits": _string("what you could not check; may be empty"),
    }
    props = {key: props[key] for key in RESULT_KEYS}
    if standpoints:
        report = _object(
            {"checked": {"type": "boolean"}, "detail": _string("what was checked, or why it could not be")},
            "your standpoint's report; null when no standpoint is assigned to you",
        )
        report["type"] = ["object", "null"]
        props["standpoint_report"] = report
    schema = {"$schema": "https://json-schema.org/draft/2020-12/schema", "title": "Spar review result"}
    schema.update(_object(props))
    return schema


def schema_text(standpoints: bool) -> str:
    """The bytes of `schema.json` (as text): stable key order, two-space indent, final newline."""
    return json.dumps(result_schema(standpoints), indent=2, ensure_ascii=False) + "\n"


def without_dialect(text: str) -> str:
    """The schema text without its `"$schema"` key (for claude's --json-schema: with that key
    Claude Code 2.1.197 offers the model no StructuredOutput tool at all, so the review came
    back as free text). Text that is no JSON object is returned as it is."""
    try:
        schema = json.loads(text)
    except ValueError:
        return text
    if not isinstance(schema, dict) or "$schema" not in schema:
        return text
    del schema["$schema"]
    return json.dumps(schema, ensure_ascii=False)
