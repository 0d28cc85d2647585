"""Validation of one reviewer's result object: rows G1–G6 and the standpoint report.

A result outside the format is `invalid_output`; the reason always names the key
at fault (`findings[2].check_impact: ...`, `missing key reviewed_head`).
`could_not_review` is a valid verdict: the caller records it as failed.

Decisions the rows leave open:
- A repeated key in the reviewer's JSON never reaches this check: the one answer
  rule (spar/judge/answer.py) makes it invalid_output, as it does for a verifier's.
- A string holding a lone UTF-16 surrogate (JSON `"\ud800"`) is accepted with
  the surrogate replaced by U+FFFD, as Go's encoding/json decodes it; kept
  as is, it could not be written to findings.json as UTF-8.
"""

from __future__ import annotations

from typing import Any

from spar.config.model import ANGLES, DEFAULT_MAX_FINDINGS
from spar.errors import quote
from spar.whitespace import is_blank

RESULT_KEYS = ("reviewed_head", "verdict", "angles_checked", "angles_unchecked", "findings", "limits")
VERDICTS = ("no_blocking_findings", "blocking_findings", "could_not_review")
CLASSES = ("defect", "hardening", "note", "requirement-question")
CHECK_IMPACTS = ("none", "false_pass", "meaning_inverted", "contract_violation")
LINK_KINDS = ("criterion", "rule", "contract", "none")
YES_NO_UNKNOWN = ("yes", "no", "unknown")
CONFIDENCES = ("high", "medium", "low")

FINDING_KEYS = ("id", "proposed_class", "angle", "location", "claim", "failure_scenario",
                "evidence", "link_kind", "link", "introduced_by_change", "regression",
                "check_impact", "confidence")
FINDING_OPTIONAL = ("smallest_fix",)
FINDING_ENUMS = {
    "proposed_class": CLASSES,
    "angle": ANGLES,
    "link_kind": LINK_KINDS,
    "introduced_by_change": YES_NO_UNKNOWN,
    "regression": YES_NO_UNKNOWN,
    "check_impact": CHECK_IMPACTS,
    "confidence": CONFIDENCES,
}
ANGLE_ITEM_KEYS = {"angles_checked": ("angle", "result"), "angles_unchecked": ("angle", "reason")}
STANDPOINT_KEYS = ("checked", "detail")
MIN_HEAD_CHARS = 7


class InvalidOutput(Exception):
    """The result is not used; `.reason` names the key at fault."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def json_type(value: object) -> str:
    """The JSON name of a value's type (bool before int: bool is an int in Python)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _check_keys(obj: dict[str, Any], where: str, required: tuple[str, ...], optional: tuple[str, ...] = ()) -> None:
    """Missing keys in their fixed order first, then unknown keys sorted (so the reason
    never depends on the order the reviewer wrote them in)."""
    prefix = f"{where}: " if where else ""
    for key in required:
        if key not in obj:
            raise InvalidOutput(f"{prefix}missing key {key}")
    allowed = set(required) | set(optional)
    unknown = sorted(str(k) for k in obj if k not in allowed)
    if unknown:
        raise InvalidOutput(f"{prefix}unknown key {quote(unknown[0])}")


def _string(value: object, where: str) -> str:
    if not isinstance(value, str):
        raise InvalidOutput(f"{where}: {json_type(value)}, not a string")
    return value


def _enum(value: object, where: str, allowed: tuple[str, ...]) -> str:
    text = _string(value, where)
    if text not in allowed:
        raise InvalidOutput(f"{where}: {quote(text)} is not one of {', '.join(allowed)}")
    return text


