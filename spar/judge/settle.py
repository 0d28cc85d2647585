"""When `spar triage --repeats` may settle a repeat by an earlier decision (pure).

A repeat (findings.json `repeat_of`) is found by the grouping rule of
spar.judge.similar: place near, claims similar. That rule lets two claims pair on
their subject alone ("the divide function returns wrong results" and "the divide
function deletes user files" share "divide function"), which is right for grouping,
where a person still reads both, and wrong for settling, where nobody does. So a
repeat is settled only when its claim restates the earlier one's failure:

- the claims share at least MIN_FAILURE_SHARED stems (or every stem of a claim with
  fewer) once the subject's stems are left out on both sides: what the claims name
  as code (spar.judge.repeats.identifiers), the word before a code noun ("the divide
  function") and the code nouns themselves (CODE_NOUNS); and
- the whole claims score at least RESTATES_AT (Dice of stems, as grouping scores).

The numbers are data (tests/data/repeats.json, "settle"); bench/grouping.py
`--repeats` measures them on third-party reviews. Beside the claims, an earlier
decision never settles a repeat that is more severe or names other code
(repeats.held_back), nor one a verifier of another vendor confirmed while the
decision it would inherit is a rejection or a refutation.
"""

from __future__ import annotations

import re

from spar.judge.repeats import held_back, identifiers
from spar.judge.similar import MIN_SHARED, claim_similarity, stems
from spar.judge.verdicts import Verdict

RESTATES_AT = 0.3  # whole claims at or above this Dice coefficient may restate one another
MIN_FAILURE_SHARED = MIN_SHARED  # stems the claims share beyond their subject

# words that say what kind of code a claim is about, not what goes wrong with it
CODE_NOUNS = ("function", "method", "class", "module", "variable", "parameter", "argument", "field", "attribute",
              "property", "object", "call", "caller", "callee", "helper", "handler", "constructor", "code", "line",
              "loop", "endpoint")
_BEFORE_NOUN = re.compile(r"\b(\w+)\s+(?:" + "|".join(CODE_NOUNS) + r")s?\b", re.IGNORECASE)


def subject_stems(claim: str) -> frozenset[str]:
    """The stems of what a claim is about: the code it names, the word naming a code noun
    ("divide" in "the divide function") and the code nouns."""
    out: set[str] = set(stems(" ".join(CODE_NOUNS)))
    for name in identifiers(claim):
        out |= stems(name)
    for m in _BEFORE_NOUN.finditer(claim):
        out |= stems(m.group(1))
    return frozenset(out)


def _failure_shared(later: str, earlier: str) -> bool:
    """The claims share enough stems beyond the subject of either."""
    subject = subject_stems(later) | subject_stems(earlier)
    fa, fb = stems(later) - subject, stems(earlier) - subject
    return bool(fa and fb) and len(fa & fb) >= min(MIN_FAILURE_SHARED, len(fa), len(fb))


def restates(later: str, earlier: str, at: float = RESTATES_AT) -> bool:
    """Whether the later claim says the earlier one's failure again, not only its subject
    (`at`: the whole claims' least score, for the bench's sweep)."""
    return _failure_shared(later, earlier) and claim_similarity(later, earlier) >= at


def claim_problem(later_class: str, later_claim: str, earlier_class: str, earlier_claim: str) -> str | None:
    """Why the claims alone do not let an earlier decision settle the later finding, or None:
    repeats.held_back (more severe, other code), else a claim that does not restate."""
    why = held_back(later_class, later_claim, earlier_class, earlier_claim)
    if why is not None:
        return why
    if not _failure_shared(later_claim, earlier_claim):
        return "its claim shares the earlier claim's subject, not the failure it describes"
    score = claim_similarity(later_claim, earlier_claim)
    if score < RESTATES_AT:
        return f"its claim is too far from the earlier one to restate it (similarity {score:.2f}, under {RESTATES_AT})"
    return None


def verdict_problem(verdict: Verdict | None, author_preset: str, decided: str, refuted: list[str]) -> str | None:
    """Why a repeat a verifier of another vendor confirmed is not settled by a rejection or a
    refutation: `verdict` is the later finding's (None: not verified), `author_preset` its
    reviewer's preset, `decided` the standing decision at the end of the chain it would join,
    `refuted` the findings of that chain a verifier refuted. A confirmation says the earlier
    "no" may have been about another claim (a decoy grouped with the real defect)."""
    if verdict is None or verdict.verdict != "confirmed" or verdict.preset == author_preset:
        return None
    against = [f"the decision it would inherit is {decided}"] if decided == "rejected" else []
    against += [f"{key} was refuted by a verifier" for key in refuted]
    if not against:
        return None
    return f"a verifier of another vendor confirmed it ({verdict.words()}), and " + "; ".join(against)
