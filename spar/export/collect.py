"""Findings of the given rounds, flattened with what the export formats need (pure).

Locations (G7): a finding's `path` is a repository path, or the G26 name of a
round document. Four kinds come out:

- `head`: a file or folder of the head commit; lines as the reviewer gave them.
- `base`: the location had the `base/` prefix: the path in the base commit. The
  lines belong to the base version, so exports carry the path without a region
  and say "base commit, lines N-M" in the message.
- `document`: a round document outside the repository (criteria, rules or
  subject given by path); exports use its document name as the path and say so.
- `unreadable`: no target (G7); exports anchor it at the repository root
  (path ".") and put the reviewer's own location text in the message.
- `unsafe`: a path that is not a normalised repository-relative path (absolute,
  a `..`, `.` or empty segment: a crafted tree entry `..`, a forged
  findings.json); exported like `unreadable`, at the root, with the message
  saying why the path was left out. No other path leaves Spar.

Nothing is left out: every finding of every round given is in exactly one item. An
item is a finding chain (below) or a corroborated group (`corroborated_by`, one
round) with everything they join: shown as its newest round given has it, the
older findings named in `chain` (`merge`).

Fingerprint: the sha256 of what identifies the finding's chain: the series
(`series_identity`: its folder's name, and the head commit and start time of
its first round), the first finding's round and id, and its path and claim. A finding
that is the same as an earlier one takes that one's identity, followed to the
first in the chain: triaged as a duplicate (`--of ROUND/ID`, which wins), else
recorded as a repeat of it (`repeat_of`, series memory). So the same problem
seen in later rounds is one alert, and `code-1/claude-F1` of two series are two.

Verification: an item of a verified round (its verifications.json given) carries the
verdict of the finding it shows (each finding its own call's), or why it got
none; the formats show it, and it never changes the disposition or the order.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field

from spar.errors import quote
from spar.judge.refs import G7_PREFIXES, parse_ref
from spar.judge.verdicts import Verdict, unverified, verdicts
from spar.records.model import Finding, LedgerLine, ReviewerStatus, RoundRecord, VerificationsRecord, WaiverLine

CLASSES = ("defect", "requirement-question", "hardening", "note")


@dataclass
class RoundRecords:
    """One round as read from disk."""

    name: str  # the round folder's name
    round: RoundRecord  # round.json
    findings: list[Finding]
    ledger: list[LedgerLine]
    series: str = ""  # the series folder, as given: rounds of two series never mix
    series_id: str = ""  # what identifies the series (`series_identity`), hashed into fingerprints
    waivers: list[WaiverLine] = field(default_factory=list)  # waivers.jsonl
    verifications: VerificationsRecord | None = None  # verifications.json; None: never verified


@dataclass
class Unfinished:
    """A reviewer of an exported round that did not complete: the export is not clean
    unless it was waived."""

    round: str
    reviewer: str
    status: str
    reason: str
    waived: bool


@dataclass
class ReviewerInfo:
    """A reviewer as the export formats describe it."""

    name: str
    preset: str
    model: str  # configured model ("" = the CLI's default)
    observed_model: str | None
    spar_version: str
    rounds: list[str] = field(default_factory=list)
    series_ids: set[str] = field(default_factory=set)  # of the rounds it reviewed
    cli_version: str | None = None  # the reviewer CLI's version check, latest round (attempts' cli_version)
    unfinished: list[Unfinished] = field(default_factory=list)  # rounds it did not complete
    # round name -> (changed files, those no completed reviewer saw), for rounds that record it (issue 24)
    unseen: dict[str, tuple[int, list[str]]] = field(default_factory=dict)


@dataclass
class Item:
    """One recorded finding, flattened for export."""

    round: str
    reviewer: str
    id: str
    finding: Finding
    kind: str  # head | base | document | unreadable | unsafe
    path: str  # "." for unreadable and unsafe
    start: int | None
    end: int | None
    disposition: LedgerLine | None  # the standing ledger line (a duplicate's traced to its end), None when open
    fingerprint: str
    related: list[Item] = field(default_factory=list)  # the other findings of its round this result stands for
    chain: list[str] = field(default_factory=list)  # ROUND/ID of every finding given that it stands for
    verified: bool = False  # its round was verified (verifications.json)
    verdict: Verdict | None = None  # the verdict on this finding (or its group), None when none
    unverified: str | None = None  # why it got no verification call, when its round says

    @property
    def ref(self) -> str:
        return f"{self.round}/{self.id}"

    @property
    def cls(self) -> str:
        value = self.finding.get("class")
        return value if value in CLASSES else "note"

    def location_note(self) -> str:
        """What the message says about a location that is not a head file line."""
        raw = self.finding.get("location", "")
        if self.kind == "unreadable":
            return f"unreadable location {quote(str(raw))}: reported at the repository root"
        if self.kind == "unsafe":
            why = unsafe_path(str(self.finding.get("path", ""))) or "not a repository path"
            return (f"location {quote(str(raw))}: its path {why}, so it is left out and the finding "
                    "reported at the repository root")
        if self.kind == "document":
            return f"in the round document {self.path} (outside the repository)"
        if self.kind == "base" and self.start is not None:
            return f"in the base commit, lines {self.start}-{self.end}"
        if self.kind == "base":
            return "in the base commit"
        return ""

    def message(self) -> str:
        f = self.finding
        parts = [str(f.get("claim", "")).strip()]
        if f.get("failure_scenario"):
            parts.append(f"Failure: {str(f['failure_scenario']).strip()}")
        note = self.location_note()
        if note:
            parts.append(f"({note})")
        if self.related:
            parts.append("Also found by: " + ", ".join(f"{r.reviewer} ({r.ref})" for r in self.related))
        verification = self.verification_text()
        if verification:
            parts.append(verification)
        return "\n\n".join(p for p in parts if p)

    def verification_text(self) -> str:
        """`Verification: refuted by codex (V2): <its evidence>`; "" for a round never verified."""
        if self.verdict is not None:
            return f"Verification: {self.verdict.words()}: {self.verdict.said().strip()}"
        if self.verified:
            return "Verification: not verified" + (f" ({self.unverified})" if self.unverified else "")
        return ""


def _outside_documents(round_json: RoundRecord) -> set[str]:
    """Names of the round's documents that lie outside its repository."""
    repo = round_json.get("repository") or ""
    root = repo.rstrip(os.sep) + os.sep
    names = set()
    for docs in (round_json.get("documents") or {}).values():
        for doc in docs or []:
            path = doc.get("path") or ""
            if not (path == repo or path.startswith(root)):
                names.add(doc.get("name", ""))
    return names


