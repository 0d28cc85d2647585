"""What a recorded verification says of each finding, and the reading order it sets (pure).

A verdict is advice on reading order only: nothing here feeds a finding's class, its
disposition or the gate. A call names one finding and its verdict covers that
finding's claim alone, the only one the verifier read: another member of the same
corroborated group has a verdict only from a call of its own (a record written when a
group's call named its first member alone gives the others none). A finding with no
call (or listed as unverified) has no verdict.
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
    finding: str  # the finding the call named: the one its verdict covers
    group: str | None  # that finding's group id, when it is in one

    def words(self) -> str:
        """`refuted by codex (V2)`: the verdict, the verifier and the call, no reviewer text."""
        return f"{self.verdict} by {self.verifier} ({self.call})"

    def said(self) -> str:
        """What the verifier gave for it: its evidence, else why there was no valid answer."""
        return self.evidence or self.reason


def verdicts(record: VerificationsRecord | None, findings: list[Finding]) -> dict[str, Verdict]:
    """Finding id -> its verdict: the call that named it (a group's other members get none
    from it). Empty when the round was never verified. `findings` is kept for callers."""
    if record is None:
        return {}
    out: dict[str, Verdict] = {}
    for call in record["calls"]:
        verdict = verdict_of(call)
        out.setdefault(verdict.finding, verdict)
    return out


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
    """The rank of an item that shows several findings (a group): its best-ranked finding's
    (a group with one confirmed member is read first, whatever the others' verdicts)."""
    return min((rank(by_id.get(fid)) for fid in ids), default=NO_VERDICT_RANK)


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


REJECTION_LIMIT = 1000  # characters of a verifier's words a rejection repeats


def rejection_evidence(verdict: Verdict) -> str:
    """The --evidence of the rejection a refuted verdict proposes: the verifier, its call and
    its words, their first REJECTION_LIMIT characters when longer (the call keeps them whole
    in verifications.json), so the printed line stays a command a shell can run (the
    command shows and records it escaped, one line)."""
    said = verdict.said().strip()
    if len(said) > REJECTION_LIMIT:
        said = f"{said[:REJECTION_LIMIT]} […] (whole in verifications.json, call {verdict.call})"
    return f"{verdict.words()}: {said}" if said else verdict.words()


@dataclass(frozen=True)
class Refuted:
    """A refuted finding that no disposition covers yet: what to reject."""

    target: str  # the finding id
    members: list[str]  # the finding ids it disposes: the finding alone
    verdict: Verdict


def refuted(record: VerificationsRecord, findings: list[Finding],
            standing: Mapping[str, object]) -> tuple[list[Refuted], list[str]]:
    """(each refuted finding with no standing disposition, in call order; notes on refuted
    ones left alone because they have one). `standing`: finding id -> its standing ledger
    line. Only the finding a call named is refuted: a member of its group the verifier
    never read keeps standing."""
    known = {f["id"] for f in findings}
    out: list[Refuted] = []
    notes: list[str] = []
    for call in record["calls"]:
        if call["verdict"] != "refuted" or call["finding"] not in known:
            continue
        verdict = verdict_of(call)
        target = verdict.finding
        if target in standing:
            notes.append(f"{target}: refuted by {verdict.verifier} ({verdict.call}), left alone: "
                         f"{target} has a disposition")
            continue
        out.append(Refuted(target, [target], verdict))
    return out, notes