def _object(value: object, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise InvalidOutput(f"{where}: {json_type(value)}, not an object")
    return value


def _list(value: object, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise InvalidOutput(f"{where}: {json_type(value)}, not a list")
    return value


def _reviewed_head(value: object, packet_head: str) -> str:
    head = _string(value, "reviewed_head")
    if len(head) < MIN_HEAD_CHARS:
        raise InvalidOutput(f"reviewed_head: {quote(head)} is shorter than {MIN_HEAD_CHARS} characters")
    if not packet_head.startswith(head):
        raise InvalidOutput(f"reviewed_head: {quote(head)} is not the beginning of the packet's "
                            f"head {packet_head}")
    return head


def _angle_items(result: dict[str, Any], requested_angles: list[str]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    seen: set[str] = set()
    for key, item_keys in ANGLE_ITEM_KEYS.items():
        items = []
        for i, raw in enumerate(_list(result[key], key)):
            where = f"{key}[{i}]"
            item = _object(raw, where)
            _check_keys(item, where, item_keys)
            for k in item_keys:
                _string(item[k], f"{where}.{k}")
            _enum(item["angle"], f"{where}.angle", ANGLES)
            seen.add(item["angle"])
            items.append({k: item[k] for k in item_keys})
        out[key] = items
    for angle in requested_angles:
        if angle not in seen:
            raise InvalidOutput(f"angles_checked, angles_unchecked: requested angle {quote(angle)} "
                                "is in neither list")
    return out


def _finding(raw: object, i: int) -> dict[str, Any]:
    where = f"findings[{i}]"
    item = _object(raw, where)
    _check_keys(item, where, FINDING_KEYS, FINDING_OPTIONAL)
    for key in FINDING_KEYS + FINDING_OPTIONAL:
        if key in item:
            _string(item[key], f"{where}.{key}")
    for key, allowed in FINDING_ENUMS.items():
        _enum(item[key], f"{where}.{key}", allowed)
    if is_blank(item["failure_scenario"]):
        raise InvalidOutput(f"{where}.failure_scenario: empty or whitespace only")
    if item["link_kind"] == "none" and item["link"] != "":
        # design §2: a finding with link_kind none must have link ""
        raise InvalidOutput(f"{where}.link: {quote(item['link'])} with link_kind none (must be \"\")")
    return {k: item[k] for k in FINDING_KEYS + FINDING_OPTIONAL if k in item}


def _standpoint_report(value: object) -> dict[str, Any]:
    where = "standpoint_report"
    if value is None:
        raise InvalidOutput(f"{where}: null, but this reviewer has a standpoint")
    report = _object(value, where)
    _check_keys(report, where, STANDPOINT_KEYS)
    if not isinstance(report["checked"], bool):
        raise InvalidOutput(f"{where}.checked: {json_type(report['checked'])}, not a boolean")
    detail = _string(report["detail"], f"{where}.detail")
    if is_blank(detail):
        raise InvalidOutput(f"{where}.detail: empty or whitespace only")
    return {"checked": report["checked"], "detail": detail}


def _clean(value: Any) -> Any:
    """The accepted value with lone surrogates replaced by U+FFFD (see above)."""
    if isinstance(value, str):
        if any(0xD800 <= ord(ch) <= 0xDFFF for ch in value):
            return "".join("\ufffd" if 0xD800 <= ord(ch) <= 0xDFFF else ch for ch in value)
        return value
    if isinstance(value, list):
        return [_clean(v) for v in value]
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    return value


def validate_result(obj: object, *, packet_head: str, requested_angles: list[str],
                    standpoints_active: bool, assigned: bool,
                    max_findings: int = DEFAULT_MAX_FINDINGS) -> dict[str, Any]:
    """The accepted result (a new dict in the fixed key order) or InvalidOutput.

    `standpoint_report` is always present in the returned dict: the validated report
    of an assigned reviewer, else None (an unassigned reviewer's report is not
    checked; without standpoints the key is unknown in the input). More findings than
    `max_findings` is invalid_output, counted before any finding is looked at."""
    if not isinstance(obj, dict):
        raise InvalidOutput(f"result: {json_type(obj)}, not a JSON object")
    optional = ("standpoint_report",) if standpoints_active else ()
    if standpoints_active and assigned and "standpoint_report" not in obj:
        _check_keys(obj, "", RESULT_KEYS)  # a missing required key is named first
        raise InvalidOutput("missing key standpoint_report (this reviewer has a standpoint)")
    _check_keys(obj, "", RESULT_KEYS, optional)
    head = _reviewed_head(obj["reviewed_head"], packet_head)
    verdict = _enum(obj["verdict"], "verdict", VERDICTS)
    angles = _angle_items(obj, requested_angles)
    raw_findings = _list(obj["findings"], "findings")
    if len(raw_findings) > max_findings:
        raise InvalidOutput(f"findings: {len(raw_findings)} findings, more than the {max_findings} this reviewer "
                            "may report (max_findings); none is recorded")
    findings = [_finding(raw, i) for i, raw in enumerate(raw_findings)]
    limits = _string(obj["limits"], "limits")
    report = None
    if standpoints_active and assigned:
        report = _standpoint_report(obj["standpoint_report"])
    accepted: dict[str, Any] = _clean({
        "reviewed_head": head,
        "verdict": verdict,
        "angles_checked": angles["angles_checked"],
        "angles_unchecked": angles["angles_unchecked"],
        "findings": findings,
        "limits": limits,
        "standpoint_report": report,
    })
    return accepted


def is_could_not_review(result: dict[str, Any]) -> bool:
    """G3: a valid result that is recorded as failed."""
    return result.get("verdict") == "could_not_review"
