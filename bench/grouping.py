"""How well Spar's claim rule groups findings of different vendors, on third-party reviews.

    .venv/bin/python bench/grouping.py [DATA_DIR] [--json] [--sweep] [--as-filed] [--repeats]

DATA_DIR (default: shared/data/code-review-bench/ beside the repository) holds the
`evaluations-<judge>.json` files of Martian's code review benchmark (bench/README.md,
"Grouping"). The data is read where it lies, never copied; without it the bench says so
and exits 0.

Per judge file and pull request: two comments by different tools that the judge matched
(confidence >= 0.8) to a common reference issue are a same-problem pair; two matched
(confidence >= 0.8) to reference issues with none in common, at any confidence, are a
different-problem pair (a hard negative). Each pair counts once. Recall is the share of
same-problem pairs the rule groups, false-match the share of negatives it groups.
`--as-filed` counts as issue 23 was filed: one pair per comment and reference issue, so a
comment the judge matched to two issues makes, with a comment matched to one of them, a
same-problem pair and a different-problem pair at once (10-12% of those negatives).
The comments have no file or line, so only the claim part of the rule is measured: each
tool's comments on a pull request are one side, every comment of a side may meet every
comment of another (as if all were near).

Figures are given for the held-out projects (HELD_OUT); SIMILAR_AT and NEAR_BEST were
chosen on the pull requests of the other two (TUNED_ON, `--sweep` shows how). `--json`
prints a list of {"judge", "pairs", "negatives", "recall", "false_match", "before"}, one
per judge file, for Spar's rule on the held-out projects; "before" holds the previous
rule's figures on the same pairs.

`--repeats` measures settling (spar/judge/settle.py): of the pairs the grouping rule pairs,
those `restates` also accepts, as a later finding `spar triage --repeats` may settle by the
earlier one's decision. True repeats kept are same-problem pairs it keeps; false settles are
different-problem pairs it keeps (with the grouping rule alone every grouped pair would
settle). RESTATES_AT was chosen on TUNED_ON (a sweep is printed first).
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from spar.judge.settle import RESTATES_AT, restates
from spar.judge.similar import NEAR_BEST, SIMILAR_AT, claim_similarity, closest_pairs

ROOT = Path(__file__).resolve().parent.parent
# ../shared/data/code-review-bench of the repository (or of a folder above it, for a worktree)
DEFAULT_DATA = next((p / "shared" / "data" / "code-review-bench" for p in ROOT.parents
                     if (p / "shared" / "data" / "code-review-bench").is_dir()),
                    ROOT.parent / "shared" / "data" / "code-review-bench")
CONFIDENCE = 0.8
TUNED_ON = ("cal_dot_com", "discourse")
HELD_OUT = ("grafana", "keycloak", "sentry")
FIRST_AT = 0.35  # the rule when issue 23 was filed (946dda2): Dice >= 0.35 on every pair
BEFORE = (0.21, 1.0)  # the rule before this change: only each other's closest, Dice >= 0.21
GROUP_OF = (2, 3)  # reviewers per round when measuring groups joined through shared members

Comment = tuple[str, str]  # (tool, text)
Pair = tuple[Comment, Comment]
Grouped = Callable[[Pair], bool]


@dataclass
class PullRequest:
    project: str
    sides: dict[str, list[str]] = field(default_factory=dict)  # tool -> its comments, each once
    pairs: list[Pair] = field(default_factory=list)
    negatives: list[Pair] = field(default_factory=list)


def _project(url: str, tools: dict[str, object]) -> str:
    for v in tools.values():
        if isinstance(v, dict) and v.get("repo_name"):
            return str(v["repo_name"]).split("__")[0]
    return url.split("/")[3]


def _label(pr: PullRequest, sure: dict[Comment, set[str]], any_: dict[Comment, set[str]], as_filed: bool) -> None:
    if as_filed:
        matched = [(c, g) for c, issues in sure.items() for g in sorted(issues)]
        for (a, ga), (b, gb) in itertools.combinations(matched, 2):
            if a[0] != b[0]:
                (pr.pairs if ga == gb else pr.negatives).append((a, b))
        return
    for a, b in itertools.combinations(sure, 2):
        if a[0] == b[0]:
            continue
        if sure[a] & sure[b]:
            pr.pairs.append((a, b))
        elif not any_[a] & any_[b]:
            pr.negatives.append((a, b))


def read_judge(path: Path, as_filed: bool = False) -> list[PullRequest]:
    out = []
    for url, tools in json.loads(path.read_text(encoding="utf-8")).items():
        pr = PullRequest(_project(url, tools))
        sure: dict[Comment, set[str]] = {}  # comment -> reference issues matched with confidence
        any_: dict[Comment, set[str]] = {}  # comment -> reference issues matched at all
        for tool, v in tools.items():
            if not isinstance(v, dict) or v.get("skipped"):
                continue
            side = pr.sides.setdefault(tool, [])
            texts = [tp["matched_candidate"] for tp in v.get("true_positives") or []]
            texts += [fp["candidate"] for fp in v.get("false_positives") or []]
            side.extend(dict.fromkeys(t for t in texts if t not in side))
            for tp in v.get("true_positives") or []:
                c = (tool, tp["matched_candidate"])
                any_.setdefault(c, set()).add(tp["golden_comment"])
                if float(tp.get("confidence") or 0) >= CONFIDENCE:
                    sure.setdefault(c, set()).add(tp["golden_comment"])
        _label(pr, sure, any_, as_filed)
        out.append(pr)
    return out


def paired(sides: dict[str, list[str]], at: float, near_best: float) -> list[Pair]:
    """Every (comment, comment) pair of two tools that Spar's rule pairs (closest_pairs)."""
    out = []
    for ta, tb in itertools.combinations(sorted(sides), 2):
        a, b = sides[ta], sides[tb]
        out += [((ta, a[i]), (tb, b[j])) for i, j, _ in closest_pairs(a, b, at=at, near_best=near_best)]
    return out


