"""Gate judgment (design §10, contract G29/G32) over records already read.

The command (`spar.commands.gate`) reads the rounds, lists the series and
resolves the expected head; this module only decides. Every problem becomes a
blocked reason here — the gate never refuses over what it reads.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from spar.config.model import STAGES
from spar.judge.dispositions import BLOCKING_CLASSES, Trace, standing
from spar.judge.duplicate_trace import DuplicateLinks, DuplicateTracer, ExtraLookup, Reload, RoundKey
from spar.judge.findings import demoted_for_link, demotion_line
from spar.judge.linemap import LineMap
from spar.records.model import Finding, LedgerLine, ReviewerStatus, RoundRecord, WaiverLine
from spar.records.record_rules import CLASSES

SCHEMA = "review-gate/v1"


@dataclass
class ListedRound:
    """One round named on the command line, as read from disk."""

    arg: str  # as given (normalized), used in reasons
    path: str  # real absolute path, used in the gate file
    series_arg: str  # dirname of `arg`, used in reasons
    series: str  # real absolute series path, the grouping key
    name: str
    round: RoundRecord | None = None
    findings: list[Finding] | None = None
    ledger: list[LedgerLine] | None = None
    waivers: list[WaiverLine] | None = None
    error: str | None = None  # round records unreadable
    missing: bool = False  # no folder at the path given (a mistyped path, not damage)
    waivers_error: str | None = None
    # why a run, record or triage left this round unfinished (killed part-way), when it did
    unfinished: str | None = None

    @property
    def state(self) -> str:
        """`unreadable`, `unfinished`, `dry_run`, `not_recorded` (G29) or `ok`."""
        if self.error is not None:
            return "unreadable"
        if self.unfinished is not None:
            return "unfinished"
        if self.round is None:
            return "unreadable"
        if self.round.get("dry_run") is True:
            return "dry_run"
        if self.findings is None:
            return "not_recorded"
        return "ok"

    @property
    def record(self) -> RoundRecord:
        """round.json of a round that was read (any state but `unreadable`)."""
        if self.round is None:
            raise ValueError(f"round {self.arg} was not read")
        return self.round


# what `ListingRound.belongs_in_list` reads of a round.json
SERIES_ROUND_KEYS = ("dry_run", "finished_at", "recorded_at")


@dataclass
class ListingRound:
    """A round folder found by listing a series (listed or not)."""

    name: str
    round: RoundRecord | None  # at least SERIES_ROUND_KEYS of its round.json
    error: str | None = None
    has_findings: bool = False  # findings.json exists in the folder

    @property
    def belongs_in_list(self) -> bool:
        """G29: every review-round/v1 round of the series that is neither a dry
        run nor stopped before recording findings, which G29 defines as "with
        neither finished_at nor findings.json". A round killed while recording
        (findings.json written, round.json never marked recorded) is therefore
        required: left out, its findings would go unjudged; listed, it is named
        as not finished. Deleting its folder clears it."""
        if self.round is None:
            return True  # cannot tell; the caller reports it as unreadable
        if self.round.get("dry_run") is True:
            return False
        return bool(self.round.get("finished_at") or self.round.get("recorded_at") or self.has_findings)


@dataclass
class SeriesListing:
    """A series named on the gate's command line, and its rounds."""

    path: str  # real absolute path
    arg: str  # as first spelled on the command line
    rounds: list[ListingRound] = field(default_factory=list)
    error: str | None = None


@dataclass
class HeadCheck:
    """The head the latest round must have reviewed, or why it is unknown."""

    expected: str | None
    source: str  # e.g. `--expect-head "main"` or `HEAD of /repo`
    error: str | None = None
    expected_tree: str | None = None  # the expected commit's tree, read for a worktree round


# (a code round, an earlier head): the `git diff -U0` from there to the round's head, None
# when it cannot be read
FixDiff = Callable[[RoundRecord, str], LineMap | None]


def links_of(findings: list[Finding], ledger: list[LedgerLine]) -> DuplicateLinks:
    links: DuplicateLinks = {finding["id"]: None for finding in findings}
    for fid, line in standing(ledger).items():
        if fid in links:  # lines about findings that are not there are left out
            links[fid] = line
    return links


def _auto_deferred(line: LedgerLine) -> bool:
    """Deferred automatically (design §3)."""
    return line.get("auto") is True and line.get("disposition") == "deferred"


