"""Spar's own cost per round on a small repository (issue 15's first three rows).

Every side runs as a child process, in alternating order, medians over the
repetitions; baselines are measured in the same run:

- `python -c pass` (the interpreter's own start and exit): the same interpreter that
  runs spar (`sys.executable`), with the same bytecode setting as the spar side. Never
  `python3` from PATH: that may be a launcher (a pyenv shim is a shell script that takes
  ~0.1 s by itself) and would make the ratio look better than it is;
- the reviewer commands run directly, in parallel, without spar.

Rows:

- **instant**: 3 `command` reviewers that print their answer at once. Spar's
  overhead = wall of `spar run` − wall of the 3 commands run directly; the
  target is ≤ 0.4 s (issue 21: Spar's own time may rise for plain code, within that).
- **per extra reviewer**: the same with 8 reviewers; (8 − 3 reviewers) / 5, wall
  and CPU (CPU of spar and everything it waited for: the guard, keepers and
  reviewers, minus the reviewers' own CPU run directly); targets ≤ +10 ms wall,
  ≤ +15 ms CPU.
- **sleeping**: reviewers sleeping S = 2 s; wall − S, 3 and 8 reviewers;
  targets ≤ 0.25 s and ≤ 0.30 s.
- **backend**: the instant round on asyncio (the default) and on trio.

Each row is measured twice: with bytecode cached (`PYTHONPYCACHEPREFIX` in
bench/out/, warmed first) and without (`PYTHONDONTWRITEBYTECODE=1`: every spar
module compiled at each start, as in an environment that sets it).

    python bench/round_cost.py [--quick] [--repeat N]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from harness import (
    PYTHON,
    Series,
    clean_env,
    machine_line,
    remove_tree,
    run_measured,
    table,
    with_bytecode,
    work_dir,
)
from repos import RepoInfo, small_repo

ANGLES = ["criteria", "correctness", "checks", "contracts", "risk"]
SLEEP = 2.0
NAMES = [f"r{i}" for i in range(8)]


def _config(tmp: Path, info: RepoInfo, count: int, sleep: float) -> Path:
    result = tmp / "result.json"
    if not result.exists():
        result.write_text(json.dumps({
            "reviewed_head": info.head[:12], "verdict": "no_blocking_findings",
            "angles_checked": [{"angle": a, "result": "looked"} for a in ANGLES],
            "angles_unchecked": [], "findings": [], "limits": ""}))
    command = f"sleep {sleep:g}; cat {result}" if sleep else f"cat {result}"
    lines = []
    for name in NAMES[:count]:
        lines += ["[[reviewers]]", f'name = "{name}"', 'preset = "command"',
                  f'argv = ["/bin/sh", "-c", "{command}", "{{prompt}}"]', ""]
    # Spar's own cost, as before the kernel sandbox (its cost: sandbox_cost.py); in it, the
    # answer file named inside the shell line would not be there
    lines += ["[sandbox]", 'mode = "off"', ""]
    path = tmp / f"spar-{count}-{sleep:g}.toml"
    path.write_text("\n".join(lines))
    return path


def _direct(tmp: Path, count: int, sleep: float) -> list[str]:
    one = (f"sleep {sleep:g}; " if sleep else "") + f"cat {tmp / 'result.json'} >/dev/null"
    return ["/bin/sh", "-c", " & ".join(f"( {one} )" for _ in range(count)) + " & wait"]


def _env(tmp: Path, config: Path, cached: bool, backend: str) -> dict[str, str]:
    env = clean_env(SPAR_CONFIG=str(config), XDG_CONFIG_HOME=str(tmp / "xdg"), SPAR_ASYNC_BACKEND=backend)
    return with_bytecode(env, cached)


# spar's wall time, and the CPU of spar and of every process it started, the guard included
# (which spar does not wait for at its end): a subreaper reaps them all after spar exits
_TREE = """
import ctypes, os, subprocess, sys, time
ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
start = time.perf_counter()
code = subprocess.call(sys.argv[2:])
wall = time.perf_counter() - start
while True:
    try:
        os.wait()
    except ChildProcessError:
        break
with open(sys.argv[1], "w") as f:
    f.write(repr(wall))
