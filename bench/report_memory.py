"""Memory of the series reports: `spar report` and `spar cap-report` over long series.

Issue 25 measured `spar report` over 1,000 rounds x 50 findings at a 435 MiB peak and
`spar cap-report` at 174 MiB, both growing with the series. Both now read the series
one round at a time (the report keeps every finding of its latest 20 rounds only), so
the peak should stay flat in the number of rounds and under 64 MiB. This runs each
command as a child (wall time and peak RSS through os.wait4, harness.run_measured)
over series of 250 and 1,000 rounds built by bench/series.py, against `spar --version`.

    python bench/report_memory.py [--rounds 250,1000] [--repeat N]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

from harness import clean_env, fmt_mb, fmt_s, machine_line, remove_tree, run_measured, spar_argv, table, work_dir
from series import build_series

LIMIT_MB = 64.0


def _commands(series: Path, out: Path) -> dict[str, list[str]]:
    return {
        "spar report": spar_argv("report", str(series), "--out", str(out)),
        "spar cap-report (md)": spar_argv("cap-report", str(series)),
        "spar cap-report --format json": spar_argv("cap-report", str(series), "--format", "json"),
        "baseline: spar --version": spar_argv("--version"),
    }


def measure(rounds: int, repeat: int) -> dict[str, dict[str, float]]:
    """Median wall time and peak RSS of each command over a series of `rounds` rounds."""
    tmp = work_dir("report-memory")
    try:
        series = tmp / "reviews"
        build_series(series, rounds)
        env = clean_env()
        figures: dict[str, dict[str, float]] = {}
        for name, argv in _commands(series, tmp / "report.html").items():
            samples = [run_measured(argv, env=env, timeout=1800) for _ in range(repeat)]
            figures[name] = {"wall": statistics.median(s.wall for s in samples),
                             "maxrss_mb": statistics.median(s.maxrss_mb for s in samples)}
        figures["report size"] = {"bytes": (tmp / "report.html").stat().st_size}
        return figures
    finally:
        remove_tree(tmp)


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", default="250,1000", help="series lengths, comma-separated (default 250,1000)")
    p.add_argument("--repeat", type=int, default=1, help="runs per command (median; default 1)")
    a = p.parse_args(argv)
    rows = []
    ok = True
    for rounds in (int(n) for n in a.rounds.split(",")):
        figures = measure(rounds, a.repeat)
        for name, f in figures.items():
            if "wall" not in f:
                continue
            within = name.startswith("baseline") or f["maxrss_mb"] < LIMIT_MB
            ok = ok and within
            rows.append([f"{rounds} x 50", name, fmt_s(f["wall"]), fmt_mb(f["maxrss_mb"]),
                         "" if name.startswith("baseline") else ("yes" if within else "NO")])
        rows.append([f"{rounds} x 50", "report.html size", "", f"{figures['report size']['bytes'] / 1e6:.1f} MB", ""])
    print(table("Series reports: wall time and peak RSS (os.wait4)",
                ["series", "command", "wall", "peak RSS", f"< {LIMIT_MB:.0f} MiB"], rows,
                [machine_line(), f"median of {a.repeat} run(s) per command"]))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
