"""Round overhead: `spar run` with 3 `command` reviewers that each sleep S seconds.

overhead = wall time of `spar run` − S, for a 10-file repository and for one of
20,000 files / ~200 MB of history (bench/repos.py). In the same run and in
alternating order it measures the baselines: the three reviewer commands run
directly in parallel (S plus process start-up), and `git archive | tar -x` of
the round's two commits (the floor for the workspace copies spar must make).
A phase breakdown comes from the round's own timestamps (round.json).
With --previous, spar as it was before commit 8f1906f (bench/previous/
workspace_v0.py patched in) runs as a further side of the same alternation.

    python bench/round_overhead.py [--quick] [--repeat N] [--sleep S] [--dir FOLDER] [--previous]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

from harness import (
    BENCH,
    PYTHON,
    Series,
    clean_env,
    fmt_s,
    machine_line,
    remove_tree,
    run_measured,
    table,
    verdict,
    work_dir,
)
from repos import RepoInfo, large_repo, small_repo

ANGLES = ["criteria", "correctness", "checks", "contracts", "risk"]
REVIEWERS = ("alpha", "beta", "gamma")


def write_setup(tmp: Path, info: RepoInfo, sleep: float) -> dict[str, str]:
    """User configuration with 3 command reviewers; returns the environment for spar."""
    result = {"reviewed_head": info.head[:12], "verdict": "no_blocking_findings",
              "angles_checked": [{"angle": a, "result": "looked"} for a in ANGLES],
              "angles_unchecked": [], "findings": [], "limits": ""}
    (tmp / "result.json").write_text(json.dumps(result))
    lines = []
    for name in REVIEWERS:
        lines += ["[[reviewers]]", f'name = "{name}"', 'preset = "command"',
                  f'argv = ["/bin/sh", "-c", "sleep {sleep}; cat {tmp / "result.json"}", "{{prompt}}"]', ""]
    lines += ["[sandbox]", 'mode = "off"', ""]  # as before the sandbox (its cost: sandbox_cost.py)
    (tmp / "spar.toml").write_text("\n".join(lines))
    (tmp / "xdg").mkdir()
    return clean_env(SPAR_CONFIG=str(tmp / "spar.toml"), XDG_CONFIG_HOME=str(tmp / "xdg"))


def _ts(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def phases(round_dir: Path, launched: float, ended: float) -> dict[str, float]:
    """Where the time went, from round.json's own timestamps (millisecond resolution)."""
    data = json.loads((round_dir / "round.json").read_text())
    attempts = [a for r in data["reviewers"] for a in r["attempts"]]
    first_start = min(_ts(a["started_at"]) for a in attempts)
    last_end = max(_ts(a["finished_at"]) for a in attempts)
    started = _ts(data["started_at"])
    finished = _ts(data["finished_at"])
    return {
        "checks before the round folder": started - launched,
        "round folder + workspace": first_start - started,
        "reviewers (S + their start)": last_end - first_start,
        "recording": finished - last_end,
        "exit": ended - finished,
    }


# Both sides run `spar` through this wrapper: spar.cli.entry as the `spar` command does
# (collector off, no interpreter teardown), with its main also writing the peak RSS of the
# spar process itself and of the largest child it waited for (git, a reviewer) to a file:
# os.wait4 alone reports only the larger of the two, usually git with the pack mapped.
_WRAPPER = f"""
import resource, sys
rss_file = sys.argv.pop(1)
if sys.argv.pop(1) == "previous":
    # spar as before commit 8f1906f: the old workspace copy and git.ls_tree without its cache
    sys.path.insert(0, {str(BENCH)!r})
    from previous import workspace_v0
    workspace_v0.install()
import spar.cli as cli
spar_main = cli.main
def main():
    try:
        return spar_main(sys.argv[1:])
    finally:
        with open(rss_file, "w") as f:
            f.write(f"{{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}} "
                    f"{{resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}}")
cli.main = main
cli.entry()
"""


def one_round(info: RepoInfo, tmp: Path, env: dict, i: int,
              previous: bool = False) -> tuple[float, tuple[float, float], dict[str, float]]:
    """(wall, (peak RSS MiB of spar, of its largest child), phases) of one `spar run`."""
    side = "previous" if previous else "current"
    out = tmp / f"series-{i}-{side}" / "round"
    out.parent.mkdir()  # a series outside a repository is made by its user
    rss_file = tmp / f"rss-{i}-{side}"
    args = ["run", "--stage", "code", "--base", info.base, "--head", info.head, "--out", str(out)]
    launched = time.time()
    s = run_measured([PYTHON, "-c", _WRAPPER, str(rss_file), side, *args], cwd=info.path, env=env)
    ended = time.time()
    breakdown = phases(out, launched, ended)
    own_kb, child_kb = map(int, rss_file.read_text().split())
    remove_tree(out.parent)
    return s.wall, (own_kb / 1024, child_kb / 1024), breakdown


def direct_reviewers(tmp: Path, sleep: float) -> float:
    cmd = " & ".join(f"sleep {sleep} && cat {tmp / 'result.json'} >/dev/null" for _ in REVIEWERS) + " & wait"
    return run_measured(["/bin/sh", "-c", cmd]).wall


def archive_floor(info: RepoInfo, tmp: Path) -> float:
    dest = tmp / "archive"
    script = ("set -e; mkdir -p \"$3/head\" \"$3/base\"; git -C \"$1\" archive \"$2\" | tar -x -C \"$3/head\"; "
              "git -C \"$1\" archive \"$4\" | tar -x -C \"$3/base\"")
    wall = run_measured(["sh", "-c", script, "sh", info.path, info.head, str(dest), info.base],
                        env=clean_env()).wall
    remove_tree(dest)
    return wall


