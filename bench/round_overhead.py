"""Round overhead: `spar run` with 3 `command` reviewers that each sleep S seconds.

overhead = wall time of `spar run` − S, for a 10-file repository and for one of
20,000 files / ~200 MB of history (bench/repos.py). In the same run and in
alternating order it measures the baselines: the three reviewer commands run
directly in parallel (S plus process start-up), and `git archive | tar -x` of
the round's two commits (the floor for the workspace copies spar must make).
A phase breakdown comes from the round's own timestamps (round.json).

    python bench/round_overhead.py [--quick] [--repeat N] [--sleep S] [--dir FOLDER] [--proposal]
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

from harness import (BENCH, PYTHON, Series, clean_env, fmt_s, machine_line, remove_tree, run_measured, spar_argv,
                     table, verdict, work_dir)
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


# `spar` with the two proposals of bench/proposals/stream_workspace.py patched in (measured, not used by spar)
_PROPOSED = f"""
import sys
sys.path.insert(0, {str(BENCH)!r})
from proposals import stream_workspace
stream_workspace.remember_trees()
import spar.commands.run as run
run.build_workspace = stream_workspace.build_workspace
from spar.cli import main
sys.exit(main(sys.argv[1:]))
"""


def one_round(info: RepoInfo, tmp: Path, env: dict, i: int, proposed: bool = False) -> tuple[float, dict[str, float]]:
    out = tmp / f"series-{i}{'-p' if proposed else ''}" / "round"
    args = ["run", "--stage", "code", "--base", info.base, "--head", info.head, "--out", str(out)]
    launched = time.time()
    s = run_measured([PYTHON, "-c", _PROPOSED, *args] if proposed else spar_argv(*args), cwd=info.path, env=env)
    ended = time.time()
    breakdown = phases(out, launched, ended)
    remove_tree(out.parent)
    return s.wall, breakdown


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


def measure(info: RepoInfo, repeat: int, sleep: float, where: str | None = None, warmup: bool = True,
            proposal: bool = False) -> dict:
    tmp = work_dir("round", where)
    try:
        env = write_setup(tmp, info, sleep)
        walls, direct, floor, proposed = Series(), Series(), Series(), Series()
        parts: dict[str, Series] = {}
        for i in range(0 if warmup else 1, repeat + 1):  # repetition 0 warms caches and is not counted
            steps = [("spar", lambda: one_round(info, tmp, env, i)), ("direct", lambda: direct_reviewers(tmp, sleep)),
                     ("floor", lambda: archive_floor(info, tmp))]
            if proposal:
                steps.append(("proposed", lambda: one_round(info, tmp, env, i, proposed=True)))
            if i % 2:
                steps.reverse()
            for name, fn in steps:
                os.sync()
                value = fn()
                if i == 0:
                    continue
                if name == "spar":
                    walls.add(value[0])
                    for k, v in value[1].items():
                        parts.setdefault(k, Series()).add(v)
                elif name == "proposed":
                    proposed.add(value[0])
                elif name == "direct":
                    direct.add(value)
                else:
                    floor.add(value)
        return {"wall": walls, "direct": direct, "floor": floor, "parts": parts, "proposed": proposed}
    finally:
        remove_tree(tmp)


def run(quick: bool, repeat: int | None, sleep: float, where: str | None = None, proposal: bool = False) -> str:
    repeat = repeat or (1 if quick else 5)
    rows, prow, results = [], [], []
    for info, size in ((small_repo(), "small"), (large_repo(), "large")):
        r = measure(info, repeat, sleep, where, warmup=not quick, proposal=proposal)
        overhead = Series([w - sleep for w in r["wall"].values])
        floor = r["floor"].median
        if size == "small":
            target, ok = "< 1 s", overhead.median < 1.0
        else:
            target, ok = "≤ 2x archive floor", overhead.median <= 2 * floor
        rows.append([info.label, fmt_s(r["wall"].median), fmt_s(overhead.median), overhead.spread(),
                     fmt_s(r["direct"].median - sleep), fmt_s(floor), f"{overhead.median / floor:.1f}x",
                     f"{target}: {verdict(ok)}"])
        if proposal:
            p_over = r["proposed"].median - sleep
            rows[-1] += [fmt_s(p_over), f"{p_over / floor:.1f}x"]
        prow.append([info.label] + [fmt_s(s.median) for s in r["parts"].values()])
        results.append(r)
    header = ["repository", "spar run wall", "overhead (wall − S)", "range", "direct run − S",
              "archive floor", "overhead / floor", "target"]
    notes_extra = []
    if proposal:
        header += ["proposed: overhead", "proposed / floor"]
        notes_extra = ["proposed = spar with bench/proposals/stream_workspace.py: streamed workspace copy, "
                       "each commit's tree listed once"]
    text = table(f"Round overhead: 3 command reviewers sleeping S = {sleep:g} s, median of {repeat}", header, rows,
                 [machine_line(), f"round folders and copies written under {where or tempfile.gettempdir()}",
                  "direct run = the 3 reviewer commands started in parallel without spar (same run)",
                  "archive floor = git archive + tar -x of the round's head and base commits (same run)"]
                 + notes_extra)
    text += "\n" + table("Round overhead by phase (from round.json timestamps), medians",
                         ["repository"] + list(results[0]["parts"]), prow)
    return text


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--repeat", type=int)
    p.add_argument("--sleep", type=float, default=1.0, help="seconds each reviewer sleeps (S)")
    p.add_argument("--dir", help="where the series and copies go (default: the temp folder)")
    p.add_argument("--proposal", action="store_true", help="also measure bench/proposals/stream_workspace.py")
    a = p.parse_args(argv)
    t = time.perf_counter()
    print(run(a.quick, a.repeat, a.sleep, a.dir, a.proposal))
    print(f"(took {time.perf_counter() - t:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
