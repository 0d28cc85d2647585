"""Streaming: a fake `agy` reviewer printing 100,000 and 1,000,000 event lines.

Three measurements per size, in the same run and alternating order:
- baseline: the fake alone with its output going to /dev/null (how fast the
  producer can go on this machine: no reader can see lines faster);
- monitor: spar's process layer (`spar.proc.process.GuardedProcess`) with the agy
  preset's line monitor, in a child that reports its own time and peak RSS
  (RUSAGE_SELF, so the producer is not counted);
- spar run: a whole round with that one agy reviewer (peak RSS is the largest
  process of the tree: spar itself, or the fake).
Memory must stay flat as output grows: peak RSS at 1M lines vs at 100k lines.

    python bench/streaming.py [--quick] [--repeat N]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from harness import (
    PYTHON,
    ROOT,
    Series,
    clean_env,
    fmt_mb,
    machine_line,
    remove_tree,
    run_measured,
    spar_argv,
    table,
    verdict,
    work_dir,
)
from repos import small_repo

FAKE_AGY = ROOT / "tests" / "fakes" / "agy"
ANGLES = ["criteria", "correctness", "checks", "contracts", "risk"]
PRODUCER_ARGS = ["-p", "review", "--output-format", "stream-json", "--mode", "plan"]

_MONITOR = """
import json, resource, sys, time
from pathlib import Path
import anyio
from spar.presets.agy import AgyMonitor
from spar.proc.process import GuardedProcess, OutputHandling
argv, log_dir = json.loads(sys.argv[1]), Path(sys.argv[2])
monitor = AgyMonitor()
count = 0
def feed(line):
    global count
    count += 1
    return monitor.feed(line)
async def main():
    output = OutputHandling(stdout_path=log_dir / "stdout.log", stderr_path=log_dir / "stderr.log",
                            on_stdout_line=feed)
    async with GuardedProcess(argv, cwd=log_dir, output=output) as proc:
        with anyio.move_on_after(600):
            await proc.wait()
    return proc.result
