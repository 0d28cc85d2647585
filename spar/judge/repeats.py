"""Repeats across rounds and corroboration within a round (pure; docs/records.md).

The caller locates every finding (spar.judge.locate), maps earlier places to
the new commits (spar.judge.linemap) and hands in plain data. Matching is
spar.judge.similar's: same path, lines near, claims similar.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from spar.judge.similar import Place, same_finding
from spar.records.model import Finding, RepeatOf


@dataclass(frozen=True)
class Earlier:
    """A finding of an earlier round of the series, its place mapped to the new round."""

    round: str
    order: int  # the round's position in the series (greater = later)
    index: int  # position in that round's findings.json
    finding: str  # its id
    place: Place | None  # None: unreadable, or its lines are gone at the new head
    claim: str
    disposition: str | None  # its standing disposition, None when it has none


def find_repeat(place: Place | None, claim: str, earlier: list[Earlier]) -> Earlier | None:
    """The earlier finding a new one repeats: of all that match, the one of the latest
    round (the decision that stands last), then the most similar claim, then the
    first in that round's findings.json."""
    best: tuple[tuple[int, float, int], Earlier] | None = None
    for e in earlier:
        score = same_finding(place, claim, e.place, e.claim)
        if score is None:
            continue
        key = (e.order, score, -e.index)
        if best is None or key > best[0]:
            best = (key, e)
    return best[1] if best else None


def repeat_record(e: Earlier | None) -> RepeatOf | None:
    """findings.json `repeat_of`: {round, finding, disposition} or null."""
    if e is None:
        return None
    return {"round": e.round, "finding": e.finding, "disposition": e.disposition}


class Mine(NamedTuple):
    """A finding of the round being recorded."""

    finding: str
    reviewer: str
    preset: str
    place: Place | None
    claim: str


def corroborate(findings: list[Mine]) -> dict[str, tuple[list[str], int]]:
    """finding id -> (ids of the other findings of its group, distinct presets of the group).

    Two findings of different reviewers that match are in one group, and groups
    join through shared members. A finding in no group gets ([], 1)."""
    parent = list(range(len(findings)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, a in enumerate(findings):
        for j in range(i + 1, len(findings)):
            b = findings[j]
            if a.reviewer != b.reviewer and same_finding(a.place, a.claim, b.place, b.claim) is not None:
                parent[root(j)] = root(i)
    groups: dict[int, list[int]] = {}
    for i in range(len(findings)):
        groups.setdefault(root(i), []).append(i)
    out: dict[str, tuple[list[str], int]] = {}
    for members in groups.values():
        presets = len({findings[i].preset for i in members})
        for i in members:
            others = [findings[k].finding for k in members if k != i]
            out[findings[i].finding] = (others, presets if others else 1)
    return out


def group_order(findings: list[Finding]) -> list[list[Finding]]:
    """findings.json entries as summary.md lists them: corroborated groups first (most
    vendors first, then by their first member), each group's members in file order,
    then every single finding in file order."""
    position = {f["id"]: n for n, f in enumerate(findings)}
    seen: set[str] = set()
    groups: list[list[Finding]] = []
    singles: list[list[Finding]] = []
    for f in findings:
        if f["id"] in seen:
            continue
        others = [o for o in f.get("corroborated_by") or [] if o in position]
        if not others:
            singles.append([f])
            continue
        members = sorted([f] + [findings[position[o]] for o in others], key=lambda x: position[x["id"]])
        seen.update(m["id"] for m in members)
        groups.append(members)
    groups.sort(key=lambda g: (-max(int(m.get("vendor_count") or 1) for m in g), position[g[0]["id"]]))
    return groups + singles
