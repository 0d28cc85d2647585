"""`spar report SERIES --out report.html`: the series as one self-contained page.

Reads the series without the lock (it writes nothing there) and refuses on a
record it cannot read (G32), like `spar cap-report`, whose report is the base
of this one; adds per round its wall time and every finding with its
disposition history, and the gate as `spar gate` would judge every round of
the series now but its dry runs (the page names the rounds it gated).
`spar.report_html` renders it.
"""

from __future__ import annotations

import argparse
import os
from datetime import datetime
from pathlib import Path
from typing import Any

from spar import __version__
from spar.argparsing import Parser, command_parser
from spar.errors import EXIT_OK, SparError
from spar.gating import build_gate, series_gate_list
from spar.judge.verdicts import Verdict
from spar.records import atomic, clock, paths, usage
from spar.records.model import Finding, LedgerLine
from spar.report_html import render
from spar.series import SeriesRound, series_folder
from spar.series_report import build_report, file_table, read_rounds

DETAIL_ROUNDS = 20  # rounds whose every finding the page shows; older ones show their counts
FILE_ROWS = 200  # a file table's rows of unseen files, and of the others: a big change stays readable

DESCRIPTION = """\
Write one HTML file showing a series: the rounds on a timeline, findings per
round by class (a chart), each reviewer's status, time and cost per round
(from each attempt's usage; "not recorded" for rounds written before Spar
kept it), the gate of the series as `spar gate` judges every round of it now
but its dry runs (state and blocked reasons; the page names the rounds it
gated and the dry runs it left out, which `spar gate` blocks on only when
they are listed), and every finding of the latest rounds
(--detail-rounds, default 20) with its disposition history; older rounds
show their counts per class (their records keep every finding: `spar export`).
For each of those latest code rounds that recorded which changed files each
reviewer saw, a table of the changed files against the reviewers: `inline`
(its whole diff was in the packet), `opened` (the reviewer's read or search
calls named it) or a dash, after each reviewer's last attempt; the files no
completed reviewer saw come first and are marked, the others are folded
below them (at most 200 of each are shown; round.json lists them all).
The series is read one round at a time, so a long series costs time, not
memory.

The file is self-contained: inline styles and SVG, no script, no external
asset, and a Content-Security-Policy that refuses any fetch. Open it in any
browser, attach it to a ticket, keep it with the series.

--out never names a record of a series (a file inside a round folder, a
series' extensions.jsonl): that is refused, as `spar gate --out` refuses it.

Exit codes: 0 written; 64 usage error; 65 refused (the series is not a
series folder: a round folder, an empty folder or one holding no round folder;
one of its records cannot be read; --out names a record or a folder that does
not exist); 70 the write failed."""


def _parser() -> Parser:
    p = command_parser("report", DESCRIPTION)
    p.add_argument("series", metavar="SERIES", help="the series folder")
    p.add_argument("--out", required=True, metavar="FILE", help="the HTML file to write (replaced whole)")
    p.add_argument("--detail-rounds", type=_count, default=DETAIL_ROUNDS, metavar="N",
                   help=f"every finding of the latest N rounds (default {DETAIL_ROUNDS}); counts for the others")
    return p


def _count(text: str) -> int:
    value = int(text) if text.isdigit() else -1
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of 1 or more")
    return value


def _epoch(stamp: object) -> float | None:
    if not isinstance(stamp, str):
        return None
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _gate(rounds: list[Path], dry_runs: list[str], left_out: list[str]) -> dict[str, Any]:
    """`spar gate` over `rounds`, with the names it judged (`gated`), the dry runs it
    left out (`not_gated`) and the rounds a run stopped in (`stopped`: what to do)."""
    named = {"gated": [p.name for p in rounds], "not_gated": dry_runs, "stopped": left_out}
    if not rounds:
        why = "no round to gate yet (a dry run is not gated)" if dry_runs else "no round yet"
        return {"state": None, "error": why, "reasons": [], **named}
    try:
        return {**build_gate([str(p) for p in rounds], None), **named}
    except SparError as err:  # e.g. the repository is gone: say so rather than fail the report
        return {"state": None, "error": f"the gate could not be judged: {err.message}", "reasons": [], **named}


def _verdict(verdict: Verdict | None) -> dict[str, str] | None:
    """A finding's verdict as the page shows it; None when the verified round gave it none."""
    if verdict is None:
        return None
    return {"verdict": verdict.verdict, "verifier": verdict.verifier, "preset": verdict.preset, "call": verdict.call,
            "evidence": verdict.said(), "group": verdict.group or ""}


def gather(series: Path, detail_rounds: int = DETAIL_ROUNDS) -> dict[str, Any]:
    """The page's data, reading the series one round at a time: every round has its row
    and counts; the findings with their disposition history are kept for the latest
    `detail_rounds` rounds only, so memory stays flat however long the series is."""
    rounds = read_rounds(series)
    detailed = {item.name for item in rounds[max(len(rounds) - detail_rounds, 0):]}
    findings: dict[str, list[dict[str, Any]]] = {}
    verified: set[str] = set()

    def keep(item: SeriesRound, recorded: list[Finding], ledger: list[LedgerLine],
             checked: dict[str, Verdict] | None) -> None:
        if item.name not in detailed:
            return
        history: dict[str, list[LedgerLine]] = {}
        for line in ledger:
            history.setdefault(line["finding"], []).append(line)
        if checked is not None:
            verified.add(item.name)
        findings[item.name] = [{**f, "history": history.get(f["id"], []),
                                "verification": _verdict(checked.get(f["id"])) if checked is not None else None}
                               for f in recorded]

    base = build_report(series, rounds, keep)
    by_name = {item.name: item for item in rounds}
    for row in base["rounds"]:
        r = by_name[row["name"]].round
        row["started_epoch"] = _epoch(r.get("started_at"))
        start, end = row["started_epoch"], _epoch(r.get("finished_at") or r.get("recorded_at"))
        row["wall_seconds"] = round(end - start, 3) if start is not None and end is not None else None
        row["usage"] = usage.total(v["usage"] for v in row["reviewers"])
        reasons = {e["name"]: e.get("reason", "") for e in r["reviewers"]}
        for v in row["reviewers"]:
            v["reason"] = reasons.get(v["name"], "")
        row["findings_count"] = row["findings"]  # per class, None when not recorded
        row["findings"] = findings.get(row["name"], [])
        row["detailed"] = row["name"] in detailed
        row["verified"] = row["name"] in verified
    # the rounds `spar gate --series` and `spar hook` gate (G29's list): one verdict everywhere
    listed = series_gate_list(series)
    base["gate"] = _gate([Path(p) for p in listed.rounds], listed.dry_runs, listed.left_out)
    base["series_name"] = Path(base["series"]).name
    base["generated_at"] = clock.now()
    base["spar_version"] = __version__
    base["usage"] = base["usage"]["series"]
    base["detail_rounds"] = detail_rounds
    base["file_tables"] = [table for item in rounds if item.name in detailed
                           and (table := file_table(item, FILE_ROWS)) is not None]
    return base


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    series = series_folder(args.series, read="rounds")
    # never over a record (a round's ledger.jsonl, the series' extensions.jsonl), nor inside
    # a round folder a killed run left without round.json
    with os.scandir(series) as entries:
        folders = [entry.path for entry in entries if entry.is_dir()]
    paths.check_not_record(args.out, folders, [series])
    paths.check_out_folder(args.out)
    atomic.write_text(args.out, render(gather(series, args.detail_rounds)))
    print(f"report: {args.out}")
    return EXIT_OK
