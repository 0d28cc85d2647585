"""GitLab Code Quality: the CodeClimate subset GitLab reads (pure).

An array of issues with `description`, `check_name`, `fingerprint`,
`severity` and `location.path` + `location.lines.begin`. GitLab has no
suppressions: a finding with a standing disposition keeps its issue with
severity `info` and the disposition at the start of its description, so
nothing disappears from the report. Locations that are not head file lines
use line 1 and say where they are in the description. A finding chain or a
corroborated group is one issue (`other_locations` holds the group's other
findings; the description names them). In a verified round the description ends with
the verdict ("Verification: refuted by codex (V2): ..."): Code Quality has no field for
it, and the severity stays the class's (a verdict changes no class or disposition).
"""

from __future__ import annotations

from typing import Any

from spar.export.collect import Item, justification

SEVERITY = {"defect": "critical", "requirement-question": "major", "hardening": "minor", "note": "info"}


def issue(item: Item) -> dict[str, Any]:
    description = item.message()
    if item.disposition is not None:
        description = f"[{justification(item.disposition)}] {description}"
    begin = _begin(item)
    out: dict[str, Any] = {
        "type": "issue",
        "description": description,
        "check_name": f"spar/{item.cls}",
        "categories": ["Bug Risk"] if item.cls == "defect" else ["Style"] if item.cls == "note" else ["Clarity"],
        "fingerprint": item.fingerprint,
        "severity": "info" if item.disposition is not None else SEVERITY[item.cls],
        "location": {"path": item.path, "lines": {"begin": begin}},
    }
    if item.related:  # a corroborated group is one issue; the others' places as Code Climate has them
        out["other_locations"] = [{"path": r.path, "lines": {"begin": _begin(r)}} for r in item.related]
    return out


def _begin(item: Item) -> int:
    return item.start if item.kind == "head" and item.start else 1


def build(items: list[Item]) -> list[dict[str, Any]]:
    return [issue(i) for i in items]
