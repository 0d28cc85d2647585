"""Cross-vendor verification, the pure half: which findings are put to which verifier,
and what a verifier's answer says (no I/O; spar/round/verification.py runs the calls).

Planning: every defect and hardening finding is checked once; a corroborated group
once, through its first member, the verdict speaking for every member. Findings go
in order of most vendors first, then class (defect before hardening), then
findings.json order. Each goes to a verifier whose preset (its vendor) is not the
author's; for a group, one outside every vendor of the group when there is one,
else one other than the first member's. Among the eligible verifiers the one with
the fewest calls so far takes it (configuration order breaks ties), so calls spread.
A finding no verifier may take is unverified (`no_other_vendor`); once
`max_findings` calls are planned, the rest are unverified (`max_findings`).

The answer: exactly one JSON object (the one answer rule of judge/answer.py)
holding `verdict` (confirmed, refuted or unsure), `evidence` (a non-blank string)
and optionally `location` (null, "" or a location by the grammar of findings'
locations); no other key. Anything else is verdict `unsure` with the reason.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from spar.errors import quote
from spar.judge.context import RoundContext
from spar.judge.locate import locate
from spar.records.model import VERDICTS, Finding
from spar.whitespace import is_blank

VERIFIED_CLASSES = ("defect", "hardening")  # in the order they are verified
ANSWER_KEYS = ("verdict", "evidence", "location")
UNSURE = "unsure"


@dataclass(frozen=True)
class Verifier:
    """A `[verify]` reviewer: its name and preset (the vendor)."""

    name: str
    preset: str


@dataclass
class PlannedCall:
    """One finding (for a group: its first member) and the verifier that checks it."""

    finding: str
    group: str | None
    verifier: Verifier
    vendors: tuple[str, ...]  # the presets of the finding's author(s)
    members: tuple[str, ...]  # every finding the verdict speaks for (itself alone outside a group)


@dataclass
class Plan:
    calls: list[PlannedCall] = field(default_factory=list)
    unverified: list[tuple[str, str]] = field(default_factory=list)  # (finding, why), in plan order
    order: list[str] = field(default_factory=list)  # every finding considered (calls and not), in plan order


@dataclass
class _Candidate:
    finding: Finding
    group: str | None
    vendors: tuple[str, ...]
    author: str  # the preset of the finding's own reviewer
    members: tuple[str, ...]
    order: tuple[int, int, int]


def _candidates(findings: Sequence[Finding], presets: Mapping[str, str]) -> list[_Candidate]:
    """One candidate per verified finding outside a group and per group holding one."""
    by_id = {f["id"]: f for f in findings}
    position = {f["id"]: n for n, f in enumerate(findings)}
    out: list[_Candidate] = []
    seen_groups: set[str] = set()
    for f in findings:
        group = f.get("group")
        if group is None:
            if f.get("class") in VERIFIED_CLASSES:
                author = presets.get(f["reviewer"], "")
                out.append(_Candidate(f, None, (author,), author, (f["id"],),
                                      (-1, VERIFIED_CLASSES.index(f["class"]), position[f["id"]])))
            continue
        if group["id"] in seen_groups:
            continue
        seen_groups.add(group["id"])
        members = [by_id[m] for m in group["members"] if m in by_id]
        ranks = [VERIFIED_CLASSES.index(m["class"]) for m in members if m.get("class") in VERIFIED_CLASSES]
        if not members or not ranks:
            continue
        first = members[0]
        out.append(_Candidate(first, group["id"], tuple(group["vendors"]), presets.get(first["reviewer"], ""),
                              tuple(m["id"] for m in members),
                              (-len(group["vendors"]), min(ranks), position[first["id"]])))
    return sorted(out, key=lambda c: c.order)


def _eligible(candidate: _Candidate, verifiers: Sequence[Verifier]) -> list[Verifier]:
    outside = [v for v in verifiers if v.preset not in candidate.vendors]
    if outside or candidate.group is None:
        return outside
    return [v for v in verifiers if v.preset != candidate.author]


def plan_verification(findings: Sequence[Finding], presets: Mapping[str, str], verifiers: Sequence[Verifier],
                      max_findings: int | None) -> Plan:
    """The calls of one round's verification. `presets`: reviewer name -> preset of the
    round's reviewers (who wrote each finding)."""
    plan = Plan()
    load = dict.fromkeys(verifiers, 0)
    for candidate in _candidates(findings, presets):
        fid = candidate.finding["id"]
        plan.order.append(fid)
        eligible = _eligible(candidate, verifiers)
        if not eligible:
            plan.unverified.append((fid, "no_other_vendor"))
        elif max_findings is not None and len(plan.calls) >= max_findings:
            plan.unverified.append((fid, "max_findings"))
        else:
            chosen = min(eligible, key=lambda v: load[v])  # min keeps the first of equals
            load[chosen] += 1
            plan.calls.append(PlannedCall(fid, candidate.group, chosen, candidate.vendors, candidate.members))
    return plan


@dataclass
class JudgedAnswer:
    """What a verifier's answer says; `reason` says why the verdict is unsure without a valid answer."""

    verdict: str
    evidence: str = ""
    location: str | None = None
    reason: str = ""


def judge_answer(answer: Any, ctx: RoundContext | None) -> JudgedAnswer:
    """The verdict of an answer object (already one JSON object by the one answer rule).
    With `ctx`, a location must be readable by the grammar of findings' locations."""
    if not isinstance(answer, dict):
        return JudgedAnswer(UNSURE, reason="the answer is not a JSON object")
    extra = [k for k in answer if k not in ANSWER_KEYS]
    if extra:
        return JudgedAnswer(UNSURE, reason=f"the answer has key {quote(str(extra[0]))}, which is not one of "
                                      f"{', '.join(ANSWER_KEYS)}")
    verdict = answer.get("verdict")
    if verdict not in VERDICTS:
        shown = quote(verdict) if isinstance(verdict, str) else "missing or not a string"
        return JudgedAnswer(UNSURE, reason=f"verdict {shown} is not one of {', '.join(VERDICTS)}")
    evidence = answer.get("evidence")
    if not isinstance(evidence, str) or is_blank(evidence):
        return JudgedAnswer(UNSURE, reason="evidence is missing, blank or not a string")
    location = answer.get("location")
    if location is not None and not isinstance(location, str):
        return JudgedAnswer(UNSURE, reason="location is not a string or null")
    if location is not None and is_blank(location):
        location = None
    if location is not None and ctx is not None:
        where = locate(location, ctx)
        if where.unreadable:
            return JudgedAnswer(UNSURE, reason=f"location {quote(location)} cannot be read ({where.why})")
    return JudgedAnswer(verdict, evidence, location)


__all__ = [
    "ANSWER_KEYS",
    "VERIFIED_CLASSES",
    "JudgedAnswer",
    "Plan",
    "PlannedCall",
    "Verifier",
    "judge_answer",
    "plan_verification",
]
