"""Run every Spar benchmark and print its tables.

    python bench/run_all.py                     # full: 5–7 repetitions each (10–25 minutes on 2 cores)
    python bench/run_all.py --quick             # one repetition each, no warm-up (a few minutes)
    python bench/run_all.py --only scale,streaming
    python bench/run_all.py --dir /dev/shm --previous

The large repository (20,000 files, ~200 MB history) is generated once into
bench/out/ (about 15 s) and reused. Every table compares against a baseline
measured in the same run; see bench/README.md.
"""

from __future__ import annotations

import argparse
import sys
import time

import repos
import round_overhead
import scale
import streaming
import workspace_copies
from harness import machine_line

BENCHMARKS = {
    "round": lambda a: round_overhead.run(a.quick, None, 1.0, a.dir, a.previous),
    "workspace": lambda a: workspace_copies.run(a.quick, None, a.dir, a.previous),
    "scale": lambda a: scale.run(a.quick, None, 200),
    "streaming": lambda a: streaming.run(a.quick, None),
}


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description="Run every Spar benchmark and print its tables.")
    p.add_argument("--quick", action="store_true", help="fewer repetitions")
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
    if {"round", "workspace"} & set(names):
        t = time.perf_counter()
        small, large = repos.small_repo(), repos.large_repo()
        print(f"repositories: {small.label}; {large.label} "
              f"(ready in {time.perf_counter() - t:.0f} s)\n", flush=True)
    failed = 0
    for name in names:
        t = time.perf_counter()
        try:
            print(BENCHMARKS[name](a), flush=True)
        except Exception as exc:  # one broken benchmark should not hide the other tables
            failed += 1
            print(f"### {name}: FAILED\n\n{type(exc).__name__}: {exc}\n", flush=True)
        print(f"({name}: {time.perf_counter() - t:.0f} s)\n", flush=True)
    print(f"total {time.perf_counter() - started:.0f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
