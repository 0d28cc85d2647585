"""Does a series converge? Per-round counts, a per-stage verdict and a reviewer
scoreboard, over records already read (pure; `spar cap-report`, docs/records.md).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from spar.records.model import Finding

ENDINGS = ("fixed", "answered", "rejected", "duplicate", "deferred", "open")


def round_convergence(findings: list[Finding]) -> dict[str, Any] | None:
    """{new, repeat, corroborated, groups} of one recorded round; None when its findings
    were recorded before repeats and corroboration existed (nothing is known)."""
    if any("repeat_of" not in f and "corroborated_by" not in f for f in findings):
        return None
    repeat = sum(1 for f in findings if isinstance(f.get("repeat_of"), dict))
    grouped = [f for f in findings if f.get("corroborated_by")]
    members = {f.get("id") for f in grouped}
    groups, seen = 0, set()
    for f in grouped:  # a group is counted once, at its first member not yet seen
        if f.get("id") in seen:
            continue
        groups += 1
        seen.add(f.get("id"))
        seen.update(o for o in f.get("corroborated_by") or [] if o in members)
    return {"new": len(findings) - repeat, "repeat": repeat, "corroborated": len(grouped), "groups": groups}


def stage_verdict(stage: str, new_counts: list[int]) -> dict[str, Any]:
    """One line per stage: `converges` when the latest round brought fewer new (non-repeat)
    findings than the one before, or none; `churns` otherwise; `unknown` with fewer than
    two rounds whose counts are known."""
    shown = ", ".join(str(n) for n in new_counts)
    if len(new_counts) < 2:
        state = "unknown"
        text = (f"{stage}: no trend yet (new findings per round: {shown})" if new_counts
                else f"{stage}: no round with known counts")
    elif new_counts[-1] == 0 or new_counts[-1] < new_counts[-2]:
        state = "converges"
        text = f"{stage}: converges (new findings per round: {shown})"
    else:
        state = "churns"
        text = f"{stage}: churns (new findings per round: {shown})"
    return {"state": state, "new_per_round": list(new_counts), "text": text}


@dataclass
class _Tally:
    """One reviewer's counts on the scoreboard."""

    name: str
    presets: list[str] = field(default_factory=list)
    raised: int = 0
    ended: dict[str, int] = field(default_factory=lambda: dict.fromkeys(ENDINGS, 0))


def scoreboard(rounds: Iterable[dict[str, Any]],
               spent: dict[str, dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """Per reviewer over the series, in first-seen order. `rounds` (read once, so a
    generator can read the series round by round): each {"reviewers":
    round.json entries, "findings": findings.json or None when not recorded, "standing":
    finding id -> standing ledger line}. `spent`: reviewer name -> usage totals
    (`duration_seconds`, `cost_usd`, None when not reported), divided by the findings
    that ended fixed or answered."""
    tallies: dict[str, _Tally] = {}
    for r in rounds:
        for entry in r["reviewers"]:
            t = tallies.setdefault(entry["name"], _Tally(entry["name"]))
            preset = entry.get("preset")
            if isinstance(preset, str) and preset not in t.presets:
                t.presets.append(preset)
        for f in r["findings"] or []:
            t = tallies.setdefault(str(f.get("reviewer")), _Tally(str(f.get("reviewer"))))
            t.raised += 1
            line = r["standing"].get(f.get("id"))
            ending = line.get("disposition") if isinstance(line, dict) else "open"
            t.ended[ending if ending in t.ended else "open"] += 1
    out = []
    for t in tallies.values():
        useful = t.ended["fixed"] + t.ended["answered"]
        totals = (spent or {}).get(t.name) or {}
        seconds, cost = totals.get("duration_seconds"), totals.get("cost_usd")
        out.append({
            "name": t.name,
            "presets": t.presets,
            "raised": t.raised,
            "ended": dict(t.ended),
            "fixed_or_answered": useful,
            "share_fixed_or_answered": round(useful / t.raised, 3) if t.raised else None,
            "seconds_per_fixed_or_answered": round(seconds / useful, 3) if seconds is not None and useful else None,
            "cost_per_fixed_or_answered": round(cost / useful, 6) if cost is not None and useful else None,
        })
    return out
