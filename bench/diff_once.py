"""A change of 2,000 files: what `spar run` spends reading its diff for the packet.

Before: `git diff --stat`, then `git diff` read whole (spar held every byte of
the patch). Now (`spar.git.diff_with_stat`): the stat runs beside a `git diff`
that spar reads only to the packet's 512 KiB and then stops.
Both are timed inside one child process each (no interpreter start-up), in
alternating order, next to the same on a change of one file.

    python bench/diff_once.py [--quick] [--repeat N]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

from harness import OUT, PYTHON, Series, clean_env, git, machine_line, run_measured, table
from repos import text

FILES = 2000
_CHILD = """
import json, sys, time
from spar import git
from spar.round.packet import DIFF_LIMIT
repo, base, head, how = sys.argv[1:5]
t = time.perf_counter()
if how == "two":
    size = len(git.diff_stat(repo, base, head)) + len(git.diff(repo, base, head))
else:
    change = git.diff_with_stat(repo, base, head, DIFF_LIMIT)
    size = len(change.stat) + len(change.patch)
print(json.dumps({"seconds": time.perf_counter() - t, "size": size}))
"""


def changed_repo() -> tuple[Path, str, str, str]:
    """(repo, base, head with one file changed, head with FILES files changed), cached in bench/out."""
    repo = OUT / f"diff-{FILES}" / "repo"
    meta = repo.parent / "meta.json"
    if meta.exists():
        m = json.loads(meta.read_text())
        return repo, m["base"], m["one"], m["many"]
    repo.mkdir(parents=True, exist_ok=True)
    rng = random.Random(15)
    git(repo, "init", "-q")
    for i in range(FILES):
        path = repo / f"pkg{i // 100}" / f"f{i}.txt"
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(text(rng, 2000))
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    base = git(repo, "rev-parse", "HEAD").strip()
    (repo / "pkg0" / "f0.txt").write_bytes(text(rng, 2000))
    git(repo, "commit", "-q", "-am", "one file")
    one = git(repo, "rev-parse", "HEAD").strip()
    for i in range(FILES):
        path = repo / f"pkg{i // 100}" / f"f{i}.txt"
        path.write_bytes(path.read_bytes()[:1000] + text(rng, 1200))
    git(repo, "commit", "-q", "-am", "every file")
    many = git(repo, "rev-parse", "HEAD").strip()
    meta.write_text(json.dumps({"base": base, "one": one, "many": many}))
    return repo, base, one, many


def _time(repo: Path, base: str, head: str, how: str) -> float:
    s = run_measured([PYTHON, "-c", _CHILD, str(repo), base, head, how], env=clean_env())
    return json.loads(s.stdout)["seconds"]


def run(quick: bool, repeat: int | None) -> tuple[str, dict]:
    repeat = repeat or (3 if quick else 9)
    repo, base, one, many = changed_repo()
    sides = {(n, how): Series() for n in ("one", "many") for how in ("two", "once")}
    heads = {"one": one, "many": many}
    for i in range(repeat + 1):
        order = list(sides) if i % 2 else list(reversed(sides))
        for n, how in order:
            seconds = _time(repo, base, heads[n], how)
            if i:
                sides[(n, how)].add(seconds)
    m = {f"{n}_{how}": s.median for (n, how), s in sides.items()}
    figures = {"files": FILES, "repeat": repeat, **m,
               "extra_two_runs": m["many_two"] - m["one_two"], "extra_once": m["many_once"] - m["one_once"],
               "ratio_once_to_two": m["many_once"] / m["many_two"]}
    rows = [[f"{FILES:,} files changed", f"{m['many_two']:.3f} s", f"{m['many_once']:.3f} s",
             f"{figures['ratio_once_to_two']:.2f}x"],
            ["1 file changed", f"{m['one_two']:.3f} s", f"{m['one_once']:.3f} s",
             f"{m['one_once'] / m['one_two']:.2f}x"],
            [f"extra for {FILES:,} files", f"+{figures['extra_two_runs']:.3f} s", f"+{figures['extra_once']:.3f} s",
             ""]]
    return table(f"Reading the change for the packet, median of {repeat}",
                 ["change", "before: git diff --stat, then git diff read whole",
                  "now: --stat beside git diff read to 512 KiB",
                  "now / before"], rows,
                 [machine_line(), "timed inside one child process per sample, alternating order"]), figures


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
