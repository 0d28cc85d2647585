"""A reviewer answering 20,000 findings (26 MB): what the round costs Spar.

Issue 25 measured a round whose reviewer answered 20,000 findings at 397 MiB and 40 s.
A reviewer's answer now holds at most `max_findings` findings (500 unless configured):
beyond that the answer is invalid_output, counted before any finding is checked or
built, so the round should cost about what reading the answer costs. This runs
`spar run` (one `command` reviewer printing a prepared answer) as a child (wall time and
peak RSS through os.wait4, harness.run_measured), against `python -c` loading the same
answer with `json.load`, for 500 and 20,000 findings.

    python bench/large_answer.py [--repeat N]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

from harness import (
    PYTHON,
    clean_env,
    fmt_mb,
    fmt_s,
    git,
    machine_line,
    remove_tree,
    run_measured,
    spar_argv,
    table,
    work_dir,
)

CALC = "def divide(a, b):\n    return a / b\n"


def _answer(head: str, count: int) -> dict:
    """An answer as a reviewer writes it, each finding about 1.3 KB (20,000 make ~26 MB)."""
    finding = {"proposed_class": "defect", "angle": "correctness", "location": "head/calc.py:2",
               "claim": "divide by zero", "failure_scenario": "divide(1, 0) raises ZeroDivisionError",
               "evidence": "no check " * 120, "link_kind": "criterion", "link": "AC-1",
               "introduced_by_change": "yes", "regression": "no", "check_impact": "none", "confidence": "high",
               "smallest_fix": "check b"}
    return {"reviewed_head": head, "verdict": "blocking_findings",
            "angles_checked": [{"angle": a, "result": "ok"}
                               for a in ("criteria", "correctness", "checks", "contracts", "risk")],
            "angles_unchecked": [], "limits": "",
            "findings": [{**finding, "id": f"f{n}"} for n in range(1, count + 1)]}


def _repo(tmp: Path) -> tuple[Path, str]:
    repo = tmp / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "calc.py").write_text("# calc\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    (repo / "calc.py").write_text(CALC)
    (repo / ".gitignore").write_text("/reviews*/\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "divide")
    return repo, git(repo, "rev-parse", "HEAD").strip()


def measure(count: int, repeat: int) -> dict[str, dict[str, float]]:
    tmp = work_dir("large-answer")
    try:
        env = clean_env()
        repo, head = _repo(tmp)
        answer = tmp / "answer.json"
        answer.write_text(json.dumps(_answer(head, count)), encoding="utf-8")
        config = tmp / "spar.toml"
        config.write_text('[[reviewers]]\nname = "flood"\npreset = "command"\n'
                          f'argv = ["sh", "-c", "cat \\"$0\\"", {json.dumps(str(answer))}, "{{prompt}}"]\n')
        env.update(SPAR_CONFIG=str(config), XDG_CONFIG_HOME=str(tmp / "xdg"))
        spar, floor, status = [], [], ""
        for n in range(repeat):
            out = f"reviews-{count}-{n}/r1"
            spar.append(run_measured(spar_argv("run", "--stage", "code", "--out", out), cwd=repo, env=env,
                                     timeout=1800, check=False))
            record = json.loads((repo / out / "round.json").read_text(encoding="utf-8"))
            status = record["reviewers"][0]["status"]
            floor.append(run_measured([PYTHON, "-c", "import json, sys; json.load(open(sys.argv[1]))", str(answer)]))
        return {"spar run": {"wall": statistics.median(s.wall for s in spar),
                             "maxrss_mb": statistics.median(s.maxrss_mb for s in spar)},
                "json.load of the answer": {"wall": statistics.median(s.wall for s in floor),
                                            "maxrss_mb": statistics.median(s.maxrss_mb for s in floor)},
                "answer": {"bytes": answer.stat().st_size, "status": status}}
    finally:
        remove_tree(tmp)


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=3, help="runs per answer size (median; default 3)")
    a = p.parse_args(argv)
    rows = []
    for count in (500, 20_000):
        f = measure(count, a.repeat)
        size = f["answer"]["bytes"] / 1e6
        for name in ("spar run", "json.load of the answer"):
            rows.append([f"{count:,} findings ({size:.1f} MB)", name, fmt_s(f[name]["wall"]),
                         fmt_mb(f[name]["maxrss_mb"]), f["answer"]["status"] if name == "spar run" else ""])
    print(table(f"A reviewer's large answer, median of {a.repeat}",
                ["answer", "what", "wall", "peak RSS", "reviewer status"], rows,
                [machine_line(), "max_findings is 500 (the default): more findings are invalid_output"]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
