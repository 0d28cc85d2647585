"""`spar export` of several rounds: each finding chain once, at its newest round's head
and lines; fingerprints unique within a file and stable across rounds; a corroborated
group one result (issue 22 point 4)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import jsonschema
import pytest

from spar.cli import main
from tests.gitrepo import commit
from tests.roundfactory import finding, ledger_line, make_round, series_repo
from tests.test_export import sarif_schema


def export(capsys, fmt: str, *rounds: Path):
    assert main(["export", *map(str, rounds), "--format", fmt]) == 0
    out = capsys.readouterr().out
    return [json.loads(line) for line in out.splitlines()] if fmt == "rdjsonl" else json.loads(out)


def grouped(f1: dict, f2: dict) -> None:
    f1["corroborated_by"], f2["corroborated_by"] = [f2["id"]], [f1["id"]]


@pytest.fixture
def series_of_two(tmp_path):
    """code-1 at the first head: claude-F1 and codex-F1 one defect (corroborated),
    claude-F2 another. code-2 at a later head, lines moved: claude repeats F1
    (repeat_of), codex's repeat is triaged a duplicate of code-1/codex-F1, claude-F2 is
    seen again as a duplicate of code-1's, and codex-F2 is new."""
    repo, series = series_repo(tmp_path)
    a, b = finding("claude", 1, claim="divides by zero"), finding("codex", 1, claim="divides by zero")
    grouped(a, b)
    c = finding("claude", 2, cls="note", claim="a name could be clearer")
    for f in (a, b, c):
        f["repeat_of"] = None
        f.setdefault("corroborated_by", [])
    r1 = make_round(series, "code-1", repo=repo, findings=[a, b, c])
    head2 = commit(repo, {"app/main.py": "# moved\nprint(3)\n"}, message="a fix that did not fix")
    a2, b2 = finding("claude", 5, claim="divides by zero"), finding("codex", 5, claim="still divides by zero")
    grouped(a2, b2)
    a2["repeat_of"] = {"round": "code-1", "finding": "claude-F1", "disposition": None}
    b2["repeat_of"] = None
    c2 = finding("claude", 7, cls="note", claim="a name could be clearer")
    c2["repeat_of"], c2["corroborated_by"] = None, []
    d2 = finding("codex", 9, claim="a new problem")
    d2["repeat_of"], d2["corroborated_by"] = None, []
    a2["id"], b2["id"], c2["id"], d2["id"] = "claude-F1", "codex-F1", "claude-F2", "codex-F2"
    r2 = make_round(series, "code-2", repo=repo, head=head2, findings=[a2, c2, b2, d2],
                    ledger=[ledger_line("codex-F1", "duplicate", of="code-1/codex-F1"),
                            ledger_line("claude-F2", "duplicate", of="code-1/claude-F2")])
    return repo, series, r1, r2, head2


def test_two_round_sarif_one_result_per_chain_and_group_unique_fingerprints(series_of_two, capsys):
    """issue 22 point 4: 11 Code Climate issues had 7 distinct fingerprints; a repeat
    carried the earlier round's lines; a corroborated pair gave two alerts."""
    _repo, _series, r1, r2, _head2 = series_of_two
    doc = export(capsys, "sarif", r1, r2)
    jsonschema.Draft4Validator(sarif_schema()).validate(doc)
    results = [r for run in doc["runs"] for r in run["results"]]
    # three chains: the corroborated defect (both reviewers, both rounds), the note, codex's new one
    assert len(results) == 3
    fingerprints = [r["partialFingerprints"]["sparFinding/v1"] for r in results]
    assert len(set(fingerprints)) == len(fingerprints)
    by_finding = {f"{r['properties']['round']}/{r['properties']['finding']}": r for r in results}
    assert set(by_finding) == {"code-2/claude-F1", "code-2/claude-F2", "code-2/codex-F2"}
    defect = by_finding["code-2/claude-F1"]
    assert defect["properties"]["chain"] == ["code-1/claude-F1", "code-1/codex-F1", "code-2/claude-F1",
                                             "code-2/codex-F1"]
    # the newest round's lines, not code-1's
    assert defect["locations"][0]["physicalLocation"]["region"] == {"startLine": 5, "endLine": 5}
    related = defect["relatedLocations"]
    assert [loc["message"]["text"].split(" ")[0] for loc in related] == ["code-2/claude-F1", "code-2/codex-F1"]
    assert "Also found by: codex (code-2/codex-F1)" in defect["message"]["text"]
    assert "suppressions" not in defect  # codex's duplicate points at an open finding: open
    note = by_finding["code-2/claude-F2"]
    assert "suppressions" not in note and note["properties"]["chain"] == ["code-1/claude-F2", "code-2/claude-F2"]


