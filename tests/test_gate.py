"""spar gate: every blocked reason and the review-gate/v1 file, from the
scenarios in tests/data/gate_scenarios.json, plus G32 waivers rows and the
pure judgment's cycle safety."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from spar import __version__
from spar.cli import main as spar_main
from spar.judge import gate as judgement
from spar.judge.dispositions import trace
from spar.records import readers
from tests import roundfactory as rf
from tests.gitrepo import git, make_repo

DATA = Path(__file__).parent / "data"
SCENARIOS = json.loads((DATA / "gate_scenarios.json").read_text())["scenarios"]
WAIVER_ROWS = json.loads((DATA / "g32_waivers.json").read_text())["rows"]

# the design's keys (§10), in its order
DESIGN_KEYS = ["schema", "state", "reasons", "head", "base", "criteria_digest", "rounds", "required_reviewers",
               "completed", "waived", "findings", "open", "auto_deferred", "growth", "previous_gate_digest",
               "spar_version"]


def _commits(repo):
    base, head = rf.head_and_base(repo)
    return head, base


def _finding(spec: dict) -> dict:
    reviewer, _, n = spec["id"].rpartition("-F")
    f = rf.finding(reviewer, int(n), cls=spec["class"], introduced_by_change="yes" if spec.get("growth") else "no",
                   in_check_paths=spec.get("checks", False), path=spec.get("path", "app/main.py"),
                   location_unreadable=spec.get("unreadable", False))
    if "line" in spec:
        f["location"] = f"head/{f['path']}:{spec['line']}"
    if "repeat_of" in spec:
        f["repeat_of"] = spec["repeat_of"]
    return f


def _fill(text: str, ctx: dict) -> str:
    for key, value in ctx.items():
        text = text.replace("{" + key + "}", value)
    return text


def build_series(repo: Path, scenario: dict) -> Path:
    series = Path(os.path.realpath(rf.fresh_series(repo)))
    head, base = _commits(repo)
    for spec in scenario["rounds"]:
        reviewed = head if spec.get("reviewed", "head") == "head" else base
        reviewers = [rf.reviewer(n, status=s) for n, s in spec.get("reviewers", [["claude", "completed"], ["codex", "completed"]])]
        ledger = [rf.ledger_line(l["finding"], l["disposition"],
                                 **{k: _fill(v, {"head": head}) for k, v in l.items() if k not in ("finding", "disposition")})
                  for l in spec.get("ledger", [])]
        rf.make_round(series, spec["name"], repo=repo, stage=spec.get("stage", "code"), base=base, head=reviewed,
                      reviewers=reviewers, findings=[_finding(f) for f in spec.get("findings", [])], ledger=ledger,
                      waivers=spec.get("waivers"), dry_run=spec.get("dry_run", False),
                      recorded=spec.get("recorded", True),
                      packet_text=spec.get("packet", f"packet of {spec['name']}\n"))
        for file, text in spec.get("break", {}).items():
            target = series / spec["name"] / file
            if text is None:
                target.unlink()
            else:
                target.write_text(text)
    return series


def run_gate(capsys, repo, series, names, *extra, out=None):
    out = out or repo / "gates" / f"{series.name}.json"
    code = spar_main(["gate", *[str(series / n) for n in names], "--out", str(out), *extra])
    captured = capsys.readouterr()
    return code, captured, out


def _check_reasons(actual: list[str], expected: list[str]):
    assert len(actual) == len(expected), "\n".join(actual)
    for got, want in zip(actual, expected):
        if want.endswith("..."):
            assert got.startswith(want[:-3]), got
        else:
            assert got == want


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s["name"] for s in SCENARIOS])
def test_scenarios(repo, capsys, scenario):
    series = build_series(repo, scenario)
    names = scenario.get("list") or [r["name"] for r in scenario["rounds"]]
    extra = ["--expect-head=" + scenario["expect_head"]] if "expect_head" in scenario else []
    code, captured, out = run_gate(capsys, repo, series, names, *extra)
    assert code == (0 if scenario["state"] == "passed" else 1), captured.err
    assert captured.err == ""
    doc = json.loads(out.read_text())
    head, base = _commits(repo)
    ctx = {"series": str(series), "repo": str(repo.resolve()), "head": head, "base": base}
    assert doc["state"] == scenario["state"]
    _check_reasons(doc["reasons"], [_fill(r, ctx) for r in scenario["reasons"]])
    for key in ("open", "growth", "findings", "auto_deferred", "required_reviewers", "completed", "waived"):
        if key in scenario:
            assert doc[key] == scenario[key], key
    # every reason is also printed
    for reason in doc["reasons"]:
        assert reason in captured.out
    assert list(doc)[: len(DESIGN_KEYS)] == DESIGN_KEYS
    assert doc["schema"] == "review-gate/v1" and doc["spar_version"] == __version__
    assert [r["name"] for r in doc["rounds"]] == list(dict.fromkeys(names))


def test_gate_file_field_by_field(repo, capsys):
    scenario = {"rounds": [
        {"name": "r1", "reviewed": "base",  # r2 reviews a later head: the last fix
         "findings": [{"id": "claude-F1", "class": "defect", "growth": True}, {"id": "codex-F1", "class": "hardening"}],
         "ledger": [{"finding": "claude-F1", "disposition": "rejected", "evidence": "e"}]},
        {"name": "r2", "reviewers": [["claude", "completed"], ["codex", "unavailable"]],
         "waivers": [{"reviewer": "codex", "preset": "codex", "user_quote": "go", "at": "2024-01-02T00:00:00.000Z"}],
         "findings": [{"id": "claude-F1", "class": "note"}, {"id": "claude-F2", "class": "defect", "growth": True, "checks": True, "line": 1}],
         "ledger": [{"finding": "claude-F2", "disposition": "duplicate", "of": "r1/claude-F1"}]}]}
    series = build_series(repo, scenario)
    code, captured, out = run_gate(capsys, repo, series, ["r1", "r2"])
    assert code == 0, captured.out
    doc = json.loads(out.read_text())
    head, base = _commits(repo)
    r1 = json.loads((series / "r1" / "round.json").read_text())
    r2 = json.loads((series / "r2" / "round.json").read_text())
    generated = doc.pop("generated_at")
    assert generated.endswith("Z")
    assert doc == {
        "schema": "review-gate/v1",
        "state": "passed",
        "reasons": [],
        "head": head,
        "base": base,
        "criteria_digest": r2["criteria_digest"],
        "rounds": [
            {"path": str(series / "r1"), "name": "r1", "stage": "code", "head": base, "base": base,
             "packet_sha256": r1["packet_sha256"], "counted": True, "dry_run": False, "state": "ok"},
            {"path": str(series / "r2"), "name": "r2", "stage": "code", "head": head, "base": base,
             "packet_sha256": r2["packet_sha256"], "counted": True, "dry_run": False, "state": "ok"},
        ],
        "required_reviewers": ["claude", "codex"],
        "completed": ["claude"],
        "waived": ["codex"],
        "findings": {"defect": 2, "requirement-question": 0, "hardening": 1, "note": 1},
        "open": [],
        "auto_deferred": 1,
        "growth": {"in_check_paths": 1, "outside_check_paths": 0},
        "previous_gate_digest": None,
        "spar_version": __version__,
        "expect_head": head,
        "stages": [{"stage": "code", "round": "r2", "path": str(series / "r2"), "required_reviewers": ["claude", "codex"],
                    "completed": ["claude"], "waived": ["codex"]}],
        "growth_findings": ["r2/claude-F2"],
        "demoted": [],
    }


@pytest.mark.parametrize("row", WAIVER_ROWS, ids=[r["name"] for r in WAIVER_ROWS])
def test_g32_waivers(repo, capsys, row):
    scenario = {"rounds": [{"name": "r1", "reviewers": [["claude", "completed"], ["codex", "failed"]]}]}
    series = build_series(repo, scenario)
    if row["text"] is not None:
        (series / "r1" / "waivers.jsonl").write_text(row["text"])
    code, _captured, out = run_gate(capsys, repo, series, ["r1"])
    doc = json.loads(out.read_text())
    if row["readable"]:
        assert doc["waived"] == row["waived"]
        assert not any("waivers.jsonl" in r for r in doc["reasons"])
        assert code == (0 if "codex" in row["waived"] else 1)
    else:
        assert code == 1
        assert doc["reasons"][0].startswith(f"round {series / 'r1'}: waivers.jsonl cannot be read: ")
        # an unreadable waiver file waives nobody
        assert doc["waived"] == []
        assert any("required reviewer codex" in r for r in doc["reasons"])


def test_old_records_without_optional_fields(repo, capsys):
    """G32: rounds without standpoint fields and findings without location_unreadable
    or smallest_fix are read as documented."""
    series = build_series(repo, {"rounds": [{"name": "r1", "findings": [{"id": "claude-F1", "class": "defect"}],
                                             "ledger": [{"finding": "claude-F1", "disposition": "rejected", "evidence": "e"}]}]})
    rj = json.loads((series / "r1" / "round.json").read_text())
    for key in ("standpoints", "standpoints_uncovered", "decisions"):
        rj.pop(key)
    for r in rj["reviewers"]:
        r.pop("standpoint"), r.pop("standpoint_report")
    (series / "r1" / "round.json").write_text(json.dumps(rj))
    findings = json.loads((series / "r1" / "findings.json").read_text())
    for f in findings:
        f.pop("location_unreadable"), f.pop("smallest_fix")
    (series / "r1" / "findings.json").write_text(json.dumps(findings))
    code, captured, _ = run_gate(capsys, repo, series, ["r1"])
    assert code == 0, captured.out


def test_same_round_twice_counts_once(repo, capsys):
    series = build_series(repo, {"rounds": [{"name": "r1", "findings": [{"id": "claude-F1", "class": "note"}]}]})
    code, _, out = run_gate(capsys, repo, series, ["r1", "r1"])
    doc = json.loads(out.read_text())
    assert code == 0 and doc["findings"]["note"] == 1 and len(doc["rounds"]) == 1


def test_findings_written_after_the_folder_was_listed_are_read(repo, capsys, monkeypatch):
    """The gate lists each round folder once. A round recorded between that listing and
    reading round.json (findings.json is written first, then round.json marked recorded)
    is read whole, not called unreadable for a findings.json the listing missed."""
    series = build_series(repo, {"rounds": [{"name": "r1", "findings": [{"id": "claude-F1", "class": "note"}]}]})
    list_round = readers.list_round

    def listed_before_recording(round_dir):
        return [entry for entry in list_round(round_dir) if entry.name != readers.FINDINGS_FILE]

    monkeypatch.setattr(readers, "list_round", listed_before_recording)
    code, captured, out = run_gate(capsys, repo, series, ["r1"])
    assert code == 0, captured.out
    assert json.loads(out.read_text())["findings"]["note"] == 1


def test_head_of_a_repository_that_is_gone(repo, capsys, tmp_path, monkeypatch):
    series = build_series(repo, {"rounds": [{"name": "r1"}]})
    rj = json.loads((series / "r1" / "round.json").read_text())
    rj["repository"] = str(tmp_path / "gone")
    (series / "r1" / "round.json").write_text(json.dumps(rj))
    monkeypatch.chdir(tmp_path)  # no repository here to fall back to
    code, _, out = run_gate(capsys, repo, series, ["r1"])
    doc = json.loads(out.read_text())
    assert code == 1
    assert doc["reasons"] == [f"the expected head (HEAD of {tmp_path / 'gone'}) cannot be resolved: "
                              f"{tmp_path / 'gone'}: HEAD is not a commit"]


def test_relative_round_paths_name_the_series_as_given(repo, capsys, monkeypatch):
    series = build_series(repo, {"rounds": [{"name": "r1"}, {"name": "r2"}]})
    monkeypatch.chdir(series.parent)
    out = repo / "gates" / "relative.json"
    code = spar_main(["gate", f"{series.name}/r1", "--out", str(out)])
    capsys.readouterr()
    doc = json.loads(out.read_text())
    assert code == 1
    assert doc["reasons"] == [f"{series.name}: round r2 of the series is not in the gate list: list it too, "
                              f"or gate the whole series (spar gate --series {series.name})"]
    assert doc["rounds"][0]["path"] == str(series / "r1")


def test_usage_errors(capsys):
    assert spar_main(["gate", "--out", "x.json"]) == 64
    assert spar_main(["gate", "r1"]) == 64
    assert spar_main(["gate", "r1", "--out"]) == 64


def test_trace_is_cycle_safe_on_a_long_loop():
    links = {("r1", f"F{i}"): {"disposition": "duplicate", "of": f"r1/F{(i + 1) % 500}"} for i in range(500)}
    result = trace(("r1", "F0"), lambda key: ("ok", links.get(key)))
    assert result.state == "cycle" and len(result.chain) == 501


def test_judge_with_nothing_readable():
    item = judgement.ListedRound(arg="s/r1", path="/s/r1", series_arg="s", series="/s", name="r1", error="gone")
    doc = judgement.judge([item], [judgement.SeriesListing(path="/s", arg="s")], None)
    assert doc["state"] == "blocked"
    assert doc["reasons"] == [f"round s/r1 cannot be read: gone; restore its records, or {judgement.remove_advice('s/r1')}"]
    assert doc["head"] is None and doc["required_reviewers"] == []


def test_rounds_of_two_series_each_need_their_required_reviewers(repo, capsys):
    """Each series is its own review subject: a later round of another series never
    stands in for this series' latest round of a stage."""
    head, base = _commits(repo)
    first = Path(os.path.realpath(rf.fresh_series(repo)))
    second = Path(os.path.realpath(rf.fresh_series(repo)))
    rf.make_round(first, "r1", repo=repo, base=base, head=head, started_at="2024-03-01T00:00:00.000Z",
                  reviewers=[rf.reviewer("claude"), rf.reviewer("codex", status="failed", reason="exit status 2")])
    rf.make_round(second, "r1", repo=repo, base=base, head=head, started_at="2024-03-02T00:00:00.000Z",
                  reviewers=[rf.reviewer("claude")])
    out = repo / "gates" / f"{first.name}-{second.name}.json"
    code = spar_main(["gate", str(first / "r1"), str(second / "r1"), "--out", str(out)])
    capsys.readouterr()
    doc = json.loads(out.read_text())
    assert code == 1
    assert doc["reasons"] == [f"round {first / 'r1'}: required reviewer codex neither completed nor was waived "
                              "(failed: exit status 2)"]
    assert [(s["stage"], s["path"], s["required_reviewers"]) for s in doc["stages"]] == [
        ("code", str(first / "r1"), ["claude", "codex"]), ("code", str(second / "r1"), ["claude"])]
    # the top-level lists are those of the latest round (the second series')
    assert (doc["required_reviewers"], doc["completed"], doc["head"]) == (["claude"], ["claude"], head)


