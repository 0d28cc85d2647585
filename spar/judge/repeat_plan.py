"""Putting a round's repeats to verifiers of another vendor, the pure half: which repeat
goes to which verifier, what an answer says, and what `spar triage --repeats` makes of
the record (no I/O; spar/verify/repeat_check.py runs the calls).

A repeat is asked about when `--repeats` could settle it otherwise: the earlier finding
has a standing disposition and the claims let it (settle.claim_problem). Each goes to a
`[verify]` reviewer whose preset is not the repeat's author's, the least loaded first
(configuration order breaks ties); none: `no_other_vendor`; past `max_findings` calls:
`max_findings`. The answer is one JSON object holding `verdict` ("same" or "different",
or "unsure") and a non-blank `evidence`, no other key; anything else is `unsure`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from spar.errors import quote
from spar.judge.settle import claim_problem
from spar.judge.verify_plan import Assigner, Verifier
from spar.records.model import Finding
from spar.whitespace import is_blank

SAME, DIFFERENT, UNSURE = "same", "different", "unsure"
VERDICTS = (SAME, DIFFERENT, UNSURE)
ANSWER_KEYS = ("verdict", "evidence")


@dataclass(frozen=True)
class Candidate:
    """A finding of the round and the earlier finding its `repeat_of` names."""

    finding: Finding
    earlier_key: str  # ROUND/ID
    earlier: Finding
    decided: str | None  # the earlier finding's standing disposition


@dataclass(frozen=True)
class RepeatCall:
    finding: Finding
    earlier_key: str
    earlier: Finding
    verifier: Verifier


def asked(c: Candidate) -> bool:
    """Whether --repeats could settle the repeat without a verifier: only those are asked."""
    return c.decided is not None and claim_problem(
        str(c.finding.get("proposed_class")), str(c.finding.get("claim") or ""),
        str(c.earlier.get("proposed_class")), str(c.earlier.get("claim") or "")) is None


def plan_repeat_checks(candidates: Sequence[Candidate], presets: Mapping[str, str], verifiers: Sequence[Verifier],
                       max_calls: int | None) -> tuple[list[RepeatCall], list[tuple[Candidate, str]]]:
    """(the calls, [(a candidate left unchecked, why)]), in findings order. `presets`:
    reviewer name -> preset of the round's reviewers."""
    hand = Assigner(verifiers, max_calls)
    calls: list[RepeatCall] = []
    left: list[tuple[Candidate, str]] = []
    for c in (c for c in candidates if asked(c)):
        author = presets.get(str(c.finding.get("reviewer")), "")
        chosen = hand.take([v for v in verifiers if v.preset != author])
        if isinstance(chosen, Verifier):
            calls.append(RepeatCall(c.finding, c.earlier_key, c.earlier, chosen))
        else:
            left.append((c, chosen))
    return calls, left


def judge_repeat_answer(answer: Any) -> tuple[str, str, str]:
    """(verdict, evidence, reason) of an answer object; reason says why it is unsure
    without a valid answer."""
    if not isinstance(answer, dict):
        return UNSURE, "", "the answer is not a JSON object"
    extra = [k for k in answer if k not in ANSWER_KEYS]
    if extra:
        return UNSURE, "", f"the answer has key {quote(str(extra[0]))}, which is not one of {', '.join(ANSWER_KEYS)}"
    verdict, evidence = answer.get("verdict"), answer.get("evidence")
    if verdict not in VERDICTS:
        shown = quote(verdict) if isinstance(verdict, str) else "missing or not a string"
        return UNSURE, "", f"verdict {shown} is not one of {', '.join(VERDICTS)}"
    if not isinstance(evidence, str) or is_blank(evidence):
        return UNSURE, "", "evidence is missing, blank or not a string"
    return str(verdict), evidence, ""


def check_problem(finding: str, calls: Sequence[Mapping[str, Any]], unchecked: Sequence[Mapping[str, Any]]
                  ) -> str | None:
    """For a round whose repeats were put to verifiers (repeat-checks.json): why `finding`
    is not settled, or None when a verifier of another vendor said it is the same problem."""
    for call in calls:
        if call.get("finding") != finding:
            continue
        said = f"{call.get('verifier')} ({call.get('call')})"
        if call.get("verdict") == SAME:
            return None
        if call.get("verdict") == DIFFERENT:
            return f"a verifier of another vendor, {said}, says it is another problem"
        return f"a verifier of another vendor, {said}, could not tell whether it is the same problem"
    why = next((str(e.get("why")) for e in unchecked if e.get("finding") == finding), None)
    if why is not None:
        return f"no verifier of another vendor was asked whether it is the same problem ({why})"
    return "no verifier of another vendor was asked whether it is the same problem (run `spar verify` again)"