def spar_rule(pr: PullRequest, at: float = SIMILAR_AT, near_best: float = NEAR_BEST) -> set[Pair]:
    """Every (tool, comment) pair Spar's rule groups, both ways round."""
    return {p for x, y in paired(pr.sides, at, near_best) for p in ((x, y), (y, x))}


def first_rule(pr: PullRequest) -> set[Pair]:
    return {x for x in pr.pairs + pr.negatives if claim_similarity(x[0][1], x[1][1]) >= FIRST_AT}


def joined(sides: dict[str, list[str]], at: float, near_best: float) -> Grouped:
    """Grouped as corroborate groups: pairs join through shared members."""
    parent: dict[Comment, Comment] = {}

    def root(c: Comment) -> Comment:
        while parent.get(c, c) != c:
            c = parent[c]
        return c

    for x, y in paired(sides, at, near_best):
        parent[root(y)] = root(x)
    return lambda p: root(p[0]) == root(p[1])


def rates(counted: Iterable[tuple[list[Pair], list[Pair], Grouped]]) -> dict[str, float]:
    pairs = negatives = found = wrong = 0
    for pos, neg, grouped in counted:
        pairs, negatives = pairs + len(pos), negatives + len(neg)
        found, wrong = found + sum(map(grouped, pos)), wrong + sum(map(grouped, neg))
    return {"pairs": pairs, "negatives": negatives,
            "recall": round(found / pairs, 3) if pairs else 0.0,
            "false_match": round(wrong / negatives, 3) if negatives else 0.0}


def measure(prs: list[PullRequest], projects: tuple[str, ...], rule: str,
            at: float = SIMILAR_AT, near_best: float = NEAR_BEST) -> dict[str, float]:
    """rule: "spar" (at, near_best), "before" (BEFORE) or "first" (FIRST_AT on every pair)."""
    at, near_best = BEFORE if rule == "before" else (at, near_best)
    part = [p for p in prs if p.project in projects]
    grouped = [(first_rule(p) if rule == "first" else spar_rule(p, at, near_best)).__contains__ for p in part]
    return rates((p.pairs, p.negatives, g) for p, g in zip(part, grouped, strict=True))


