"""What a series already holds, seen from a new round: earlier findings, their standing
dispositions and their places mapped to the new commits (docs/records.md, "Series memory").

The I/O half of repeat detection and series memory: it reads the earlier
rounds and runs `git diff` between commits; the matching itself is
spar.judge.repeats and spar.judge.similar, the text spar.round.memory.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from spar import git
from spar.errors import RecordError, Refused
from spar.judge.context import RoundContext
from spar.judge.dispositions import standing
from spar.judge.linemap import IDENTITY, LineMap, parse_diff
from spar.judge.locate import locate
from spar.judge.repeats import Earlier, Mine, corroborate, find_repeats, name_groups, repeat_record
from spar.judge.similar import Place
from spar.records import readers
from spar.records.model import Finding, LedgerLine, RoundRecord
from spar.round.recording import context_for_round
from spar.series import SeriesRound, is_earlier, read_series, repository_of


@dataclass
class PastFinding:
    """A finding of an earlier round, its standing line and its places."""

    round: str
    order: int  # position of its round in the series
    index: int  # position in its round's findings.json
    finding: Finding
    standing: LedgerLine | None  # the ledger line that stands for it
    was: Place | None  # its place in its own round (None: unreadable, or not located)
    place: Place | None  # that place mapped to the new round's commits (None: gone)

    def earlier(self) -> Earlier:
        return Earlier(round=self.round, order=self.order, index=self.index, finding=self.finding["id"],
                       place=self.place, claim=str(self.finding.get("claim") or ""),
                       disposition=self.standing.get("disposition") if self.standing else None,
                       reviewer=str(self.finding.get("reviewer") or ""))


@dataclass
class _Maps:
    """Line maps between commits of one repository, each diff read once."""

    repo: str
    maps: dict[tuple[str, str], LineMap | None] = field(default_factory=dict)

    def get(self, old: str, new: str) -> LineMap | None:
        if old == new:
            return IDENTITY
        if (old, new) not in self.maps:
            try:
                self.maps[(old, new)] = parse_diff(git.line_diff(self.repo, old, new))
            except git.GitError:
                self.maps[(old, new)] = None  # a commit that is gone: nothing maps
        return self.maps[(old, new)]


def place_of(finding: Finding, ctx: RoundContext) -> Place | None:
    """Where a finding points in the round whose context `ctx` is."""
    if finding.get("location_unreadable") or not isinstance(finding.get("location"), str):
        return None
    located = locate(finding["location"], ctx)
    if located.unreadable:
        return None
    return Place(located.target, located.path, located.start, located.end)


def _map(place: Place | None, rj: RoundRecord, base: str, head: str, maps: _Maps) -> Place | None:
    if place is None:
        return None
    if place.copy == "document":
        return place  # round documents are named, not committed: their lines are taken as they are
    old, new = (rj["head"], head) if place.copy == "head" else (rj["base"], base)
    line_map = maps.get(old, new)
    if line_map is None:
        return None
    mapped = line_map.map_range(place.path, place.start, place.end) if place.path else (place.path, None, None)
    return None if mapped is None else Place(place.copy, *mapped)


def _round_context(rj: RoundRecord) -> RoundContext | None:

    try:
        where = rj.copy()
        repo = repository_of(rj)
        if repo is not None:
            where["repository"] = repo
        return context_for_round(where)
    except (git.GitError, RecordError, Refused):
        return None  # its commits cannot be read: its findings are listed, never matched


def earlier_rounds(series: Path, before: RoundRecord | None) -> list[tuple[int, SeriesRound]]:
    """(series position, round) of every recorded, non-dry round before `before` (a
    round.json; None = every round, for a round not created yet)."""
    out = []
    for order, item in enumerate(read_series(series)):
        rj = item.round
        if before is not None and not is_earlier(rj, item.name, before, str(before.get("name", ""))):
            continue
        # recorded means round.json says so: a findings.json without it is a run killed
        # part-way, whose records a later run never reads
        if rj.get("dry_run") is True or not (rj.get("recorded_at") or rj.get("finished_at")):
            continue
        out.append((order, item))
    return out


def past_findings(series: Path, before: RoundRecord | None, repo: str, base: str, head: str) -> list[PastFinding]:
    """Every finding of the earlier rounds, most recent round first, with its standing
    disposition and its place mapped to `base`/`head` of the new round."""
    maps = _Maps(repo)
    out: list[PastFinding] = []
    for order, item in reversed(earlier_rounds(series, before)):
        findings = readers.read_findings(item.path, round_json=item.round)
        stands = standing(readers.read_ledger(item.path, findings))
        ctx = _round_context(item.round)
        for index, f in enumerate(findings):
            was = place_of(f, ctx) if ctx is not None else None
            place = _map(was, item.round, base, head, maps) if ctx is not None else None
            out.append(PastFinding(item.name, order, index, f, stands.get(f["id"]), was, place))
    return out


def annotate(round_dir: Path, round_json: RoundRecord, findings: list[Finding], ctx: RoundContext) -> None:
    """Give every finding of the round `repeat_of`, `corroborated_by`, `vendor_count` and
    `group` (in place). Callers hold the series lock."""
    repo = str(repository_of(round_json))
    past = [p.earlier() for p in past_findings(round_dir.parent, round_json, repo,
                                                round_json["base"], round_json["head"])]
    presets = {r.get("name"): r.get("preset") or r.get("name") for r in round_json.get("reviewers", [])}
    mine = [Mine(f["id"], str(f.get("reviewer")), str(presets.get(f.get("reviewer"), f.get("reviewer"))),
                 place_of(f, ctx), str(f.get("claim") or "")) for f in findings]
    for f, repeats in zip(findings, find_repeats(mine, past), strict=True):
        f["repeat_of"] = repeat_record(repeats)
    groups = corroborate(mine)
    for f in findings:
        others, vendors = groups[f["id"]]
        f["corroborated_by"] = others
        f["vendor_count"] = vendors
    named = name_groups(findings, {str(k): str(v) for k, v in presets.items()})
    for f in findings:
        f["group"] = named.get(f["id"])
