"""Issue 23 point 3: what a verification verdict changes (reading order in summary.md, the
HTML report and the exports, SARIF rank, a noise figure in cap-report, `spar triage
--refuted`) and what it never changes (a class, a disposition, the gate).

One verified round of three vendors, each verdict the record can hold:

    V1 claude-F3 of group G1 refuted by agy                V4 codex-F1 unsure by claude
    V2 claude-F1 confirmed by codex                        V5 agy-F1 refuted by agy-check (agy: same vendor)
    V3 claude-F2 refuted by codex (hostile evidence)       agy-F2 not verified (max_findings)

codex-F2, the other member of G1, had no call of its own (a record of the time a group's
call named its first member alone): V1's verdict covers claude-F3 only, the claim read.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from spar.cli import main
from spar.judge.verdicts import NoiseBoard, rank, refuted, verdicts
from spar.records import clock, readers
from spar.round.summary import render_summary
from spar.round.summary_file import write_summary
from tests import roundfactory as rf
from tests.test_export import sarif_schema

# what a hostile verifier writes: terminal controls, a bidi override, a markdown heading on
# a line of its own, HTML, backticks and shell metacharacters
HOSTILE = ("line 3 is fine \x1b[2J\x1b]52;c;ZWNobw==\x07 \u202e\n# Heading\n<script>alert(1)</script> "
           "`code` $(touch pwned); 'q' \"dq\" | pipe")
ACTING = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069]")
FIXED_AT = "2026-12-03T10:00:00.000Z"


def _finding(name: str, n: int, **extra) -> dict:
    f = rf.finding(name, n, claim=f"problem {n} seen by {name}")
    f.update(repeat_of=None, corroborated_by=[], group=None, vendor_count=1)
    f.update(extra)
    return f


def _call(number: int, finding: str, verdict: str, verifier: str, evidence: str, group: str | None = None,
          preset: str | None = None) -> dict:
    return {"call": f"V{number}", "finding": finding, "group": group, "verifier": verifier,
            "preset": preset or verifier, "status": "completed", "verdict": verdict, "evidence": evidence,
            "location": None, "reason": "", "attempts": []}


CALLS = [
    _call(1, "claude-F3", "refuted", "agy", "the caller checks the length first", group="G1"),
    _call(2, "claude-F1", "confirmed", "codex", "divides by zero on an empty list"),
    _call(3, "claude-F2", "refuted", "codex", HOSTILE),
    _call(4, "codex-F1", "unsure", "claude", "cannot tell from the diff"),
    _call(5, "agy-F1", "refuted", "agy-check", "not reachable", preset="agy"),
]
RECORD = {"schema": "spar-verifications/v1", "round": "r1", "started_at": FIXED_AT, "finished_at": FIXED_AT,
          "verifiers": ["codex", "claude", "agy", "agy-check"], "max_findings": 5, "max_cost_usd": None,
          "calls": CALLS, "unverified": [{"finding": "agy-F2", "why": "max_findings"}]}
# reading order: confirmed, then unsure or none (groups first, by their best member, then file order),
# refuted last
ORDER = ["claude-F1", "claude-F3", "codex-F2", "codex-F1", "agy-F2", "claude-F2", "agy-F1"]


def _findings() -> list[dict]:
    group = {"id": "G1", "members": ["claude-F3", "codex-F2"], "vendors": ["claude", "codex"]}
    two = {"group": group, "vendor_count": 2}
    return [_finding("claude", 1), _finding("claude", 2),
            _finding("claude", 3, corroborated_by=["codex-F2"], **two),
            _finding("codex", 1), _finding("codex", 2, corroborated_by=["claude-F3"], **two),
            _finding("agy", 1), _finding("agy", 2)]


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    return rf.series_repo(tmp_path_factory.mktemp("repo"))[0]


def _round(repo: Path, ledger: list[dict] | None = None, late: bool = False) -> tuple[Path, Path]:
    series = rf.fresh_series(repo)
    reviewers = [rf.reviewer("claude"), rf.reviewer("codex"), rf.reviewer("agy")]
    reviewers += [rf.reviewer("late", preset="command", status="failed")] if late else []
    r1 = rf.make_round(series, "r1", repo=repo, findings=_findings(), ledger=ledger, reviewers=reviewers)
    return series, r1


def _verify(r1: Path, record: dict | None = None) -> None:
    (r1 / "verifications.json").write_text(json.dumps(record or RECORD), encoding="utf-8")


@pytest.fixture
def verified(repo):
    series, r1 = _round(repo)
    _verify(r1)
    return series, r1


def _table_ids(summary: str) -> list[str]:
    table = summary.split("## Findings", 1)[1].split("\n\n## ", 1)[0]
    return [line.split(" | ")[0][2:] for line in table.splitlines() if line.startswith("| ") and "-F" in line]


# ------------------------------------------------------------------ the pure rules


def test_each_finding_gets_its_own_calls_verdict_and_a_group_mate_never_read_gets_none():
    by_id = verdicts(RECORD, _findings())  # type: ignore[arg-type]
    assert {fid: v.verdict for fid, v in by_id.items()} == {
        "claude-F3": "refuted", "claude-F1": "confirmed", "claude-F2": "refuted",
        "codex-F1": "unsure", "agy-F1": "refuted"}
    assert by_id["claude-F3"].call == "V1" and by_id["claude-F3"].group == "G1" and "codex-F2" not in by_id
    assert "agy-F2" not in by_id and verdicts(None, _findings()) == {}  # type: ignore[arg-type]
    assert [rank(by_id.get(f)) for f in ("claude-F1", "codex-F1", "agy-F2", "claude-F2")] == [0, 1, 1, 2]


def test_noise_counts_only_verdicts_of_another_vendor():
    board = NoiseBoard()
    board.add_round(_findings(), verdicts(RECORD, _findings()),  # type: ignore[arg-type]
                    {"claude": "claude", "codex": "codex", "agy": "agy"})
    assert board.document(["codex"]) == {"verified_rounds": 1, "reviewers": [
        {"name": "codex", "findings": 2, "checked": 1, "refuted": 0, "share_refuted": 0.0},  # codex-F2 unread
        {"name": "claude", "findings": 3, "checked": 3, "refuted": 2, "share_refuted": 0.667},
        # agy-F1 was refuted by a verifier of agy's own vendor, agy-F2 never verified
        {"name": "agy", "findings": 2, "checked": 0, "refuted": 0, "share_refuted": None}]}


def test_refuted_findings_without_a_disposition_each_alone_never_a_group_mate():
    todo, notes = refuted(RECORD, _findings(), {"agy-F1": {"disposition": "fixed"}})  # type: ignore[arg-type]
    assert [(r.target, r.members, r.verdict.call) for r in todo] == [
        ("claude-F3", ["claude-F3"], "V1"), ("claude-F2", ["claude-F2"], "V3")]
    assert notes == ["agy-F1: refuted by agy-check (V5), left alone: agy-F1 has a disposition"]


# ------------------------------------------------------------------ summary.md


def test_summary_lists_confirmed_first_refuted_last_with_verifier_call_and_evidence(verified):
    _, r1 = verified
    write_summary(r1)  # what `spar verify` calls after writing verifications.json
    text = (r1 / "summary.md").read_text(encoding="utf-8")
    assert _table_ids(text) == ORDER
    assert "| confirmed by codex (V2) |" in text and "| not verified (max_findings) |" in text
    groups = text.split("## Groups", 1)[1].split("## Findings", 1)[0]
    assert "- **G1** (2 vendors: claude, codex)\n  - `claude-F3` (claude, defect; refuted by agy (V1)): " in groups
    assert "\n  - `codex-F2` (codex, defect): " in groups  # no call read its claim
    section = text.split("## Verification\n", 1)[1].split("\n## ", 1)[0]
    lines = [line for line in section.splitlines() if line.startswith("- ")]
    assert [line.split("**")[1] for line in lines] == ["confirmed", "unsure", "refuted", "refuted", "refuted"]
    assert lines[0] == ("- **confirmed** `claude-F1`, by codex (codex), call V2: divides by zero on an empty list")
    assert lines[2].startswith("- **refuted** `claude-F3` (of group G1), by agy (agy), call V1: ")
    assert "Not verified: `agy-F2` (max_findings)" in section


def test_hostile_evidence_is_data_in_the_summary(verified):
    _, r1 = verified
    write_summary(r1)
    text = (r1 / "summary.md").read_text(encoding="utf-8")
    assert ACTING.search(text) is None
    assert not any(line.startswith("# Heading") for line in text.splitlines())
    (hostile,) = [line for line in text.splitlines() if "call V3" in line]
    assert hostile.endswith("call V3: line 3 is fine \\e[2J\\e]52;c;ZWNobw==\\a \\u202e # Heading "
                            "<script>alert(1)</script> `code` $(touch pwned); 'q' \"dq\" \\| pipe")


def test_a_round_never_verified_renders_as_before(repo):
    _, r1 = _round(repo)
    write_summary(r1)
    rj, findings = readers.read_round(r1), readers.read_findings(r1)
    assert (r1 / "summary.md").read_text(encoding="utf-8") == render_summary(rj, findings, readers.read_ledger(r1))
    assert "## Verification" not in (r1 / "summary.md").read_text(encoding="utf-8")


def test_an_unreadable_verification_never_refuses_a_triage(repo, capsys):
    series, r1 = _round(repo)
    (r1 / "verifications.json").write_text("{torn", encoding="utf-8")
    assert main(["triage", str(r1), "claude-F1", "--to", "rejected", "--evidence", "no"]) == 0
    assert "## Verification" not in (r1 / "summary.md").read_text(encoding="utf-8")


def test_triage_and_waive_keep_the_verdicts_in_the_summary(repo, capsys):
    _, r1 = _round(repo, late=True)
    _verify(r1)
    assert main(["triage", str(r1), "claude-F1", "--to", "rejected", "--evidence", "not a bug"]) == 0
    text = (r1 / "summary.md").read_text(encoding="utf-8")
    assert _table_ids(text) == ORDER and "| confirmed by codex (V2) | rejected |" in text
    assert main(["waive", str(r1), "--reviewer", "late", "--user-quote", "go on without it"]) == 0
    text = (r1 / "summary.md").read_text(encoding="utf-8")
    assert "waived by the user: go on without it" in text and _table_ids(text) == ORDER


# ------------------------------------------------------------------ never changed: class, disposition, gate


def test_the_gate_class_and_dispositions_are_the_same_with_and_without_a_verification(repo, capsys, monkeypatch):
    monkeypatch.setattr(clock, "now", lambda: FIXED_AT)
    series, r1 = _round(repo, ledger=[rf.ledger_line("claude-F1", "rejected", evidence="no")])
    out = repo / "gates" / f"{series.name}.json"

    def gate() -> tuple[int, bytes]:
        out.unlink(missing_ok=True)  # the gate chains an earlier document at --out (previous_gate_digest)
        code = main(["gate", str(r1), "--out", str(out)])
        capsys.readouterr()
        return code, out.read_bytes()

    before = gate()
    records = {name: (r1 / name).read_bytes() for name in ("findings.json", "ledger.jsonl", "round.json")}
    _verify(r1)
    write_summary(r1)
    assert "## Verification" in (r1 / "summary.md").read_text(encoding="utf-8")  # the summary did change
    assert gate() == before and before[0] == 1
    assert {name: (r1 / name).read_bytes() for name in records} == records
    # the exports keep each class's level and every disposition
    assert main(["export", str(r1), "--format", "sarif"]) == 0
    results = [r for run in json.loads(capsys.readouterr().out)["runs"] for r in run["results"]]
    assert all(r["level"] == "error" for r in results)
    assert [r["properties"]["finding"] for r in results if "suppressions" in r] == ["claude-F1"]


# ------------------------------------------------------------------ exports


def _export(capsys, fmt: str, r1: Path):
    assert main(["export", str(r1), "--format", fmt]) == 0
    out = capsys.readouterr().out
    return [json.loads(line) for line in out.splitlines()] if fmt == "rdjsonl" else json.loads(out)


def test_sarif_carries_the_verdict_and_ranks_refuted_low(verified, capsys):
    _, r1 = verified
    doc = _export(capsys, "sarif", r1)
    jsonschema.Draft4Validator(sarif_schema()).validate(doc)
    results = {r["properties"]["finding"]: r for run in doc["runs"] for r in run["results"]}
    assert set(results) == {"claude-F1", "claude-F2", "claude-F3", "codex-F1", "agy-F1", "agy-F2"}  # G1 once
    assert {f: r["rank"] for f, r in results.items()} == {
        "claude-F1": 90.0, "codex-F1": 50.0, "agy-F2": 50.0, "claude-F2": 10.0, "agy-F1": 10.0,
        "claude-F3": 50.0}  # G1: refuted claude-F3 and unread codex-F2 rank as codex-F2's no verdict
    props = results["claude-F2"]["properties"]
    assert (props["verdict"], props["verifier"], props["verifier_preset"], props["call"]) == \
        ("refuted", "codex", "codex", "V3")
    assert props["verification_evidence"] == HOSTILE  # JSON data, exact
    assert results["agy-F2"]["properties"]["verdict"] is None
    assert results["agy-F2"]["properties"]["unverified"] == "max_findings"
    assert results["claude-F3"]["properties"]["call"] == "V1" and len(results["claude-F3"]["relatedLocations"]) == 2
    assert results["claude-F1"]["message"]["text"].endswith(
        "Verification: confirmed by codex (V2): divides by zero on an empty list")


def test_a_round_never_verified_has_no_rank_nor_verdict(repo, capsys):
    _, r1 = _round(repo)
    doc = _export(capsys, "sarif", r1)
    for result in (r for run in doc["runs"] for r in run["results"]):
        assert "rank" not in result and "verdict" not in result["properties"]
        assert "Verification" not in result["message"]["text"]


def test_code_quality_and_rdjsonl_carry_the_verdict_in_their_text(verified, capsys):
    _, r1 = verified
    issues = {i["description"].split("\n")[0]: i for i in _export(capsys, "codeclimate", r1)}
    refuted_issue = issues["problem 2 seen by claude"]
    assert refuted_issue["description"].endswith("Verification: refuted by codex (V3): " + HOSTILE.strip())
    assert refuted_issue["severity"] == "critical"  # the class's, whatever the verdict
    diagnostics = {json.loads(d["original_output"])["finding"]: d for d in _export(capsys, "rdjsonl", r1)}
    assert json.loads(diagnostics["claude-F1"]["original_output"]) == \
        {"round": "r1", "finding": "claude-F1", "verdict": "confirmed", "call": "V2"}
    assert "Verification: not verified (max_findings)" in diagnostics["agy-F2"]["message"]
    assert diagnostics["claude-F2"]["severity"] == "ERROR"


def test_an_unreadable_verification_refuses_an_export(repo, capsys):
    _, r1 = _round(repo)
    _verify(r1, {**RECORD, "calls": [_call(1, "claude-F9", "refuted", "codex", "x")]})
    assert main(["export", str(r1), "--format", "sarif"]) == 65
    assert "finding claude-F9 is not a finding of the round" in capsys.readouterr().err


# ------------------------------------------------------------------ cap-report and the HTML report


def test_cap_report_gives_the_share_refuted_by_another_vendor(verified, repo, capsys):
    series, _ = verified
    rf.make_round(series, "r2", repo=repo, findings=[rf.finding("claude", 1)], packet_text="again\n")  # not verified
    assert main(["cap-report", str(series), "--format", "json"]) == 0
    noise = json.loads(capsys.readouterr().out)["noise"]
    assert noise == {"verified_rounds": 1, "reviewers": [
        {"name": "claude", "findings": 3, "checked": 3, "refuted": 2, "share_refuted": 0.667},
        {"name": "codex", "findings": 2, "checked": 1, "refuted": 0, "share_refuted": 0.0},
        {"name": "agy", "findings": 2, "checked": 0, "refuted": 0, "share_refuted": None}]}
    assert main(["cap-report", str(series)]) == 0
    md = capsys.readouterr().out.split("## Findings refuted by another vendor", 1)[1]
    assert "Over the 1 verified round:" in md
    assert "| claude | 3 | 3 | 2 | 67% |" in md and "| agy | 2 | 0 | 0 | - |" in md


def test_cap_report_says_not_verified(repo, capsys):
    series, _ = _round(repo)
    assert main(["cap-report", str(series)]) == 0
    assert "Not verified: no round of the series was verified." in capsys.readouterr().out


def test_the_html_report_orders_by_verdict_and_shows_the_evidence_as_data(verified, repo, tmp_path):
    series, _ = verified
    out = tmp_path / "report.html"
    assert main(["report", str(series), "--out", str(out)]) == 0
    page = out.read_text(encoding="utf-8")
    places = [page.index(f'id="r1/{fid}"') for fid in ORDER]
    assert places == sorted(places)
    assert ACTING.search(page) is None and "<script>" not in page and "&lt;script&gt;" in page
    assert ('<p class="verdict" data-verdict="refuted"><strong>refuted</strong> by codex (codex), call V3: '
            "line 3 is fine \\e[2J") in page
    assert '<p class="verdict" data-verdict="none">Not verified.</p>' in page


# ------------------------------------------------------------------ spar triage --refuted


def _ledger(r1: Path) -> list[dict]:
    return [{k: v for k, v in line.items() if k != "at"} for line in rf.read_jsonl(r1 / "ledger.jsonl")]


def test_refuted_prints_the_lines_and_writes_nothing(verified, capsys):
    series, r1 = verified
    before = rf.snapshot(series)
    assert main(["triage", str(r1), "--refuted"]) == 0
    out = capsys.readouterr().out
    assert rf.snapshot(series) == before
    assert ACTING.search(out) is None
    lines = out.splitlines()
    assert lines[0] == (f"spar triage {r1} claude-F3 --to rejected --evidence "
                        "'refuted by agy (V1): the caller checks the length first'")
    assert [shlex.split(line)[3] for line in lines[:3]] == ["claude-F3", "claude-F2", "agy-F1"]
    assert shlex.split(lines[1])[-1] == ("refuted by codex (V3): line 3 is fine \\e[2J\\e]52;c;ZWNobw==\\a \\u202e"
                                         "\\n# Heading\\n<script>alert(1)</script> `code` $(touch pwned); 'q' "
                                         "\"dq\" | pipe")
    assert lines[3:] == []


def test_the_printed_lines_record_exactly_what_apply_records(verified, tmp_path, capsys):
    series, r1 = verified
    copy = tmp_path / "copy"
    shutil.copytree(series, copy / series.name)
    assert main(["triage", str(r1), "--refuted"]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert main(["triage", str(r1), "--refuted", "--apply"]) == 0
    said = capsys.readouterr().out.splitlines()
    assert said[:2] == ["round r1: claude-F3 -> rejected (refuted by agy (V1))",
                        "round r1: claude-F2 -> rejected (refuted by codex (V3))"]
    applied = _ledger(r1)
    assert [line["finding"] for line in applied] == ["claude-F3", "claude-F2", "agy-F1"]  # codex-F2 stands
    assert applied[1]["evidence"].startswith("refuted by codex (V3): line 3 is fine \\e[2J")
    copied = copy / series.name / "r1"
    for line in printed:
        argv = shlex.split(line)
        assert argv[:3] == ["spar", "triage", str(r1)]
        assert main(["triage", str(copied), *argv[3:]]) == 0
    assert _ledger(copied) == applied
    capsys.readouterr()
    # applied once, nothing is left to reject
    assert main(["triage", str(r1), "--refuted", "--apply"]) == 0
    out = capsys.readouterr().out
    assert "# round r1: no refuted finding without a disposition" in out
    assert "# round r1: claude-F3: refuted by agy (V1), left alone: claude-F3 has a disposition" in out


def test_a_refuted_line_with_3_mib_of_evidence_runs_in_bash_and_records_what_apply_records(repo, tmp_path,
                                                                                            capsys):
    """The line printed for 3 MiB of evidence failed in bash ("Argument list too long")."""
    huge = "the caller checks \x01 it " * (3 * 1024 * 1024 // 26)
    series, r1 = _round(repo)
    _verify(r1, {**RECORD, "calls": [_call(1, "claude-F1", "refuted", "codex", huge)], "unverified": []})
    copy = tmp_path / "copy"
    shutil.copytree(series, copy / series.name)
    assert main(["triage", str(r1), "--refuted"]) == 0
    (line,) = capsys.readouterr().out.splitlines()
    assert len(line) < 8 * 1024
    assert main(["triage", str(r1), "--refuted", "--apply"]) == 0
    capsys.readouterr()
    (applied,) = _ledger(r1)
    assert applied["evidence"].endswith("[…] (whole in verifications.json, call V1)")
    copied = copy / series.name / "r1"
    script = f'spar() {{ exec {shlex.quote(sys.executable)} -m spar "$@"; }}; ' + line.replace(str(r1), str(copied), 1)
    done = subprocess.run(["bash", "-c", script], capture_output=True, cwd=repo, check=False)
    assert done.returncode == 0, done.stderr.decode()
    assert _ledger(copied) == [applied]


def test_refuted_with_nothing_refuted_and_a_round_never_verified(repo, capsys):
    _, r1 = _round(repo)
    assert main(["triage", str(r1), "--refuted"]) == 65
    assert "round r1 was never verified" in capsys.readouterr().err
    _verify(r1, {**RECORD, "calls": [{**CALLS[1], "call": "V1"}], "unverified": []})
    assert main(["triage", str(r1), "--refuted", "--apply"]) == 0
    assert capsys.readouterr().out == "# round r1: no refuted finding without a disposition\n"
    assert _ledger(r1) == []


@pytest.mark.parametrize("extra", [["claude-F1"], ["--to", "rejected"], ["--repeats"], ["--evidence", "x"],
                                   ["--force"]])
def test_refuted_takes_the_round_alone(verified, capsys, extra):
    _, r1 = verified
    assert main(["triage", str(r1), "--refuted", *extra]) == 64


def test_apply_goes_with_refuted_only(verified, capsys):
    _, r1 = verified
    assert main(["triage", str(r1), "claude-F1", "--to", "rejected", "--evidence", "x", "--apply"]) == 64


def test_the_rejection_names_verifier_and_call_even_without_words():
    from spar.judge.verdicts import rejection_evidence, verdict_of

    assert rejection_evidence(verdict_of(_call(1, "claude-F1", "refuted", "codex", "  "))) == "refuted by codex (V1)"
    assert rejection_evidence(verdict_of(_call(2, "claude-F1", "refuted", "codex", " x\n"))) == \
        "refuted by codex (V2): x"
