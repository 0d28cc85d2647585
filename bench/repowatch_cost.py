"""What the repository watch costs a round: one look (`repository_state`) at the start and
one at the end (then `repository_change`), on the 20,000-file repository of `repos.py`,
against `git status` of the same work tree (what the watch used to rest on). Medians of
`--repeat` runs in this process, the page cache warm (a round's own copy has just read the
files). Also: the same with a 1 GiB sparse untracked file beside them (the per-file bound).

    .venv/bin/python bench/repowatch_cost.py [--repeat 7] [--dir /tmp/somewhere]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from harness import OUT, clean_env, machine_line, table
from repos import large_repo

from spar.round.repowatch import repository_change, repository_state


def _timed(call) -> tuple[float, float, object]:
    """Wall time, CPU time (this process and the git children it waited for) and the result."""
    started, before = time.perf_counter(), os.times()
    out = call()
    after = os.times()
    cpu = sum(getattr(after, k) - getattr(before, k) for k in ("user", "system", "children_user", "children_system"))
    return time.perf_counter() - started, cpu, out


def _status(repo: Path) -> None:
    subprocess.run(["git", "-C", str(repo), "-c", "core.fsmonitor=false", "status", "--porcelain=v1", "-z",
                    "--untracked-files=all"], check=True, capture_output=True, env=clean_env())


def _measure(repo: Path, repeat: int) -> dict[str, float]:
    series = repo / "reviews"
    runs: dict[str, list[tuple[float, float]]] = {"status": [], "start": [], "end": []}
    for _ in range(repeat):
        wall, cpu, _ = _timed(lambda: _status(repo))
        runs["status"].append((wall, cpu))
        wall, cpu, before = _timed(lambda: repository_state(repo, series))
        runs["start"].append((wall, cpu))
        wall, cpu, _ = _timed(lambda seen=before: repository_change(seen, repository_state(repo, series)))
        runs["end"].append((wall, cpu))
    state = repository_state(repo, series)
    assert state is not None
    hashed = sum(seen.hashed for seen in state.files.values()) + sum(s.hashed for s in state.git_files.values())
    out: dict[str, float] = {"files": len(state.files), "hashed_mb": hashed / 1e6}
    for key, samples in runs.items():
        out[key] = statistics.median(w for w, _ in samples)
        out[key + "_cpu"] = statistics.median(c for _, c in samples)
    return out


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--dir", default=str(OUT), help="where the generated repository is kept")
    args = parser.parse_args(argv)
    info = large_repo(Path(args.dir), files=20_000, history_mb=5)
    repo = Path(info.path)
    rows = []
    plain = _measure(repo, args.repeat)
    big = repo / "big-sparse.bin"
    with open(big, "wb") as f:
        f.truncate(1 << 30)
    try:
        with_big = _measure(repo, args.repeat)
    finally:
        os.unlink(big)
    for label, m in (("20,000 files", plain), ("+ a 1 GiB sparse file", with_big)):
        rows.append([label, f"{m['files']:,}", f"{m['hashed_mb']:.0f} MB"]
                    + [f"{m[k]:.3f} s / {m[k + '_cpu']:.3f} s" for k in ("status", "start", "end")])
    print(table(f"The repository watch, {info.head_bytes / 1e6:.0f} MB work tree ({machine_line()})",
                ["repository", "files watched", "hashed", "git status", "watch: start look", "watch: end look"],
                rows, ["each time: wall / CPU (this process and its git children), median of "
                       f"{args.repeat}; the end look includes repository_change"]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
