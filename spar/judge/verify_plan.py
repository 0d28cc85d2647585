"""Cross-vendor verification, the pure half: which findings are put to which verifier,
and what a verifier's answer says (no I/O; spar/verify/verification.py runs the calls).

Planning: every finding its reviewer proposed as defect or hardening, or that Spar
classed so, is checked once, on its own: a verdict covers only the claim the verifier
read, so each member of a corroborated group gets a call of its own (a decoy grouped
with a real defect can only have its own claim refuted). A finding whose class Spar
lowered (a proposed defect recorded as a note) is checked too: its verdict is shown,
never changing its class. Findings go in order of most vendors first (a group's
members share their group's count), then class (defect before hardening, the class
Spar gave or else the one proposed), then findings.json order. Each goes to a
verifier whose preset (its vendor) is not the author's: one outside every vendor of
its group when there is one. Among the eligible verifiers the one with the fewest
calls so far takes it (configuration order breaks ties), so calls spread. A finding
no verifier may take is unverified (`no_other_vendor`); once `max_findings` calls are
planned, the rest are unverified (`max_findings`).

The answer: exactly one JSON object (the one answer rule of judge/answer.py, which
refuses a duplicated key) holding `verdict` (confirmed, refuted or unsure), `evidence`
(a non-blank string of at most EVIDENCE_LIMIT characters) and optionally `location`
(null, "" or a location by the grammar of findings' locations, at most
LOCATION_LIMIT characters); no other key. Anything else is verdict `unsure` with the
reason, which quotes no more than a short start of what the verifier wrote.
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
# an answer's fields are capped as a reviewer's finding count is: an answer over a cap
# is not a valid answer (nothing of it is recorded but the reason); the cap leaves
# room for a page of evidence naming lines and values
EVIDENCE_LIMIT = 8000  # characters
LOCATION_LIMIT = 1000  # characters
SHOWN_LIMIT = 80  # characters of a verifier's value quoted in a reason


@dataclass(frozen=True)
class Verifier:
    """A `[verify]` reviewer: its name and preset (the vendor)."""

    name: str
    preset: str


class Assigner:
    """Hands each call to the eligible verifier with the fewest calls so far (configuration
    order breaks ties): `no_other_vendor` when none is eligible, `max_findings` once
    `max_calls` are handed out. One rule for findings and for repeats."""

    def __init__(self, verifiers: Sequence[Verifier], max_calls: int | None) -> None:
        self.load = dict.fromkeys(verifiers, 0)
        self.max_calls = max_calls
        self.handed = 0

    def take(self, eligible: Sequence[Verifier]) -> Verifier | str:
        """The verifier for one call, or why there is none."""
        if not eligible:
            return "no_other_vendor"
        if self.max_calls is not None and self.handed >= self.max_calls:
            return "max_findings"
        chosen = min(eligible, key=lambda v: self.load[v])  # min keeps the first of equals
        self.load[chosen] += 1
        self.handed += 1
        return chosen


@dataclass
class PlannedCall:
    """One finding and the verifier that checks it."""

    finding: str
    group: str | None  # the finding's group, if any (the verdict covers this finding alone)
    verifier: Verifier
    vendors: tuple[str, ...]  # the presets of the finding's group (its author's alone outside a group)


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
    order: tuple[int, int, int]


def verified_rank(finding: Finding) -> int | None:
    """The finding's place in VERIFIED_CLASSES by the class Spar gave it, else by the one its
    reviewer proposed; None when neither is verified."""
    for key in ("class", "proposed_class"):
        if finding.get(key) in VERIFIED_CLASSES:
            return VERIFIED_CLASSES.index(str(finding.get(key)))
    return None


def _candidates(findings: Sequence[Finding], presets: Mapping[str, str]) -> list[_Candidate]:
    """One candidate per verified finding, a group's members each on their own."""
    out: list[_Candidate] = []
    for position, f in enumerate(findings):
        rank = verified_rank(f)
        if rank is None:
            continue
        author = presets.get(f["reviewer"], "")
        group = f.get("group")
        if isinstance(group, dict) and isinstance(group.get("id"), str):
            vendors = tuple(str(v) for v in group.get("vendors") or ()) or (author,)
            out.append(_Candidate(f, group["id"], vendors, author, (-len(vendors), rank, position)))
        else:
            out.append(_Candidate(f, None, (author,), author, (-1, rank, position)))
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
    hand = Assigner(verifiers, max_findings)
    for candidate in _candidates(findings, presets):
        fid = candidate.finding["id"]
        plan.order.append(fid)
        chosen = hand.take(_eligible(candidate, verifiers))
        if isinstance(chosen, Verifier):
            plan.calls.append(PlannedCall(fid, candidate.group, chosen, candidate.vendors))
        else:
            plan.unverified.append((fid, chosen))
    return plan


@dataclass
class JudgedAnswer:
    """What a verifier's answer says; `reason` says why the verdict is unsure without a valid answer."""

    verdict: str
    evidence: str = ""
    location: str | None = None
    reason: str = ""


def _shown(value: str) -> str:
    """A verifier's value as a reason quotes it: its start alone when it is long."""
    return quote(value) if len(value) <= SHOWN_LIMIT else f"{quote(value[:SHOWN_LIMIT])}[…]"


def _over(value: str, name: str, limit: int) -> str | None:
    if len(value) > limit:
        return f"{name} is {len(value)} characters, more than the {limit} an answer may give"
    return None


def judge_answer(answer: Any, ctx: RoundContext | None) -> JudgedAnswer:
    """The verdict of an answer object (already one JSON object by the one answer rule).
    With `ctx`, a location must be readable by the grammar of findings' locations."""
    if not isinstance(answer, dict):
        return JudgedAnswer(UNSURE, reason="the answer is not a JSON object")
    extra = [k for k in answer if k not in ANSWER_KEYS]
    if extra:
        return JudgedAnswer(UNSURE, reason=f"the answer has key {_shown(str(extra[0]))}, which is not one of "
                                      f"{', '.join(ANSWER_KEYS)}")
    verdict = answer.get("verdict")
    if verdict not in VERDICTS:
        shown = _shown(verdict) if isinstance(verdict, str) else "missing or not a string"
        return JudgedAnswer(UNSURE, reason=f"verdict {shown} is not one of {', '.join(VERDICTS)}")
    evidence = answer.get("evidence")
    if not isinstance(evidence, str) or is_blank(evidence):
        return JudgedAnswer(UNSURE, reason="evidence is missing, blank or not a string")
    location = answer.get("location")
    if location is not None and not isinstance(location, str):
        return JudgedAnswer(UNSURE, reason="location is not a string or null")
    too_long = _over(evidence, "evidence", EVIDENCE_LIMIT) or _over(location or "", "location", LOCATION_LIMIT)
    if too_long:
        return JudgedAnswer(UNSURE, reason=too_long)
    if location is not None and is_blank(location):
        location = None
    if location is not None and ctx is not None:
        where = locate(location, ctx)
        if where.unreadable:
            return JudgedAnswer(UNSURE, reason=f"location {_shown(location)} cannot be read ({where.why})")
    return JudgedAnswer(verdict, evidence, location)


__all__ = [
    "ANSWER_KEYS",
    "EVIDENCE_LIMIT",
    "LOCATION_LIMIT",
    "VERIFIED_CLASSES",
    "JudgedAnswer",
    "Plan",
    "PlannedCall",
    "Verifier",
    "judge_answer",
    "plan_verification",
    "verified_rank",
]