def unsafe_path(path: str) -> str | None:
    """Why `path` is not a normalised repository-relative path ("/"-separated, no
    leading "/", no "..", "." or empty segment), or None when it is one."""
    if path.startswith("/"):
        return "is absolute"
    for segment in path.split("/"):
        if segment in ("", ".", ".."):
            return f"has a {quote(segment)} segment" if segment else "has an empty segment"
    return None


def _location(finding: Finding, outside: set[str]) -> tuple[str, str, int | None, int | None]:
    path = finding.get("path")
    if finding.get("location_unreadable") or not path:
        return "unreadable", ".", None, None
    if not isinstance(path, str) or unsafe_path(path) is not None:
        return "unsafe", ".", None, None
    # the path is already settled (G7); parse only for the prefix and the lines
    parsed = parse_ref(str(finding.get("location", "")), G7_PREFIXES, lambda prefix, p: True)
    if parsed.prefix != "base/" and path in outside:
        return "document", path, None, None
    kind = "base" if parsed.prefix == "base/" else "head"
    return kind, path, parsed.start, parsed.end


def series_identity(folder_name: str, first: RoundRecord | None) -> str:
    """What identifies a series wherever it is checked out: its folder's name and the head
    commit and start time of its first round (the folder name alone repeats across
    repositories, and round names repeat across series)."""
    head = str(first.get("head") or "") if first is not None else ""
    started = str(first.get("started_at") or "") if first is not None else ""
    return "\0".join([folder_name, head, started])


def _fingerprint(series_id: str, ref: str, finding: Finding | None) -> str:
    """The chain's identity, hashed: the series, the first finding's ROUND/ID, path and claim."""
    path = str(finding.get("path") or "") if finding is not None else ""
    claim = str(finding.get("claim") or "") if finding is not None else ""
    return hashlib.sha256("\0".join(["spar-finding/v2", series_id, ref, path, claim]).encode()).hexdigest()


def same_as(r: RoundRecords) -> dict[str, str]:
    """`ROUND/ID` -> the earlier `ROUND/ID` each finding of `r` is the same as: a
    recorded repeat (`repeat_of`), overridden by a standing duplicate (`of`)."""
    out: dict[str, str] = {}
    for f in r.findings:
        repeat = f.get("repeat_of")
        if isinstance(repeat, dict) and isinstance(repeat.get("round"), str) and isinstance(repeat.get("finding"), str):
            out[f"{r.name}/{f['id']}"] = f"{repeat['round']}/{repeat['finding']}"
    standing = {line["finding"]: line for line in r.ledger}
    out.update({f"{r.name}/{fid}": line["of"] for fid, line in standing.items()
                if line.get("disposition") == "duplicate" and isinstance(line.get("of"), str)})
    return out


RoundLookup = Callable[[str, str], "RoundRecords | None"]


