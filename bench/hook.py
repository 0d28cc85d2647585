"""`spar hook stop` on a long series, against `spar gate --series` over the same series:

- nothing kept: the first stop ever (no SERIES/.spar-hook.json, no SERIES/.spar-hook-rounds.json),
  so every record is read, as `spar gate --series` reads them;
- after a new round: the stop after `spar run` added the latest round, the other rounds kept
  by the stop before (made here by moving the latest round out, stopping once, moving it back);
- later stop: nothing changed since the last stop (the judgment kept in SERIES/.spar-hook.json).

    python bench/series.py /tmp/long --rounds 1000
    python bench/hook.py /tmp/long [--repeat 5]

The series' own repository (its round.json `repository`) is the agent's folder: the rounds
reviewed its HEAD, so the hook judges the change they reviewed. The series is left as it was
found, but for the hook's two files.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

from harness import clean_env, run_measured, spar_argv

STATE, KEPT = ".spar-hook.json", ".spar-hook-rounds.json"


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("series", type=Path)
    p.add_argument("--repeat", type=int, default=5)
    args = p.parse_args(argv)
    series = args.series.resolve()
    repo = json.loads(next(series.glob("*/round.json")).read_text())["repository"]
    latest = max(path.parent for path in series.glob("*/round.json"))
    aside = series.parent / f".{series.name}-latest-aside"
    env = clean_env()
    names = ("nothing kept", "after a new round", "later stop", "spar gate --series")
    figures: dict[str, list[tuple[float, float, float]]] = {name: [] for name in names}
    with tempfile.NamedTemporaryFile("w", suffix=".json") as payload:
        payload.write(json.dumps({"cwd": repo, "hook_event_name": "Stop"}))
        payload.flush()
        hook = spar_argv("hook", "stop", "--agent", "claude", "--series", str(series))

        def stop(name: str | None) -> None:
            s = run_measured(hook, cwd=repo, env=env, stdin_path=payload.name)
            if name is not None:
                figures[name].append((s.wall, s.user + s.sys, s.maxrss_mb))

        for _ in range(args.repeat):
            for kept in (STATE, KEPT):
                (series / kept).unlink(missing_ok=True)
            stop("nothing kept")
            os.rename(latest, aside)
            try:
                stop(None)  # keeps every round but the latest
            finally:
                os.rename(aside, latest)
            stop("after a new round")
            stop("later stop")
            with tempfile.TemporaryDirectory() as out:
                s = run_measured(spar_argv("gate", "--series", str(series), "--out", f"{out}/gate.json"),
                                 cwd=repo, env=env, check=False)
                figures["spar gate --series"].append((s.wall, s.user + s.sys, s.maxrss_mb))
    rounds = sum(1 for _ in series.glob("*/round.json"))
    base = statistics.median(w for w, _, _ in figures["spar gate --series"])
    print(f"{rounds} rounds; median of {args.repeat} (wall, CPU, peak RSS; ratio to spar gate --series' wall):")
    for name, samples in figures.items():
        wall = statistics.median(w for w, _, _ in samples)
        print(f"  {name}: {wall:.2f} s wall, {statistics.median(c for _, c, _ in samples):.2f} s CPU, "
              f"{statistics.median(m for _, _, m in samples):.0f} MiB ({wall / base:.2f}x)")
    kept = series / KEPT
    print(f"  {KEPT}: {kept.stat().st_size / 1e6:.1f} MB" if kept.exists() else f"  no {KEPT}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
