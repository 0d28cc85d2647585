"""What a recorded verification says of each finding, and the reading order it sets (pure).

A verdict is advice on reading order only: nothing here feeds a finding's class, its
disposition or the gate. A call names one finding; a call on a corroborated group
names the group's first member and its verdict speaks for every member. A finding
with no call (or listed as unverified) has no verdict.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from spar.records.model import Finding, Verification, VerificationsRecord

# reading order: confirmed first, then no verdict and unsure alike, refuted last
RANKS = {"confirmed": 0, "unsure": 1, "refuted": 2}
NO_VERDICT_RANK = 1


@dataclass(frozen=True)
class Verdict:
    """One finding's verdict, from the call that gave it."""

    verdict: str  # confirmed | refuted | unsure
    verifier: str  # the verifying reviewer's name
    preset: str  # the verifier's preset (its vendor)
    call: str  # V1, V2, ...
    evidence: str  # the verifier's words ("" without a valid answer)
    reason: str  # why unsure without a valid answer; "" otherwise
    finding: str  # the finding the call named (a group's first member)
    group: str | None  # that group's id, when the call was on a group

    def words(self) -> str:
        """`refuted by codex (V2)`: the verdict, the verifier and the call, no reviewer text."""
        return f"{self.verdict} by {self.verifier} ({self.call})"

    def said(self) -> str:
        """What the verifier gave for it: its evidence, else why there was no valid answer."""
        return self.evidence or self.reason


def verdicts(record: VerificationsRecord | None, findings: list[Finding]) -> dict[str, Verdict]:
    """Finding id -> its verdict; every member of a verified group gets the group's.
    Empty when the round was never verified."""
    if record is None:
        return {}
    members = _groups(findings)
    out: dict[str, Verdict] = {}
    for call in record["calls"]:
        verdict = verdict_of(call)
        ids = members.get(verdict.group, []) if verdict.group is not None else []
        for fid in [verdict.finding, *ids]:
            out.setdefault(fid, verdict)
    return out


def _groups(findings: list[Finding]) -> dict[str, list[str]]:
    """Group id -> its members' ids, in findings.json order."""
    members: dict[str, list[str]] = {}
    for f in findings:
        group = f.get("group")
        if isinstance(group, dict) and isinstance(group.get("id"), str):
            members.setdefault(group["id"], []).append(f["id"])
    return members


def verdict_of(call: Verification) -> Verdict:
    return Verdict(call["verdict"], call["verifier"], call["preset"], call["call"], call["evidence"],
                   call["reason"], call["finding"], call.get("group"))


def unverified(record: VerificationsRecord | None) -> dict[str, str]:
    """Finding id -> why it got no call (`max_findings`, `max_cost_usd`, `no_other_vendor`)."""
    return {} if record is None else {entry["finding"]: entry["why"] for entry in record["unverified"]}


def rank(verdict: Verdict | None) -> int:
    """The reading-order rank of a verdict: 0 confirmed, 1 unsure or none, 2 refuted."""
    return NO_VERDICT_RANK if verdict is None else RANKS.get(verdict.verdict, NO_VERDICT_RANK)


def rank_of(ids: Iterable[str], by_id: Mapping[str, Verdict]) -> int:
    """The rank of an item that shows several findings (a group): its first finding's."""
    for fid in ids:
        return rank(by_id.get(fid))
    return NO_VERDICT_RANK


@dataclass
class Noise:
    """One reviewer's findings in verified rounds and what verifiers of another vendor said."""

    findings: int = 0  # its findings in verified rounds
    checked: int = 0  # of them, those a verifier of another vendor gave a verdict (unsure included)
    refuted: int = 0  # of those, refuted

    def share(self) -> float | None:
        """Refuted over checked by another vendor; None when nothing was checked."""
        return round(self.refuted / self.checked, 3) if self.checked else None


@dataclass
class NoiseBoard:
    """Per reviewer over the verified rounds of a series: its findings refuted by a verifier
    of another vendor (the record's `preset` is not the author's), a noise figure beside the
    scoreboard. Fed one round at a time, so a series is read once."""

    verified_rounds: int = 0
    reviewers: dict[str, Noise] = field(default_factory=dict)

    def add_round(self, findings: list[Finding], by_id: Mapping[str, Verdict], presets: Mapping[str, str]) -> None:
        """One verified round: `by_id` its verdicts (`verdicts`), `presets` reviewer name -> preset
        (round.json). A verifier of the author's own vendor says nothing about noise across
        vendors, so its verdict is not counted."""
        self.verified_rounds += 1
        for f in findings:
            name = str(f.get("reviewer"))
            t = self.reviewers.setdefault(name, Noise())
            t.findings += 1
            verdict = by_id.get(f["id"])
            if verdict is None or verdict.preset == presets.get(name):
                continue
            t.checked += 1
            t.refuted += verdict.verdict == "refuted"

    def document(self, order: Iterable[str]) -> dict[str, object]:
        """{verified_rounds, reviewers: [{name, findings, checked, refuted, share_refuted}]}, the
        reviewers in `order` first (the scoreboard's), then any other."""
        names = [n for n in order if n in self.reviewers]
        names += [n for n in self.reviewers if n not in names]
        return {"verified_rounds": self.verified_rounds,
                "reviewers": [{"name": n, "findings": self.reviewers[n].findings, "checked": self.reviewers[n].checked,
                               "refuted": self.reviewers[n].refuted, "share_refuted": self.reviewers[n].share()}
                              for n in names]}


def rejection_evidence(verdict: Verdict) -> str:
    """The --evidence of the rejection a refuted verdict proposes: the verifier, its call and
    its words (the command shows and records it escaped, one line)."""
    said = verdict.said().strip()
    return f"{verdict.words()}: {said}" if said else verdict.words()


@dataclass(frozen=True)
class Refuted:
    """A refuted finding or group that no disposition covers yet: what to reject."""

    target: str  # the finding id, or the group id (triage's group treatment)
    members: list[str]  # the finding ids it disposes, the first getting the rejection
    verdict: Verdict


def refuted(record: VerificationsRecord, findings: list[Finding],
            standing: Mapping[str, object]) -> tuple[list[Refuted], list[str]]:
    """(each refuted finding or group with no standing disposition on any member, in call order;
    notes on refuted ones left alone because a member has one). `standing`: finding id ->
    its standing ledger line."""
    groups = _groups(findings)
    out: list[Refuted] = []
    notes: list[str] = []
    for call in record["calls"]:
        if call["verdict"] != "refuted":
            continue
        verdict = verdict_of(call)
        members = groups.get(verdict.group, []) if verdict.group is not None else []
        target, ids = (verdict.group, members) if verdict.group is not None and members \
            else (verdict.finding, [verdict.finding])
        decided = [fid for fid in ids if fid in standing]
        if decided:
            notes.append(f"{target}: refuted by {verdict.verifier} ({verdict.call}), left alone: "
                         + ", ".join(f"{fid} has a disposition" for fid in decided))
            continue
        out.append(Refuted(target, ids, verdict))
    return out, notes
