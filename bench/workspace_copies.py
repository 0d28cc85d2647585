"""Workspace copies: `workspace/head` + `workspace/base` as `spar run` builds them,
against `git archive <commit> | tar -x` of the same two commits (the practical floor).

Both sides run in a child process per repetition, in alternating order, into
fresh folders; the first repetition of each is a warm-up and is not counted
(it fills the page cache with the pack; --quick skips it and runs once). Time
is wall time of the copies alone (the spar side is timed inside the child,
without interpreter start-up; the archive side includes starting sh and git).

With --previous it also measures the copy as it was before commit 8f1906f
(bench/previous/workspace_v0.py: whole commits read into memory, no hard
links) as a third side of the same alternating runs.

    python bench/workspace_copies.py [--quick] [--repeat N] [--dir FOLDER] [--previous]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from harness import (
    BENCH,
    PYTHON,
    Series,
    clean_env,
    fmt_mb,
    fmt_s,
    machine_line,
    remove_tree,
    run_measured,
    table,
    work_dir,
)
from repos import RepoInfo, large_repo, small_repo

_CHILD = """
import importlib, json, resource, sys, time
from pathlib import Path
repo, base, head, dest, module = sys.argv[1:6]
build_workspace = importlib.import_module(module).build_workspace
t = time.perf_counter()
build_workspace(repo, base, head, Path(dest))
elapsed = time.perf_counter() - t
print(json.dumps({"seconds": elapsed, "maxrss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
"""

_ARCHIVE = ("set -e; mkdir -p \"$3/head\" \"$3/base\"; "
            "git -C \"$1\" archive \"$2\" | tar -x -C \"$3/head\"; "
            "git -C \"$1\" archive \"$4\" | tar -x -C \"$3/base\"")


def _copy_with(module: str):
    def copy(info: RepoInfo, dest: Path) -> tuple[float, float]:
        s = run_measured([PYTHON, "-c", _CHILD, info.path, info.base, info.head, str(dest), module],
                         env=clean_env(PYTHONPATH=str(BENCH)), cwd=BENCH)
        data = json.loads(s.stdout)
        return data["seconds"], data["maxrss_kb"] / 1024
    return copy


spar_copy = _copy_with("spar.round.workspace")
previous_copy = _copy_with("previous.workspace_v0")  # the code before 8f1906f, kept for before/after only


def archive_copy(info: RepoInfo, dest: Path) -> tuple[float, float]:
    s = run_measured(["sh", "-c", _ARCHIVE, "sh", info.path, info.head, str(dest), info.base], env=clean_env())
    return s.wall, s.maxrss_mb


def measure(info: RepoInfo, repeat: int, where: str | None = None, previous: bool = False,
            warmup: bool = True) -> dict:
    tmp = work_dir("ws", where)
    sides = [("spar", spar_copy), ("archive", archive_copy)] + ([("previous", previous_copy)] if previous else [])
    res = {name: (Series(), Series()) for name, _ in sides}
    try:
        for i in range(0 if warmup else 1, repeat + 1):
            order = sides if i % 2 == 0 else list(reversed(sides))
            for name, fn in order:
                dest = tmp / f"{name}-{i}"
                os.sync()  # start each copy with no dirty pages left by the one before
                seconds, mb = fn(info, dest)
                remove_tree(dest)
                if i == 0:
                    continue  # warm-up: fills the page cache with the pack
                res[name][0].add(seconds)
                res[name][1].add(mb)
    finally:
        remove_tree(tmp)
    return res


def run(quick: bool, repeat: int | None, where: str | None = None,
        previous: bool = False) -> tuple[str, dict]:
    repeat = repeat or (1 if quick else 5)
    rows = []
    figures: dict = {"repeat": repeat, "where": where or tempfile.gettempdir()}
    for info, size in ((small_repo(), "small"), (large_repo(), "large")):
        r = measure(info, repeat, where, previous, warmup=not quick)
        (st, sm), (at, am) = r["spar"], r["archive"]
        figures[size] = {"files": info.files, "spar_seconds": st.median, "archive_floor_seconds": at.median,
                         "ratio": st.median / at.median, "spar_peak_rss_mib": sm.median,
                         "spar_range": st.spread(), "archive_range": at.spread()}
        row = [info.label, fmt_s(st.median), st.spread(), fmt_s(at.median), at.spread(),
               f"{st.median / at.median:.2f}x", fmt_mb(sm.median), fmt_mb(am.median)]
        if previous:
            pt, pm = r["previous"]
            row += [fmt_s(pt.median), pt.spread(), f"{pt.median / at.median:.2f}x", fmt_mb(pm.median),
                    f"{pt.median / st.median:.1f}x"]
        rows.append(row)
    header = ["repository", "spar build_workspace", "range", "git archive + tar -x", "range", "ratio",
              "spar peak RSS", "archive peak RSS"]
    notes = [machine_line(), f"copies written under {where or tempfile.gettempdir()}",
             "ratio = spar / git archive floor (both commits, same run, alternating order)"]
    if previous:
        header += ["previous (before 8f1906f)", "range", "ratio", "previous peak RSS", "previous / spar"]
        notes.append("previous = bench/previous/workspace_v0.py, the copy before 8f1906f: each commit's blobs "
                     "read whole into memory, every file written (no hard links)")
    return table(f"Workspace copies (head + base), median of {repeat}", header, rows, notes), figures


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--repeat", type=int)
    p.add_argument("--dir", help="where to write the copies (default: the temp folder)")
    p.add_argument("--previous", action="store_true",
                   help="also measure the copy before 8f1906f (bench/previous/workspace_v0.py)")
    a = p.parse_args(argv)
    t = time.perf_counter()
    print(run(a.quick, a.repeat, a.dir, a.previous)[0])
    print(f"(took {time.perf_counter() - t:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
