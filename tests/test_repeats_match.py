"""Matching findings across rounds and reviewers: line maps, the claim measure, repeats, groups."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spar import git as spar_git
from spar.judge import similar
from spar.judge.linemap import IDENTITY, parse_diff, unquote
from spar.judge.repeats import Earlier, Mine, corroborate, find_repeat, find_repeats, group_order, repeat_record
from spar.judge.similar import Place, claim_similarity, near, same_finding
from tests.gitrepo import commit, make_repo

DATA = json.loads((Path(__file__).parent / "data" / "repeats.json").read_text(encoding="utf-8"))


def test_thresholds_are_the_data():
    assert DATA["similar_at"] == similar.SIMILAR_AT
    assert DATA["line_slack"] == similar.LINE_SLACK
    assert DATA["stem"] == similar.STEM
    assert DATA["min_shared"] == similar.MIN_SHARED
    assert DATA["near_best"] == similar.NEAR_BEST
    scores = [c["score"] for c in DATA["claims"]]
    # the table holds near misses on both sides of the threshold
    assert any(DATA["similar_at"] <= s < DATA["similar_at"] + 0.05 for s in scores)
    assert any(DATA["similar_at"] - 0.05 <= s < DATA["similar_at"] for s in scores)


@pytest.mark.parametrize("case", DATA["claims"], ids=lambda c: c["why"])
def test_claim_table(case):
    score = claim_similarity(case["a"], case["b"])
    assert round(score, 3) == case["score"]
    assert round(claim_similarity(case["b"], case["a"]), 3) == case["score"]  # symmetric
    assert similar.similar_claims(case["a"], case["b"]) is case["similar"]


@pytest.mark.parametrize("case", DATA["places"], ids=lambda c: c["why"])
def test_place_table(case):
    a, b = Place(*case["a"]), Place(*case["b"])
    assert near(a, b) is case["near"]
    assert near(b, a) is case["near"]


@given(st.text(max_size=60), st.text(max_size=60))
def test_similarity_is_bounded_and_symmetric(a, b):
    s = claim_similarity(a, b)
    assert 0.0 <= s <= 1.0 and s == claim_similarity(b, a)


def test_closest_pairs_prefer_the_closer_claim():
    """Issue 23 point 4: a claim pairs only with its closest on the other side, so the low
    threshold does not join another defect of the same code when the right one is there."""
    injection = "SQL query built by string concatenation allows injection"
    timeout = "SQL query is run without a timeout"
    assert similar.similar_claims(injection, timeout)  # alone, they pair
    other_side = ["User input is concatenated into the SQL query (injection)", "The query has no timeout"]
    pairs = similar.closest_pairs([injection, timeout], other_side)
    assert [(i, j) for i, j, _ in pairs] == [(0, 0), (1, 1)]
    assert similar.closest_pairs([injection], [timeout], lambda i, j: False) == []  # places decide first
    assert similar.closest_pairs([injection], [timeout], at=0.5) == []


def test_closest_pairs_keep_a_restatement():
    """Issue 23 point 4: a reviewer that says one problem twice gets both restatements paired
    with the other side's claim (each scores within NEAR_BEST of the best); a claim far under
    the best stays out."""
    claim = "Retry loop never gives up when the server keeps failing"
    twice = ["The retry loop retries forever on server errors",
             "fetch() calls the retry loop, which never stops retrying when the server fails"]
    assert [(i, j) for i, j, _ in similar.closest_pairs([claim], twice)] == [(0, 0), (0, 1)]
    assert [(i, j) for i, j, _ in similar.closest_pairs([claim], twice, near_best=1.0)] == [(0, 1)]
    other = "The retry delay is not jittered, so every client hits the server at once"
    assert similar.similar_claims(claim, other)  # alone it would pair
    assert [(i, j) for i, j, _ in similar.closest_pairs([claim], [twice[1], other])] == [(0, 0)]


def test_short_claims_of_two_problems_at_one_place():
    """A known weakness (tests/data/repeats.json): two short claims about two problems of one
    function share its words, and at one place they pair when neither problem's own claim is on
    the other side. With both problems said on both sides each claim pairs with its own."""
    nil = "The user lookup returns nil for an unknown id and the handler crashes"
    tenant = "User lookup ignores the tenant, so an id of another tenant is found"
    alone = corroborate([Mine("a-F1", "a", "claude", P, nil), Mine("b-F1", "b", "codex", P, tenant)])
    assert alone["a-F1"] == (["b-F1"], 2)  # wrongly one group
    both = corroborate([Mine("a-F1", "a", "claude", P, nil), Mine("a-F2", "a", "claude", P, tenant),
                        Mine("b-F1", "b", "codex", P, "Lookup of a user ignores the tenant: another tenant's user is found"),
                        Mine("b-F2", "b", "codex", P, "Unknown user id: lookup gives nil and the handler crashes on it")])
    assert both["a-F1"] == (["b-F2"], 2) and both["a-F2"] == (["b-F1"], 2)


def test_repeats_and_groups_pair_the_closest():
    """Issue 23 point 4: repeats and corroboration both pair each finding with its closest
    near finding of the other side (one reviewer of one round)."""
    injection, timeout = "SQL query built by string concatenation allows injection", "SQL query is run without a timeout"
    old = [earlier("r1", 0, "a-F1", "User input is concatenated into the SQL query (injection)", index=0),
           earlier("r1", 0, "a-F2", "The query has no timeout", index=1)]
    mine = [Mine("b-F1", "b", "codex", P, timeout), Mine("b-F2", "b", "codex", P, injection)]
    assert [e.finding if e else None for e in find_repeats(mine, old)] == ["a-F2", "a-F1"]
    # two new reviewers may both repeat one earlier finding
    both = [Mine("b-F1", "b", "codex", P, injection), Mine("c-F1", "c", "claude", P, injection)]
    assert [e.finding if e else None for e in find_repeats(both, old)] == ["a-F1", "a-F1"]
    groups = corroborate([Mine("a-F1", "a", "claude", P, old[0].claim), Mine("a-F2", "a", "claude", P, old[1].claim)]
                         + mine)
    assert groups["b-F1"] == (["a-F2"], 2) and groups["b-F2"] == (["a-F1"], 2)


def test_same_finding_needs_place_and_claim():
    p = Place("head", "calc.py", 6, 6)
    assert same_finding(p, "divide does not refuse zero", p, "zero is not refused by divide") == 1.0
    assert same_finding(None, "x y z", p, "x y z") is None
    assert same_finding(p, "divide does not refuse zero", Place("head", "calc.py", 40, 40),
                        "divide does not refuse zero") is None


# ---------------------------------------------------------------- line maps from real git diffs

OLD = "".join(f"line {n}\n" for n in range(1, 21))


def _map(tmp_path, old_files, new_files, remove=()):
    repo = make_repo(tmp_path, old_files)
    old = spar_git.head_commit(repo)
    new = commit(repo, new_files, remove=list(remove))
    return parse_diff(spar_git.line_diff(repo, old, new))


def test_insertion_above_moves_the_line_and_deletion_drops_it(tmp_path):
    lines = OLD.splitlines(keepends=True)
    # three lines inserted after line 2, line 10 deleted, line 15 changed
    new = lines[:2] + ["new a\n", "new b\n", "new c\n"] + lines[2:9] + lines[10:14] + ["changed\n"] + lines[15:]
    m = _map(tmp_path, {"a.py": OLD, "b.py": "x\n"}, {"a.py": "".join(new)})
    assert m.map_line("a.py", 1) == 1 and m.map_line("a.py", 2) == 2
    assert m.map_line("a.py", 3) == 6  # moved by the insertion above it
    assert m.map_line("a.py", 10) is None  # deleted
    assert m.map_line("a.py", 11) == 13
    assert m.map_line("a.py", 15) is None  # changed = deleted and added
    assert m.map_line("a.py", 16) == 18
    assert m.map_range("a.py", 9, 11) == ("a.py", 12, 13)  # the deleted middle is skipped
    assert m.map_range("a.py", 10, 10) is None
    assert m.map_range("a.py", None, None) == ("a.py", None, None)
    assert m.map_range("b.py", 1, 1) == ("b.py", 1, 1)  # unchanged file


def test_rename_and_delete(tmp_path):
    m = _map(tmp_path, {"old name.py": OLD, "gone.py": "something else\n"}, {"new name.py": OLD}, remove=["old name.py", "gone.py"])
    assert m.map_range("old name.py", 4, 5) == ("new name.py", 4, 5)
    assert m.map_range("gone.py", 4, 5) is None
    assert m.map_range("gone.py", None, None) is None


def test_removed_line_starting_with_dashes_is_not_a_header(tmp_path):
    m = _map(tmp_path, {"q.sql": "select 1;\n-- old\nselect 2;\n"}, {"q.sql": "select 1;\nselect 2;\n"})
    assert m.map_line("q.sql", 3) == 2 and m.map_line("q.sql", 2) is None
    assert m.map_path("q.sql") == "q.sql"


def test_pure_insertion_keeps_the_line_before():
    m = parse_diff("diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -4,0 +5,2 @@\n+a\n+b\n")
    assert [m.map_line("x", n) for n in (3, 4, 5)] == [3, 4, 7]
    assert IDENTITY.map_range("x", 1, 2) == ("x", 1, 2)


def test_quoted_paths():
    assert unquote('"tab\\there \\303\\251"') == "tab\there é"
    m = parse_diff('diff --git "a/t\\tx" "b/t\\tx"\n--- "a/t\\tx"\n+++ "b/t\\tx"\n@@ -1 +1 @@\n-a\n+b\n')
    assert m.map_line("t\tx", 1) is None and m.map_line("t\tx", 2) == 2


# ---------------------------------------------------------------- repeats and groups

P = Place("head", "calc.py", 8, 8)


def earlier(round_name, order, fid, claim, place=P, disposition="rejected", index=0):
    return Earlier(round=round_name, order=order, index=index, finding=fid, place=place, claim=claim,
                   disposition=disposition)


def test_repeat_prefers_latest_round_then_score():
    old = earlier("r1", 0, "a-F1", "divide does not refuse zero")
    newer = earlier("r2", 1, "a-F3", "divide does not refuse a zero divisor", disposition=None)
    assert find_repeat(P, "zero divisor not refused by divide", [old, newer]) is newer
    best = earlier("r1", 0, "b-F1", "zero divisor not refused by divide", index=1)
    assert find_repeat(P, "zero divisor not refused by divide", [old, best]) is best
    assert repeat_record(newer) == {"round": "r2", "finding": "a-F3", "disposition": None}
    assert repeat_record(None) is None


def test_no_repeat_when_gone_far_or_different():
    gone = earlier("r1", 0, "a-F1", "divide does not refuse zero", place=None)
    far = earlier("r1", 0, "a-F2", "divide does not refuse zero", place=Place("head", "calc.py", 30, 30))
    other = earlier("r1", 0, "a-F3", "divide returns a float for integer inputs")
    assert find_repeat(P, "divide does not refuse zero", [gone, far, other]) is None


def test_corroboration_groups_across_reviewers_only():
    mine = [
        Mine("claude-F1", "claude", "claude", P, "divide does not refuse zero"),
        Mine("claude-F2", "claude", "claude", Place("head", "calc.py", 9, 9), "zero is not refused by divide"),
        Mine("codex-F1", "codex", "codex", Place("head", "calc.py", 7, 7), "divide accepts a zero divisor"),
        Mine("house-F1", "house", "command", Place("head", "other.py", 1, 1), "divide does not refuse zero"),
        Mine("house-F2", "house", "command", None, "divide does not refuse zero"),
    ]
    groups = corroborate(mine)
    assert groups["claude-F1"] == (["claude-F2", "codex-F1"], 2)  # joined through codex-F1
    assert groups["codex-F1"] == (["claude-F1", "claude-F2"], 2)
    assert groups["house-F1"] == ([], 1) and groups["house-F2"] == ([], 1)
    same_reviewer = corroborate(mine[:2])
    assert same_reviewer["claude-F1"] == ([], 1)  # one reviewer alone never corroborates itself
    two_claudes = corroborate([Mine("opus-F1", "opus", "claude", P, "divide does not refuse zero"),
                               Mine("sonnet-F1", "sonnet", "claude", P, "divide does not refuse zero")])
    assert two_claudes["opus-F1"] == (["sonnet-F1"], 1)  # one vendor behind both


def test_group_order_lists_groups_first_most_vendors_first():
    f = [
        {"id": "a-F1"},
        {"id": "a-F2", "corroborated_by": ["b-F1"], "vendor_count": 2},
        {"id": "a-F3", "corroborated_by": ["b-F2", "c-F1"], "vendor_count": 3},
        {"id": "b-F1", "corroborated_by": ["a-F2"], "vendor_count": 2},
        {"id": "b-F2", "corroborated_by": ["a-F3", "c-F1"], "vendor_count": 3},
        {"id": "c-F1", "corroborated_by": ["a-F3", "b-F2"], "vendor_count": 3},
        {"id": "c-F2"},
    ]
    assert [[x["id"] for x in g] for g in group_order(f)] == [
        ["a-F3", "b-F2", "c-F1"], ["a-F2", "b-F1"], ["a-F1"], ["c-F2"]]
    old = [{"id": "x-F1"}, {"id": "x-F2"}]  # a round written before corroboration
    assert [[x["id"] for x in g] for g in group_order(old)] == [["x-F1"], ["x-F2"]]


@pytest.mark.slow
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(["keep", "delete", "insert"]), st.integers(0, 3)), min_size=1, max_size=30))
def test_line_map_agrees_with_the_edit_that_made_the_diff(tmp_path_factory, edits):
    """Unique lines, edited by deletions and insertions: git's diff has only one answer, so
    every kept line maps to where it went and every deleted line maps to nothing."""
    old = [f"old {n}" for n in range(1, 31)]
    new: list[str] = []
    fate: dict[int, int | None] = {}
    i = 0
    for n, (op, count) in enumerate(edits):
        if op == "insert":
            new += [f"new {n}.{k}" for k in range(count + 1)]
            continue
        for _ in range(count + 1):
            if i < len(old):
                if op == "keep":
                    new.append(old[i])
                    fate[i + 1] = len(new)
                else:
                    fate[i + 1] = None
                i += 1
    for rest in range(i, len(old)):
        new.append(old[rest])
        fate[rest + 1] = len(new)
    repo = make_repo(tmp_path_factory.mktemp("map"), {"f.txt": "\n".join(old) + "\n"})
    before = spar_git.head_commit(repo)
    after = commit(repo, {"f.txt": "\n".join(new) + "\n"}, allow_empty=True)
    line_map = parse_diff(spar_git.line_diff(repo, before, after))
    assert {n: line_map.map_line("f.txt", n) for n in fate} == fate


def test_what_a_fix_touched():
    """The gate's growth: a place counts when the diff changed one of its head lines (or, without
    lines, the file at all); a new file is changed whole; another file is untouched."""
    m = parse_diff("diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -4,0 +5,2 @@\n+a\n+b\n"
                   "diff --git a/y b/y\n--- a/y\n+++ b/y\n@@ -3 +2,0 @@\n-gone\n"
                   "diff --git a/n b/n\nnew file mode 100644\n--- /dev/null\n+++ b/n\n@@ -0,0 +1 @@\n+new\n")
    assert m.touches("x", 5, 5) and m.touches("x", 1, 9) and m.touches("x", None, None)
    assert not m.touches("x", 4, 4) and not m.touches("x", 7, 9)
    assert m.touches("y", 2, 2) and not m.touches("y", 3, 3)  # the line next to a deletion
    assert m.touches("n", 1, 1) and not m.touches("z", 1, 1)
