"""A round with the real claude and codex (tests/realclis.py) against the scripted model server
(tests/modelserver.py), with and without Spar's sandbox, side by side with the two CLIs run
directly, in parallel, on the same prompt, workspace and server (the slower of the two is the
floor). Each run: claude reads two files through its Read tool, codex through its shell, then
both answer; the same script answers every variant.

    .venv/bin/python bench/real_cli_round.py [--repeat N]

Prints the median wall time of each variant over N runs (interleaved, so a change in the
machine's load falls on all of them) and the ratios to the floor.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.modelserver import ModelServer  # noqa: E402
from tests.realclis import installed  # noqa: E402
from tests.realround import entry, real_setup, review_script, run_spar, world_dir  # noqa: E402
from tests.runsetup import finding, result  # noqa: E402

REVIEWERS = ("claude", "codex")


def _config(s, sandbox: str) -> None:
    text = s.config.read_text(encoding="utf-8").replace('mode = "required"', f'mode = "{sandbox}"')
    s.config.write_text(text, encoding="utf-8")


def spar_round(s, out: str) -> float:
    started = time.monotonic()
    proc = run_spar(s, "run", "--stage", "code", "--out", out)
    took = time.monotonic() - started
    statuses = [entry(s, name, out)["status"] for name in REVIEWERS]
    if proc.returncode != 0 or statuses != ["completed", "completed"]:
        raise SystemExit(f"the round did not complete: {statuses}: {proc.stderr.decode()[-2000:]}")
    return took


def direct(s, out: str, workspace: Path) -> float:
    """Both CLIs as Spar ran them in round `out` (its argv, the packet on stdin), started at once."""
    round_dir = s.repo / out
    packet = (round_dir / "packet.md").read_bytes()
    procs = []
    started = time.monotonic()
    for name in REVIEWERS:
        argv = [str(workspace) if a == str(round_dir / "workspace") else a
                for a in entry(s, name, out)["attempts"][-1]["argv"]]
        proc = subprocess.Popen(argv, cwd=workspace, env=s.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL)
        procs.append(proc)
    for proc in procs:
        proc.communicate(packet, timeout=300)
    took = time.monotonic() - started
    if any(p.returncode != 0 for p in procs):
        raise SystemExit(f"a CLI run directly failed: {[p.returncode for p in procs]}")
    return took


def workspace_copy(s, into: Path) -> Path:
    """head/ and base/ as Spar's workspace holds them."""
    for name, rev in (("head", s.head), ("base", s.base)):
        (into / name).mkdir(parents=True)
        archive = subprocess.run(["git", "archive", rev], cwd=s.repo, capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(into / name)], input=archive, check=True)
    return into


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    clis = installed()
    times: dict[str, list[float]] = {"spar, sandbox": [], "spar, no sandbox": [], "direct": []}
    with world_dir() as root, ModelServer(review_script(result(findings=[finding()]))) as server:
        s = real_setup(root, clis, server, [{"name": "claude", "preset": "claude"},
                                            {"name": "codex", "preset": "codex"}])
        workspace = workspace_copy(s, root / "direct-workspace")
        for n in range(args.repeat + 1):  # the first of each is a warm-up, not counted
            _config(s, "required")
            sandboxed = spar_round(s, f"reviews/s{n}")
            _config(s, "off")
            plain = spar_round(s, f"reviews/p{n}")
            floor = direct(s, f"reviews/p{n}", workspace)
            if n:
                times["spar, sandbox"].append(sandboxed)
                times["spar, no sandbox"].append(plain)
                times["direct"].append(floor)
            shutil.rmtree(s.repo / "reviews", ignore_errors=True)
    medians = {k: statistics.median(v) for k, v in times.items()}
    print(f"{clis.versions()}; {args.repeat} runs; load {os.getloadavg()[0]:.2f}")
    for name, value in medians.items():
        ratio = value / medians["direct"]
        print(f"{name:18} median {value:6.2f} s  (runs {', '.join(f'{t:.2f}' for t in times[name])})  "
              f"{ratio:.2f}x the floor")
    print(json.dumps({k: round(v, 3) for k, v in medians.items()}))


if __name__ == "__main__":
    main()
