"""Repeats across rounds and corroboration within a round (pure; docs/records.md).

The caller locates every finding (spar.judge.locate), maps earlier places to
the new commits (spar.judge.linemap) and hands in plain data. Matching is
spar.judge.similar's: same path, lines near, claims similar. Shared words are
not enough to settle a later finding by an earlier decision: `held_back` says
when `spar triage --repeats` may only list it as a possible repeat.
"""

from __future__ import annotations

import re
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


# proposed classes from the least to the most severe
SEVERITY = {"note": 0, "hardening": 1, "requirement-question": 2, "defect": 3}

_SPAN = re.compile(r"`+([^`]+?)`+")
# a token that reads as code: dotted (`os.remove`), snake_case or with digits after a
# letter and an underscore, camelCase, or called (`divide(`)
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+|\w*_\w+|\w+_|[a-z]+[A-Z]\w*|[A-Za-z_]\w*(?=\()")


def identifiers(claim: str) -> set[str]:
    """What a claim names as code: the text of each code span and each identifier-looking token."""
    named = {m.strip() for m in _SPAN.findall(claim)}
    named.update(_IDENTIFIER.findall(_SPAN.sub(" ", claim)))
    # "e.g", "i.e": dotted single letters are prose
    return {n for n in named if n and not all(len(part) <= 1 for part in n.split("."))}


def _names(claim: str, name: str) -> bool:
    return name in identifiers(claim) or re.search(rf"(?<![\w.]){re.escape(name)}(?![\w])", claim) is not None


def held_back(later_class: str, later_claim: str, earlier_class: str, earlier_claim: str) -> str | None:
    """Why a later finding that matches an earlier one may still be a different problem, so
    that no earlier decision settles it without a person (or `--force`); None when nothing
    says so. A class the table does not know counts as the most severe for the later
    finding and the least for the earlier one."""
    later_rank, earlier_rank = SEVERITY.get(later_class, len(SEVERITY)), SEVERITY.get(earlier_class, -1)
    if later_rank > earlier_rank:
        return f"it is proposed as {later_class}, more severe than the earlier {earlier_class}"
    new = sorted(n for n in identifiers(later_claim) if not _names(earlier_claim, n))
    if new:
        return "its claim names " + ", ".join(f"`{n}`" for n in new[:3]) + ", which the earlier claim does not"
    return None


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
