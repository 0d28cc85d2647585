"""G24 globs: Go path.Match table, the ** rules, refused globs, and a
property check against an independent reference (fnmatch per segment with
** expanded into whole-segment wildcards)."""

from __future__ import annotations

import fnmatch
import itertools
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spar.globs import glob_problem, match_any, match_glob, normalize_glob

DATA = json.loads((Path(__file__).parent / "data" / "config_globs.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("row", DATA["matches"], ids=lambda r: f"{r['pattern']!r}~{r['path']!r}")
def test_match_table(row):
    assert (glob_problem(row["pattern"]) is not None) == row["bad"]
    assert match_glob(row["pattern"], row["path"]) is row["match"]


@pytest.mark.parametrize("row", DATA["problems"], ids=lambda r: repr(r["pattern"]))
def test_refused_globs(row):
    problem = glob_problem(row["pattern"])
    assert problem is not None and row["fragment"] in problem
    # a refused glob never matches anything
    assert match_glob(row["pattern"], "tests/a.py") is False


@pytest.mark.parametrize("pattern", DATA["accepted"])
def test_accepted_globs(pattern):
    assert glob_problem(pattern) is None


def test_normalize_and_match_any():
    assert normalize_glob("tests/") == "tests"
    assert normalize_glob("tests//") == "tests"
    assert normalize_glob("/") == "/"
    assert match_any(["docs/**", "tests/**"], "tests/x.py")
    assert not match_any(["docs/**", "tests/**"], "src/x.py")
    assert not match_any([], "x")


# --- property: agreement with an independent reference -----------------------

NAME_CHARS = "abc."
names = st.text(NAME_CHARS, min_size=1, max_size=4)
paths = st.lists(names, min_size=1, max_size=4).map("/".join)
# fnmatch and Go agree on '*', '?' and literal characters; '**' segments are expanded below
seg_patterns = st.one_of(st.just("**"), st.text(NAME_CHARS + "*?", min_size=1, max_size=4).filter(lambda s: s not in ("**", "..")))
patterns = st.lists(seg_patterns, min_size=1, max_size=4).map("/".join)


def reference(pattern: str, path: str) -> bool:
    pat = pattern.split("/")
    names_ = path.split("/")
    stars = [i for i, s in enumerate(pat) if s == "**"]
    # each ** becomes 0..len(names) segments matching any one name
    for counts in itertools.product(range(len(names_) + 1), repeat=len(stars)):
        expanded: list[str] = []
        for i, seg in enumerate(pat):
            if seg == "**":
                expanded += ["*"] * counts[stars.index(i)]
            else:
                expanded.append(seg)
        if len(expanded) == len(names_) and all(fnmatch.fnmatchcase(n, p) for n, p in zip(names_, expanded)):
            return True
    return False


@pytest.mark.slow
@settings(max_examples=400, deadline=None)
@given(patterns, paths)
def test_matches_reference(pattern, path):
    assert glob_problem(pattern) is None
    assert match_glob(pattern, path) == reference(pattern, path)


@pytest.mark.slow  # a long property test
@settings(max_examples=200, deadline=None)
@given(st.text(max_size=12))
def test_never_crashes_and_bad_never_matches(pattern):
    problem = glob_problem(pattern)
    result = match_glob(pattern, "a/b.c")
    assert isinstance(result, bool)
    if problem is not None:
        assert result is False