class _Chains:
    """Follows each finding to the first of its chain, within its own series, reading other
    rounds of the series through `lookup(series, name)` when a link leads there."""

    def __init__(self, rounds: list[RoundRecords], lookup: RoundLookup | None):
        self.lookup = lookup
        self.rounds: dict[tuple[str, str], RoundRecords | None] = {}
        self.links: dict[tuple[str, str], str] = {}
        self.ledgers: dict[tuple[str, str], dict[str, LedgerLine]] = {}  # the standing line per finding
        for r in rounds:
            self._add(r.series, r.name, r)

    def _add(self, series: str, name: str, r: RoundRecords | None) -> None:
        self.rounds[(series, name)] = r
        self.ledgers[(series, name)] = {line["finding"]: line for line in r.ledger} if r is not None else {}
        if r is not None:
            self.links.update({(series, ref): target for ref, target in same_as(r).items()})

    def _round(self, series: str, name: str) -> RoundRecords | None:
        if (series, name) not in self.rounds:
            self._add(series, name, self.lookup(series, name) if self.lookup is not None else None)
        return self.rounds[(series, name)]

    def first(self, series: str, ref: str) -> str:
        seen = {ref}
        while True:
            self._round(series, ref.split("/", 1)[0])
            target = self.links.get((series, ref))
            if target is None or target in seen:
                return ref
            ref = target
            seen.add(ref)

    def line(self, series: str, ref: str) -> LedgerLine | None:
        """The standing ledger line of ROUND/ID (None: open, or its round unreadable)."""
        name, _, fid = ref.partition("/")
        self._round(series, name)
        return self.ledgers[(series, name)].get(fid)

    def disposition(self, series: str, ref: str) -> LedgerLine | None:
        """The standing line of ROUND/ID, a duplicate's followed to what its chain ends in:
        a duplicate of an open finding is open (as the gate traces it)."""
        line = self.line(series, ref)
        seen = {ref}
        while line is not None and line.get("disposition") == "duplicate":
            target = line.get("of")
            if not isinstance(target, str) or target in seen or self._round(series, target.split("/", 1)[0]) is None:
                return line  # cannot be followed: the line as it stands
            seen.add(target)
            line = self.line(series, target)
        return line

    def fingerprint(self, series: str, series_id: str, ref: str) -> str:
        first = self.first(series, ref)
        name, _, fid = first.partition("/")
        r = self._round(series, name)
        finding = next((f for f in r.findings if f.get("id") == fid), None) if r is not None else None
        return _fingerprint(series_id, first, finding)


def _reviewer_infos(rounds: list[RoundRecords]) -> dict[str, ReviewerInfo]:
    reviewers: dict[str, ReviewerInfo] = {}
    for r in rounds:
        for entry in r.round.get("reviewers", []):
            info = reviewers.get(entry["name"])
            if info is None:
                info = reviewers[entry["name"]] = ReviewerInfo(entry["name"], entry.get("preset") or "", "", None, "")
            info.preset = entry.get("preset") or info.preset
            info.model = entry.get("model") or ""
            info.observed_model = entry.get("observed_model")
            info.spar_version = str(r.round.get("spar_version") or "")
            versions = [a["cli_version"] for a in entry.get("attempts") or [] if a.get("cli_version")]
            info.cli_version = versions[-1] if versions else None
            info.rounds.append(r.name)
            info.series_ids.add(r.series_id)
            if "unseen" in r.round and "changed_files" in r.round:
                info.unseen[r.name] = (r.round["changed_files"], list(r.round["unseen"]))
    return reviewers


def _inputs(r: RoundRecords) -> tuple[str, ...] | None:
    """What makes two rounds one review (design §8's rerun test, as the gate reads it)."""
    packet = r.round.get("packet_sha256")
    if not isinstance(packet, str):
        return None
    return (r.series, str(r.round.get("stage")), str(r.round.get("base")), str(r.round.get("head")), packet)


def unfinished_reviewers(rounds: list[RoundRecords]) -> list[Unfinished]:
    """Each reviewer of the given rounds that did not complete, as the gate counts it: a
    rerun of the same input among the rounds in which it completed settles it, and a
    waiver in any of them waives it."""
    done: dict[tuple[str, ...], set[str]] = {}
    waived: dict[tuple[str, ...], set[str]] = {}
    for r in rounds:
        key = _inputs(r) or (r.series, r.name)
        done.setdefault(key, set()).update(
            e["name"] for e in r.round.get("reviewers", []) if e.get("status") == ReviewerStatus.COMPLETED)
        waived.setdefault(key, set()).update(w.get("reviewer", "") for w in r.waivers)
    out = []
    for r in rounds:
        key = _inputs(r) or (r.series, r.name)
        for e in r.round.get("reviewers", []):
            name = e["name"]
            if e.get("status") != ReviewerStatus.COMPLETED and name not in done[key]:
                out.append(Unfinished(r.name, name, str(e.get("status") or ""), str(e.get("reason") or ""),
                                      name in waived[key]))
    return out


