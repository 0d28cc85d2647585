"""`spar hook stop` on a long series: the first stop after a round (the series judged, as
`spar gate --series` judges it) and every later one (the judgment kept in SERIES/.spar-hook.json
while no record changes), against `spar gate --series` itself.

    python bench/series.py /tmp/long --rounds 1000
    python bench/hook.py /tmp/long [--repeat 3]

The series' own repository (its round.json `repository`) is the agent's folder: the rounds
reviewed its HEAD, so the hook judges the change they reviewed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

from harness import clean_env, run_measured, spar_argv


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("series", type=Path)
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args(argv)
    series = args.series.resolve()
    repo = json.loads(next(series.glob("*/round.json")).read_text())["repository"]
    env = clean_env()
    state = series / ".spar-hook.json"
    with tempfile.NamedTemporaryFile("w", suffix=".json") as payload:
        payload.write(json.dumps({"cwd": repo, "hook_event_name": "Stop"}))
        payload.flush()
        hook = spar_argv("hook", "stop", "--agent", "claude", "--series", str(series))
        figures: dict[str, list[tuple[float, float]]] = {"first stop": [], "later stop": [], "spar gate --series": []}
        for _ in range(args.repeat):
            state.unlink(missing_ok=True)
            for name in ("first stop", "later stop"):
                s = run_measured(hook, cwd=repo, env=env, stdin_path=payload.name)
                figures[name].append((s.wall, s.user + s.sys))
            with tempfile.TemporaryDirectory() as out:
                s = run_measured(spar_argv("gate", "--series", str(series), "--out", f"{out}/gate.json"),
                                 cwd=repo, env=env, check=False)
                figures["spar gate --series"].append((s.wall, s.user + s.sys))
    rounds = sum(1 for _ in series.glob("*/round.json"))
    print(f"{rounds} rounds; median of {args.repeat} (wall s, CPU s):")
    for name, samples in figures.items():
        print(f"  {name}: {statistics.median(w for w, _ in samples):.2f} s wall, "
              f"{statistics.median(c for _, c in samples):.2f} s CPU")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