def test_fingerprints_are_stable_across_rounds_for_the_same_chain(series_of_two, capsys):
    """The chain's fingerprint is the same whether code-1, code-2 or both are exported."""
    _repo, _series, r1, r2, _head2 = series_of_two

    def prints(*rounds: Path) -> dict[str, str]:
        doc = export(capsys, "sarif", *rounds)
        return {r["properties"]["chain"][0]: r["partialFingerprints"]["sparFinding/v1"]
                for run in doc["runs"] for r in run["results"]}

    first, second, both = prints(r1), prints(r2), prints(r1, r2)
    assert first["code-1/claude-F1"] == both["code-1/claude-F1"]
    assert first["code-1/claude-F2"] == second["code-2/claude-F2"] == both["code-1/claude-F2"]
    assert second["code-2/claude-F1"] == first["code-1/claude-F1"]  # the group's first finding's chain


def test_codeclimate_and_rdjsonl_one_entry_per_chain_and_group(series_of_two, capsys):
    _repo, _series, r1, r2, _head2 = series_of_two
    issues = export(capsys, "codeclimate", r1, r2)
    assert len(issues) == 3
    assert Counter(i["fingerprint"] for i in issues).most_common(1)[0][1] == 1
    defect = next(i for i in issues if i.get("other_locations"))
    assert defect["location"] == {"path": "app/main.py", "lines": {"begin": 5}}
    assert defect["other_locations"] == [{"path": "app/main.py", "lines": {"begin": 5}}]
    diagnostics = export(capsys, "rdjsonl", r1, r2)
    assert len(diagnostics) == 3
    (grouped_one,) = [d for d in diagnostics if d.get("related_locations")]
    assert grouped_one["related_locations"][0]["message"] == "code-2/codex-F1 (codex)"
    assert json.loads(grouped_one["original_output"]) == {"round": "code-2", "finding": "claude-F1"}


def test_a_duplicate_of_a_decided_finding_carries_that_decision(series_of_two, capsys):
    """The shown finding is a duplicate: it is suppressed only when what it duplicates is
    decided, with that decision's justification."""
    _repo, _series, r1, r2, _head2 = series_of_two
    with (r1 / "ledger.jsonl").open("a") as fh:
        fh.write(json.dumps(ledger_line("claude-F2", "rejected", evidence="naming is fine")) + "\n")
    results = [r for run in export(capsys, "sarif", r1, r2)["runs"] for r in run["results"]]
    note = next(r for r in results if r["properties"]["finding"] == "claude-F2")
    assert note["suppressions"][0]["justification"] == "rejected; evidence: naming is fine"


def test_two_copies_of_one_series_still_give_unique_fingerprints(series_of_two, tmp_path, capsys):
    """A series copied elsewhere has the same identity; exported together with the
    original, every fingerprint of the file is still its own."""
    import shutil

    _repo, series, r1, r2, _head2 = series_of_two
    copy = tmp_path / "copy" / series.name
    shutil.copytree(series, copy)
    doc = export(capsys, "sarif", r1, r2, copy / "code-1", copy / "code-2")
    fingerprints = [r["partialFingerprints"]["sparFinding/v1"] for run in doc["runs"] for r in run["results"]]
    assert len(fingerprints) == 6 and len(set(fingerprints)) == 6