def collect(rounds: list[RoundRecords],
            lookup: RoundLookup | None = None) -> tuple[list[Item], dict[str, ReviewerInfo]]:
    """One item per finding chain or corroborated group of `rounds` (`merge`), in the
    order of their newest round as given, then findings.json order, and the reviewers
    of the rounds (the latest round's entry wins).

    `lookup(series, name)` reads another round of that series when a chain of repeats
    or duplicates leads there, so a fingerprint does not depend on which rounds
    were given; None (or a round it cannot read) ends the chain there."""
    chains = _Chains(rounds, lookup)
    reviewers = _reviewer_infos(rounds)
    for u in unfinished_reviewers(rounds):
        reviewers[u.reviewer].unfinished.append(u)
    found: list[_Found] = []
    for index, r in enumerate(rounds):
        outside = _outside_documents(r.round)
        started = str(r.round.get("started_at") or "")
        checked, why = verdicts(r.verifications, r.findings), unverified(r.verifications)
        for f in r.findings:
            ref = f"{r.name}/{f['id']}"
            kind, path, start, end = _location(f, outside)
            name = str(f.get("reviewer", ""))
            if name not in reviewers:  # a finding always has its reviewer in round.json; be safe
                reviewers[name] = ReviewerInfo(name, "", "", None, str(r.round.get("spar_version") or ""), [r.name])
            item = Item(r.name, name, f["id"], f, kind, path, start, end, chains.disposition(r.series, ref),
                        chains.fingerprint(r.series, r.series_id, ref), verified=r.verifications is not None,
                        verdict=checked.get(f["id"]), unverified=why.get(f["id"]))
            others = [f"{r.name}/{o}" for o in f.get("corroborated_by") or [] if isinstance(o, str)]
            found.append(_Found(item, r.series, (started, index), chains.first(r.series, ref), others))
    return merge(found), reviewers


@dataclass
class _Found:
    item: Item
    series: str
    newness: tuple[str, int]  # its round's started_at, then its place in the list given
    first: str  # ROUND/ID of its chain's first finding
    corroborated: list[str]  # ROUND/ID of the others of its group


def _components(found: list[_Found]) -> list[list[int]]:
    """Indexes of `found` joined by one chain or one corroboration group, each list in order."""
    parent = list(range(len(found)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    first_of: dict[tuple[str, str], int] = {}
    by_ref = {(f.series, f.item.ref): i for i, f in enumerate(found)}
    for i, f in enumerate(found):
        j = first_of.setdefault((f.series, f.first), i)
        parent[root(i)] = root(j)
        for other in f.corroborated:
            k = by_ref.get((f.series, other))
            if k is not None:
                parent[root(k)] = root(i)
    groups: dict[int, list[int]] = {}
    for i in range(len(found)):
        groups.setdefault(root(i), []).append(i)
    return list(groups.values())


def merge(found: list[_Found]) -> list[Item]:
    """One item per chain or corroborated group: its findings of the newest round given
    (their head and lines), the first of them the result and the others `related`;
    the fingerprint is that first one's chain's. A finding of an older round is the
    same problem seen before and is only named in `chain`. Open when any finding shown
    is open. Fingerprints are made unique within the export (two copies of one series
    given together would otherwise share them)."""
    out: list[tuple[int, int, Item]] = []  # (newest round's place in the list, finding's place, item)
    for members in _components(found):
        newest = max(found[i].newness for i in members)
        shown = [i for i in members if found[i].newness == newest]
        head = found[shown[0]].item
        head.related = [found[i].item for i in shown[1:]]
        head.chain = [found[i].item.ref for i in sorted(members, key=lambda i: (found[i].newness, i))]
        if any(found[i].item.disposition is None for i in shown):
            head.disposition = None
        out.append((newest[1], shown[0], head))
    out.sort(key=lambda entry: entry[:2])
    seen: set[str] = set()
    items = []
    for _newest, _index, item in out:
        if item.fingerprint in seen:
            item.fingerprint = hashlib.sha256(f"{item.fingerprint}\0{len(seen)}".encode()).hexdigest()
        seen.add(item.fingerprint)
        items.append(item)
    return items


def justification(line: LedgerLine) -> str:
    """Why a finding is not open, in words, from its standing ledger line."""
    disposition = line.get("disposition", "")
    parts = [disposition]
    if line.get("auto"):
        parts.append("automatically (hardening is deferred when recorded)")
    if line.get("of"):
        parts.append(f"of {line['of']}")
    if line.get("commit"):
        parts.append(f"in {line['commit'][:12]}")
    for key in ("evidence", "user_quote"):
        if line.get(key):
            parts.append(f"{key.replace('_', ' ')}: {line[key]}")
    return "; ".join(parts)
