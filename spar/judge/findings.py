"""Building findings.json entries from a validated result (docs/records.md).

Each entry: id, reviewer, reviewer_id, the item's keys (link_kind/link set to
none/"" when the link is unconfirmed), path, in_check_paths, location_unreadable,
class, class_reason, claimed_link_kind, claimed_link (the reviewer's own values).
"""

from __future__ import annotations

import json
from typing import Any, cast

from spar.globs import match_any
from spar.judge.classify import classify
from spar.judge.context import RoundContext
from spar.judge.locate import confirm_link, locate
from spar.judge.result import FINDING_KEYS, FINDING_OPTIONAL
from spar.records.model import Finding

_ITEM_KEYS = tuple(k for k in FINDING_KEYS if k != "id") + FINDING_OPTIONAL


def build_finding(reviewer: str, n: int, item: dict[str, Any], ctx: RoundContext) -> Finding:
    """The findings.json entry `<reviewer>-F<n>` for one validated finding item."""
    located = locate(item["location"], ctx)
    confirmed = confirm_link(item["link_kind"], item["link"], ctx)
    # the repository root ("") is never a check path, nor is an unreadable location
    in_check_paths = (not located.unreadable and located.path != ""
                      and match_any(ctx.check_paths, located.path))
    cls, reason = classify(item, in_check_paths=in_check_paths, link_confirmed=confirmed,
                           unreadable=located.unreadable, why=located.why)
    entry: dict[str, Any] = {"id": f"{reviewer}-F{n}", "reviewer": reviewer, "reviewer_id": item["id"]}
    for key in _ITEM_KEYS:
        if key in item:
            entry[key] = item[key]
    if not confirmed:
        entry["link_kind"], entry["link"] = "none", ""
    entry.update({
        "path": located.path,
        "in_check_paths": in_check_paths,
        "location_unreadable": located.unreadable,
        "class": cls,
        "class_reason": reason,
        "claimed_link_kind": item["link_kind"],
        "claimed_link": item["link"],
    })
    return cast(Finding, entry)


def build_findings(reviewer: str, result: dict[str, Any], ctx: RoundContext) -> list[Finding]:
    """Entries for every finding of one reviewer's validated result, numbered from 1."""
    return [build_finding(reviewer, n, item, ctx) for n, item in enumerate(result["findings"], 1)]


def auto_deferrals(findings: list[Finding]) -> list[str]:
    """IDs deferred automatically when the round is recorded: hardening findings whose
    location was read (an unreadable hardening finding keeps no disposition, §4)."""
    return [f["id"] for f in findings
            if f["class"] == "hardening" and not f.get("location_unreadable", False)]


def demoted_for_link(finding: Finding) -> bool:
    """A proposed defect kept as a note because its link was not confirmed (rule 6)."""
    return finding["class"] == "note" and finding["class_reason"].startswith("rule 6")


def demotion_line(finding: Finding, where: str = "") -> str:
    """What every view says of a finding `demoted_for_link` (`where`: its round, when shown)."""
    kind = finding.get("claimed_link_kind", "none")
    link = finding.get("claimed_link", "")
    said = f"its {kind} link {json.dumps(link, ensure_ascii=False)}" if link else "it has no link"
    return (f"{where}{finding['id']} was proposed as a defect but is kept as a note: {said} names no rule "
            "document, rule ID or contract file Spar found")