@dataclass(frozen=True, slots=True)
class _Reviewed:
    """What step 4 needs of a usable round; a few hundred bytes, so the judgment can hold
    one per round of a long series instead of its round.json."""

    index: int  # list order, which breaks ties of started_at
    started: str
    inputs: tuple[Any, ...] | None  # design §8's rerun test: stage, base, head, packet_sha256 (None: no packet)
    arg: str
    name: str
    path: str
    reviewers: tuple[tuple[str, str, Any], ...]  # (name, status, reason); reason only of one not completed
    waived: frozenset[Any]

    @classmethod
    def of(cls, item: ListedRound, index: int, share: Callable[[Any], Any]) -> _Reviewed:
        record = item.record
        packet = record.get("packet_sha256")
        inputs = None
        if isinstance(packet, str):
            inputs = (share(record.get("stage")), share(record.get("base")), share(record.get("head")), packet)
        reviewers = share(tuple(
            (e["name"], e["status"], None if e["status"] == ReviewerStatus.COMPLETED else e.get("reason"))
            for e in record["reviewers"]))
        waived = frozenset(w.get("reviewer") for w in (item.waivers or []) if isinstance(w, dict))
        return cls(index, _started(item), inputs, item.arg, item.name, item.path, reviewers, share(waived))


@dataclass
class StageReviewers:
    """Required reviewers of the latest round of one stage of one series."""

    stage: str
    latest: _Reviewed
    required: list[str]
    completed: list[str]
    waived: list[str]
    missing: list[tuple[str, str, str, Any]]  # (arg of the round naming it last, name, status, reason)

    def record(self) -> dict[str, Any]:
        return {"stage": self.stage, "round": self.latest.name, "path": self.latest.path,
                "required_reviewers": self.required, "completed": self.completed, "waived": self.waived}


def stage_reviewers(rounds: list[_Reviewed], stage: str) -> StageReviewers | None:
    """The latest of the usable rounds of one stage of one series, together with those of
    the same input (reruns of unfinished reviewers, design §8): one review of that input.
    A reviewer of any of them is required; it is done when it completed, or was waived,
    in any of them. Without this, rerunning a subset would drop the other reviewers that
    never completed from the gate's view."""
    latest = None
    for reviewed in rounds:  # latest started_at, ties broken by list order
        if latest is None or reviewed.started >= latest.started:
            latest = reviewed
    if latest is None:
        return None
    group = [r for r in rounds if r is latest or (r.inputs is not None and r.inputs == latest.inputs)]
    group.sort(key=lambda r: (r.started, r.index))
    required: list[str] = []
    done: set[str] = set()
    waived_names: set[str] = set()
    last_entry: dict[str, tuple[str, str, str, Any]] = {}
    for reviewed in group:
        for name, status, reason in reviewed.reviewers:
            if name not in required:
                required.append(name)
            last_entry[name] = (reviewed.arg, name, status, reason)
            if status == ReviewerStatus.COMPLETED:
                done.add(name)
            if name in reviewed.waived:
                waived_names.add(name)
    completed = [name for name in required if name in done]
    waived = [name for name in required if name in waived_names]
    missing = [last_entry[name] for name in required if name not in done and name not in waived_names]
    return StageReviewers(stage, latest, required, completed, waived, missing)


def _started(item: ListedRound) -> str:
    started = item.round.get("started_at") if item.round is not None else None
    return started if isinstance(started, str) else ""


def listed_round_reasons(item: ListedRound) -> list[str]:
    """Step 1, one listed round: unreadable, dry-run and unrecorded (G29, G32)."""
    reasons: list[str] = []
    state = item.state
    if state == "unreadable":
        advice = "" if item.missing else f"; restore its records, or {remove_advice(item.arg)}"
        reasons.append(f"round {item.arg} cannot be read: {item.error}{advice}")
    elif state == "unfinished":
        reasons.append(f"round {item.arg} was not finished: {item.unfinished}; {remove_advice(item.arg)}")
    elif state == "dry_run":
        reasons.append(f"round {item.arg} is a dry run; a dry run is not a review: leave it out of the list "
                       "(spar gate --series leaves dry runs out)")
    elif state == "not_recorded":
        reasons.append(
            f"round {item.arg} was not finished: it stopped before its findings were recorded "
            f"(neither finished_at nor findings.json); {remove_advice(item.arg)}"
        )
    if state != "unreadable" and item.waivers_error is not None:
        reasons.append(f"round {item.arg}: waivers.jsonl cannot be read: {item.waivers_error}")
    return reasons


