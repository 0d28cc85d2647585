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

Nothing is left out: every finding of every round given is exported once.

Fingerprint: the sha256 of the finding's identity, `ROUND/ID`. A finding that
is the same as an earlier one takes that one's identity, followed to the first
in the chain: triaged as a duplicate (`--of ROUND/ID`, which wins), else
recorded as a repeat of it (`repeat_of`, series memory). So the same problem
seen in later rounds is one alert.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field

from spar.errors import quote
from spar.judge.refs import G7_PREFIXES, parse_ref
from spar.records.model import Finding, LedgerLine, RoundRecord

CLASSES = ("defect", "requirement-question", "hardening", "note")


@dataclass
class RoundRecords:
    """One round as read from disk."""

    name: str  # the round folder's name
    round: RoundRecord  # round.json
    findings: list[Finding]
    ledger: list[LedgerLine]


@dataclass
class ReviewerInfo:
    """A reviewer as the export formats describe it."""

    name: str
    preset: str
    model: str  # configured model ("" = the CLI's default)
    observed_model: str | None
    spar_version: str
    rounds: list[str] = field(default_factory=list)
    cli_version: str | None = None  # the reviewer CLI's version check, latest round (attempts' cli_version)


@dataclass
class Item:
    """One recorded finding, flattened for export."""

    round: str
    reviewer: str
    id: str
    finding: Finding
    kind: str  # head | base | document | unreadable
    path: str  # "." for unreadable
    start: int | None
    end: int | None
    disposition: LedgerLine | None  # the standing ledger line, None when open
    fingerprint: str

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
        return "\n\n".join(p for p in parts if p)


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


def _location(finding: Finding, outside: set[str]) -> tuple[str, str, int | None, int | None]:
    path = finding.get("path")
    if finding.get("location_unreadable") or not path:
        return "unreadable", ".", None, None
    # the path is already settled (G7); parse only for the prefix and the lines
    parsed = parse_ref(str(finding.get("location", "")), G7_PREFIXES, lambda prefix, p: True)
    if parsed.prefix != "base/" and path in outside:
        return "document", path, None, None
    kind = "base" if parsed.prefix == "base/" else "head"
    return kind, path, parsed.start, parsed.end


def _fingerprint(identity: str) -> str:
    return hashlib.sha256(f"spar-finding/v1\0{identity}".encode()).hexdigest()


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


Lookup = Callable[[str], "RoundRecords | None"]


def collect(rounds: list[RoundRecords], lookup: Lookup | None = None) -> tuple[list[Item], dict[str, ReviewerInfo]]:
    """Every finding of `rounds` (in the order given, then findings.json order)
    and the reviewers that produced them (the latest round's entry wins).

    `lookup(name)` reads another round of the series when a chain of repeats or
    duplicates leads there, so a fingerprint does not depend on which rounds
    were given; None (or a round it cannot read) ends the chain there."""
    standing: dict[str, LedgerLine] = {}
    for r in rounds:
        for line in r.ledger:
            standing[f"{r.name}/{line['finding']}"] = line
    links: dict[str, str] = {}
    loaded: set[str] = set()
    for r in rounds:
        links.update(same_as(r))
        loaded.add(r.name)

    def identity(ref: str) -> str:
        seen = {ref}
        while True:
            name = ref.split("/", 1)[0]
            if name not in loaded:
                loaded.add(name)
                other = lookup(name) if lookup is not None else None
                if other is not None:
                    links.update(same_as(other))
            target = links.get(ref)
            if target is None or target in seen:
                return ref
            ref = target
            seen.add(ref)

    items: list[Item] = []
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
        outside = _outside_documents(r.round)
        for f in r.findings:
            ref = f"{r.name}/{f['id']}"
            kind, path, start, end = _location(f, outside)
            name = str(f.get("reviewer", ""))
            if name not in reviewers:  # a finding always has its reviewer in round.json; be safe
                reviewers[name] = ReviewerInfo(name, "", "", None, str(r.round.get("spar_version") or ""), [r.name])
            items.append(Item(r.name, name, f["id"], f, kind, path, start, end, standing.get(ref),
                              _fingerprint(identity(ref))))
    return items, reviewers


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
