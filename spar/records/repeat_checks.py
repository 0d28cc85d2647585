"""repeat-checks.json: what verifiers of another vendor said of a round's repeats ("same
problem as the earlier finding?"), its shape and its reader (docs/records.md
"repeat-checks.json"). The rules that use it live in spar/judge/settle.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypedDict, cast

from spar.errors import RecordError
from spar.records.model import Attempt
from spar.records.readers import REPEAT_CHECKS_FILE, read_json

REPEAT_CHECKS_SCHEMA = "spar-repeat-checks/v1"
REPEAT_VERDICTS = ("same", "different", "unsure")
UNCHECKED_WHY = ("max_findings", "max_cost_usd", "no_other_vendor")


class RepeatCheck(TypedDict):
    """One call: a later finding, the earlier finding it repeats, the verifier's verdict."""

    call: str  # R1, R2, ... in start order
    finding: str  # the repeat, a finding of this round
    earlier: str  # ROUND/ID of the finding it repeats (findings.json `repeat_of`)
    verifier: str
    preset: str  # the verifier's preset (its vendor)
    status: str  # a recorded ReviewerStatus value of the call
    verdict: str  # one of REPEAT_VERDICTS; "unsure" when the call gave no valid answer
    evidence: str  # the verifier's words ("" without a valid answer)
    reason: str  # why "unsure" without a valid answer; "" otherwise
    attempts: list[Attempt]


class Unchecked(TypedDict):
    finding: str
    earlier: str
    why: str  # one of UNCHECKED_WHY


class RepeatChecksRecord(TypedDict):
    schema: str
    round: str
    started_at: str
    finished_at: str
    verifiers: list[str]
    calls: list[RepeatCheck]
    unchecked: list[Unchecked]


_TEXT = ("call", "finding", "earlier", "verifier", "preset", "status", "evidence", "reason")


def _call_problem(call: Any) -> str | None:
    if not isinstance(call, dict):
        return "a call is not an object"
    if any(not isinstance(call.get(key), str) for key in _TEXT):
        return f"call {call.get('call')!r}: {', '.join(_TEXT)} must be strings"
    if call.get("verdict") not in REPEAT_VERDICTS:
        return f"call {call['call']!r}: verdict is not one of {', '.join(REPEAT_VERDICTS)}"
    if not isinstance(call.get("attempts"), list):
        return f"call {call['call']!r}: attempts is not a list"
    return None


def repeat_checks_problem(record: Any, finding_ids: set[str]) -> str | None:
    """The record as Spar writes it: its schema, every call and unchecked entry naming a
    finding of the round, each finding at most once."""
    if not isinstance(record, dict) or record.get("schema") != REPEAT_CHECKS_SCHEMA:
        return f"not a {REPEAT_CHECKS_SCHEMA} record"
    calls, unchecked = record.get("calls"), record.get("unchecked")
    if not isinstance(calls, list) or not isinstance(unchecked, list):
        return "calls or unchecked is missing or not a list"
    seen: set[str] = set()
    for call in calls:
        problem = _call_problem(call)
        if problem:
            return problem
    for entry in unchecked:
        if not isinstance(entry, dict) or entry.get("why") not in UNCHECKED_WHY or not all(
                isinstance(entry.get(k), str) for k in ("finding", "earlier")):
            return "an unchecked entry is not {finding, earlier, why} with a known why"
    for entry in [*calls, *unchecked]:
        if entry["finding"] not in finding_ids:
            return f"{entry['finding']!r} is not a finding of the round"
        if entry["finding"] in seen:
            return f"{entry['finding']!r} is named twice"
        seen.add(entry["finding"])
    return None


def read_repeat_checks(round_dir: Path | str, finding_ids: set[str]) -> RepeatChecksRecord | None:
    """repeat-checks.json, or None when the round's repeats were never put to a verifier."""
    path = Path(round_dir) / REPEAT_CHECKS_FILE
    if not path.exists() and not path.is_symlink():
        return None
    data = read_json(str(path))
    problem = repeat_checks_problem(data, finding_ids)
    if problem:
        raise RecordError(f"{path}: {problem}")
    return cast(RepeatChecksRecord, data)
