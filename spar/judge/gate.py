"""Gate judgment (design §10, contract G29/G32) over records already read.

The command (`spar.commands.gate`) reads the rounds, lists the series and
resolves the expected head; this module only decides. Every problem becomes a
blocked reason here — the gate never refuses over what it reads.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

from spar.config.model import STAGES
from spar.judge.dispositions import BLOCKING_CLASSES, Key, Lookup, LookupResult, Trace, standing, trace
from spar.judge.record_rules import CLASSES
from spar.records.model import Finding, LedgerLine, ReviewerEntry, ReviewerStatus, RoundRecord, WaiverLine

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


@dataclass
class SeriesRound:
    """A round folder found by listing a series (listed or not)."""

    name: str
    round: RoundRecord | None
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
    rounds: list[SeriesRound] = field(default_factory=list)
    error: str | None = None


@dataclass
class HeadCheck:
    """The head the latest round must have reviewed, or why it is unknown."""

    expected: str | None
    source: str  # e.g. `--expect-head "main"` or `HEAD of /repo`
    error: str | None = None


# lookup for findings of rounds that were not listed: (series path, key) -> see dispositions.Lookup
ExtraLookup = Callable[[str, Key], LookupResult]


# every key of a finding this module reads; the command keeps only these of each finding it
# reads, so a long series does not hold every claim and evidence text in memory
JUDGED_FINDING_KEYS = ("id", "class", "introduced_by_change", "in_check_paths", "path")


def judged_part(finding: Finding) -> Finding:
    """The part of a finding the judgment reads (JUDGED_FINDING_KEYS)."""
    return cast(Finding, {key: finding[key] for key in JUDGED_FINDING_KEYS if key in finding})  # type: ignore[literal-required]


# every key of a ledger line this module (and the duplicate trace) reads
JUDGED_LEDGER_KEYS = ("finding", "disposition", "of", "auto")


def judged_ledger(ledger: list[LedgerLine]) -> list[LedgerLine]:
    """The standing line of each finding, cut to JUDGED_LEDGER_KEYS: what the judgment
    reads of a ledger (`standing` of the result is the result)."""
    return [cast(LedgerLine, {key: line[key] for key in JUDGED_LEDGER_KEYS if key in line})  # type: ignore[literal-required]
            for line in standing(ledger).values()]


def latest_round(listed: list[ListedRound], stage: str | None = None) -> ListedRound | None:
    """The latest usable round (of `stage` when given): latest `started_at`,
    ties broken by list order, so a list given out of order cannot make an older
    round stand for the series."""
    best: tuple[str, int] | None = None
    found = None
    for index, item in enumerate(listed):
        if item.state != "ok" or (stage is not None and item.record.get("stage") != stage):
            continue
        started = item.record.get("started_at")
        rank = (started if isinstance(started, str) else "", index)
        if best is None or rank >= best:
            best, found = rank, item
    return found


def _same_input(a: RoundRecord, b: RoundRecord) -> bool:
    """Design §8's rerun test: same stage, base, head and packet_sha256."""
    if not isinstance(a.get("packet_sha256"), str):
        return False
    return all(a.get(k) == b.get(k) for k in ("stage", "base", "head", "packet_sha256"))


@dataclass
class StageReviewers:
    """Required reviewers of the latest round of one stage of one series."""

    stage: str
    latest: ListedRound
    required: list[str]
    completed: list[str]
    waived: list[str]
    missing: list[tuple[ListedRound, ReviewerEntry]]  # (round naming it last, its reviewer entry)

    def record(self) -> dict[str, Any]:
        return {"stage": self.stage, "round": self.latest.name, "path": self.latest.path,
                "required_reviewers": self.required, "completed": self.completed, "waived": self.waived}


def stage_reviewers(listed: list[ListedRound], series: str, stage: str) -> StageReviewers | None:
    """The latest round of `stage` in `series`, together with the listed rounds of
    the same input (reruns of unfinished reviewers, design §8): one review of that
    input. A reviewer of any of them is required; it is done when it completed,
    or was waived, in any of them. Without this, rerunning a subset would drop the
    other reviewers that never completed from the gate's view."""
    mine = [item for item in listed if item.series == series]
    latest = latest_round(mine, stage)
    if latest is None:
        return None
    group = [item for item in mine if item.state == "ok" and item.record.get("stage") == stage
             and (item is latest or _same_input(item.record, latest.record))]
    group.sort(key=lambda item: (_started(item), mine.index(item)))
    required: list[str] = []
    done: set[str] = set()
    waived_names: set[str] = set()
    last_entry: dict[str, tuple[ListedRound, ReviewerEntry]] = {}
    for item in group:
        waivers = {w.get("reviewer") for w in (item.waivers or []) if isinstance(w, dict)}
        for entry in item.record["reviewers"]:
            name = entry["name"]
            if name not in required:
                required.append(name)
            last_entry[name] = (item, entry)
            if entry["status"] == ReviewerStatus.COMPLETED:
                done.add(name)
            if name in waivers:
                waived_names.add(name)
    completed = [name for name in required if name in done]
    waived = [name for name in required if name in waived_names]
    missing = [last_entry[name] for name in required if name not in done and name not in waived_names]
    return StageReviewers(stage, latest, required, completed, waived, missing)


