"""Interpreting `ha capabilities --format json` (core-capabilities contract §1).

Pure: given how the query ended (exit code, stdout bytes, timed out), say
whether the answer can be interpreted and whether that Core reads the gate
Spar writes (`review-gate/v1`: in `formats.review_gate`, the `review-gate/v1`
feature, and `run-rules/5` supported, §9). Anything the contract calls
uninterpretable — another schema, a missing or mistyped required field, a
list with a duplicate or an empty string, `default_rules` outside
`supported_rules`, duplicate JSON keys, corrupt or trailing data — is never a
successful check, and neither is a version print or any exit but 0 (64 is
the query being unsupported by an older Core).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from spar.jsonvalue import no_constants

SCHEMA = "ha-capabilities/v1"
QUERY_ARGS = ("capabilities", "--format", "json")
EXIT_UNSUPPORTED = 64

REQUIRED_FORMATS = ("criteria", "check_declaration", "check_result", "check_evidence")
# optional in §1; finding (§4) and decision_history (§5) are format lists the contract defines elsewhere
OPTIONAL_FORMATS = ("timing", "assurance_tier", "core_requirements", "review_gate", "finding", "decision_history")

GATE_FORMAT = "review-gate/v1"
GATE_FEATURE = "review-gate/v1"
GATE_RULES = "run-rules/5"


@dataclass
class Capabilities:
    """The outcome of one query. `state`: `ok` (interpreted), `unsupported`
    (exit 64), `failed` (another exit, could not start), `timeout`, `invalid`
    (exit 0 but not interpretable)."""

    state: str
    reason: str = ""
    ha_version: str | None = None
    supported_rules: list[str] = field(default_factory=list)
    default_rules: str | None = None
    formats: dict[str, list[str]] = field(default_factory=dict)
    features: list[str] = field(default_factory=list)

    @property
    def missing_for_gate(self) -> list[str]:
        """What this Core lacks to read review-gate/v1 (empty: it reads it)."""
        if self.state != "ok":
            return []
        missing = []
        if GATE_FORMAT not in self.formats.get("review_gate", []):
            missing.append(f"formats.review_gate {GATE_FORMAT}")
        if GATE_FEATURE not in self.features:
            missing.append(f"features {GATE_FEATURE}")
        if GATE_RULES not in self.supported_rules:
            missing.append(f"supported_rules {GATE_RULES}")
        return missing

    @property
    def reads_review_gate(self) -> bool:
        return self.state == "ok" and not self.missing_for_gate


class _Invalid(Exception):
    pass


def _no_duplicates(pairs: list[tuple[str, object]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _Invalid(f"duplicate key {json.dumps(key)}")
        out[key] = value
    return out


def _string_list(value: object, where: str) -> list[str]:
    if not isinstance(value, list):
        raise _Invalid(f"{where} is not a list")
    seen: set[str] = set()
    for item in value:
        if not isinstance(item, str):
            raise _Invalid(f"{where} holds a value that is not a string")
        if not item:
            raise _Invalid(f"{where} holds an empty string")
        if item in seen:
            raise _Invalid(f"{where} holds {json.dumps(item)} twice")
        seen.add(item)
    return list(value)


def parse_capabilities(stdout: bytes) -> dict[str, Any]:
    """One JSON object, then only whitespace; duplicate keys and NaN refused."""
    try:
        text = stdout.decode("utf-8")
    except UnicodeDecodeError:
        raise _Invalid("the output is not UTF-8") from None
    try:
        value, end = json.JSONDecoder(object_pairs_hook=_no_duplicates,
                                      parse_constant=no_constants).raw_decode(text.lstrip(" \t\r\n"))
    except ValueError as err:
        raise _Invalid(f"the output is not JSON ({err})") from None
    if text.lstrip(" \t\r\n")[end:].strip(" \t\r\n"):
        raise _Invalid("trailing data after the JSON object")
    if not isinstance(value, dict):
        raise _Invalid("the output is not a JSON object")
    return value


def interpret(exit_code: int | None, stdout: bytes, *, timed_out: bool = False) -> Capabilities:
    if timed_out:
        return Capabilities("timeout", "no answer within the time limit")
    if exit_code == EXIT_UNSUPPORTED:
        return Capabilities("unsupported", "exit 64: this Core has no capability query (older than v0.1.3)")
    if exit_code != 0:
        shown = "killed" if exit_code is None else f"exit {exit_code}"
        return Capabilities("failed", f"the query failed ({shown})")
    try:
        return _fields(parse_capabilities(stdout))
    except _Invalid as err:
        return Capabilities("invalid", f"cannot be interpreted: {err}")


def _fields(value: dict[str, Any]) -> Capabilities:
    if "schema" not in value:
        raise _Invalid("schema is missing")
    if value["schema"] != SCHEMA:
        raise _Invalid(f"schema {json.dumps(value['schema'])} is not {SCHEMA}")
    version = value.get("ha_version")
    if not isinstance(version, str) or not version:
        raise _Invalid("ha_version is missing, not a string or empty")
    if "supported_rules" not in value:
        raise _Invalid("supported_rules is missing")
    rules = _string_list(value["supported_rules"], "supported_rules")
    default = value.get("default_rules")
    if not isinstance(default, str) or not default:
        raise _Invalid("default_rules is missing, not a string or empty")
    if default not in rules:
        raise _Invalid(f"default_rules {json.dumps(default)} is not in supported_rules")
    formats_value = value.get("formats")
    if not isinstance(formats_value, dict):
        raise _Invalid("formats is missing or not an object")
    formats: dict[str, list[str]] = {}
    for key in REQUIRED_FORMATS:
        if key not in formats_value:
            raise _Invalid(f"formats.{key} is missing")
        formats[key] = _string_list(formats_value[key], f"formats.{key}")
    for key in OPTIONAL_FORMATS:
        if key in formats_value:
            formats[key] = _string_list(formats_value[key], f"formats.{key}")
    if "features" not in value:
        raise _Invalid("features is missing")
    features = _string_list(value["features"], "features")
    return Capabilities("ok", "", version, rules, default, formats, features)
