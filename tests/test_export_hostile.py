"""`spar export` and `spar report` given hostile records: fingerprints that collide
across series, paths that leave the repository, and --out naming a record
(issue 25 holes 6, 7 and 9)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spar.cli import main
from tests.gitrepo import commit
from tests.roundfactory import finding, ledger_line, make_round, series_repo


def export(capsys, fmt: str, *rounds: Path) -> dict | list:
    assert main(["export", *map(str, rounds), "--format", fmt]) == 0
    return json.loads(capsys.readouterr().out)


def two_series(tmp_path: Path) -> tuple[Path, Path]:
    """Two repositories, each with its series `reviews` whose first round `code-1` has a
    `claude-F1` about a different file: unrelated findings with the same ROUND/ID."""
    rounds = []
    for name, path in (("one", "app/main.py"), ("two", "lib/other.py")):
        repo, series = series_repo(tmp_path / name)
        commit(repo, {path: f"# {name}\n"}, message=f"{name}'s own change")
        rounds.append(make_round(series, "code-1", repo=repo,
                                 findings=[finding("claude", 1, path=path, claim=f"{name}: a different problem")]))
    return rounds[0], rounds[1]


def test_same_round_and_id_in_two_series_are_two_alerts(tmp_path, capsys):
    """issue 25 hole 6: the fingerprint hashed only ROUND/ID, so every series' code-1/claude-F1
    was one SARIF partialFingerprint, one Code Quality fingerprint and one automation id."""
    one, two = two_series(tmp_path)
    sarif = [export(capsys, "sarif", r) for r in (one, two)]
    partial = [doc["runs"][0]["results"][0]["partialFingerprints"]["sparFinding/v1"] for doc in sarif]
    automation = [doc["runs"][0]["automationDetails"]["id"] for doc in sarif]
    quality = [export(capsys, "codeclimate", r)[0]["fingerprint"] for r in (one, two)]
    assert partial[0] != partial[1]
    assert automation[0] != automation[1]
    assert quality[0] != quality[1]
    # and each stays what it was: the same records give the same alert
    assert export(capsys, "sarif", one)["runs"][0]["results"][0]["partialFingerprints"]["sparFinding/v1"] == partial[0]


def test_one_export_of_two_series_keeps_their_findings_apart(tmp_path, capsys):
    """issue 25 hole 6: both series in one export: the rounds share a name, the findings do not."""
    one, two = two_series(tmp_path)
    results = export(capsys, "sarif", one, two)["runs"][0]["results"]
    assert len(results) == 2
    assert results[0]["partialFingerprints"] != results[1]["partialFingerprints"]


@pytest.mark.parametrize(("path", "why"), [
    ("../passwd", 'a ".." segment'),  # a head tree entry `..` (git fsck's hasDotdot)
    ("/etc/passwd", "is absolute"),  # a forged findings.json
    ("app//main.py", "empty segment"),
    ("./app/main.py", 'a "." segment'),
])
def test_a_path_leaving_the_repository_is_never_exported(tmp_path, capsys, path, why):
    """issue 25 hole 7: `head/../passwd:1` was exported as SARIF uri `../passwd` and as
    the Code Quality and rdjsonl path; a forged `/etc/passwd` as an absolute URI. Such a
    finding is exported at the repository root, and its message says why."""
    repo, series = series_repo(tmp_path)
    forged = finding("claude", 1, path=path)
    r1 = make_round(series, "code-1", repo=repo, findings=[forged])
    (result,) = export(capsys, "sarif", r1)["runs"][0]["results"]
    assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "."
    assert "region" not in result["locations"][0]["physicalLocation"]
    assert why in result["message"]["text"] and result["properties"]["location_kind"] == "unsafe"
    (issue,) = export(capsys, "codeclimate", r1)
    assert issue["location"]["path"] == "." and why in issue["description"]
    assert main(["export", str(r1), "--format", "rdjsonl"]) == 0
    out, err = capsys.readouterr()
    diagnostic = json.loads(out)
    assert diagnostic["location"] == {"path": "."} and "1 unsafe location(s)" in err


@pytest.fixture
def recorded(tmp_path):
    repo, series = series_repo(tmp_path)
    r1 = make_round(series, "code-1", repo=repo, findings=[finding("claude", 1)],
                    ledger=[ledger_line("claude-F1", "rejected", evidence="covered by a test")])
    (series / "extensions.jsonl").write_text("")
    return tmp_path, series, r1


def _bytes(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("record", ["code-1/findings.json", "code-1/round.json", "code-1/ledger.jsonl",
                                    "code-1/new.sarif", "extensions.jsonl"])
def test_export_out_never_replaces_a_record(recorded, capsys, record):
    """issue 25 hole 9: `spar export --out ROUND/findings.json` wrote SARIF over the
    findings (exit 0) and the series became unreadable; refused like `spar gate --out`."""
    _tmp, series, r1 = recorded
    before = _bytes(series)
    assert main(["export", str(r1), "--format", "sarif", "--out", str(series / record)]) == 65
    assert "--out" in capsys.readouterr().err
    assert _bytes(series) == before


@pytest.mark.parametrize("record", ["code-1/ledger.jsonl", "code-1/findings.json", "extensions.jsonl"])
def test_report_out_never_replaces_a_record(recorded, capsys, record):
    """issue 25 hole 9: `spar report --out ROUND/ledger.jsonl` wrote HTML over the ledger
    and the dispositions were lost; refused."""
    _tmp, series, _r1 = recorded
    before = _bytes(series)
    assert main(["report", str(series), "--out", str(series / record)]) == 65
    assert "--out" in capsys.readouterr().err
    assert _bytes(series) == before


def test_out_beside_the_records_is_still_written(recorded, capsys):
    """The refusal is about records only: the series folder itself may hold a report."""
    tmp, series, r1 = recorded
    assert main(["report", str(series), "--out", str(series / "report.html")]) == 0
    assert main(["export", str(r1), "--format", "sarif", "--out", str(tmp / "out.sarif")]) == 0
    assert (series / "report.html").read_text().startswith("<!DOCTYPE html>")
