"""bench/grouping.py on crafted judge files (issue 23 point 4): the figures and the skip."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

SPEC = importlib.util.spec_from_file_location("grouping", Path(__file__).parent.parent / "bench" / "grouping.py")
assert SPEC is not None and SPEC.loader is not None
grouping = importlib.util.module_from_spec(SPEC)
sys.modules["grouping"] = grouping  # dataclasses look their module up there
SPEC.loader.exec_module(grouping)

INJECTION = "Reference: the query is built by concatenation"
TIMEOUT = "Reference: the query has no timeout"


def tool(project: str, matched: list[tuple[str, str, float]], unmatched: list[str]) -> dict[str, object]:
    return {"skipped": False, "repo_name": f"{project}__{project}__tool__PR1__20260101",
            "true_positives": [{"golden_comment": g, "matched_candidate": c, "confidence": conf}
                               for g, c, conf in matched],
            "false_positives": [{"candidate": c} for c in unmatched]}


def judge_file(project: str) -> dict[str, object]:
    return {f"https://github.com/x/{project}/pull/1": {
        "a": tool(project, [(INJECTION, "SQL query built by string concatenation allows injection", 1.0),
                            (TIMEOUT, "SQL query is run without a timeout", 0.9)], []),
        "b": tool(project, [(INJECTION, "User input is concatenated into the SQL query (injection)", 0.9),
                            (TIMEOUT, "The query has no timeout", 0.5)], ["Unrelated naming nit in the header"]),
        "c": tool(project, [(TIMEOUT, "SQL query waits forever: no timeout is set on the query", 0.8)], []),
        "d": {"skipped": True},
    }}


def test_figures_per_judge_on_held_out_projects(tmp_path, capsys):
    data = {}
    for project in grouping.HELD_OUT + grouping.TUNED_ON:
        data.update(judge_file(project))
    (tmp_path / "evaluations-judge-x.json").write_text(json.dumps(data), encoding="utf-8")
    assert grouping.main([str(tmp_path), "--json"]) == 0
    [row] = json.loads(capsys.readouterr().out)
    # per pull request: same problem, different tools, confidence >= 0.8: a1-b1, a2-c1 (b2 is 0.5);
    # different problems: a1-c1, b1-a2, b1-c1
    n = len(grouping.HELD_OUT)
    assert row["judge"] == "judge-x" and row["pairs"] == 2 * n and row["negatives"] == 3 * n
    pr = grouping.read_judge(tmp_path / "evaluations-judge-x.json")[0]
    grouped = grouping.spar_rule(pr)
    expected_recall = sum(p in grouped for p in pr.pairs) / len(pr.pairs)
    expected_false = sum(p in grouped for p in pr.negatives) / len(pr.negatives)
    assert row["recall"] == round(expected_recall, 3) and row["false_match"] == round(expected_false, 3)
    assert row["recall"] == 1.0  # each comment's closest on the other side is its own problem
    before = grouping.measure([pr], (pr.project,), "before")
    assert row["before"]["recall"] == before["recall"] and row["before"]["false_match"] == before["false_match"]

    # groups as corroborate joins them: every 2 (or 3) of the tools a, b, c as one round
    for size in (2, 3):
        m = grouping.measure_groups([pr], (pr.project,), size, grouping.SIMILAR_AT, grouping.NEAR_BEST)
        assert (m["pairs"], m["negatives"], m["recall"]) == (2, 3, 1.0)


def test_a_comment_matched_to_two_issues_is_no_negative(tmp_path):
    """A comment the judge matched to two reference issues and a comment matched to one of them
    are a same-problem pair and nothing else (as filed, they were also a different-problem pair);
    a low-confidence match to a shared issue keeps two comments out of the negatives too."""
    both = "SQL query built by concatenation has no timeout either"
    data = {"https://github.com/x/grafana/pull/1": {
        "a": tool("grafana", [(INJECTION, both, 0.9), (TIMEOUT, both, 0.9)], []),
        "b": tool("grafana", [(INJECTION, "User input is concatenated into the SQL query", 0.9)], []),
        "c": tool("grafana", [(TIMEOUT, "The query has no timeout", 0.9), (INJECTION, "The query has no timeout", 0.3)], []),
    }}
    path = tmp_path / "evaluations-judge-x.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    [pr] = grouping.read_judge(path)
    assert pr.sides["a"] == [both]  # a comment matched twice is one comment
    assert len(pr.pairs) == 2 and pr.negatives == []  # a-b, a-c; b-c shares the 0.3 match
    [filed] = grouping.read_judge(path, as_filed=True)
    assert len(filed.pairs) == 2 and len(filed.negatives) == 3  # a-b and a-c again, with the other issue; b-c


@pytest.mark.parametrize("where", ["missing", "empty"])
def test_skips_without_data(tmp_path, capsys, where):
    folder = tmp_path / "data"
    if where == "empty":
        folder.mkdir()
    assert grouping.main([str(folder), "--json"]) == 0
    assert "skipped" in capsys.readouterr().out
