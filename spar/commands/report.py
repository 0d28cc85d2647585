"""`spar report SERIES --out report.html`: the series as one self-contained page.

Reads the series without the lock (it writes nothing there) and refuses on a
record it cannot read (G32), like `spar cap-report`, whose report is the base
of this one; adds per round its wall time and every finding with its
disposition history, and the gate as `spar gate` would judge every round of
the series now. `spar.report_html` renders it.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from spar import __version__
from spar.argparsing import Parser, command_parser
from spar.errors import EXIT_OK, SparError
from spar.records import atomic, clock, readers
from spar.report_html import render
from spar.round import usage
from spar.series import positions, read_series, series_folder

DESCRIPTION = """\
Write one HTML file showing a series: the rounds on a timeline, findings per
round by class (a chart), each reviewer's status, time and cost per round
(from each attempt's usage; "not recorded" for rounds written before Spar
kept it), the gate of the series as `spar gate` judges every round of it now
(state and blocked reasons), and every finding with its disposition history.

The file is self-contained: inline styles and SVG, no script, no external
asset, and a Content-Security-Policy that refuses any fetch. Open it in any
browser, attach it to a ticket, keep it with the series.

Exit codes: 0 written; 64 usage error; 65 refused (the series is not a
series folder, or one of its records cannot be read); 70 the write failed."""


def _parser() -> Parser:
    p = command_parser("report", DESCRIPTION)
    p.add_argument("series", metavar="SERIES", help="the series folder")
    p.add_argument("--out", required=True, metavar="FILE", help="the HTML file to write (replaced whole)")
    return p


def _epoch(stamp: object) -> float | None:
    if not isinstance(stamp, str):
        return None
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _gate(series: Path, rounds: list[Path]) -> dict[str, Any]:
    from spar.commands.gate import build_gate

    if not rounds:
        return {"state": None, "error": "no round yet", "reasons": []}
    try:
        return build_gate([str(p) for p in rounds], None)
    except SparError as err:  # e.g. the repository is gone: say so rather than fail the report
        return {"state": None, "error": f"the gate could not be judged: {err.message}", "reasons": []}


def gather(series: Path) -> dict[str, Any]:
    from spar.commands.cap_report import build_report

    base = build_report(series)
    by_name = {item.name: item for item in read_series(series)}
    order = positions(list(by_name.values()))
    for row in base["rounds"]:
        item = by_name[row["name"]]
        r = item.round
        row["started_epoch"] = _epoch(r.get("started_at"))
        start, end = row["started_epoch"], _epoch(r.get("finished_at") or r.get("recorded_at"))
        row["wall_seconds"] = round(end - start, 3) if start is not None and end is not None else None
        row["usage"] = usage.total(v["usage"] for v in row["reviewers"])
        reasons = {e["name"]: e.get("reason", "") for e in r["reviewers"]}
        for v in row["reviewers"]:
            v["reason"] = reasons.get(v["name"], "")
        row["findings_count"] = row["findings"]  # per class, None when not recorded
        row["findings"] = []
        if row["recorded"]:
            findings = readers.read_findings(item.path, round_json=r)
            ledger = readers.read_ledger(item.path, findings, positions=order)
            for f in findings:
                history = [line for line in ledger if line["finding"] == f["id"]]
                row["findings"].append({**f, "history": history})
    # every round folder, as `spar gate SERIES/*/` reads them: one a killed run left without
    # round.json is part of the series too, and blocks the gate
    gated = [by_name[row["name"]].path for row in base["rounds"]]
    gated += [series / u["name"] for u in base["unfinished"] if series / u["name"] not in gated]
    base["gate"] = _gate(series, gated)
    base["series_name"] = Path(base["series"]).name
    base["generated_at"] = clock.now()
    base["spar_version"] = __version__
    base["usage"] = base["usage"]["series"]
    return base


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    series = series_folder(args.series)
    atomic.write_text(args.out, render(gather(series)))
    print(f"report: {args.out}")
    return EXIT_OK