def test_a_folder_with_a_round_json_of_another_schema_is_not_a_series_round(repo, capsys):
    """G29 asks for every review-round/v1 round of the series; a folder whose
    round.json reads as another format is not one (a torn one still blocks)."""
    series = build_series(repo, {"rounds": [{"name": "r1"}]})
    (series / "notes").mkdir()
    (series / "notes" / "round.json").write_text('{"schema": "someone-else/v1", "rounds": 3}')
    code, _, out = run_gate(capsys, repo, series, ["r1"])
    assert code == 0, json.loads(out.read_text())["reasons"]
    (series / "notes" / "round.json").write_text('{"schema": "someone-else/v1", "rou')
    code, _, out = run_gate(capsys, repo, series, ["r1"])
    assert code == 1
    assert json.loads(out.read_text())["reasons"][0].startswith(f"{series}: round notes of the series cannot be read (")


def test_a_mistyped_round_path_reads_apart_from_a_round_it_cannot_read(repo, capsys):
    """Issue 22 point 8: a path with nothing behind it still blocks the gate (G29: a listed
    round that cannot be read is a blocked reason, and the gate file is always written), but
    its reason says it is no folder at all, a mistyped path, unlike a folder without round.json."""
    series = build_series(repo, {"rounds": [{"name": "r1"}]})
    (series / "empty").mkdir()
    code, captured, out = run_gate(capsys, repo, series, ["r1", "nope", "empty"])
    assert code == 1
    reasons = json.loads(out.read_text())["reasons"]
    assert reasons[0] == f"round {series}/nope cannot be read: no such round folder (no folder at that path: a mistyped path?)"
    assert "mistyped" not in reasons[1] and "empty was not finished" in reasons[1]
    assert "a mistyped path?" in captured.out
    rounds = {entry["name"]: entry["state"] for entry in json.loads(out.read_text())["rounds"]}
    assert rounds["nope"] == "unreadable" and rounds["empty"] == "unfinished"


