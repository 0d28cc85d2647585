"""Run every Spar benchmark, print its tables and write the figures to bench/results.json.

    python bench/run_all.py                     # full: 5–9 repetitions each (15–40 minutes on 2 cores)
    python bench/run_all.py --quick             # one repetition each, no warm-up (a few minutes)
    python bench/run_all.py --only scale,streaming
    python bench/run_all.py --dir /dev/shm --previous

The large repository (20,000 files, ~200 MB history) is generated once into
bench/out/ (about 15 s) and reused. Every table compares against a baseline
measured in the same run; see bench/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from datetime import UTC, datetime

import diff_once
import repos
import round_cost
import round_overhead
import scale
import streaming
import workspace_copies
from harness import BENCH, git_version, machine_line

BENCHMARKS = {
    "cost": lambda a: round_cost.run(a.quick, a.repeat),
    "round": lambda a: round_overhead.run(a.quick, a.repeat, 1.0, a.dir, a.previous),
    "workspace": lambda a: workspace_copies.run(a.quick, a.repeat, a.dir, a.previous),
    "scale": lambda a: scale.run(a.quick, a.repeat, 1000),
    "diff": lambda a: diff_once.run(a.quick, a.repeat),
    "streaming": lambda a: streaming.run(a.quick, a.repeat),
}
RESULTS = BENCH / "results.json"


def machine() -> dict:
    """What the figures were measured on."""
    load = os.getloadavg()
    try:
        with open("/proc/cpuinfo") as f:
            model = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        model = "?"
    try:
        commit = subprocess.run(["git", "-C", str(BENCH), "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True).stdout.strip()
    except OSError:
        commit = "?"
    return {"nproc": os.cpu_count(), "cpu": model, "python": sys.version.split()[0], "git": git_version(),
            "load_at_start": [round(x, 2) for x in load], "commit": commit,
            "measured_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")}


def write_results(figures: dict, quick: bool, started: dict) -> None:
    """Merge this run's figures into bench/results.json (a benchmark not run keeps its last figures)."""
    try:
        old = json.loads(RESULTS.read_text())
    except (OSError, ValueError):
        old = {}
    benchmarks = old.get("benchmarks", {})
    for name, value in figures.items():
        benchmarks[name] = {"machine": started, "quick": quick, "figures": value}
    RESULTS.write_text(json.dumps({"schema": "spar-bench/v1", "benchmarks": benchmarks}, indent=2,
                                  sort_keys=True) + "\n")


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description="Run every Spar benchmark and print its tables.")
    p.add_argument("--quick", action="store_true", help="fewer repetitions")
    p.add_argument("--repeat", type=int, help="repetitions of every benchmark (default: each its own)")
    p.add_argument("--only", help=f"comma-separated subset of {','.join(BENCHMARKS)}")
    p.add_argument("--dir", help="where round folders and workspace copies go (default: the temp folder); "
                                 "/dev/shm takes the disk out of the round and workspace numbers")
    p.add_argument("--previous", action="store_true",
                   help="round and workspace tables: also measure spar's workspace copy as before 8f1906f "
                        "(bench/previous/workspace_v0.py)")
    a = p.parse_args(argv)
    names = a.only.split(",") if a.only else list(BENCHMARKS)
    unknown = [n for n in names if n not in BENCHMARKS]
    if unknown:
        p.error(f"unknown benchmark {unknown[0]!r} (one of {', '.join(BENCHMARKS)})")
    started = time.perf_counter()
    print(f"# Spar benchmarks ({'quick' if a.quick else 'full'})\n\n{machine_line()}\n", flush=True)
    if {"round", "workspace", "cost"} & set(names):
        t = time.perf_counter()
        small, large = repos.small_repo(), repos.large_repo()
        print(f"repositories: {small.label}; {large.label} "
              f"(ready in {time.perf_counter() - t:.0f} s)\n", flush=True)
    failed = 0
    figures: dict = {}
    for name in names:
        t = time.perf_counter()
        on = machine()
        try:
            out = BENCHMARKS[name](a)
            text, figures[name] = out if isinstance(out, tuple) else (out, None)
            if figures[name] is None:
                del figures[name]
            print(text, flush=True)
        except Exception as exc:  # one broken benchmark should not hide the other tables
            failed += 1
            print(f"### {name}: FAILED\n\n{type(exc).__name__}: {exc}\n", flush=True)
        if name in figures:
            write_results({name: figures[name]}, a.quick, {**on, "load_at_end": list(os.getloadavg())})
        print(f"({name}: {time.perf_counter() - t:.0f} s)\n", flush=True)
    print(f"total {time.perf_counter() - started:.0f} s; figures in {RESULTS}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
