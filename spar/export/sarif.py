"""SARIF 2.1.0 for GitHub code scanning (pure).

One run per reviewer (tool driver "Spar (<reviewer>)", Spar's version, the
reviewer's preset, model and CLI version as driver properties, and an automation id of its
own, naming the reviewer and the series, so GitHub keeps the runs apart). Rules are the four finding classes;
level follows the class. Every finding is a result; one with a standing
disposition carries it as a suppression (`external`, `accepted`) whose
justification says which and why. GitHub's documented hard limits (20 runs
per file, 25,000 results per run) are checked before anything is written.
"""

from __future__ import annotations

import hashlib
import urllib.parse
from typing import Any

from spar.errors import Refused
from spar.export.collect import CLASSES, Item, ReviewerInfo, justification
from spar.judge.coverage import shortened
from spar.pathtext import text_bytes

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
MAX_RUNS = 20  # GitHub: runs per file
MAX_RESULTS = 25_000  # GitHub: results per run
FINGERPRINT_KEY = "sparFinding/v1"

LEVELS = {"defect": "error", "requirement-question": "warning", "hardening": "warning", "note": "note"}
RULE_TEXT = {
    "defect": "A defect the change introduces or leaves in what it touches.",
    "requirement-question": "A question about what the requirements ask for.",
    "hardening": "Hardening: more robust than required, deferred unless taken up.",
    "note": "A note with no required action.",
}


def rule_id(cls: str) -> str:
    return f"spar/{cls}"


def _rules() -> list[dict[str, Any]]:
    return [{"id": rule_id(c), "name": c.replace("-", " ").title().replace(" ", ""),
             "shortDescription": {"text": RULE_TEXT[c]},
             "defaultConfiguration": {"level": LEVELS[c]}} for c in CLASSES]


def _location(item: Item) -> dict[str, Any]:
    # a document outside the repository keeps its document name (the message says
    # where it is): code scanning resolves every uri against the repository root
    # a URI reference (SARIF 3.10): the name's own bytes (spar.pathtext's escaped form
    # undone), percent-encoded, so `my notes.md` or `caf\\xe9.txt` is found as that file
    uri = urllib.parse.quote(text_bytes(item.path), safe="/")
    physical: dict[str, Any] = {"artifactLocation": {"uri": uri, "uriBaseId": "%SRCROOT%"}}
    if item.kind == "head" and item.start:
        physical["region"] = {"startLine": item.start, "endLine": max(item.end or item.start, item.start)}
    return {"physicalLocation": physical}


def _result(item: Item) -> dict[str, Any]:
    f = item.finding
    result: dict[str, Any] = {
        "ruleId": rule_id(item.cls),
        "ruleIndex": CLASSES.index(item.cls),
        "level": LEVELS[item.cls],
        "message": {"text": item.message()},
        "locations": [_location(item)],
        "partialFingerprints": {FINGERPRINT_KEY: item.fingerprint},
        "properties": {
            "round": item.round, "finding": item.id, "angle": f.get("angle"),
            "confidence": f.get("confidence"), "introduced_by_change": f.get("introduced_by_change"),
            "location": f.get("location"), "location_kind": item.kind, "class_reason": f.get("class_reason"),
            "evidence": f.get("evidence"), "smallest_fix": f.get("smallest_fix") or None,
            "disposition": item.disposition.get("disposition") if item.disposition else None,
        },
    }
    if item.disposition is not None:
        result["suppressions"] = [{"kind": "external", "status": "accepted",
                                   "justification": justification(item.disposition)}]
    return result


def _coverage_invocation(info: ReviewerInfo) -> dict[str, Any]:
    """A tool notification per round of this reviewer whose changed files some went unseen by
    every reviewer (issue 24); nothing when there is none. The reviewers' runs themselves are
    not judged here, so the invocation says only that Spar ran."""
    notes = [{"level": "warning", "descriptor": {"id": "spar/unseen-files"},
              "message": {"text": f"round {round_name}: {len(unseen)} of {total} changed files were seen "
                                  f"by no reviewer: {shortened(unseen)}"},
              "properties": {"round": round_name, "changed_files": total, "unseen": unseen}}
             for round_name, (total, unseen) in info.unseen.items() if unseen]
    if not notes:
        return {}
    return {"invocations": [{"executionSuccessful": True, "toolExecutionNotifications": notes}]}


def automation_id(name: str, info: ReviewerInfo) -> str:
    """The run's category: the reviewer and the series it reviewed (hashed), so code
    scanning keeps two series' analyses apart instead of one replacing the other."""
    series = hashlib.sha256("\n".join(sorted(info.series_ids)).encode()).hexdigest()[:16]
    return f"spar/{series}/{name}/"


def build(items: list[Item], reviewers: dict[str, ReviewerInfo]) -> dict[str, Any]:
    names = list(reviewers)
    if len(names) > MAX_RUNS:
        raise Refused(f"{len(names)} reviewers make {len(names)} SARIF runs; GitHub accepts at most {MAX_RUNS} "
                      "per file: export fewer rounds or split them")
    runs = []
    for name in names:
        info = reviewers[name]
        results = [_result(i) for i in items if i.reviewer == name]
        if len(results) > MAX_RESULTS:
            raise Refused(f"reviewer {name} has {len(results)} results; GitHub accepts at most "
                          f"{MAX_RESULTS} per run: export fewer rounds")
        runs.append({
            "tool": {"driver": {
                "name": f"Spar ({name})",
                "version": info.spar_version or "unknown",
                "rules": _rules(),
                "properties": {"reviewer": name, "preset": info.preset, "model": info.model or None,
                               "observed_model": info.observed_model, "cli_version": info.cli_version},
            }},
            "automationDetails": {"id": automation_id(name, info)},
            **_coverage_invocation(info),
            "results": results,
            "properties": {"rounds": info.rounds},
        })
    return {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": runs}