def measure_groups(prs: list[PullRequest], projects: tuple[str, ...], size: int,
                   at: float, near_best: float) -> dict[str, float]:
    """Every `size` tools of a pull request as one round's reviewers, grouped as corroborate does."""
    def rounds() -> Iterable[tuple[list[Pair], list[Pair], Grouped]]:
        for p in (p for p in prs if p.project in projects):
            for tools in itertools.combinations(sorted(p.sides), size):
                grouped = joined({t: p.sides[t] for t in tools}, at, near_best)
                yield ([x for x in p.pairs if x[0][0] in tools and x[1][0] in tools],
                       [x for x in p.negatives if x[0][0] in tools and x[1][0] in tools], grouped)
    return rates(rounds())


def sweep(judges: dict[str, list[PullRequest]]) -> None:
    print(f"sweep on {', '.join(TUNED_ON)} (recall / false-match per judge); chosen: the highest"
          " lowest recall with every false-match <= 0.05")
    best: tuple[float, float, float] | None = None
    for near_best in (1.0, 0.95, 0.9, 0.85, 0.8, 0.75, 0.7):
        for at in (0.15, 0.18, 0.21, 0.25, 0.3, 0.35):
            cells = [measure(prs, TUNED_ON, "spar", at, near_best) for prs in judges.values()]
            print(f"  near_best {near_best:.2f}  at {at:.2f}  "
                  + "  ".join(f"{c['recall']:.3f} / {c['false_match']:.3f}" for c in cells))
            low = min(c["recall"] for c in cells)
            if max(c["false_match"] for c in cells) <= 0.05 and (best is None or low > best[0]):
                best = (low, near_best, at)
    print(f"chosen: near_best {best[1]:.2f}, at {best[2]:.2f}" if best else "chosen: none meets 0.05")


def table(judges: dict[str, list[PullRequest]], label: str) -> None:
    print(f"pairs counted {label}")
    print("| judge | projects | rule | same-problem pairs | recall | different-problem pairs | false-match |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    rules = (("first", f"Dice >= {FIRST_AT}, every pair"),
             ("before", f"closest only, Dice >= {BEFORE[0]}"),
             ("spar", f"within {NEAR_BEST} of closest, Dice >= {SIMILAR_AT}"))
    for j, prs in judges.items():
        for name, projects in (("held out", HELD_OUT), ("tuned on", TUNED_ON)):
            for rule, text in rules:
                m = measure(prs, projects, rule)
                print(f"| {j} | {name} | {text} | {m['pairs']} | {m['recall']:.3f} "
                      f"| {m['negatives']} | {m['false_match']:.3f} |")