t = time.perf_counter()
result = anyio.run(main)
print(json.dumps({"seconds": time.perf_counter() - t, "lines": count, "exit_code": result.exit_code,
                  "result_seen": monitor.result_event is not None, "bytes": result.stdout.bytes_seen,
                  "maxrss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
"""


def scenario(tmp: Path, lines: int, head: str) -> Path:
    result = {"reviewed_head": head[:12], "verdict": "no_blocking_findings",
              "angles_checked": [{"angle": a, "result": "looked"} for a in ANGLES], "angles_unchecked": [],
              "findings": [], "limits": ""}
    path = tmp / f"scenario-{lines}.json"
    path.write_text(json.dumps({"lines": lines, "line_size": 80, "result": result}))
    return path


def baseline(argv: list[str], env: dict, lines: int) -> tuple[float, int, float]:
    # the producer alone, writing to /dev/null: the most any reader of it could see
    s = run_measured(["/bin/sh", "-c", 'exec "$@" >/dev/null', "sh", *argv], env=env)
    return s.wall, lines + 2, s.maxrss_mb  # + the init and result events


def monitor(argv: list[str], env: dict, tmp: Path) -> tuple[float, int, float]:
    logs = tmp / "monitor-logs"
    logs.mkdir()
    s = run_measured([PYTHON, "-c", _MONITOR, json.dumps(argv), str(logs)], env=env)
    remove_tree(logs)
    d = json.loads(s.stdout)
    if d["exit_code"] != 0 or not d["result_seen"]:
        raise RuntimeError(f"monitor run did not end well: {d}")
    return d["seconds"], d["lines"], d["maxrss_kb"] / 1024


def spar_round(env: dict, tmp: Path, repo: str, base: str, head: str, i: int) -> tuple[float, float]:
    out = tmp / f"series-{i}" / "round"
    out.parent.mkdir()  # a series outside a repository is made by its user
    s = run_measured(spar_argv("run", "--stage", "code", "--base", base, "--head", head, "--out", str(out)),
                     cwd=repo, env=env)
    remove_tree(out.parent)
    return s.wall, s.maxrss_mb


def measure(lines: int, repeat: int) -> dict[str, Series]:
    info = small_repo()
    tmp = work_dir("stream")
    try:
        sc = scenario(tmp, lines, info.head)
        # the fake reads its scenario file: passed on, outside the sandbox
        (tmp / "spar.toml").write_text('env_passthrough = ["SPAR_FAKE_*"]\n'
                                       f'[[reviewers]]\nname = "agy"\npreset = "agy"\nbinary = "{FAKE_AGY}"\n'
                                       '[sandbox]\nmode = "off"\n')
        (tmp / "xdg").mkdir()
        env = clean_env(SPAR_FAKE_SCENARIO=str(sc), SPAR_CONFIG=str(tmp / "spar.toml"),
                        XDG_CONFIG_HOME=str(tmp / "xdg"))
        argv = [PYTHON, str(FAKE_AGY), *PRODUCER_ARGS]
        r = {k: Series() for k in ("base_rate", "mon_rate", "mon_rss", "base_rss", "run_wall", "run_rss", "run_rate")}
        for i in range(repeat):
            steps = ["baseline", "monitor", "run"]
            if i % 2:
                steps.reverse()
            for step in steps:
                if step == "baseline":
                    sec, n, rss = baseline(argv, env, lines)
                    r["base_rate"].add(n / sec)
                    r["base_rss"].add(rss)
                elif step == "monitor":
                    sec, n, rss = monitor(argv, env, tmp)
                    r["mon_rate"].add(n / sec)
                    r["mon_rss"].add(rss)
                else:
                    wall, rss = spar_round(env, tmp, info.path, info.base, info.head, i)
                    r["run_wall"].add(wall)
                    r["run_rss"].add(rss)
                    r["run_rate"].add(lines / wall)
        return r
    finally:
        remove_tree(tmp)


def run(quick: bool, repeat: int | None) -> tuple[str, dict]:
    """The table, and the figures run_all.py writes to bench/results.json."""
    repeat = repeat or (1 if quick else 3)
    sizes = (100_000, 1_000_000)
    res = {n: measure(n, repeat) for n in sizes}
    rows = []
    for n in sizes:
        r = res[n]
        rows.append([f"{n:,}", f"{r['base_rate'].median:,.0f}", f"{r['mon_rate'].median:,.0f}",
                     f"{r['mon_rate'].median / r['base_rate'].median:.2f}", fmt_mb(r["mon_rss"].median),
                     f"{r['run_wall'].median:.2f} s", f"{r['run_rate'].median:,.0f}", fmt_mb(r["run_rss"].median)])
    small, big = res[sizes[0]], res[sizes[1]]
    flat_mon = big["mon_rss"].median <= small["mon_rss"].median * 1.1 + 2
    flat_run = big["run_rss"].median <= small["run_rss"].median * 1.1 + 2
    figures: dict = {"repeat": repeat, "memory_flat_monitor": flat_mon, "memory_flat_run": flat_run}
    for n in sizes:
        r = res[n]
        figures[str(n)] = {
            "lines": n, "baseline_lines_per_s": r["base_rate"].median, "monitor_lines_per_s": r["mon_rate"].median,
            "monitor_to_baseline": r["mon_rate"].median / r["base_rate"].median,
            "monitor_peak_rss_mib": r["mon_rss"].median, "run_wall": r["run_wall"].median,
            "run_lines_per_s": r["run_rate"].median, "run_peak_rss_mib": r["run_rss"].median,
        }
    text = table(
        f"Streaming: fake agy printing N event lines (~170 bytes each), median of {repeat}",
        ["lines", "baseline lines/s", "monitor lines/s", "monitor / baseline", "monitor peak RSS",
         "spar run wall", "spar run lines/s", "spar run peak RSS"],
        rows,
        [machine_line(),
         f"memory flat from 100k to 1M lines: monitor {verdict(flat_mon)} "
         f"({small['mon_rss'].median:.0f} → {big['mon_rss'].median:.0f} MiB), "
         f"spar run {verdict(flat_run)} ({small['run_rss'].median:.0f} → {big['run_rss'].median:.0f} MiB)",
         "baseline = the same fake writing to /dev/null (its json.dumps + flush per line bounds every column)",
         "spar run lines/s includes the whole round (start-up, workspace, recording)"])
    return text, figures


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--repeat", type=int)
    a = p.parse_args(argv)
    t = time.perf_counter()
    print(run(a.quick, a.repeat)[0])
    print(f"(took {time.perf_counter() - t:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
