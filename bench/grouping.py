"""How well Spar's claim rule groups findings of different vendors, on third-party reviews.

    .venv/bin/python bench/grouping.py [DATA_DIR] [--json] [--sweep]

DATA_DIR (default: shared/data/code-review-bench/ beside the repository) holds the
`evaluations-<judge>.json` files of Martian's code review benchmark (bench/README.md,
"Grouping"). The data is read where it lies, never copied; without it the bench says so
and exits 0.

Per judge file and pull request: two comments by different tools that the judge matched
(confidence >= 0.8) to the same reference issue are a same-problem pair; two matched to
different reference issues are a different-problem pair (a hard negative). Recall is the
share of same-problem pairs the rule groups, false-match the share of negatives it groups.
The comments have no file or line, so only the claim part of the rule is measured: each
tool's comments on a pull request are one side, every comment of a side may meet every
comment of another (as if all were near).

Figures are given for the held-out projects (HELD_OUT); SIMILAR_AT was chosen on the
pull requests of the other two (TUNED_ON, `--sweep` shows how). `--json` prints a list
of {"judge", "pairs", "negatives", "recall", "false_match"}, one per judge file, for
Spar's rule on the held-out projects.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

from spar.judge.similar import SIMILAR_AT, claim_similarity, closest_pairs

ROOT = Path(__file__).resolve().parent.parent
# ../shared/data/code-review-bench of the repository (or of a folder above it, for a worktree)
DEFAULT_DATA = next((p / "shared" / "data" / "code-review-bench" for p in ROOT.parents
                     if (p / "shared" / "data" / "code-review-bench").is_dir()),
                    ROOT.parent / "shared" / "data" / "code-review-bench")
CONFIDENCE = 0.8
TUNED_ON = ("cal_dot_com", "discourse")
HELD_OUT = ("grafana", "keycloak", "sentry")
BEFORE_AT = 0.35  # the rule before issue 23: Dice >= 0.35 on every pair, no pairing


@dataclass
class PullRequest:
    project: str
    sides: dict[str, list[str]] = field(default_factory=dict)  # tool -> its comments
    pairs: list[tuple[tuple[str, str], tuple[str, str]]] = field(default_factory=list)  # ((tool, text), ...)
    negatives: list[tuple[tuple[str, str], tuple[str, str]]] = field(default_factory=list)


def _project(url: str, tools: dict[str, object]) -> str:
    for v in tools.values():
        if isinstance(v, dict) and v.get("repo_name"):
            return str(v["repo_name"]).split("__")[0]
    return url.split("/")[3]


def read_judge(path: Path) -> list[PullRequest]:
    out = []
    for url, tools in json.loads(path.read_text(encoding="utf-8")).items():
        pr = PullRequest(_project(url, tools))
        matched: list[tuple[str, str, str]] = []  # (tool, reference issue, comment)
        for tool, v in tools.items():
            if not isinstance(v, dict) or v.get("skipped"):
                continue
            side = pr.sides.setdefault(tool, [])
            for tp in v.get("true_positives") or []:
                side.append(tp["matched_candidate"])
                if float(tp.get("confidence") or 0) >= CONFIDENCE:
                    matched.append((tool, tp["golden_comment"], tp["matched_candidate"]))
            side.extend(fp["candidate"] for fp in v.get("false_positives") or [])
        for a, b in itertools.combinations(matched, 2):
            if a[0] != b[0]:
                (pr.pairs if a[1] == b[1] else pr.negatives).append(((a[0], a[2]), (b[0], b[2])))
        out.append(pr)
    return out


def spar_rule(pr: PullRequest, at: float = SIMILAR_AT) -> set[tuple[tuple[str, str], tuple[str, str]]]:
    """Every (tool, comment) pair Spar's rule groups: closest pairs of every two sides."""
    grouped = set()
    for ta, tb in itertools.combinations(sorted(pr.sides), 2):
        a, b = pr.sides[ta], pr.sides[tb]
        for i, j, _ in closest_pairs(a, b, at=at):
            grouped.add(((ta, a[i]), (tb, b[j])))
            grouped.add(((tb, b[j]), (ta, a[i])))
    return grouped


def rates(prs: list[PullRequest], grouped: list[set[tuple[tuple[str, str], tuple[str, str]]]]) -> dict[str, float]:
    pairs = sum(len(p.pairs) for p in prs)
    negatives = sum(len(p.negatives) for p in prs)
    found = sum(sum(x in g for x in p.pairs) for p, g in zip(prs, grouped, strict=True))
    wrong = sum(sum(x in g for x in p.negatives) for p, g in zip(prs, grouped, strict=True))
    return {"pairs": pairs, "negatives": negatives,
            "recall": round(found / pairs, 3) if pairs else 0.0,
            "false_match": round(wrong / negatives, 3) if negatives else 0.0}


def before_rule(pr: PullRequest) -> set[tuple[tuple[str, str], tuple[str, str]]]:
    return {x for x in pr.pairs + pr.negatives if claim_similarity(x[0][1], x[1][1]) >= BEFORE_AT}


def measure(prs: list[PullRequest], projects: tuple[str, ...], rule: str, at: float = SIMILAR_AT) -> dict[str, float]:
    part = [p for p in prs if p.project in projects]
    grouped = [spar_rule(p, at) if rule == "spar" else before_rule(p) for p in part]
    return rates(part, grouped)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data", nargs="?", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--json", action="store_true", help="one object per judge file, Spar's rule, held-out projects")
    ap.add_argument("--sweep", action="store_true", help="recall/false-match by threshold on the tuning projects")
    args = ap.parse_args(argv)
    files = sorted(args.data.glob("evaluations-*.json")) if args.data.is_dir() else []
    if not files:
        print(f"grouping: no evaluations-*.json in {args.data}; skipped (bench/README.md: where the data comes from)")
        return 0
    judges = {f.name.removeprefix("evaluations-").removesuffix(".json"): read_judge(f) for f in files}
    if args.json:
        print(json.dumps([{"judge": j, **measure(prs, HELD_OUT, "spar")} for j, prs in judges.items()], indent=2))
        return 0
    if args.sweep:
        print(f"threshold sweep on {', '.join(TUNED_ON)} (recall / false-match per judge)")
        for at in (0.15, 0.18, 0.20, 0.21, 0.22, 0.25, 0.28, 0.30, 0.35):
            cells = [measure(prs, TUNED_ON, "spar", at) for prs in judges.values()]
            print(f"  {at:.2f}  " + "  ".join(f"{c['recall']:.3f} / {c['false_match']:.3f}" for c in cells))
        return 0
    print("| judge | projects | rule | same-problem pairs | recall | different-problem pairs | false-match |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    rules = (("before", f"Dice >= {BEFORE_AT}, every pair"), ("spar", f"closest pairs, Dice >= {SIMILAR_AT}"))
    for j, prs in judges.items():
        for name, projects in (("held out", HELD_OUT), ("tuned on", TUNED_ON)):
            for rule, label in rules:
                m = measure(prs, projects, rule)
                print(f"| {j} | {name} | {label} | {m['pairs']} | {m['recall']:.3f} "
                      f"| {m['negatives']} | {m['false_match']:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
