"""SARIF 2.1.0 for GitHub code scanning (pure).

One run per reviewer (tool driver "Spar (<reviewer>)", Spar's version, the
reviewer's preset, model and CLI version as driver properties, and an automation id of its
own, naming the reviewer and the series, so GitHub keeps the runs apart). Rules are the four finding classes;
level follows the class. Every finding chain or corroborated group is one
result (`spar.export.collect.merge`), in the run of its first reviewer, with
`relatedLocations` naming each finding of a group; one with a standing
disposition carries it as a suppression (`external`, `accepted`) whose
justification says which and why. Each run has one invocation whose
`executionSuccessful` is false when the reviewer did not complete a round
exported and was not waived; every round it did not complete is a
notification (error, or note when waived). GitHub's documented hard limits (20 runs
per file, 25,000 results per run) are checked before anything is written.

A result of a verified round carries its verdict in `properties` (`verdict`,
`verifier`, `verifier_preset`, `call`, `verification_evidence`; `unverified` says why a
finding got no call) and a `rank` (SARIF 3.27.24: 0.0 to 100.0, higher = more
worth looking at): confirmed 90, unsure or no verdict 50, refuted 10; a group's result
ranks by its best-ranked member, each member's verdict covering it alone. A round never
verified gives neither, so its results are as before verification existed. The level
stays the class's: a verdict never changes a class or a disposition.
"""

from __future__ import annotations

import hashlib
import urllib.parse
from typing import Any

from spar.errors import Refused, quote
from spar.export.collect import CLASSES, Item, ReviewerInfo, Unfinished, justification
from spar.judge.coverage import shortened
from spar.judge.verdicts import rank
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


# SARIF result rank by verdict (confirmed first, refuted last); None: no verdict
RANKS = {"confirmed": 90.0, "unsure": 50.0, None: 50.0, "refuted": 10.0}


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
            "chain": item.chain,
        },
    }
    if item.related:  # a corroborated group: every reviewer's finding named, this one first
        result["relatedLocations"] = [
            dict(_location(member), id=n, message={"text": f"{member.ref} ({member.reviewer}): "
                                                           f"{str(member.finding.get('claim', '')).strip()}"})
            for n, member in enumerate([item, *item.related])]
    if item.verified:
        _verification(result, item)
    if item.disposition is not None:
        result["suppressions"] = [{"kind": "external", "status": "accepted",
                                   "justification": justification(item.disposition)}]
    return result


def _verification(result: dict[str, Any], item: Item) -> None:
    """The verdict of a verified round's result: its rank and properties."""
    v = item.verdict
    # a group ranks by its best-ranked member: each verdict covers its own member alone
    best = min((i.verdict for i in [item, *item.related]), key=rank)
    result["rank"] = RANKS.get(best.verdict if best is not None else None, RANKS[None])
    result["properties"].update({
        "verdict": v.verdict if v is not None else None, "verifier": v.verifier if v is not None else None,
        "verifier_preset": v.preset if v is not None else None, "call": v.call if v is not None else None,
        "verification_evidence": v.said() if v is not None else None, "unverified": item.unverified})


def _notification(u: Unfinished) -> dict[str, Any]:
    # status and reason come from the reviewer's CLI: quoted in the text, raw only as JSON data
    text = f"reviewer {quote(u.reviewer)} did not complete round {quote(u.round)}: {quote(u.status)}, {quote(u.reason)}"
    return {"level": "note" if u.waived else "error",
            "message": {"text": text + (" (waived)" if u.waived else "")},
            "properties": {"reviewer": u.reviewer, "round": u.round, "status": u.status, "reason": u.reason,
                           "waived": u.waived}}


def invocation(info: ReviewerInfo) -> dict[str, Any]:
    """Whether the reviewer's analysis ran: not when, in a round exported, it did not
    complete and nobody waived it (code scanning must not read that as "no problems")."""
    return {"executionSuccessful": all(u.waived for u in info.unfinished),
            "toolExecutionNotifications": [_notification(u) for u in info.unfinished] + _coverage_notes(info)}


def _coverage_notes(info: ReviewerInfo) -> list[dict[str, Any]]:
    """A warning per round of this reviewer in which some changed files were seen by no
    reviewer (issue 24); none when every changed file was seen."""
    return [{"level": "warning", "descriptor": {"id": "spar/unseen-files"},
             "message": {"text": f"round {quote(round_name)}: {len(unseen)} of {total} changed files were seen "
                                 f"by no reviewer: {shortened(unseen)}"},
             "properties": {"round": round_name, "changed_files": total, "unseen": unseen}}
            for round_name, (total, unseen) in info.unseen.items() if unseen]


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
            "invocations": [invocation(info)],
            "results": results,
            "properties": {"rounds": info.rounds},
        })
    return {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": runs}
