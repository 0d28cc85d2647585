"""A series as one document: caps and extensions per stage, each round's reviewers,
findings and usage, convergence verdicts and the reviewer scoreboard (design §11).

Reads the series without the lock (it writes nothing) and refuses on any record
it cannot read. `spar cap-report` prints the document (Markdown or JSON,
`cap-report/v1`); `spar report` draws it as a page.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

from spar import __version__
from spar.judge import coverage
from spar.judge.convergence import named_groups, round_convergence, scoreboard, stage_verdict
from spar.judge.dispositions import standing
from spar.judge.verdicts import NoiseBoard, Verdict, verdicts
from spar.records import readers, usage
from spar.records.model import ExtensionLine, Finding, LedgerLine, RoundRecord
from spar.records.record_rules import CAUSES, CLASSES
from spar.series import SeriesRound, order_key, positions, project_caps, stage_caps

NO_CAUSE = "no_recorded_cause"
SCHEMA = "cap-report/v1"

# what the reports keep of each round.json: a long series is held as these summaries,
# never whole (a round.json holds documents, configuration and every attempt's argv)
_ROUND_KEYS = ("name", "stage", "head", "base", "started_at", "finished_at", "recorded_at", "counted",
               "dry_run", "packet_sha256")


def _summary(r: RoundRecord) -> RoundRecord:
    """The part of a round.json (already read and checked) that cap-report and report use."""
    caps = (r.get("config") or {}).get("caps")
    kept: dict[str, Any] = {k: r[k] for k in _ROUND_KEYS if k in r}  # type: ignore[literal-required]
    kept["config"] = {"caps": caps} if caps is not None else {}
    kept["reviewers"] = [{"name": e["name"], "preset": e.get("preset"), "status": e["status"],
                          "reason": e.get("reason", ""),
                          "attempts": [{"usage": a.get("usage")} for a in e.get("attempts") or []
                                       if isinstance(a, dict)]}
                         for e in r["reviewers"]]
    if "unseen" in r and "changed_files" in r:  # their counts only: memory stays flat
        kept["coverage"] = {"changed_files": r["changed_files"], "unseen": len(r["unseen"]),
                            "files": "inline_files" in r}  # whether file_table can draw it
    return cast(RoundRecord, kept)


NOT_SEEN = "\u2014"  # a file table's cell for a reviewer that did not see the file


def file_table(item: SeriesRound, most: int) -> dict[str, Any] | None:
    """The changed files x reviewers of a round that recorded its file lists (`spar report`),
    None for one that did not. Its round.json is read again: the summaries keep no lists, so
    only the rounds the page draws cost their lists, one at a time. Each cell is `inline`,
    `opened` or NOT_SEEN, after the reviewer's last attempt (the one that answered). Rows:
    the files no completed reviewer saw (`unseen`, in the record's order), then the others by
    path; at most `most` of each, with the count of those left out."""
    if not (cast(dict[str, Any], item.round).get("coverage") or {}).get("files"):
        return None
    r = readers.read_round(item.path)
    inline = set(r.get("inline_files") or [])
    columns = []
    opened: list[set[str] | None] = []  # None: nothing to read (it never ran, or awaits its record)
    for e in r["reviewers"]:
        attempts = e.get("attempts") or []
        last = attempts[-1].get("coverage") if attempts else None
        # no attempt: a reviewer Spar did not run (recorded by `spar record`), its calls not visible
        observed = last["observed"] if last else None if attempts else False
        columns.append({"name": e["name"], "status": e["status"], "observed": observed})
        opened.append(coverage.had(e, inline))

    def row(path: str) -> dict[str, Any]:
        cells = [NOT_SEEN if files is None else "inline" if path in inline else "opened" if path in files
                 else NOT_SEEN for files in opened]
        return {"path": path, "cells": cells}

    unseen = r["unseen"]
    seen = sorted((inline | set().union(*(files for files in opened if files))) - set(unseen))
    return {"round": item.name, "changed_files": r["changed_files"], "reviewers": columns,
            "unseen": [row(p) for p in unseen[:most]], "unseen_left": max(len(unseen) - most, 0),
            "seen": [row(p) for p in seen[:most]], "seen_left": max(len(seen) - most, 0)}


def read_rounds(series: Path) -> list[SeriesRound]:
    """Every round of the series in series order, each round.json read once and kept as
    its summary: memory grows by a few hundred bytes a round, not by the records."""
    rounds = [SeriesRound(p, _summary(readers.read_round(p))) for p in readers.series_rounds(series)]
    rounds.sort(key=lambda item: (order_key(item.round)[0], item.name))
    return rounds


def _is_recorded(r: RoundRecord) -> bool:
    # findings count once round.json says they were recorded; a findings.json without
    # that is a run killed before its final round.json (listed under unfinished)
    return not r.get("dry_run") and bool(r.get("finished_at") or r.get("recorded_at"))


def _recorded_findings(item: SeriesRound) -> list[Finding] | None:
    r = item.round
    return readers.read_findings(item.path, round_json=r) if _is_recorded(r) else None


def _round_row(item: SeriesRound) -> dict[str, Any]:
    """A round's row from its round.json; the findings' counts come later (`_count`)."""
    r = item.round
    return {
        "name": item.name,
        "stage": r["stage"],
        "head": r["head"],
        "base": r["base"],
        "started_at": r.get("started_at"),
        "counted": r.get("counted") is True and not r.get("dry_run"),
        "dry_run": r.get("dry_run") is True,
        "recorded": _is_recorded(r),
        "reviewers": [{"name": e["name"], "preset": e.get("preset"), "status": e["status"],
                       "attempts": len(e.get("attempts") or []), "usage": usage.of_reviewer(e)}
                      for e in r["reviewers"]],
        "findings": None,
        "new_defects": None,
        "convergence": None,
        "groups": [],
    }


def _count(row: dict[str, Any], findings: list[Finding] | None) -> None:
    """Fill the row's per-class counts, new defects and convergence (None: not recorded)."""
    if findings is None:
        return
    counts = dict.fromkeys(CLASSES, 0)
    new = 0
    for f in findings:
        cls = f.get("class")
        if cls in counts:
            counts[cls] += 1
        if cls == "defect" and f.get("introduced_by_change") == "yes":
            new += 1
    row.update(findings=counts, new_defects=new, convergence=round_convergence(findings),
               groups=named_groups(findings))


def _verdicts(rows: list[dict[str, Any]], rounds: list[SeriesRound]) -> list[dict[str, Any]]:
    """Per stage: new findings per input (a rerun of the same input adds to its round)."""
    out = []
    for stage in ("plan", "plan-delta", "code"):
        steps: dict[tuple[Any, ...], int | None] = {}
        for row, item in zip(rows, rounds, strict=False):
            if row["stage"] != stage or row["dry_run"] or not row["recorded"]:
                continue
            key = (item.round.get("head"), item.round.get("packet_sha256"))
            known = row["convergence"]
            before = steps.get(key, 0)
            # one round of an input recorded before repeats existed makes the input's count unknown
            steps[key] = None if known is None or before is None else before + known["new"]
        if any(row["stage"] == stage for row in rows):
            out.append({"stage": stage, **stage_verdict(stage, [n for n in steps.values() if n is not None])})
    return out


def _stages(rounds: list[SeriesRound], extensions: list[ExtensionLine]) -> tuple[list[dict[str, Any]], str | None]:
    caps, caps_from = project_caps(rounds)
    stages = []
    for sc in stage_caps(rounds, caps, extensions):
        stages.append({
            "stage": sc.stage,
            "project_cap": sc.project_cap,
            "extended_by": sc.extended_by,
            "cap": sc.cap,
            "counted": len(sc.counted),
            "counted_rounds": sc.counted,
            "remaining": sc.remaining,
            "extensions": [{"by": e["by"], "cause": e.get("cause"), "reason": e.get("reason"), "at": e.get("at")}
                           for e in sc.extensions],
        })
    return stages, caps_from


def _causes(extensions: list[ExtensionLine]) -> dict[str, dict[str, int]]:
    tally = {cause: {"extensions": 0, "by": 0} for cause in (*CAUSES, NO_CAUSE)}
    for e in extensions:
        if e["stage"] != "code":
            continue
        given = e.get("cause")
        cause = given if given is not None and given in CAUSES else NO_CAUSE
        tally[cause]["extensions"] += 1
        tally[cause]["by"] += e["by"]
    return tally


# seen(round, findings, ledger, verdicts by finding id or None when the round was never verified)
Seen = Callable[[SeriesRound, list[Finding], list[LedgerLine], "dict[str, Verdict] | None"], None]


def _with_findings(rounds: list[SeriesRound], rows: list[dict[str, Any]], seen: Seen | None,
                   noise: NoiseBoard) -> Iterator[dict[str, Any]]:
    """One round at a time, in series order: its findings, ledger and verifications are read,
    its row gets the counts, `seen` (if any) is shown them, `noise` gets a verified round's
    verdicts and the scoreboard gets what it tallies. Nothing of a round's findings is
    kept once the next round is read."""
    order = positions(rounds)  # a duplicate link into a later round is refused, as triage refuses it
    for item, row in zip(rounds, rows, strict=True):
        findings = _recorded_findings(item)
        ledger = readers.read_ledger(item.path, findings, positions=order) if findings is not None else []
        record = readers.read_verifications(item.path, findings) if findings is not None else None
        checked = verdicts(record, findings or []) if record is not None else None
        _count(row, findings)
        if checked is not None and findings is not None:
            noise.add_round(findings, checked, {e["name"]: str(e.get("preset")) for e in item.round["reviewers"]})
        if seen is not None and findings is not None:
            seen(item, findings, ledger, checked)
        if not item.round.get("dry_run"):
            yield {"reviewers": item.round["reviewers"], "findings": findings,
                   "standing": standing(ledger) if findings is not None else {}}


def build_report(series: Path, rounds: list[SeriesRound] | None = None, seen: Seen | None = None) -> dict[str, Any]:
    """The cap-report/v1 document, reading the series round by round (memory stays flat in
    the number of rounds). `rounds`: `read_rounds(series)` when the caller has it already;
    `seen(round, findings, ledger, verdicts)` is called for every recorded round as it is read."""
    rounds = read_rounds(series) if rounds is None else rounds
    extensions = readers.read_extensions(series)
    stages, caps_from = _stages(rounds, extensions)
    rows = [_round_row(item) for item in rounds]
    spent = _usage(rows)
    noise = NoiseBoard()
    board = scoreboard(_with_findings(rounds, rows, seen, noise), {r["name"]: r for r in spent["reviewers"]})
    return {
        "schema": SCHEMA,
        "series": str(series.resolve()),
        "spar_version": __version__,
        "caps_from": caps_from,
        "stages": stages,
        "rounds": rows,
        "code_extension_causes": _causes(extensions),
        "usage": spent,
        "verdicts": _verdicts(rows, rounds),
        "scoreboard": board,
        "noise": noise.document(b["name"] for b in board),
        "unfinished": unfinished(series, rounds),
        "coverage": _coverage(rounds),
    }


def _coverage(rounds: list[SeriesRound]) -> dict[str, int]:
    """Issue 24: over the non-dry rounds that recorded it, changed files and those no reviewer saw."""
    kept = [c for item in rounds if not item.round.get("dry_run")
            and (c := cast(dict[str, Any], item.round).get("coverage")) is not None]
    return {"rounds": len(kept), "changed_files": sum(c["changed_files"] for c in kept),
            "unseen": sum(c["unseen"] for c in kept)}


def unfinished(series: Path, rounds: list[SeriesRound]) -> list[dict[str, Any]]:
    """Rounds a killed write left unfinished (`{"name", "why"}` by name): a started
    round folder without round.json, leftover `*.tmp` files, and a round whose
    round.json was never marked recorded (not a dry run)."""
    found = {item["name"]: item for item in readers.unfinished_rounds(series)}
    for item in rounds:
        r = item.round
        if item.name not in found and not r.get("dry_run") and not (r.get("recorded_at") or r.get("finished_at")):
            found[item.name] = {"name": item.name, "why": "round.json was never marked recorded "
                                "(the run stopped before its findings were recorded)"}
    return [found[name] for name in sorted(found)]


def _usage(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Totals per reviewer name (first-seen order) and for the whole series, over every attempt
    of every round (dry runs have none)."""
    by_name: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        for r in row["reviewers"]:
            by_name.setdefault(r["name"], []).append(r)
    reviewers = [{"name": name, "rounds": len(entries), "attempts": sum(e["attempts"] for e in entries),
                  **usage.total(e["usage"] for e in entries)} for name, entries in by_name.items()]
    series = usage.total(r["usage"] for row in rows for r in row["reviewers"])
    return {"reviewers": reviewers,
            "series": {"attempts": sum(r["attempts"] for r in reviewers), **series}}