def remove_advice(folder: str) -> str:
    """What to do about a round folder a stopped run left: the words every view ends with
    (the folder quoted for a shell: the commands are pasted, by a person or an agent)."""
    quoted = shlex.quote(folder)
    return (f"when no spar run is writing it, remove the folder (rm -rf {quoted}; an unprivileged user "
            f"runs chmod -R u+w {quoted} first, its copies are read-only) and run the round again")


def unlisted_round_reasons(listed: set[RoundKey], series: list[SeriesListing]) -> list[str]:
    """Step 2: rounds of the series missing from the list (G29)."""
    reasons: list[str] = []
    for listing in series:
        if listing.error is not None:
            reasons.append(f"{listing.arg}: the series folder cannot be listed: {listing.error}")
            continue
        for found in listing.rounds:
            if (listing.path, found.name) in listed or not found.belongs_in_list:
                continue
            if found.round is None:
                reasons.append(
                    f"{listing.arg}: round {found.name} of the series cannot be read ({found.error}), "
                    "so the gate cannot tell whether it belongs in the list"
                )
            else:
                reasons.append(f"{listing.arg}: round {found.name} of the series is not in the gate list: "
                               f"list it too, or gate the whole series (spar gate --series {shlex.quote(listing.arg)})")
    return reasons


_REVIEW_IT = "review it with a new round (spar run), or name the head the rounds reviewed with --expect-head"


def head_reasons(latest: ListedRound | None, head: HeadCheck | None) -> list[str]:
    """Step 3: the latest round's head against the expected head."""
    if latest is None or head is None:
        return []
    if head.error is not None:
        return [f"the expected head ({head.source}) cannot be resolved: {head.error}"]
    # a round of the working tree reviewed its tree: committing that tree keeps it current
    worktree = latest.record.get("head_source") == "worktree"
    if worktree and head.expected_tree is not None and head.expected_tree == latest.record.get("head_tree"):
        return []
    if head.expected != latest.record["head"]:
        if worktree:  # its head is a commit Spar made, which the user never saw: name what it stands for
            return [f"round {latest.arg} reviewed the working tree snapshot of "
                    f"{latest.record.get('head_parent', '?')} (spar run --worktree), but {head.source} is "
                    f"{head.expected}, whose files differ from it; {_REVIEW_IT}"]
        return [f"round {latest.arg} reviewed head {latest.record['head']}, but {head.source} is {head.expected}; "
                f"{_REVIEW_IT}"]
    return []


def reviewer_reasons(by_key: dict[tuple[str, str], StageReviewers]) -> list[str]:
    reasons: list[str] = []
    for found in by_key.values():
        for arg, name, status, reason in found.missing:
            why = status
            if reason:
                why += f": {reason}"
            reasons.append(f"round {arg}: required reviewer {name} neither completed nor was waived ({why})")
    return reasons


# a finding of a listed round: (series path, round name, finding id)
FindingKey = tuple[str, str, str]


@dataclass(slots=True)
class _Open:
    """A blocking finding without a disposition of its own that ends the matter: traced
    when its round was added (`trace` None: its duplicate chain leads into a round not
    read yet, traced at the end)."""

    series: str
    round: str
    arg: str
    id: str
    cls: str
    trace: Trace | None
    group: str | None = None  # its corroborated group's id, if any
    repeats: str = ""  # the earlier finding it repeats (`finding ID of round R`), if any


@dataclass
class _GrowthCandidate:
    """The latest code round so far: its defects introduced by the change (id, inside the
    check paths, path) and its blocking findings that were not disposed when added."""

    item: ListedRound
    started: str
    grown: list[_Grown]
    undecided: dict[str, _Open]


class _Grown(NamedTuple):
    """A defect the reviewer says the change introduced, and where it is."""

    id: str
    inside: bool  # in the check paths
    path: Any
    lines: tuple[int, int] | None  # its head lines, None for a whole file or a place elsewhere


_HEAD_LINES = re.compile(r":([0-9]+)(?:-([0-9]+))?$")