def _started(item: ListedRound) -> str:
    started = item.round.get("started_at") if item.round is not None else None
    return started if isinstance(started, str) else ""


def listed_round_reasons(listed: list[ListedRound]) -> list[str]:
    """Step 1: unreadable, dry-run and unrecorded rounds in the list (G29, G32)."""
    reasons: list[str] = []
    for item in listed:
        state = item.state
        if state == "unreadable":
            reasons.append(f"round {item.arg} cannot be read: {item.error}")
        elif state == "unfinished":
            reasons.append(f"round {item.arg} was not finished: {item.unfinished}")
        elif state == "dry_run":
            reasons.append(f"round {item.arg} is a dry run; a dry run is not a review")
        elif state == "not_recorded":
            reasons.append(
                f"round {item.arg} was not finished: it stopped before its findings were recorded "
                "(neither finished_at nor findings.json)"
            )
        if state != "unreadable" and item.waivers_error is not None:
            reasons.append(f"round {item.arg}: waivers.jsonl cannot be read: {item.waivers_error}")
    return reasons


def unlisted_round_reasons(listed: list[ListedRound], series: list[SeriesListing]) -> list[str]:
    """Step 2: rounds of the series missing from the list (G29)."""
    reasons: list[str] = []
    listed_keys = {(item.series, item.name) for item in listed}
    for listing in series:
        if listing.error is not None:
            reasons.append(f"{listing.arg}: the series folder cannot be listed: {listing.error}")
            continue
        for found in listing.rounds:
            if (listing.path, found.name) in listed_keys or not found.belongs_in_list:
                continue
            if found.round is None:
                reasons.append(
                    f"{listing.arg}: round {found.name} of the series cannot be read ({found.error}), "
                    "so the gate cannot tell whether it belongs in the list"
                )
            else:
                reasons.append(f"{listing.arg}: round {found.name} of the series is not in the gate list")
    return reasons


def head_reasons(latest: ListedRound | None, head: HeadCheck | None) -> list[str]:
    """Step 3: the latest round's head against the expected head."""
    if latest is None or head is None:
        return []
    if head.error is not None:
        return [f"the expected head ({head.source}) cannot be resolved: {head.error}"]
    if head.expected != latest.record["head"]:
        return [f"round {latest.arg} reviewed head {latest.record['head']}, but {head.source} is {head.expected}"]
    return []


def all_stage_reviewers(listed: list[ListedRound]) -> dict[tuple[str, str], StageReviewers]:
    """Step 4: required reviewers of the latest round of each stage, per series
    (series path, stage): rounds of another series (another review subject)
    never stand in for this one's."""
    by_key: dict[tuple[str, str], StageReviewers] = {}
    for series_path in dict.fromkeys(item.series for item in listed):
        for stage in STAGES:
            found = stage_reviewers(listed, series_path, stage)
            if found is not None:
                by_key[(series_path, stage)] = found
    return by_key


def reviewer_reasons(by_key: dict[tuple[str, str], StageReviewers]) -> list[str]:
    reasons: list[str] = []
    for found in by_key.values():
        for item, entry in found.missing:
            why = entry["status"]
            if entry.get("reason"):
                why += f": {entry['reason']}"
            reasons.append(
                f"round {item.arg}: required reviewer {entry['name']} neither completed nor was waived ({why})"
            )
    return reasons


@dataclass
class FindingTally:
    """Step 5's outcome: findings counted by class, and the blocking ones traced."""

    counts: dict[str, int]
    open: list[str]  # ROUND/ID of blocking findings without a standing disposition
    auto_deferred: int
    traces: dict[tuple[str, str, str], Trace]  # (series, round, id) of every blocking finding
    reasons: list[str]


RoundKey = tuple[str, str]  # (series path, round name)


