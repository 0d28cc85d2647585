"""Scale: `spar gate` and `spar cap-report` over a series of 200 rounds with 50 findings each.

Time and peak memory (os.wait4) of each command, medians over repeated runs,
against two baselines measured in the same run: the interpreter starting spar
(`spar --version`) and a plain script that reads and parses every record file
of the series (the floor for reading what the commands must read).
A smaller series shows how the time grows with the number of rounds.

    python bench/scale.py [--quick] [--repeat N] [--rounds N] [--chains]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from harness import (
    PYTHON,
    Series,
    clean_env,
    fmt_mb,
    fmt_s,
    machine_line,
    remove_tree,
    run_measured,
    spar_argv,
    table,
    verdict,
    with_bytecode,
    work_dir,
)
from series import build_series

_READ_ALL = """
import json, sys
from pathlib import Path
series = Path(sys.argv[1])
n = 0
for folder in sorted(p for p in series.iterdir() if p.is_dir()):
    json.loads((folder / "round.json").read_bytes())
    n += len(json.loads((folder / "findings.json").read_bytes()))
    for name in ("ledger.jsonl", "waivers.jsonl"):
        p = folder / name
        if p.exists():
            [json.loads(line) for line in p.read_bytes().splitlines() if line]
for line in (series / "extensions.jsonl").read_bytes().splitlines():
    json.loads(line)
print(n)
"""

def commands(series: Path, folders: list[Path], gate_out: Path) -> dict[str, list[str]]:
    return {
        "spar gate": spar_argv("gate", *map(str, folders), "--out", str(gate_out)),
        "spar cap-report (md)": spar_argv("cap-report", str(series)),
        "spar cap-report --format json": spar_argv("cap-report", str(series), "--format", "json"),
        "baseline: spar --version": spar_argv("--version"),
        "baseline: read every record": [PYTHON, "-c", _READ_ALL, str(series)],
    }


def measure(rounds: int, repeat: int, chains: bool = False) -> dict[str, tuple[Series, Series, Series]]:
    tmp = work_dir("scale")
    try:
        series = tmp / "series"
        folders = build_series(series, rounds, chains=chains)
        gate_out = tmp / "gate.json"
        cmds = commands(series, folders, gate_out)
        res = {name: (Series(), Series(), Series()) for name in cmds}
        env = with_bytecode(clean_env(), cached=True)  # an installed spar: its bytecode is cached
        for i in range(repeat + 1):  # repetition 0 warms caches
            names = list(cmds) if i % 2 == 0 else list(reversed(cmds))
            for name in names:
                # gate exits 1 when the series is blocked (its latest round keeps open findings)
                s = run_measured(cmds[name], env=env, check=False)
                if s.returncode not in (0, 1) or (s.returncode == 1 and name != "spar gate"):
                    raise RuntimeError(f"{name} exited {s.returncode}: {s.stderr.decode(errors='replace')[-1500:]}")
                if i:
                    res[name][0].add(s.wall)
                    res[name][1].add(s.maxrss_mb)
                    res[name][2].add(s.user + s.sys)
        return res
    finally:
        remove_tree(tmp)


def run(quick: bool, repeat: int | None, rounds: int, chains: bool = False) -> tuple[str, dict]:
    repeat = repeat or (3 if quick else 7)
    sizes = [rounds // 4, rounds]
    by_size = {n: measure(n, repeat, chains) for n in sizes}
    rows = []
    for name in by_size[rounds]:
        row = [name]
        for n in sizes:
            t, m, c = by_size[n][name]
            row += [fmt_s(t.median), f"{c.median:.3f} s", fmt_mb(m.median)]
        rows.append(row)
    floor = by_size[rounds]["baseline: read every record"]
    gate = by_size[rounds]["spar gate"]
    small_gate = by_size[rounds // 4]["spar gate"]
    figures = {"rounds": rounds, "repeat": repeat, "gate_wall": gate[0].median, "gate_cpu": gate[2].median,
               "read_all_wall": floor[0].median, "read_all_cpu": floor[2].median,
               "ratio_wall": gate[0].median / floor[0].median, "ratio_cpu": gate[2].median / floor[2].median,
               "gate_peak_rss_mib": gate[1].median, "gate_peak_rss_mib_quarter": small_gate[1].median,
               "cap_report_wall": by_size[rounds]["spar cap-report (md)"][0].median}
    small_floor = by_size[rounds // 4]["baseline: read every record"]
    rows.append(["spar gate / read every record", f"{small_gate[0].median / small_floor[0].median:.2f}x wall",
                 f"{small_gate[2].median / small_floor[2].median:.2f}x CPU", "",
                 f"{figures['ratio_wall']:.2f}x wall", f"{figures['ratio_cpu']:.2f}x CPU", ""])
    header = ["command"]
    for n in sizes:
        header += [f"{n} rounds: wall", "CPU", "peak RSS"]
    shape = "duplicate chains through every round" if chains else "duplicates of the round before in every other round"
    figures["chains"] = chains
    text = table(f"Scale: series of {rounds} rounds x 50 findings ({shape}), median of {repeat}", header, rows,
                 [machine_line(),
                  "peak RSS = os.wait4 ru_maxrss of the command (MiB); CPU = user + system; bytecode cached",
                  f"target: spar gate ≤ 2x reading every record ({figures['ratio_wall']:.2f}x: "
                  f"{verdict(figures['ratio_wall'] <= 2.0)}), memory flat in the number of rounds "
                  f"({figures['gate_peak_rss_mib_quarter']:.0f} → {figures['gate_peak_rss_mib']:.0f} MiB)",
                  "the gate exits 1 here: the latest round keeps its blocking findings open"])
    return text, figures


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--repeat", type=int)
    p.add_argument("--rounds", type=int, default=1000)
    p.add_argument("--chains", action="store_true",
                   help="every round's unfixed defects duplicates of the round before's (chains back to round 1)")
    a = p.parse_args(argv)
    t = time.perf_counter()
    print(run(a.quick, a.repeat, a.rounds, a.chains)[0])
    print(f"(took {time.perf_counter() - t:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