def group_table(judges: dict[str, list[PullRequest]]) -> None:
    print("\ngroups joined through shared members (corroborate), every 2 or 3 tools of a pull request as"
          " one round's reviewers, held out; pairs counted once per round")
    print("| judge | reviewers | rule | same-problem pairs | recall | different-problem pairs | false-match |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for j, prs in judges.items():
        for size in GROUP_OF:
            for text, (at, near_best) in (("before", BEFORE), ("spar", (SIMILAR_AT, NEAR_BEST))):
                m = measure_groups(prs, HELD_OUT, size, at, near_best)
                print(f"| {j} | {size} | {text} | {m['pairs']} | {m['recall']:.3f} | {m['negatives']} "
                      f"| {m['false_match']:.3f} |")


SETTLE_FALSE_AT = 0.03  # the most different-problem pairs a settling rule may keep (grouping allows 0.05)


def settled(prs: list[PullRequest], projects: tuple[str, ...], at: float = RESTATES_AT) -> dict[str, float]:
    """Of the pairs grouping pairs, those `restates` keeps: counts and shares of all pairs."""
    grouped_pos = grouped_neg = kept_pos = kept_neg = pairs = negatives = 0
    for p in (p for p in prs if p.project in projects):
        grouped = spar_rule(p)
        pairs, negatives = pairs + len(p.pairs), negatives + len(p.negatives)
        pos = [x for x in p.pairs if x in grouped]
        neg = [x for x in p.negatives if x in grouped]
        grouped_pos, grouped_neg = grouped_pos + len(pos), grouped_neg + len(neg)
        kept_pos += sum(restates(a[1], b[1], at) for a, b in pos)
        kept_neg += sum(restates(a[1], b[1], at) for a, b in neg)
    return {"pairs": pairs, "negatives": negatives, "grouped": grouped_pos, "kept": kept_pos,
            "grouped_negatives": grouped_neg, "kept_negatives": kept_neg,
            "recall": round(kept_pos / pairs, 3) if pairs else 0.0,
            "false_settle": round(kept_neg / negatives, 3) if negatives else 0.0}


def repeats_table(judges: dict[str, list[PullRequest]]) -> None:
    print(f"settling sweep on {', '.join(TUNED_ON)} (recall / false-settle per judge); chosen: the highest"
          f" lowest recall with every false-settle <= {SETTLE_FALSE_AT}")
    best: tuple[float, float] | None = None
    for at in (SIMILAR_AT, 0.25, 0.3, 0.35, 0.4):
        cells = [settled(prs, TUNED_ON, at) for prs in judges.values()]
        print(f"  restates_at {at:.2f}  " + "  ".join(f"{c['recall']:.3f} / {c['false_settle']:.3f}" for c in cells))
        low = min(c["recall"] for c in cells)
        if max(c["false_settle"] for c in cells) <= SETTLE_FALSE_AT and (best is None or low > best[0]):
            best = (low, at)
    print(f"chosen: restates_at {best[1]:.2f}" if best else f"chosen: none meets {SETTLE_FALSE_AT}")
    print(f"\nsettling at restates_at {RESTATES_AT}, held out: true repeats (same-problem pairs) and false settles"
          " (different-problem pairs) the grouping rule pairs and the settling rule keeps")
    print("| judge | same-problem pairs | grouped | settled | different-problem pairs | grouped | settled |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for j, prs in judges.items():
        m = settled(prs, HELD_OUT)
        print(f"| {j} | {m['pairs']} | {m['grouped']} | {m['kept']} | {m['negatives']} | {m['grouped_negatives']} "
              f"| {m['kept_negatives']} |")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data", nargs="?", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--json", action="store_true", help="one object per judge file, Spar's rule, held-out projects")
    ap.add_argument("--sweep", action="store_true", help="recall/false-match by threshold on the tuning projects")
    ap.add_argument("--as-filed", action="store_true", help="count pairs as when issue 23 was filed")
    ap.add_argument("--repeats", action="store_true", help="settling: the pairs grouping pairs that restates keeps")
    args = ap.parse_args(argv)
    files = sorted(args.data.glob("evaluations-*.json")) if args.data.is_dir() else []
    if not files:
        print(f"grouping: no evaluations-*.json in {args.data}; skipped (bench/README.md: where the data comes from)")
        return 0
    judges = {f.name.removeprefix("evaluations-").removesuffix(".json"): read_judge(f, args.as_filed) for f in files}
    if args.json:
        rows = []
        for j, prs in judges.items():
            before = {k: v for k, v in measure(prs, HELD_OUT, "before").items() if k in ("recall", "false_match")}
            rows.append({"judge": j, **measure(prs, HELD_OUT, "spar"),
                         "before": {"rule": f"closest only, Dice >= {BEFORE[0]}", **before}})
        print(json.dumps(rows, indent=2))
    elif args.repeats:
        repeats_table(judges)
    elif args.sweep:
        sweep(judges)
    else:
        table(judges, "as when issue 23 was filed" if args.as_filed else "once, negatives sharing no reference issue")
        if not args.as_filed:
            group_table(judges)
    return 0


if __name__ == "__main__":
    sys.exit(main())
