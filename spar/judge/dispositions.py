"""Triage rules (design §7, contract G30) and duplicate tracing — pure logic.

Nothing here reads files: callers hand in the finding, its class, the options
and a lookup for other findings' standing dispositions.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from spar.errors import Refused
from spar.records.model import LedgerLine
from spar.records.record_rules import OPTION_FLAGS, RULES, Position, link_problem
from spar.whitespace import is_blank

DISPOSITIONS = ("fixed", "duplicate", "rejected", "deferred", "answered")

# classes that block the gate until disposed (design §3)
BLOCKING_CLASSES = ("defect", "requirement-question")


def given(value: str | None) -> bool:
    """G30: a text that is empty after trimming counts as not given."""
    return value is not None and not is_blank(value)


def check_request(finding_id: str, finding_class: str, disposition: str,
                  options: dict[str, str | None]) -> dict[str, str]:
    """Check one triage against design §7; return the options that count as given.

    Options that do not belong to the disposition are refused rather than
    silently dropped, so a ledger line never carries a claim nobody checked.
    """
    if disposition not in RULES:
        raise Refused(f"unknown disposition {disposition!r} (one of {', '.join(DISPOSITIONS)})")
    classes, needs = RULES[disposition]
    if classes is not None and finding_class not in classes:
        allowed = " or ".join(classes)
        raise Refused(
            f"finding {finding_id} is {finding_class}; --to {disposition} is only for {allowed} findings"
        )
    present = {key: value for key, value in options.items() if value is not None and given(value)}
    unknown = [key for key in present if key not in OPTION_FLAGS]
    if unknown:
        raise Refused(f"unknown triage option {unknown[0]!r}")
    extra = [OPTION_FLAGS[key] for key in OPTION_FLAGS if key in present and key not in needs]
    if extra:
        raise Refused(f"--to {disposition} does not take {', '.join(extra)}")
    missing = [OPTION_FLAGS[key] for key in needs if key not in present]
    if missing:
        raise Refused(f"--to {disposition} needs {', '.join(missing)} (a value that is not blank)")
    return {key: present[key] for key in OPTION_FLAGS if key in present}


def parse_of(text: str, current_round: str) -> tuple[str, str]:
    """`ROUND/ID` or `ID` -> (round name, finding id). Round names are folder
    base names and finding IDs never hold `/`, so exactly one `/` at most.
    Read literally (G30): `" r1-F1 "` names no finding."""
    value = text
    if "/" not in value:
        return current_round, value
    round_name, _, finding_id = value.partition("/")
    if not round_name or not finding_id or "/" in finding_id or round_name in (".", ".."):
        raise Refused(f"--of {text!r} is not ROUND/ID or ID (ROUND is a round name of the series)")
    return round_name, finding_id


# a round's place in series order (comparable; see spar.series.position), None when not known
def standing(ledger: list[LedgerLine]) -> dict[str, LedgerLine]:
    """The latest ledger line per finding stands (history stays on disk). A line
    without a finding ID (a ledger nobody checked) names nothing."""
    out: dict[str, LedgerLine] = {}
    for line in ledger:
        finding = line.get("finding")
        if isinstance(finding, str):
            out[finding] = line
    return out


Key = tuple[str, str]  # (round name, finding id) inside one series


@dataclass(slots=True)
class Trace:
    """Where a chain of `duplicate` dispositions ends.

    state: `disposed` (the chain ends in a non-duplicate disposition),
    `open` (ends in a finding without disposition), `cycle`, `missing` (a link
    points at a finding that does not exist), `unreadable` (its round could
    not be read), `refused` (a link `link_problem` refuses).
    """

    state: str
    chain: list[Key] = field(default_factory=list)  # every finding visited, start first
    detail: str = ""
    walked: int = 0  # findings of `chain` looked up; after them, what `known` said of the last

    @property
    def end(self) -> Key:
        return self.chain[-1]


# lookup(key) -> ("ok", standing line or None) | ("missing", why) | ("unreadable", why)
LookupResult = tuple[str, "LedgerLine | str | None"]
DispositionLookup = Callable[[Key], LookupResult]
# known(key) -> the trace from that finding when already known (never a cycle), else None
KnownTrace = Callable[[Key], "Trace | None"]


def trace(start: Key, lookup: DispositionLookup, known: KnownTrace | None = None,
          position: Position | None = None) -> Trace:
    """Follow `duplicate` links from `start` until a finding that is not a
    duplicate; never loops (a visited finding ends the walk as a cycle). With
    `known`, a finding whose trace is known ends the walk there: the chain
    goes on with that trace's (nothing on a chain that does not loop leads
    back to a finding before it, so the walk could not have looped either).
    With `position`, a link `link_problem` refuses ends the walk as `refused`."""
    chain: list[Key] = []
    seen: set[Key] = set()
    key = start
    while True:
        if key in seen:
            chain.append(key)
            return Trace("cycle", chain, "the duplicate chain comes back to " + "/".join(key), len(chain) - 1)
        seen.add(key)
        chain.append(key)
        found = known(key) if known is not None else None
        if found is not None:
            return Trace(found.state, chain + found.chain[1:], found.detail, len(chain))
        state, value = lookup(key)
        if state != "ok":
            return Trace(state, chain, str(value), len(chain))
        if value is None or isinstance(value, str) or not value:
            return Trace("open", chain, walked=len(chain))
        line = value
        if line.get("disposition") != "duplicate":
            return Trace("disposed", chain, walked=len(chain))
        of = line.get("of")
        if not isinstance(of, str) or not of:
            return Trace("missing", chain, "a duplicate line without `of`", len(chain))
        try:
            target = parse_of(of, key[0])
        except Refused as err:
            return Trace("missing", chain, str(err), len(chain))
        problem = link_problem(key[0], target[0], position) if position is not None else None
        if problem:
            return Trace("refused", chain, f"its link to {'/'.join(target)} is one triage refuses: {problem}",
                         len(chain))
        key = target


def would_cycle(finding: Key, target: Key, lookup: DispositionLookup) -> bool:
    """True when marking `finding` a duplicate of `target` closes a loop."""
    if finding == target:
        return True
    result = trace(target, lookup)
    return finding in result.chain
