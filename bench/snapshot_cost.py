"""The working tree as a commit (`git.snapshot_worktree`: what `spar run --worktree` reviews and
what `spar hook stop` compares with the rounds at every stop) on the 20,000-file repository of
`repos.py` with one file changed: its index seeded from the user's (git reads only the files
changed since it last looked) against the index read from the parent's tree alone (every file
read, as before), and `git status` of the same tree as the floor. Then `spar hook stop` itself
there, with its series empty (the answer: no round covers the change). Medians of `--repeat`
runs, the page cache warm.

    .venv/bin/python bench/snapshot_cost.py [--repeat 7]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness import clean_env, machine_line, run_measured, spar_argv
from repos import large_repo

from spar import git


def _median(call, repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        call()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def _whole(repo: Path, head: str) -> None:
    """The snapshot as it was made before: the index from the parent's tree alone."""
    seeded = git._parent_index
    git._parent_index = lambda r, p, i, *, seed: seeded(r, p, i, seed=False)  # type: ignore[assignment]
    try:
        git.snapshot_worktree(repo, head, 100 * 1024 * 1024)
    finally:
        git._parent_index = seeded  # type: ignore[assignment]


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeat", type=int, default=7)
    args = p.parse_args(argv)
    info = large_repo()
    repo = Path(info.path)
    changed = repo / "README.md"
    original = changed.read_bytes()
    changed.write_bytes(original + b"# changed\n")
    try:
        head = git.head_commit(repo)
        status = ["git", "-C", str(repo), "-c", "core.fsmonitor=false", "status", "--porcelain", "-z"]
        floor = _median(lambda: subprocess.run(status, check=True, capture_output=True, env=clean_env()), args.repeat)
        seeded = _median(lambda: git.snapshot_worktree(repo, head, 100 * 1024 * 1024), args.repeat)
        whole = _median(lambda: _whole(repo, head), args.repeat)
        with tempfile.TemporaryDirectory() as series, tempfile.NamedTemporaryFile("w", suffix=".json") as payload:
            payload.write(json.dumps({"cwd": str(repo), "hook_event_name": "Stop"}))
            payload.flush()
            hook = spar_argv("hook", "stop", "--agent", "claude", "--series", series, "--dry-run")
            stops = [run_measured(hook, cwd=repo, env=clean_env(), stdin_path=payload.name).wall
                     for _ in range(args.repeat)]
    finally:
        changed.write_bytes(original)
    print(machine_line())
    print(f"{info.files} files, {info.head_bytes / 1e6:.0f} MB at head, one file changed; median of {args.repeat}:")
    print(f"  git status (the floor): {floor:.3f} s")
    print(f"  snapshot, index seeded from the user's: {seeded:.3f} s ({seeded / floor:.1f}x the floor)")
    print(f"  snapshot, index from the parent's tree (before): {whole:.3f} s ({whole / floor:.1f}x the floor)")
    print(f"  spar hook stop (no round yet): {statistics.median(stops):.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
