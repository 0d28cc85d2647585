"""Repeats across rounds and corroboration within a round (pure; docs/records.md).

The caller locates every finding (spar.judge.locate), maps earlier places to
the new commits (spar.judge.linemap) and hands in plain data. Matching is
spar.judge.similar's: same path, lines near, claims similar and each among the
other's closest of the near findings of the other side. A side is one reviewer's
findings of one round. Shared words are not enough to settle a later finding by
an earlier decision: `held_back` says when `spar triage --repeats` may only list
it as a possible repeat.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import NamedTuple

from spar.judge.components import connected
from spar.judge.similar import Place, closest_pairs, near
from spar.records.model import Finding, Group, RepeatOf


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
    reviewer: str = ""  # who wrote it in its round


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


class Mine(NamedTuple):
    """A finding of the round being recorded."""

    finding: str
    reviewer: str
    preset: str
    place: Place | None
    claim: str


def _may_pair(a: list[Place | None], b: list[Place | None]) -> Callable[[int, int], bool]:
    def check(i: int, j: int) -> bool:
        pa, pb = a[i], b[j]
        return pa is not None and pb is not None and near(pa, pb)
    return check


def _sides(keys: list[tuple[object, ...]]) -> list[list[int]]:
    """Positions grouped by key, in order of first appearance."""
    out: dict[tuple[object, ...], list[int]] = {}
    for n, k in enumerate(keys):
        out.setdefault(k, []).append(n)
    return list(out.values())


def find_repeats(mine: list[Mine], earlier: list[Earlier]) -> list[Earlier | None]:
    """For each new finding, the earlier finding it repeats: of all that match (one new
    reviewer's findings against one earlier round's reviewer's), the one of the latest
    round (the decision that stands last), then the most similar claim, then the first
    in that round's findings.json."""
    best: dict[int, tuple[tuple[int, float, int], Earlier]] = {}
    for new in _sides([(m.reviewer,) for m in mine]):
        for old in _sides([(e.round, e.reviewer) for e in earlier]):
            pairs = closest_pairs([mine[i].claim for i in new], [earlier[j].claim for j in old],
                                  _may_pair([mine[i].place for i in new], [earlier[j].place for j in old]))
            for i, j, score in pairs:
                e = earlier[old[j]]
                key = (e.order, score, -e.index)
                if new[i] not in best or key > best[new[i]][0]:
                    best[new[i]] = (key, e)
    return [best[n][1] if n in best else None for n in range(len(mine))]


def find_repeat(place: Place | None, claim: str, earlier: list[Earlier]) -> Earlier | None:
    """find_repeats for one new finding alone."""
    return find_repeats([Mine("", "", "", place, claim)], earlier)[0]


def repeat_record(e: Earlier | None) -> RepeatOf | None:
    """findings.json `repeat_of`: {round, finding, disposition} or null."""
    if e is None:
        return None
    return {"round": e.round, "finding": e.finding, "disposition": e.disposition}


def _matches(findings: list[Mine]) -> Iterator[tuple[int, int]]:
    """Pairs of findings of different reviewers that match (indexes into `findings`)."""
    sides = _sides([(f.reviewer,) for f in findings])
    for n, a in enumerate(sides):
        for b in sides[n + 1:]:
            pairs = closest_pairs([findings[i].claim for i in a], [findings[j].claim for j in b],
                                  _may_pair([findings[i].place for i in a], [findings[j].place for j in b]))
            for i, j, _ in pairs:
                yield a[i], b[j]


def corroborate(findings: list[Mine]) -> dict[str, tuple[list[str], int]]:
    """finding id -> (ids of the other findings of its group, distinct presets of the group).

    Two findings of different reviewers that match are in one group, and groups
    join through shared members. A finding in no group gets ([], 1)."""
    out: dict[str, tuple[list[str], int]] = {}
    for members in connected(len(findings), _matches(findings)):
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


GROUP_ID = "G{}"


def name_groups(findings: list[Finding], presets: dict[str, str]) -> dict[str, Group]:
    """finding id -> its group, for findings with `corroborated_by`: ids G1, G2, ... in
    group_order (most vendors first); `presets` maps a reviewer to its preset."""
    out: dict[str, Group] = {}
    number = 0
    for members in group_order(findings):
        if len(members) < 2:
            continue
        number += 1
        group: Group = {"id": GROUP_ID.format(number), "members": [m["id"] for m in members],
                        "vendors": sorted({presets.get(str(m.get("reviewer")), str(m.get("reviewer")))
                                           for m in members})}
        for m in members:
            out[m["id"]] = group
    return out


def group_members(findings: list[Finding], group_id: str) -> list[Finding]:
    """The members of the group named `group_id` (compared literally), in findings.json order."""
    out = []
    for f in findings:
        group = f.get("group")
        if isinstance(group, dict) and group.get("id") == group_id:
            out.append(f)
    return out
