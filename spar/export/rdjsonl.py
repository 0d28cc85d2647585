"""reviewdog's rdjsonl: one Diagnostic JSON object per line (pure).

`message` holds the claim, the failure and, when the reviewer gave one, the
smallest fix as text ("Smallest fix: ..."): a reviewdog `suggestions` entry
would replace the code in its range with that text, and a smallest fix is a
direction in words, not code. Severity follows the class; a finding with a
standing disposition is INFO with the disposition in front. `location.range`
holds the lines of head file locations; other locations use the path alone
(reviewdog reports them on the file, or at the root for "."). A finding chain or
a corroborated group is one diagnostic, the group's others in `related_locations`.
In a verified round the message ends with the verdict ("Verification: refuted by
codex (V2): ...") and `original_output` names `verdict` and `call` too; reviewdog
has no rank, so the severity stays the class's.
"""

from __future__ import annotations

import json
from typing import Any

from spar.export.collect import Item, justification

SEVERITY = {"defect": "ERROR", "requirement-question": "WARNING", "hardening": "WARNING", "note": "INFO"}


def diagnostic(item: Item) -> dict[str, Any]:
    message = item.message()
    fix = str(item.finding.get("smallest_fix") or "").strip()
    if fix:
        message += f"\n\nSmallest fix: {fix}"
    if item.disposition is not None:
        message = f"[{justification(item.disposition)}] {message}"
    out: dict[str, Any] = {
        "message": message,
        "location": _location(item),
        "severity": "INFO" if item.disposition is not None else SEVERITY[item.cls],
        "source": {"name": f"spar/{item.reviewer}"},
        "code": {"value": item.cls},
        "original_output": json.dumps(_origin(item)),
    }
    if item.related:  # a corroborated group is one diagnostic
        out["related_locations"] = [{"message": f"{r.ref} ({r.reviewer})", "location": _location(r)}
                                    for r in item.related]
    return out


def _origin(item: Item) -> dict[str, Any]:
    origin: dict[str, Any] = {"round": item.round, "finding": item.id}
    if item.verified:
        origin.update(verdict=item.verdict.verdict if item.verdict else None,
                      call=item.verdict.call if item.verdict else None)
    return origin


def _location(item: Item) -> dict[str, Any]:
    location: dict[str, Any] = {"path": item.path}
    if item.kind == "head" and item.start:
        location["range"] = {"start": {"line": item.start}, "end": {"line": max(item.end or item.start, item.start)}}
    return location


def build(items: list[Item]) -> str:
    return "".join(json.dumps(diagnostic(i), ensure_ascii=False) + "\n" for i in items)
