"""Issue 24 point 4: what each reviewer receives in round 2 of a series, with `full` and
with `incremental` packets (`[packet]` of the project configuration).

The series: a change of 300 files (round 1), then a fix commit touching 15 of them
(round 2), reviewed by one deterministic `command` reviewer (examples/example_reviewer.py).
The same repository is built twice, once per packet kind (only `.jaekit/spar.toml`
differs), and each round is a real `spar run`. The figures are round 2's bytes as
round.json records them (`input_bytes`: the prompt the reviewer reads, packet and the
series memory of round 1's findings, all rejected by `spar triage`; and the files written
into its folder: here input.md, the same text), next to packet.md and
`workspace/change.diff`. The whole diff (~443 KB) stays under the packet's 512 KiB cut, so
the full packet is not cut. Bytes do not depend on the machine; the wall time is a side note.

    python bench/incremental.py
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

from harness import PYTHON, ROOT, clean_env, git, machine_line, remove_tree, run_measured, spar_argv, table, work_dir

FILES = 300
FIXED = 15
LINES = 40  # lines of each file
CHANGED_LINES = 10  # lines the change rewrites in each file
GOAL = 0.25  # incremental round 2 <= 0.25x of full
REVIEWER = ROOT / "examples" / "example_reviewer.py"


def _line(rng: random.Random) -> str:
    words = ["value", "total", "count", "index", "result", "item", "name", "limit", "offset", "cache"]
    left, right = f"{rng.choice(words)}_{rng.randrange(1000)}", f"{rng.choice(words)}_{rng.randrange(1000)}"
    return f"    {left} = {right} + {rng.randrange(99)}"


def _file(rng: random.Random, n: int) -> list[str]:
    return [f"def step_{n}(value_0):"] + [_line(rng) for _ in range(LINES - 2)] + ["    return value_0"]


def _write(repo: Path, files: dict[str, list[str]]) -> None:
    for rel, lines in files.items():
        path = repo / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _commit(repo: Path, message: str) -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD").strip()


def build_series_repo(repo: Path, kind: str) -> tuple[str, str, str]:
    """(base, change head, fix head); the same content for both kinds but the project file."""
    rng = random.Random(24)
    repo.mkdir(parents=True)
    git(repo, "init", "-q")
    files = {f"src/pkg{i // 30}/mod{i}.py": _file(rng, i) for i in range(FILES)}
    _write(repo, files)
    (repo / ".gitignore").write_text("reviews/\n")
    (repo / ".jaekit").mkdir()
    (repo / ".jaekit" / "spar.toml").write_text(f'[caps]\ncode = 5\n\n[packet]\ncode = "{kind}"\n')
    base = _commit(repo, "base")
    for lines in files.values():  # the change: CHANGED_LINES lines of every file rewritten
        for k in range(CHANGED_LINES):
            lines[1 + 3 * k] = _line(rng)
    _write(repo, files)
    change = _commit(repo, "change 300 files")
    for rel in list(files)[:: FILES // FIXED][:FIXED]:  # the fix: 3 lines of 15 files
        for k in range(3):
            files[rel][2 + 3 * k] = _line(rng)
    _write(repo, files)
    fix = _commit(repo, "fix 15 files")
    return base, change, fix


def decide(repo: Path, env: dict[str, str]) -> None:
    r1 = repo / "reviews" / "r1"
    for finding in json.loads((r1 / "findings.json").read_text()):
        run_measured(spar_argv("triage", str(r1), finding["id"], "--to", "rejected", "--evidence",
                               "the bench decided it"), cwd=repo, env=env)


def run_series(where: Path, kind: str) -> dict:
    repo = where / kind / "repo"
    base, change, fix = build_series_repo(repo, kind)
    home = where / kind / "home"
    home.mkdir()
    config = where / kind / "spar.toml"
    config.write_text(f'[[reviewers]]\nname = "house"\npreset = "command"\n'
                      f'argv = [{json.dumps(PYTHON)}, {json.dumps(str(REVIEWER))}, "{{prompt}}"]\n')
    env = clean_env(HOME=str(home), SPAR_CONFIG=str(config), XDG_CONFIG_HOME=str(home / ".config"))
    walls = []
    for name, head in (("r1", change), ("r2", fix)):
        sample = run_measured(spar_argv("run", "--stage", "code", "--base", base, "--head", head,
                                        "--out", f"reviews/{name}"), cwd=repo, env=env, check=False)
        walls.append(sample.wall)
        if sample.returncode not in (0, 1):
            sys.exit(f"spar run {name} ({kind}) failed: {sample.stderr.decode('utf-8', 'replace')}")
        if name == "r1":  # round 1's findings decided, so round 2 carries a series memory
            decide(repo, env)
    r2 = repo / "reviews" / "r2"
    record = json.loads((r2 / "round.json").read_text())
    change_diff = r2 / "workspace" / "change.diff"
    return {
        "kind": record["packet"]["kind"],
        "input_bytes": record["reviewers"][0]["input_bytes"],
        "packet_md": (r2 / "packet.md").stat().st_size,
        "memory_md": (r2 / "memory.md").stat().st_size if (r2 / "memory.md").exists() else 0,
        "change_diff": change_diff.stat().st_size if change_diff.exists() else None,
        "wall_r2": walls[1],
    }


def main(argv: list[str]) -> int:
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args(argv)
    where = work_dir("incremental")
    try:
        full, incremental = run_series(where, "full"), run_series(where, "incremental")
    finally:
        remove_tree(where)
    ratio = incremental["input_bytes"]["prompt"] / full["input_bytes"]["prompt"]
    rows = [[kind, r["kind"], f"{r['input_bytes']['prompt']:,}", f"{r['input_bytes']['files']:,}",
             f"{r['packet_md']:,}", f"{r['memory_md']:,}",
             "-" if r["change_diff"] is None else f"{r['change_diff']:,}", f"{r['wall_r2']:.2f} s"]
            for kind, r in (("full", full), ("incremental", incremental))]
    print(table(f"Round 2 of a series: {FILES} files changed, then a fix of {FIXED} ({machine_line()})",
                ["[packet] code", "packet", "prompt bytes", "files bytes", "packet.md", "memory.md",
                 "change.diff", "spar run wall"], rows,
                [f"incremental / full prompt bytes: {ratio:.3f}x (goal <= {GOAL}x: "
                 f"{'met' if ratio <= GOAL else 'MISSED'})"]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