def _grown_of(finding: Finding) -> _Grown:
    path, location = finding.get("path"), finding.get("location")
    lines = None
    if isinstance(path, str) and isinstance(location, str) and location.startswith(f"head/{path}:"):
        m = _HEAD_LINES.search(location)
        if m:
            lines = (int(m.group(1)), int(m.group(2) or m.group(1)))
    return _Grown(finding["id"], finding.get("in_check_paths") is True, path, lines)


class Judgement:
    """The gate judgment, folded one listed round at a time (`add`) into small running
    state, so a long series is never held whole: counts, the reviewers of each usable
    round, the blocking findings still open, the latest round; duplicate chains are
    traced by a `DuplicateTracer` (the links of the few most recent rounds at hand, a
    round further back read again through `reload`). `finish` gives the document."""

    def __init__(self, reload: Reload | None = None, extra_lookup: ExtraLookup | None = None,
                 fix_diff: FixDiff | None = None) -> None:
        self._fix_diff = fix_diff
        self.rounds: list[dict[str, Any]] = []  # the gate file's rounds[]
        self.listed: set[RoundKey] = set()
        self._tracer = DuplicateTracer(self.listed, reload, extra_lookup)
        self._series: dict[str, None] = {}  # series paths in list order
        self._listed_reasons: list[str] = []
        self.latest: ListedRound | None = None
        self._reviewed: dict[RoundKey, list[_Reviewed]] = {}  # (series, stage) -> usable rounds
        self._counts = dict.fromkeys(CLASSES, 0)
        self._auto_deferred = 0
        self.demoted: list[str] = []  # proposed defects kept as notes for their link, said in every view
        self._open: list[_Open] = []
        self._code_heads: dict[str, dict[str, str]] = {}  # series -> head its code rounds reviewed -> last start
        self._growth: _GrowthCandidate | None = None
        self._shared: dict[Any, Any] = {}

    def add(self, item: ListedRound) -> None:
        """Judge one listed round; nothing of `item` is kept but what the document needs."""
        index = len(self.rounds)
        entry = round_entry(item)
        for field_name in ("stage", "head", "base"):
            entry[field_name] = self._share(entry[field_name])
        self.rounds.append(entry)
        key = (item.series, item.name)
        self.listed.add(key)
        self._series.setdefault(item.series)
        self._listed_reasons += listed_round_reasons(item)
        if item.state != "ok":
            return
        started = _started(item)
        if self.latest is None or started >= _started(self.latest):  # ties: the later in the list
            self.latest = item  # one round's records at most, until a later round replaces it
        stage = item.record["stage"]
        self._reviewed.setdefault((item.series, stage), []).append(_Reviewed.of(item, index, self._share))
        findings = item.findings or []
        links = links_of(findings, item.ledger or [])
        self._tracer.add(key, started, links)
        undecided = self._tally(item, findings, links)
        if stage == "code":
            heads = self._code_heads.setdefault(item.series, {})
            heads[item.record["head"]] = max(heads.get(item.record["head"], ""), started)
            if self._growth is None or started >= self._growth.started:
                # a repeat was reported at an earlier head: the last fix did not bring it
                grown = [_grown_of(f) for f in findings if f["class"] == "defect"
                         and f.get("introduced_by_change") == "yes" and not f.get("repeat_of")]
                self._growth = _GrowthCandidate(item, started, grown, undecided)

    def _share(self, value: Any) -> Any:
        """One object for equal values (heads, bases, reviewer lists): a long series
        repeats them round after round, and the judgment holds them per round."""
        try:
            return self._shared.setdefault(value, value)
        except TypeError:  # unhashable (an odd reason): kept as it is
            return value

    def _tally(self, item: ListedRound, findings: list[Finding], links: DuplicateLinks) -> dict[str, _Open]:
        """Step 5 for one round: count its findings and trace the blocking ones; returns
        those not disposed (or not traceable yet) by id."""
        for finding in findings:
            self._counts[finding["class"]] += 1
            if demoted_for_link(finding):
                self.demoted.append(demotion_line(finding, f"round {item.arg}: "))
        # an id twice (a record the readers refuse) pairs each finding with its line; each
        # line is counted once
        auto = sum(1 for line in links.values() if line and _auto_deferred(line))
        undecided: dict[str, _Open] = {}
        for finding in findings:
            fid, cls = finding["id"], finding["class"]
            line = links.get(fid)
            if line:
                disposition = line.get("disposition")
                if (cls not in BLOCKING_CLASSES or disposition != "duplicate"
                        or self._tracer.duplicate_of_disposed(item.series, (item.name, fid), line)):
                    continue  # not blocking, or disposed: what a trace would find at its first or second step
            elif cls not in BLOCKING_CLASSES:
                continue
            result = self._tracer.trace_now(item.series, (item.name, fid))
            if result is not None and result.state == "disposed":
                continue
            group = finding.get("group")
            gid = group.get("id") if isinstance(group, dict) else None
            undecided[fid] = _Open(item.series, item.name, item.arg, fid, cls, result,
                                   gid if isinstance(gid, str) else None, _repeats(finding))
            self._open.append(undecided[fid])
        self._auto_deferred += auto
        return undecided

    def listed_names(self, series: str) -> set[str]:
        return {name for path, name in self.listed if path == series}

    def finish(self, series: list[SeriesListing], head: HeadCheck | None) -> dict[str, Any]:
        """Return the review-gate/v1 document (without `previous_gate_digest` and
        `spar_version`, which the command adds). Reasons come in the order of the steps."""
        self._tracer.finishing()
        latest = self.latest
        by_key: dict[tuple[str, str], StageReviewers] = {}
        for series_path in self._series:
            for stage in STAGES:
                found = stage_reviewers(self._reviewed.get((series_path, stage), []), stage)
                if found is not None:
                    by_key[(series_path, stage)] = found
        grown, growth_ids, grown_outside = self._grown()
        open_ids, open_reasons = self._open_findings(grown_outside)
        reasons = (self._listed_reasons + unlisted_round_reasons(self.listed, series) + head_reasons(latest, head)
                   + reviewer_reasons(by_key) + open_reasons)
        top = by_key.get((latest.series, latest.record["stage"])) if latest is not None else None
        required, completed, waived = (top.required, top.completed, top.waived) if top else ([], [], [])
        return {
            "schema": SCHEMA,
            "state": "blocked" if reasons else "passed",
            "reasons": reasons,
            "head": latest.record["head"] if latest else None,
            "base": latest.record["base"] if latest else None,
            "criteria_digest": latest.record.get("criteria_digest") if latest else None,
            "expect_head": head.expected if head is not None else None,
            "rounds": self.rounds,
            "required_reviewers": required,
            "completed": completed,
            "waived": waived,
            "stages": [found.record() for found in by_key.values()],
            "findings": self._counts,
            "open": open_ids,
            "auto_deferred": self._auto_deferred,
            "growth": grown,
            "growth_findings": growth_ids,
            "demoted": self.demoted,
        }

    def _open_findings(self, grown_outside: dict[FindingKey, str]) -> tuple[list[str], list[str]]:
        """Step 5's outcome: ROUND/ID of blocking findings without a standing disposition,
        and their reasons; chains into rounds read after theirs are traced now. One reason
        per finding: step 6 (growth outside the check paths, `grown_outside`: where it is)
        only adds to the reason of a finding that is open anyway."""
        ids: list[str] = []
        # a reason, or the key of a group whose members have no disposition at all:
        # they share one reason, at the first member's place
        entries: list[str | tuple[str, str, str]] = []
        grouped: dict[tuple[str, str, str], list[_Open]] = {}
        for row in self._open:
            if row.trace is None:
                row.trace = self._tracer.trace_final(row.series, (row.round, row.id))
            if row.trace.state == "disposed":
                continue
            ids.append(f"{row.round}/{row.id}")
            grown = grown_outside.get((row.series, row.round, row.id))
            if row.group is not None and not grown and len(row.trace.chain) == 1 and row.trace.state == "open":
                key = (row.series, row.round, row.group)
                if key not in grouped:
                    grouped[key] = []
                    entries.append(key)
                grouped[key].append(row)
                continue
            growth = f"; it was introduced by the last fix, outside the check paths ({grown})" if grown else ""
            repeat = f"; it repeats {row.repeats}" if row.repeats else ""
            entries.append(f"round {row.arg}: finding {row.id} ({row.cls}) {_open_why(row.trace)}{repeat}{growth}")
        return ids, [e if isinstance(e, str) else _group_reason(grouped[e]) for e in entries]

    def _grown(self) -> tuple[dict[str, int], list[str], dict[FindingKey, str]]:
        """Step 6: defects of the latest code round introduced by the last fix. Reading of
        "reported, not blocking when disposed": growth is always counted; growth outside
        the check paths that is not disposed is an open defect, and its reason says so
        (returned: each such finding, with where it is). "The last fix" exists only when
        an earlier code round of its series reviewed another head: the first code round's
        defects are the change itself, and a round of the same head again fixed nothing."""
        counts = {"in_check_paths": 0, "outside_check_paths": 0}
        ids: list[str] = []
        outside: dict[FindingKey, str] = {}
        code = self._growth
        if code is None or len(self._code_heads.get(code.item.series, ())) < 2:
            return counts, ids, outside
        for g in self._by_the_fix(code):
            counts["in_check_paths" if g.inside else "outside_check_paths"] += 1
            ids.append(f"{code.item.name}/{g.id}")
            if not g.inside and g.id in code.undecided:
                outside[(code.item.series, code.item.name, g.id)] = g.path or "unreadable location"
        return counts, ids, outside

    def _by_the_fix(self, code: _GrowthCandidate) -> list[_Grown]:
        """The defects of `code` in what the last fix changed: from the head of the latest
        earlier code round at another head to `code`'s head. Without a way to read that
        diff (`judge` over records alone) every one counts; when it cannot be read, none
        does (where the fix reached cannot be told)."""
        if self._fix_diff is None:
            return code.grown
        head, series = code.item.record["head"], code.item.series
        earlier = [(started, h) for h, started in self._code_heads[series].items()
                   if h != head and started <= code.started]
        diff = self._fix_diff(code.item.record, max(earlier)[1]) if earlier else None
        if diff is None:
            return []
        return [g for g in code.grown if isinstance(g.path, str) and diff.touches(g.path, *(g.lines or (None, None)))]


