"""Reading records back (G32).

Every reader raises RecordError naming the file (and line, for JSONL) when a
record is missing, not JSON or of another schema; commands refuse on it and
`spar gate` turns it into a blocked reason. Older records without fields added
later read as their documented meaning: no standpoints, locations that were
read, no smallest fix, extensions with no recorded cause.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, TypeGuard, cast

from spar.errors import RecordError, quote
from spar.judge.refs import trim
from spar.records import jsonl
from spar.records.model import ExtensionLine, Finding, LedgerLine, RoundRecord, WaiverLine

ROUND_SCHEMA = "review-round/v1"
STAGES = ("plan", "plan-delta", "code")
DISPOSITIONS = ("fixed", "duplicate", "rejected", "deferred", "answered")

ROUND_FILE = "round.json"
FINDINGS_FILE = "findings.json"
LEDGER_FILE = "ledger.jsonl"
WAIVERS_FILE = "waivers.jsonl"
EXTENSIONS_FILE = "extensions.jsonl"


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def read_json(path: Path) -> Any:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise RecordError(f"{path}: missing") from None
    except OSError as exc:
        raise RecordError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        return json.loads(data.decode("utf-8"), parse_constant=_no_constants)
    except UnicodeDecodeError:
        raise RecordError(f"{path}: not UTF-8") from None
    except ValueError as exc:
        raise RecordError(f"{path}: not JSON ({exc})") from None


def _is_str(value: object) -> TypeGuard[str]:
    return isinstance(value, str)


def read_round(round_dir: Path | str) -> RoundRecord:
    """round.json as written by this spar; standpoint fields default to "none"."""
    path = Path(round_dir) / ROUND_FILE
    data = read_json(path)
    if not isinstance(data, dict):
        raise RecordError(f"{path}: not a JSON object")
    if data.get("schema") != ROUND_SCHEMA:
        got = data.get("schema")
        shown = quote(got) if isinstance(got, str) else "missing"
        raise RecordError(f"{path}: not a {ROUND_SCHEMA} record (schema {shown})")
    # the keys every reader relies on; anything else is kept as written
    for key in ("name", "base", "head"):
        if not _is_str(data.get(key)):
            raise RecordError(f"{path}: {key} is missing or not a string")
    if data.get("stage") not in STAGES:
        raise RecordError(f"{path}: stage is missing or not one of {', '.join(STAGES)}")
    reviewers = data.get("reviewers")
    if not isinstance(reviewers, list):
        raise RecordError(f"{path}: reviewers is missing or not a list")
    for number, entry in enumerate(reviewers, start=1):
        if not isinstance(entry, dict) or not _is_str(entry.get("name")) or not _is_str(entry.get("status")):
            raise RecordError(f"{path}: reviewer {number} is not an object with a name and a status")
        entry.setdefault("standpoint", None)
        entry.setdefault("standpoint_report", None)
    data.setdefault("standpoints", [])
    data.setdefault("standpoints_uncovered", [])
    data.setdefault("decisions", [])
    return cast(RoundRecord, data)


def read_findings(round_dir: Path | str, *, missing_ok: bool = False) -> list[Finding]:
    """findings.json; a finding without location_unreadable had its location read.
    A missing smallest_fix is left absent (absent and "" both mean no direction)."""
    path = Path(round_dir) / FINDINGS_FILE
    if missing_ok and not path.exists() and not path.is_symlink():
        return []
    data = read_json(path)
    if not isinstance(data, list):
        raise RecordError(f"{path}: not a JSON array")
    for number, finding in enumerate(data, start=1):
        if not isinstance(finding, dict) or not _is_str(finding.get("id")):
            raise RecordError(f"{path}: finding {number} is not an object with an id")
        finding.setdefault("location_unreadable", False)
    return cast(list[Finding], data)


def _line_error(path: Path, number: int, what: str) -> RecordError:
    return RecordError(f"{path}:{number}: {what}")


def read_ledger(round_dir: Path | str) -> list[LedgerLine]:
    """ledger.jsonl in file order; a round without one has no dispositions."""
    path = Path(round_dir) / LEDGER_FILE
    lines = jsonl.read(path, missing_ok=True)
    for number, line in enumerate(lines, start=1):
        if not _is_str(line.get("finding")) or not line["finding"]:
            raise _line_error(path, number, "finding is missing or not a string")
        if line.get("disposition") not in DISPOSITIONS:
            raise _line_error(path, number, f"disposition is not one of {', '.join(DISPOSITIONS)}")
    return cast(list[LedgerLine], lines)


def read_waivers(round_dir: Path | str) -> list[WaiverLine]:
    """waivers.jsonl; none means no decision. Every line needs reviewer, preset and
    a user_quote that is not blank."""
    path = Path(round_dir) / WAIVERS_FILE
    lines = jsonl.read(path, missing_ok=True)
    for number, line in enumerate(lines, start=1):
        for key in ("reviewer", "preset"):
            if not _is_str(line.get(key)) or not trim(line[key]):
                raise _line_error(path, number, f"{key} is missing or empty")
        quote_text = line.get("user_quote")
        # whitespace as Go's unicode.IsSpace (str.strip() would also remove U+001C..U+001F)
        if not _is_str(quote_text) or not trim(quote_text):
            raise _line_error(path, number, "user_quote is missing or empty")
    return cast(list[WaiverLine], lines)


def read_extensions(series: Path | str) -> list[ExtensionLine]:
    """extensions.jsonl of a series; a line without cause/reason is an extension
    with no recorded cause (both then read as None)."""
    path = Path(series) / EXTENSIONS_FILE
    lines = jsonl.read(path, missing_ok=True)
    for number, line in enumerate(lines, start=1):
        if line.get("stage") not in STAGES:
            raise _line_error(path, number, f"stage is not one of {', '.join(STAGES)}")
        by = line.get("by")
        if not isinstance(by, int) or isinstance(by, bool) or by < 1:
            raise _line_error(path, number, "by is not an integer of 1 or more")
        for key in ("cause", "reason"):
            if line.get(key) is not None and not _is_str(line[key]):
                raise _line_error(path, number, f"{key} is not a string")
            line.setdefault(key, None)
    return cast(list[ExtensionLine], lines)


def series_rounds(series: Path | str) -> list[Path]:
    """Round folders of a series: sub-folders holding a round.json, sorted by name.
    A series that does not exist yet has no rounds."""
    series = Path(series)
    try:
        children = list(series.iterdir())
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise RecordError(f"{series}: cannot read: {exc.strerror or exc}") from None
    # any round.json counts, so a damaged one surfaces as unreadable instead of vanishing
    rounds = [c for c in children if c.is_dir() and os.path.lexists(c / ROUND_FILE)]
    return sorted(rounds, key=lambda p: p.name)