def _lookup_in(series_path: str, ids_by_round: dict[RoundKey, set[str]],
               standing_by_round: dict[RoundKey, dict[str, LedgerLine]], extra_lookup: ExtraLookup | None) -> Lookup:
    """Finding lookup for duplicate tracing inside one series: listed rounds
    first, then `extra_lookup` for rounds that were not listed."""

    def lookup(key: Key) -> LookupResult:
        where = (series_path, key[0])
        if where in ids_by_round:
            if key[1] not in ids_by_round[where]:
                return "missing", f"{key[0]}/{key[1]} does not exist"
            return "ok", standing_by_round[where].get(key[1])
        if extra_lookup is None:
            return "unreadable", f"round {key[0]} was not read"
        return extra_lookup(series_path, key)

    return lookup


def tally_findings(listed: list[ListedRound], extra_lookup: ExtraLookup | None) -> FindingTally:
    """Step 5: defects and requirement-questions without a standing disposition."""
    usable = [item for item in listed if item.state == "ok"]
    standing_by_round = {(item.series, item.name): standing(item.ledger or []) for item in usable}
    ids_by_round = {(item.series, item.name): {f["id"] for f in item.findings or []} for item in usable}
    lookups = {path: _lookup_in(path, ids_by_round, standing_by_round, extra_lookup)
               for path in dict.fromkeys(item.series for item in usable)}
    tally = FindingTally(dict.fromkeys(CLASSES, 0), [], 0, {}, [])
    for item in usable:
        lines = standing_by_round[(item.series, item.name)]
        for finding in item.findings or []:
            tally.counts[finding["class"]] += 1
            line = lines.get(finding["id"])
            if line and line.get("disposition") == "deferred" and line.get("auto") is True:
                tally.auto_deferred += 1
            if finding["class"] not in BLOCKING_CLASSES:
                continue
            result = trace((item.name, finding["id"]), lookups[item.series])
            tally.traces[(item.series, item.name, finding["id"])] = result
            if result.state == "disposed":
                continue
            tally.open.append(f"{item.name}/{finding['id']}")
            tally.reasons.append(f"round {item.arg}: finding {finding['id']} ({finding['class']}) {_open_why(result)}")
    return tally


@dataclass
class Growth:
    """Step 6's outcome: defects of the latest code round introduced by the last fix."""

    counts: dict[str, int]  # in_check_paths, outside_check_paths
    ids: list[str]
    reasons: list[str]


def growth(listed: list[ListedRound], traces: dict[tuple[str, str, str], Trace]) -> Growth:
    """Step 6. Reading of "reported, not blocking when disposed": growth is always
    counted; growth outside the check paths blocks until disposed."""
    out = Growth({"in_check_paths": 0, "outside_check_paths": 0}, [], [])
    code = latest_round(listed, "code")
    # "the last fix" exists only when an earlier code round was reviewed: the first
    # code round's defects are the change itself and already block as open findings
    if code is None or not any(item.state == "ok" and item is not code and item.record.get("stage") == "code"
                               and item.series == code.series for item in listed):
        return out
    for finding in code.findings or []:
        if finding["class"] != "defect" or finding.get("introduced_by_change") != "yes":
            continue
        inside = finding.get("in_check_paths") is True
        out.counts["in_check_paths" if inside else "outside_check_paths"] += 1
        out.ids.append(f"{code.name}/{finding['id']}")
        result = traces.get((code.series, code.name, finding["id"]))
        if not inside and (result is None or result.state != "disposed"):
            where = finding.get("path") or "unreadable location"
            out.reasons.append(
                f"round {code.arg}: finding {finding['id']} (defect) was introduced by the last fix "
                f"outside the check paths ({where}) and is not disposed"
            )
    return out


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
    """Return the review-gate/v1 document (without `previous_gate_digest` and
    `spar_version`, which the command adds). Reasons come in the order of the steps."""
    latest = latest_round(listed)
    by_key = all_stage_reviewers(listed)
    tally = tally_findings(listed, extra_lookup)
    grown = growth(listed, tally.traces)
    reasons = (listed_round_reasons(listed) + unlisted_round_reasons(listed, series) + head_reasons(latest, head)
               + reviewer_reasons(by_key) + tally.reasons + grown.reasons)
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
        "rounds": [round_entry(item) for item in listed],
        "required_reviewers": required,
        "completed": completed,
        "waived": waived,
        "stages": [found.record() for found in by_key.values()],
        "findings": tally.counts,
        "open": tally.open,
        "auto_deferred": tally.auto_deferred,
        "growth": grown.counts,
        "growth_findings": grown.ids,
    }


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
