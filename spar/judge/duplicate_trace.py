"""Duplicate chains for the gate, traced over a series handed in one round at a time:
the links of the few most recent rounds kept at hand, older rounds read again through
a `reload` callback, and where each walked finding leads remembered while its round is
recent, so a chain running back through every round is walked once (pure)."""

from __future__ import annotations

from collections.abc import Callable

from spar.errors import Refused
from spar.judge.dispositions import DispositionLookup, Key, KnownTrace, LookupResult, Trace, parse_of, trace
from spar.records.model import LedgerLine
from spar.records.record_rules import Position, link_problem

# lookup for findings of rounds that were not listed: (series path, key) -> see dispositions.DispositionLookup
ExtraLookup = Callable[[str, Key], LookupResult]
# every finding id of a round -> its standing ledger line (None: no line): what a duplicate
# trace reads of a round
DuplicateLinks = dict[str, LedgerLine | None]
# the links of a listed round read again (series path, round name), or why it cannot be read
Reload = Callable[[str, str], "DuplicateLinks | str"]
RoundKey = tuple[str, str]  # (series path, round name)


class _NotReadYet(Exception):
    """A duplicate chain leads into a round the judgment has not been handed yet."""


class DuplicateTracer:
    """Traces duplicate chains inside the series of the rounds handed in so far.
    `listed` is the judgment's set of listed rounds (read, not changed, here)."""

    RECENT = 16  # rounds whose links stay at hand (duplicates mostly name a recent round)

    def __init__(self, listed: set[RoundKey], reload: Reload | None, extra_lookup: ExtraLookup | None) -> None:
        self._listed = listed
        self._reload = reload
        self._extra_lookup = extra_lookup
        self._recent: dict[RoundKey, DuplicateLinks] = {}  # insertion order is recency
        self._resolved: dict[RoundKey, dict[str, Trace]] = {}  # where findings of recent rounds lead
        self._finishing = False
        # (series, final) -> lookup, known, position
        self._walkers: dict[tuple[str, bool], tuple[DispositionLookup, KnownTrace, Position]] = {}
        # each usable listed round's place in series order (started_at, name), for the rule on
        # duplicate links that triage applies (record_rules.link_problem)
        self._places: dict[RoundKey, tuple[str, str]] = {}
        self._position_of: dict[str, Position] = {}

    def add(self, key: RoundKey, started: str, links: DuplicateLinks) -> None:
        """A usable listed round, its links now the most recent at hand."""
        self._places[key] = (started, key[1])
        self._remember(key, links)

    def finishing(self) -> None:
        """Every round is handed in: from now on walked chains are all remembered."""
        self._finishing = True

    def trace_now(self, series: str, start: Key) -> Trace | None:
        """Where `start`'s chain ends as far as the rounds handed in tell; None when it leads
        into a listed round not handed in yet (trace it again with `trace_final`)."""
        try:
            return self._trace(series, start, final=False)
        except _NotReadYet:
            return None

    def trace_final(self, series: str, start: Key) -> Trace:
        """Where `start`'s chain ends, every listed round handed in."""
        return self._trace(series, start, final=True)

    def duplicate_of_disposed(self, series: str, start: Key, line: LedgerLine) -> bool:
        """True when the finding `start`'s duplicate line names is at hand and disposed (not
        as a duplicate), or is a duplicate whose chain is known to end disposed: what a walk
        would find at its second step, settled without walking (most duplicates name a
        finding of the round before) and remembered as the walk would remember it, so a
        chain running back through every round is never walked. False: walk the chain."""
        of = line.get("of")
        if not isinstance(of, str):
            return False
        try:
            target = parse_of(of, start[0])
        except Refused:
            return False  # the walk says why
        where = (series, target[0])
        links = self._recent.get(where)
        if links is None or link_problem(start[0], target[0], self._position(series)):
            return False
        standing_line = links.get(target[1])
        if not standing_line:
            return False
        end = target
        if standing_line.get("disposition") == "duplicate":
            known = self._resolved.get(where, {}).get(target[1])
            if known is None or known.state != "disposed":
                return False
            end = known.end
        self._remember(where, links)  # as the walk's lookup would
        if self._finishing or (series, start[0]) in self._recent:  # what `_trace` keeps of a walk's start
            self._resolved.setdefault((series, start[0]), {})[start[1]] = Trace(
                "disposed", [*dict.fromkeys([start, target, end])])
        return True

    def _remember(self, key: RoundKey, links: DuplicateLinks) -> None:
        if next(reversed(self._recent), None) == key:
            return  # already the most recent
        self._recent.pop(key, None)
        self._recent[key] = links
        if len(self._recent) > self.RECENT:
            evicted = next(iter(self._recent))
            del self._recent[evicted]
            if not self._finishing:
                self._resolved.pop(evicted, None)

    def _trace(self, series: str, start: Key, *, final: bool) -> Trace:
        """`dispositions.trace`, remembering where each finding it walks leads, so that a
        chain of duplicates running back through every round is walked once, not once
        per round. Kept while the finding's round is recent (and once finishing); a chain
        that loops is never kept, since where it loops depends on where the walk began.
        A result that does not loop holds only the start, its first link and the end:
        what the reasons name."""
        resolved = self._resolved
        walkers = self._walkers.get((series, final))
        if walkers is None:
            walkers = self._walkers[(series, final)] = (
                self._lookup(series, final=final), lambda key: resolved.get((series, key[0]), {}).get(key[1]),
                self._position(series))
        result = trace(start, *walkers)
        if result.state == "cycle":
            return result
        chain, end = result.chain, result.end
        for index in range(result.walked):
            where = (series, chain[index][0])
            if self._finishing or where in self._recent:
                own = [*dict.fromkeys([*chain[index:index + 2], end])]
                resolved.setdefault(where, {})[chain[index][1]] = Trace(result.state, own, result.detail)
        return Trace(result.state, [*dict.fromkeys([*chain[:2], end])], result.detail)

    def _position(self, series: str) -> Position:
        """A round's place in `series` (None: not a usable listed round), one function per series."""
        found = self._position_of.get(series)
        if found is None:
            places = self._places
            found = self._position_of[series] = lambda name: places.get((series, name))
        return found

    def _lookup(self, series: str, *, final: bool) -> DispositionLookup:
        """Finding lookup for duplicate tracing inside one series: listed usable rounds
        (recent ones at hand, older ones read again), then `extra_lookup` for the rest.
        Before finishing, a round not handed in yet may still come: _NotReadYet."""

        def lookup(key: Key) -> LookupResult:
            where = (series, key[0])
            links = self._recent.get(where)
            if links is None and where in self._places:
                again = self._reload(series, key[0]) if self._reload is not None else "it was not kept"
                if isinstance(again, str):
                    return "unreadable", f"round {key[0]} cannot be read: {again}"
                links = again
            if links is not None:
                self._remember(where, links)
                if key[1] not in links:
                    return "missing", f"{key[0]}/{key[1]} does not exist"
                return "ok", links[key[1]]
            if not final and where not in self._listed:
                raise _NotReadYet
            if self._extra_lookup is None:
                return "unreadable", f"round {key[0]} was not read"
            return self._extra_lookup(series, key)

        return lookup