class Side:
    """One `spar run` variant's samples: wall time, peak RSS, phases."""

    def __init__(self) -> None:
        self.wall, self.rss, self.child_rss, self.parts = Series(), Series(), Series(), {}

    def add(self, value: tuple[float, tuple[float, float], dict[str, float]]) -> None:
        self.wall.add(value[0])
        self.rss.add(value[1][0])
        self.child_rss.add(value[1][1])
        for k, v in value[2].items():
            self.parts.setdefault(k, Series()).add(v)


def measure(info: RepoInfo, repeat: int, sleep: float, where: str | None = None, warmup: bool = True,
            previous: bool = False) -> dict:
    tmp = work_dir("round", where)
    try:
        env = write_setup(tmp, info, sleep)
        res = {"spar": Side(), "direct": Series(), "floor": Series()}
        if previous:
            res["previous"] = Side()
        for i in range(0 if warmup else 1, repeat + 1):  # repetition 0 warms caches and is not counted
            steps = [("spar", lambda i=i: one_round(info, tmp, env, i)),
                     ("direct", lambda: direct_reviewers(tmp, sleep)),
                     ("floor", lambda: archive_floor(info, tmp))]
            if previous:
                steps.append(("previous", lambda i=i: one_round(info, tmp, env, i, previous=True)))
            if i % 2:
                steps.reverse()
            for name, fn in steps:
                os.sync()
                value = fn()
                if i > 0:
                    res[name].add(value)
        return res
    finally:
        remove_tree(tmp)


def _rss(side: Side) -> str:
    return f"{side.rss.median:.0f} / {side.child_rss.median:.0f} MiB"


def run(quick: bool, repeat: int | None, sleep: float, where: str | None = None,
        previous: bool = False) -> tuple[str, dict]:
    """The tables, and the figures run_all.py writes to bench/results.json."""
    repeat = repeat or (1 if quick else 5)
    rows, prow = [], []
    figures: dict = {"repeat": repeat, "sleep": sleep, "where": where or tempfile.gettempdir()}
    for info, size in ((small_repo(), "small"), (large_repo(), "large")):
        r = measure(info, repeat, sleep, where, warmup=not quick, previous=previous)
        floor = r["floor"].median

        def overhead(side: Side) -> Series:
            return Series([w - sleep for w in side.wall.values])

        spar = overhead(r["spar"])
        if size == "small":
            target, ok = "< 1 s", spar.median < 1.0
        else:
            target, ok = "≤ 2x archive floor", spar.median <= 2 * floor
        row = [info.label, fmt_s(r["spar"].wall.median), fmt_s(spar.median), spar.spread(),
               _rss(r["spar"]), fmt_s(r["direct"].median - sleep), fmt_s(floor), r["floor"].spread(),
               f"{spar.median / floor:.2f}x", f"{target}: {verdict(ok)}"]
        if previous:
            prev = overhead(r["previous"])
            row += [fmt_s(prev.median), prev.spread(), _rss(r["previous"]),
                    f"{prev.median / floor:.2f}x"]
        rows.append(row)
        figures[size] = {
            "repository": info.label, "files": info.files, "spar_wall": r["spar"].wall.median,
            "overhead": spar.median, "direct_minus_s": r["direct"].median - sleep,
            "archive_floor": floor, "overhead_to_floor": spar.median / floor, "target_met": ok,
            "spar_peak_rss_mib": r["spar"].rss.median, "child_peak_rss_mib": r["spar"].child_rss.median,
            "phases": {k: v.median for k, v in r["spar"].parts.items()},
        }
        if previous:
            figures[size]["previous_overhead"] = prev.median
        prow.append([info.label, "spar"] + [fmt_s(v.median) for v in r["spar"].parts.values()])
        if previous:
            prow.append([info.label, "previous"] + [fmt_s(v.median) for v in r["previous"].parts.values()])
        phase_names = list(r["spar"].parts)
    header = ["repository", "spar run wall", "overhead (wall − S)", "range", "peak RSS spar / git", "direct run − S",
              "archive floor", "range", "overhead / floor", "target"]
    notes = [machine_line(), f"round folders and copies written under {where or tempfile.gettempdir()}",
             "direct run = the 3 reviewer commands started in parallel without spar (same run)",
             "archive floor = git archive + tar -x of the round's head and base commits (same run)",
             "peak RSS spar / git = the spar process's own, and its largest child's (git, with the pack "
             "mapped; or a reviewer)"]
    if previous:
        header += ["previous: overhead", "range", "peak RSS spar / git", "previous / floor"]
        notes.append("previous = spar with bench/previous/workspace_v0.py patched in: the workspace copy and "
                     "the uncached git.ls_tree as before 8f1906f (same run, alternating order)")
    text = table(f"Round overhead: 3 command reviewers sleeping S = {sleep:g} s, median of {repeat}", header, rows,
                 notes)
    text += "\n" + table("Round overhead by phase (from round.json timestamps), medians",
                         ["repository", "side"] + phase_names, prow)
    return text, figures


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--repeat", type=int)
    p.add_argument("--sleep", type=float, default=1.0, help="seconds each reviewer sleeps (S)")
    p.add_argument("--dir", help="where the series and copies go (default: the temp folder)")
    p.add_argument("--previous", action="store_true",
                   help="also measure spar as before 8f1906f (bench/previous/workspace_v0.py patched in)")
    a = p.parse_args(argv)
    t = time.perf_counter()
    print(run(a.quick, a.repeat, a.sleep, a.dir, a.previous)[0])
    print(f"(took {time.perf_counter() - t:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
