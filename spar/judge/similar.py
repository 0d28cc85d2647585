"""Are two findings about the same thing? A deterministic measure, no model involved (pure).

Two findings of two sides (two reviewers of a round, or a new round's reviewer
and an earlier round's reviewer) match when
- their places are the same copy (`head`, `base` or a round document) and path,
  and their line ranges overlap or lie within LINE_SLACK lines of each other
  (a place without lines is the whole file and meets every range in it);
- their claims are similar: claim_similarity(a, b) >= SIMILAR_AT; and
- of the findings near it on the other side, each is among the other's closest
  claims: its score is at least NEAR_BEST times the best score the other claim
  has over there (closest_pairs). A claim with a much closer partner on the other
  side is about another problem of the same code, which lets the threshold sit
  low enough for reworded claims; "much" rather than "any", because reviewers do
  say one problem twice (once for the function, once for its caller), and a
  restatement scores a little under the closest claim, not far under it.

claim_similarity is the Dice coefficient of the two claims' word stems:
2 * |A & B| / (|A| + |B|), or 0 when they share fewer than MIN_SHARED stems (or,
for a claim of fewer stems, not all of them): two short claims about one function
share its name and little else. A claim's stems are its words (runs of letters and
digits; `snake_case` and `camelCase` split into words), lower-cased, without
numbers (line numbers move), without words of fewer than 3 letters and without
the STOPWORDS, each cut to its first STEM letters (so "divide", "divides",
"dividing" are one stem). The numbers are contract data: tests/data/repeats.json
holds them with a table of near misses on both sides of the threshold, and the
reasons for them: bench/grouping.py measures the rule on third-party reviews
(bench/README.md), where SIMILAR_AT and NEAR_BEST were chosen together on two
projects' pull requests. Weighting words by rarity among the compared claims, or
weighting identifiers above prose, measured worse there and is not done.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import NamedTuple

SIMILAR_AT = 0.18  # closest claims at or above this Dice coefficient are similar
NEAR_BEST = 0.85  # a claim pairs with those scoring at least this share of its best over there
MIN_SHARED = 2  # claims sharing fewer stems than this are not similar
LINE_SLACK = 3  # ranges this many lines apart (or closer) are near
STEM = 5

STOPWORDS = frozenset([
    "a", "about", "above", "after", "again", "all", "also", "an", "and", "any", "are", "as", "at", "be",
    "because", "been", "before", "being", "but", "by", "can", "could", "did", "do", "does", "doing", "done",
    "during", "each", "either", "else", "for", "from", "had", "has", "have", "having", "here", "how", "if",
    "in", "into", "is", "it", "its", "itself", "just", "may", "might", "more", "most", "must", "no", "nor",
    "not", "now", "of", "off", "on", "once", "only", "or", "other", "our", "out", "over", "same", "should",
    "so", "some", "such", "than", "that", "the", "their", "them", "then", "there", "these", "they", "this",
    "those", "through", "to", "too", "under", "until", "up", "very", "was", "were", "what", "when", "where",
    "whether", "which", "while", "who", "why", "will", "with", "would", "yet", "you", "your",
])

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_WORD = re.compile(r"[^\W_]+")


@lru_cache(maxsize=8192)  # every new claim is compared with every earlier one
def stems(text: str) -> frozenset[str]:
    out = set()
    for raw in _WORD.findall(_CAMEL.sub(" ", text)):
        word = raw.lower()
        if word.isdigit() or len(word) < 3 or word in STOPWORDS:
            continue
        out.add(word[:STEM])
    return frozenset(out)


def claim_similarity(a: str, b: str) -> float:
    sa, sb = stems(a), stems(b)
    shared = len(sa & sb)
    if not sa or not sb or shared < min(MIN_SHARED, len(sa), len(sb)):
        return 0.0
    return 2 * shared / (len(sa) + len(sb))


def similar_claims(a: str, b: str) -> bool:
    return claim_similarity(a, b) >= SIMILAR_AT


def closest_pairs(a: Sequence[str], b: Sequence[str], may_pair: Callable[[int, int], bool] | None = None,
                  at: float = SIMILAR_AT, near_best: float = NEAR_BEST) -> list[tuple[int, int, float]]:
    """(i, j, score) for every a[i] and b[j] that are similar (score >= `at`) and each among
    the other's closest claims: the score is at least `near_best` times the best score a[i]
    has with any of b, and the same for b[j] with any of a (1.0: only the best, ties keep
    every best), in (i, j) order. `may_pair(i, j)` says which may be compared at all (the
    places); None: every one."""
    scores: dict[tuple[int, int], float] = {}
    best_a: dict[int, float] = {}
    best_b: dict[int, float] = {}
    for i, ca in enumerate(a):
        for j, cb in enumerate(b):
            if may_pair is not None and not may_pair(i, j):
                continue
            s = scores[i, j] = claim_similarity(ca, cb)
            best_a[i] = max(best_a.get(i, 0.0), s)
            best_b[j] = max(best_b.get(j, 0.0), s)
    return [(i, j, s) for (i, j), s in scores.items()
            if s >= at and s >= near_best * best_a[i] and s >= near_best * best_b[j]]


class Place(NamedTuple):
    """Where a finding points, in the commit (or documents) it is compared in."""

    copy: str  # "head", "base" or "document"
    path: str  # repository path ("" = the root) or a document's name
    start: int | None = None  # None: the whole file or folder
    end: int | None = None

    def text(self) -> str:
        where = f"{self.copy}/{self.path}" if self.copy != "document" else self.path
        if self.start is None:
            return where
        return f"{where}:{self.start}" if self.start == self.end else f"{where}:{self.start}-{self.end}"


def near(a: Place, b: Place, slack: int = LINE_SLACK) -> bool:
    if (a.copy, a.path) != (b.copy, b.path):
        return False
    if a.start is None or a.end is None or b.start is None or b.end is None:
        return True
    return b.start <= a.end + slack and a.start <= b.end + slack


def same_finding(a: Place | None, claim_a: str, b: Place | None, claim_b: str) -> float | None:
    """The claims' similarity when the two findings, compared alone, match, else None
    (no place: never). With other findings near, closest_pairs decides."""
    if a is None or b is None or not near(a, b):
        return None
    score = claim_similarity(claim_a, claim_b)
    return score if score >= SIMILAR_AT else None