def round_entry(item: ListedRound) -> dict[str, Any]:
    """The gate file's `rounds[]` entry of a listed round."""
    keys = ("stage", "head", "base", "packet_sha256", "counted", "dry_run")
    entry = {key: item.round.get(key) if item.round is not None else None for key in keys}
    return {"path": item.path, "name": item.name, **entry, "state": item.state}


def judge(
    listed: list[ListedRound],
    series: list[SeriesListing],
    head: HeadCheck | None,
    extra_lookup: ExtraLookup | None = None,
) -> dict[str, Any]:
    """The judgment of rounds already read, all at hand (`Judgement` without reading
    any round again)."""
    at_hand = {(item.series, item.name): item for item in listed if item.state == "ok"}

    def reload(series_path: str, name: str) -> DuplicateLinks | str:
        item = at_hand[(series_path, name)]
        return links_of(item.findings or [], item.ledger or [])

    judgement = Judgement(reload, extra_lookup)
    for item in listed:
        judgement.add(item)
    return judgement.finish(series, head)


def _repeats(finding: Finding) -> str:
    """The earlier finding `finding` repeats (`finding ID of round R`), or ""."""
    repeat = finding.get("repeat_of")
    if isinstance(repeat, dict) and isinstance(repeat.get("round"), str) and isinstance(repeat.get("finding"), str):
        return f"finding {repeat['finding']} of round {repeat['round']}"
    return ""


def _group_reason(rows: list[_Open]) -> str:
    """One reason for the open members of a group (one member alone reads as a finding)."""
    first = rows[0]
    if len(rows) == 1:
        return f"round {first.arg}: finding {first.id} ({first.cls}) has no standing disposition"
    members = ", ".join(f"{r.id} ({r.cls})" for r in rows)
    return f"round {first.arg}: group {first.group} (findings {members}) has no standing disposition"


def _open_why(result: Trace) -> str:
    if len(result.chain) == 1:
        if result.state == "open":
            return "has no standing disposition"
        return f"cannot be traced: {result.detail}"
    target = "/".join(result.end)
    if result.state == "open":
        return f"is a duplicate of {_first_link(result)}, traced to {target}, which has no standing disposition"
    if result.state == "cycle":
        return f"is a duplicate of {_first_link(result)}, but the duplicate chain loops back to {target}"
    return f"is a duplicate of {_first_link(result)}, but the chain cannot be followed: {result.detail}"


def _first_link(result: Trace) -> str:
    return "/".join(result.chain[1])