def test_repository_moved_since_the_round(tmp_path, capsys, monkeypatch):
    """round.json names the repository where the round ran; once that folder is
    moved, the gate takes HEAD (or --expect-head) from the repository it runs in,
    when that repository has the round's head commit."""
    old_home = tmp_path / "old"
    old_home.mkdir()
    repo, series = rf.series_repo(old_home)
    rf.make_round(series, "r1", repo=repo)
    moved = tmp_path / "moved"
    os.rename(repo, moved)
    series = moved / "reviews"
    out = moved / "gates" / "g.json"
    monkeypatch.chdir(moved / "app")
    assert spar_main(["gate", str(series / "r1"), "--out", str(out)]) == 0, capsys.readouterr().out
    assert json.loads(out.read_text())["expect_head"] == git(moved, "rev-parse", "HEAD").strip()
    assert spar_main(["gate", str(series / "r1"), "--out", str(out), "--expect-head", "HEAD~1"]) == 1
    assert json.loads(out.read_text())["reasons"] == [
        f"round {series / 'r1'} reviewed head {git(moved, 'rev-parse', 'HEAD').strip()}, but --expect-head "
        f"\"HEAD~1\" is {git(moved, 'rev-parse', 'HEAD~1').strip()}; review it with a new round (spar run), or "
        "name the head the rounds reviewed with --expect-head"]
    # a repository without the round's head commit is not taken for the moved one
    other = make_repo(tmp_path, {"x.txt": "x\n"}, name="other")
    monkeypatch.chdir(other)
    capsys.readouterr()
    assert spar_main(["gate", str(series / "r1"), "--out", str(out)]) == 1
    assert json.loads(out.read_text())["reasons"][0].startswith(f"the expected head (HEAD of {old_home / 'repo'}) cannot be resolved")