sys.exit(code)
"""


def _tree(argv: list[str], tmp: Path, **kw) -> tuple[float, float]:
    """(wall of argv, CPU of argv and all its descendants; the wrapper's own CPU included)."""
    wall_file = tmp / "wall"
    s = run_measured([PYTHON, "-I", "-c", _TREE, str(wall_file), *argv], **kw)
    return float(wall_file.read_text()), s.user + s.sys


class Runner:
    """`spar run` in a fresh series each time (so no series memory grows between samples)."""

    def __init__(self, info: RepoInfo, tmp: Path):
        self.info, self.tmp, self.n = info, tmp, 0
        (tmp / "xdg").mkdir(exist_ok=True)

    def spar(self, count: int, sleep: float, cached: bool, backend: str = "asyncio") -> tuple[float, float]:
        self.n += 1
        out = self.tmp / f"s{self.n}" / "r1"
        out.parent.mkdir()  # a series outside a repository is made by its user
        env = _env(self.tmp, _config(self.tmp, self.info, count, sleep), cached, backend)
        wall, cpu = _tree([PYTHON, "-m", "spar", "run", "--stage", "code", "--base", self.info.base,
                           "--head", self.info.head, "--out", str(out)], self.tmp, cwd=self.info.path, env=env)
        remove_tree(out.parent)
        return wall, cpu

    def wrapper(self) -> tuple[float, float]:
        """The wrapper around nothing: its CPU is taken off spar's."""
        return _tree(["true"], self.tmp)

    def python_pass(self, cached: bool) -> tuple[float, float]:
        """The bare interpreter that runs spar, started and ended (no launcher, same bytecode setting)."""
        s = run_measured([PYTHON, "-c", "pass"], env=with_bytecode(clean_env(), cached))
        return s.wall, s.user + s.sys

    def direct(self, count: int, sleep: float) -> tuple[float, float]:
        s = run_measured(_direct(self.tmp, count, sleep))
        return s.wall, s.user + s.sys


def _alternate(sides: dict, repeat: int, warmup: bool) -> dict[str, tuple[Series, Series]]:
    res = {name: (Series(), Series()) for name in sides}
    for i in range(0 if warmup else 1, repeat + 1):
        order = list(sides) if i % 2 else list(reversed(sides))
        for name in order:
            wall, cpu = sides[name]()
            if i:
                res[name][0].add(wall)
                res[name][1].add(cpu)
    return res


def measure(repeat: int, warmup: bool = True) -> dict:
    info = small_repo()
    tmp = work_dir("cost")
    figures: dict = {}
    try:
        r = Runner(info, tmp)
        for cached in (True, False):
            key = "cached" if cached else "not_cached"
            sides = {
                "pass": lambda c=cached: r.python_pass(c),
                "direct 3": lambda: r.direct(3, 0),
                "direct 8": lambda: r.direct(8, 0),
                "spar 3": lambda c=cached: r.spar(3, 0, c),
                "spar 8": lambda c=cached: r.spar(8, 0, c),
                "spar 3 trio": lambda c=cached: r.spar(3, 0, c, "trio"),
                "wrapper": r.wrapper,
            }
            inst = _alternate(sides, repeat, warmup)
            sleeping = _alternate({
                "direct 3 sleeping": lambda: r.direct(3, SLEEP),
                "spar 3 sleeping": lambda c=cached: r.spar(3, SLEEP, c),
                "direct 8 sleeping": lambda: r.direct(8, SLEEP),
                "spar 8 sleeping": lambda c=cached: r.spar(8, SLEEP, c),
            }, max(1, repeat // 2 + 1), False)
            med = {k: (w.median, c.median) for k, (w, c) in {**inst, **sleeping}.items()}
            for k in [k for k in med if k.startswith("spar")]:
                med[k] = (med[k][0], med[k][1] - med["wrapper"][1])
            spread = {k: (w.spread(), c.spread()) for k, (w, c) in {**inst, **sleeping}.items()}
            overhead = med["spar 3"][0] - med["direct 3"][0]
            per_wall = (med["spar 8"][0] - med["spar 3"][0]) / 5
            per_cpu = ((med["spar 8"][1] - med["direct 8"][1]) - (med["spar 3"][1] - med["direct 3"][1])) / 5
            figures[key] = {
                "python_pass_wall": med["pass"][0], "python_pass_cpu": med["pass"][1],
                "python": PYTHON,
                "direct_3_wall": med["direct 3"][0],
                "spar_3_wall": med["spar 3"][0], "spar_3_cpu": med["spar 3"][1],
                "spar_8_wall": med["spar 8"][0], "spar_8_cpu": med["spar 8"][1],
                "spar_3_trio_wall": med["spar 3 trio"][0], "spar_3_trio_cpu": med["spar 3 trio"][1],
                "overhead_3": overhead,
                "overhead_ratio_to_pass": overhead / med["pass"][0],
                # the same in CPU time (user + system), which a busy machine disturbs less than wall
                "cpu_overhead_3": med["spar 3"][1] - med["direct 3"][1],
                "cpu_overhead_ratio_to_pass": (med["spar 3"][1] - med["direct 3"][1]) / med["pass"][1],
                "per_reviewer_wall": per_wall,
                "per_reviewer_cpu": per_cpu,
                "sleeping_3_minus_s": med["spar 3 sleeping"][0] - SLEEP,
                "sleeping_8_minus_s": med["spar 8 sleeping"][0] - SLEEP,
                "direct_sleeping_3_minus_s": med["direct 3 sleeping"][0] - SLEEP,
                "direct_sleeping_8_minus_s": med["direct 8 sleeping"][0] - SLEEP,
                "spread": spread,
            }
        figures["repeat"] = repeat
        return figures
    finally:
        remove_tree(tmp)


def verdicts(f: dict) -> dict[str, bool]:
    return {"overhead": f["overhead_3"] <= 0.4, "per_wall": f["per_reviewer_wall"] <= 0.010,
            "per_cpu": f["per_reviewer_cpu"] <= 0.015, "sleep3": f["sleeping_3_minus_s"] <= 0.25,
            "sleep8": f["sleeping_8_minus_s"] <= 0.30}


def render(figures: dict) -> str:
    rows = []
    for key, label in (("cached", "bytecode cached"), ("not_cached", "PYTHONDONTWRITEBYTECODE=1")):
        f = figures[key]
        ok = verdicts(f)
        mark = {k: "met" if v else "MISSED" for k, v in ok.items()}
        rows += [
            [label, "3 instant reviewers: overhead (wall − direct)", f"{f['overhead_3']:.3f} s",
             f"python -c pass {f['python_pass_wall']:.3f} s", f"{f['overhead_ratio_to_pass']:.1f}x",
             f"≤ 0.4 s: {mark['overhead']}"],
            [label, "3 instant reviewers: CPU (spar and all it started − direct)", f"{f['cpu_overhead_3']:.3f} s",
             f"python -c pass CPU {f['python_pass_cpu']:.3f} s", f"{f['cpu_overhead_ratio_to_pass']:.1f}x", ""],
            [label, "each extra reviewer, wall", f"{f['per_reviewer_wall'] * 1000:+.1f} ms", "(8 − 3) / 5", "",
             f"≤ +10 ms: {mark['per_wall']}"],
            [label, "each extra reviewer, CPU", f"{f['per_reviewer_cpu'] * 1000:+.1f} ms", "(8 − 3) / 5, minus direct",
             "", f"≤ +15 ms: {mark['per_cpu']}"],
            [label, "3 reviewers sleeping 2 s: wall − 2 s", f"{f['sleeping_3_minus_s']:.3f} s",
             f"direct {f['direct_sleeping_3_minus_s']:.3f} s", "", f"≤ 0.25 s: {mark['sleep3']}"],
            [label, "8 reviewers sleeping 2 s: wall − 2 s", f"{f['sleeping_8_minus_s']:.3f} s",
             f"direct {f['direct_sleeping_8_minus_s']:.3f} s", "", f"≤ 0.30 s: {mark['sleep8']}"],
            [label, "backend: 3 instant reviewers, wall / CPU",
             f"asyncio {f['spar_3_wall']:.3f} / {f['spar_3_cpu']:.3f} s",
             f"trio {f['spar_3_trio_wall']:.3f} / {f['spar_3_trio_cpu']:.3f} s",
             f"trio {f['spar_3_trio_cpu'] - f['spar_3_cpu']:+.3f} s CPU", ""],
        ]
    return table(f"Round cost on a small repository (10 files), median of {figures['repeat']}",
                 ["bytecode", "what", "spar", "baseline (same run)", "ratio", "target"], rows,
                 [machine_line(), f"python = {PYTHON} (the interpreter that runs spar, not a launcher on PATH), "
                  "with the same bytecode setting as spar",
                  "direct = the reviewer commands started in parallel without spar",
                  "CPU = user + system of spar and every process it started (guard, keepers, git, reviewers), "
                  "reaped by a subreaper wrapper whose own CPU is taken off"])


def run(quick: bool, repeat: int | None) -> tuple[str, dict]:
    figures = measure(repeat or (3 if quick else 9), warmup=True)
    return render(figures), figures


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--repeat", type=int)
    a = p.parse_args(argv)
    t = time.perf_counter()
    text, _ = run(a.quick, a.repeat)
    print(text)
    print(f"(took {time.perf_counter() - t:.0f} s)")
    return 0


if __name__ == "__main__":
    os.environ.pop("SPAR_FAKE_SCENARIO", None)
    sys.exit(main(sys.argv[1:]))
