"""`spar run` end to end: real repositories, real subprocesses, fake CLIs and command reviewers."""

from __future__ import annotations

import hashlib
import json
import os
import stat

import pytest

from tests.runsetup import (
    BACKENDS,
    documented_attempt_keys,
    documented_finding_keys,
    documented_reviewer_keys,
    documented_round_keys,
    finding,
    make_setup,
    result,
    sha256_file,
)

pytestmark = pytest.mark.slow


@pytest.fixture(params=BACKENDS)
def backend(request):
    return request.param


def load(path):
    return json.loads(path.read_text(encoding="utf-8"))


def test_round_with_command_reviewers(tmp_path, backend):
    s = make_setup(tmp_path, backend)
    house = result(findings=[
        finding(),
        finding(id="f2", proposed_class="hardening", angle="risk", location="head/calc.py:6:2",
                link_kind="none", link="", smallest_fix=""),
        finding(id="f3", proposed_class="note", angle="contracts", location="head/tests/test_calc.py:9",
                link_kind="rule", link="AGENTS.md:3", check_impact="contract_violation"),
    ])
    s.configure([s.example_reviewer("example"), s.answer_reviewer("house", house)])
    proc = s.run("--criteria", "docs/criteria.md")
    assert proc.returncode == 0, proc.stderr.decode()
    round_dir = s.repo / "reviews" / "r1"
    assert proc.stdout.decode() == f"{round_dir}\n"
    last = proc.stderr.decode().strip().splitlines()[-1]
    assert last == f"spar: round {round_dir} recorded: 3 defect, 0 requirement-question, 2 hardening, 0 note"

    rj = load(round_dir / "round.json")
    # a first round has no memory; a round of a commit has no worktree commit; without [verify], no verification
    assert set(rj) == documented_round_keys() - {"memory_sha256", "head_tree", "head_parent", "verification",
                                                 "repository_changed"}
    always, completed = documented_reviewer_keys()
    for entry in rj["reviewers"]:
        assert set(entry) == always | completed, entry["name"]
        assert entry["status"] == "completed" and entry["reason"] == ""
        for attempt in entry["attempts"]:
            # commands; masked_secrets only when a credential was masked, egress_refused when a connection was
            assert set(attempt) == documented_attempt_keys() - {"observed_model", "cli_version", "masked_secrets",
                                                                "egress_refused"}
            assert attempt["exit_code"] == 0 and attempt["status"] == "completed"
    assert [r["name"] for r in rj["reviewers"]] == ["example", "house"]
    assert (rj["schema"], rj["stage"], rj["base"], rj["head"]) == ("review-round/v1", "code", s.base, s.head)
    assert rj["repository"] == str(s.repo)
    assert rj["packet_sha256"] == sha256_file(round_dir / "packet.md")
    assert rj["counted"] is True and rj["dry_run"] is False
    assert rj["finished_at"] == rj["recorded_at"] and rj["started_at"] <= rj["recorded_at"]
    assert rj["standpoints"] == [] and rj["standpoints_uncovered"] == [] and rj["decisions"] == []
    assert rj["links"]["criteria_ids"] == ["AC-1", "AC-2"]
    assert [d["name"] for d in rj["documents"]["criteria"]] == ["docs/criteria.md"]
    assert [d["name"] for d in rj["documents"]["rules"]] == ["AGENTS.md"]
    assert rj["documents"]["rules"][0]["sha256"] == sha256_file(s.repo / "AGENTS.md")
    assert rj["config"]["check_paths"] == ["tests/**"]
    assert rj["reviewers"][1]["finding_count"] == 3

    findings = load(round_dir / "findings.json")
    assert [f["id"] for f in findings] == ["example-F1", "example-F2", "house-F1", "house-F2", "house-F3"]
    for f in findings:
        assert set(f) == documented_finding_keys(), f["id"]
    by_id = {f["id"]: f for f in findings}
    assert by_id["house-F1"]["class"] == "defect" and by_id["house-F1"]["path"] == "calc.py"
    assert by_id["house-F2"]["location_unreadable"] is True and by_id["house-F2"]["class"] == "hardening"
    # a confirmed rule link with contract_violation in check paths: rule 2
    assert by_id["house-F3"]["class"] == "defect" and by_id["house-F3"]["in_check_paths"] is True
    assert by_id["example-F2"]["class"] == "hardening"

    ledger = [json.loads(line) for line in (round_dir / "ledger.jsonl").read_text().splitlines()]
    assert [(x["finding"], x["disposition"], x["auto"]) for x in ledger] == [("example-F2", "deferred", True)]

    summary = (round_dir / "summary.md").read_text()
    assert "`head/calc.py:6:2` (unreadable location)" in summary
    assert "| example-F2 | hardening |" in summary and "deferred (auto)" in summary
    assert "## Smallest fixes" in summary and "- `house-F1`: check b" in summary

    # no standpoints and no dry run: reviewers get the packet itself, no input.md
    assert not (round_dir / "example" / "input.md").exists()
    assert (s.answers / "house.received").read_bytes() == (round_dir / "packet.md").read_bytes()
    assert (round_dir / "example" / "stdout.log").exists()

    ws = round_dir / "workspace"
    assert stat.S_IMODE(os.stat(ws / "head").st_mode) == 0o555
    assert stat.S_IMODE(os.stat(ws / "head" / "calc.py").st_mode) == 0o444
    assert "divide" in (ws / "head" / "calc.py").read_text()
    assert "divide" not in (ws / "base" / "calc.py").read_text()
    schema = load(round_dir / "schema.json")
    assert "standpoint_report" not in schema["properties"]


def test_round_with_fake_claude_and_codex(tmp_path, backend):
    s = make_setup(tmp_path, backend)
    s.configure([{"name": "claude", "preset": "claude", "model": "opus"}, {"name": "codex", "preset": "codex"}])
    s.scenario({
        "claude": {"result": result(head=s.head)},
        "codex": {"result": result(head=s.head[:7], findings=[], verdict="no_blocking_findings")},
    })
    proc = s.run("--criteria", "docs/criteria.md")
    assert proc.returncode == 0, proc.stderr.decode()
    rj = load(s.repo / "reviews" / "r1" / "round.json")
    claude, codex = rj["reviewers"]
    assert claude["status"] == "completed" and claude["observed_model"] == "claude-opus-4-6"
    assert claude["model"] == "opus" and claude["attempts"][0]["observed_model"] == "claude-opus-4-6"
    # codex checks schema.json in OpenAI's strict form; an unknown model stays null
    assert codex["status"] == "completed", codex["reason"]
    assert codex["observed_model"] is None and "observed_model" not in codex["attempts"][0]
    calls = {c["prog"]: c for c in s.fake_calls() if "--version" not in c["argv"]}
    packet = (s.repo / "reviews" / "r1" / "packet.md").read_bytes()
    for prog in ("claude", "codex"):
        assert calls[prog]["cwd"] == str(s.repo / "reviews" / "r1" / "workspace")
    # without standpoints claude and codex get the packet itself on stdin
    for prog in ("claude", "codex"):
        assert calls[prog]["stdin_sha256"] == hashlib.sha256(packet).hexdigest()
    findings = load(s.repo / "reviews" / "r1" / "findings.json")
    assert [f["id"] for f in findings] == ["claude-F1"]


def test_dry_run_writes_inputs_and_starts_nothing(tmp_path):
    s = make_setup(tmp_path)
    s.configure([{"name": "claude", "preset": "claude"}, {"name": "codex", "preset": "codex"},
                 s.example_reviewer("example"), {"name": "host", "preset": "native"}])
    s.scenario({"claude": {"result": result(head=s.head)}, "codex": {"result": result(head=s.head)}})
    proc = s.run("--dry-run")
    assert proc.returncode == 0, proc.stderr.decode()
    round_dir = s.repo / "reviews" / "r1"
    assert proc.stdout.decode() == f"{round_dir}\n"
    assert s.fake_calls() == []
    for name in ("claude", "codex", "example", "host"):
        text = (round_dir / name / "input.md").read_text()
        assert text.endswith((round_dir / "packet.md").read_text()), name
        assert not (round_dir / name / "stdout.log").exists()
    assert (round_dir / "host" / "prompt.md").exists()
    rj = load(round_dir / "round.json")
    assert rj["dry_run"] is True and rj["counted"] is False
    assert set(rj) == documented_round_keys() - {"finished_at", "recorded_at", "memory_sha256", "head_tree",
                                                 "head_parent", "changed_files", "unseen", "verification",
                                                 "inline_files", "masked_secrets", "sandbox", "repository_changed"}
    assert all(r["status"] == "pending" and r["attempts"] == [] for r in rj["reviewers"])
    for name in ("findings.json", "ledger.jsonl", "summary.md"):
        assert not (round_dir / name).exists()
    assert (round_dir / "workspace" / "head" / "calc.py").exists()
    assert (round_dir / "schema.json").exists()


def test_invalid_and_failed_reviewers(tmp_path):
    s = make_setup(tmp_path)
    missing = result()
    del missing["limits"]
    s.configure([
        s.answer_reviewer("good", result()),
        s.answer_reviewer("missing", missing),
        s.answer_reviewer("extra", result(extra="x")),
        s.answer_reviewer("badenum", result(findings=[finding(confidence="certain")])),
        s.answer_reviewer("junk", "this is not JSON"),
        s.answer_reviewer("oldhead", result(head="0000000")),
        s.answer_reviewer("cannot", result(verdict="could_not_review", findings=[], limits="no access")),
        s.answer_reviewer("crash", result(), exit_code=3),
    ])
    proc = s.run()
    assert proc.returncode == 1, proc.stderr.decode()
    rj = load(s.repo / "reviews" / "r1" / "round.json")
    by = {r["name"]: r for r in rj["reviewers"]}
    assert by["good"]["status"] == "completed"
    assert by["missing"]["status"] == "invalid_output" and "limits" in by["missing"]["reason"]
    assert by["extra"]["status"] == "invalid_output" and '"extra"' in by["extra"]["reason"]
    assert by["badenum"]["status"] == "invalid_output" and "findings[0].confidence" in by["badenum"]["reason"]
    assert by["junk"]["status"] == "invalid_output" and "not one JSON object" in by["junk"]["reason"]
    assert by["oldhead"]["status"] == "invalid_output" and "reviewed_head" in by["oldhead"]["reason"]
    assert by["cannot"]["status"] == "failed" and by["cannot"]["reason"] == "could_not_review: no access"
    assert by["crash"]["status"] == "failed" and by["crash"]["attempts"][0]["exit_code"] == 3
    for name, entry in by.items():
        if name != "good":
            assert "verdict" not in entry and "finding_count" not in entry, name
    assert [f["id"] for f in load(s.repo / "reviews" / "r1" / "findings.json")] == ["good-F1"]
    assert rj["finished_at"] == rj["recorded_at"]
    last = proc.stderr.decode().strip().splitlines()[-1]
    assert "not completed: missing (invalid_output)" in last and "crash (failed)" in last
    summary = (s.repo / "reviews" / "r1" / "summary.md").read_text()
    assert "| missing | command | invalid_output |" in summary


def test_native_reviewer_leaves_the_round_unfinished(tmp_path):
    s = make_setup(tmp_path)
    s.configure([s.example_reviewer("example"), {"name": "host", "preset": "native"}])
    proc = s.run()
    assert proc.returncode == 1, proc.stderr.decode()
    round_dir = s.repo / "reviews" / "r1"
    rj = load(round_dir / "round.json")
    assert "finished_at" not in rj and "recorded_at" in rj
    assert [r["status"] for r in rj["reviewers"]] == ["completed", "awaiting_record"]
    assert (round_dir / "host" / "prompt.md").read_text().endswith((round_dir / "packet.md").read_text())
    err = proc.stderr.decode().splitlines()
    assert "host (awaiting_record)" in err[-1]  # the final line names the round and its counts
    out = s.repo / "reviews" / "r1"
    assert f"spar: host: give {out / 'host' / 'prompt.md'} to the host's subagent, save its answer and run: " \
           f"spar record {out} --reviewer host --result {out / 'host' / 'result.json'}" in err
    assert "Finished: not yet" in (round_dir / "summary.md").read_text()


def test_plan_stage_with_subject_and_base_head(tmp_path):
    s = make_setup(tmp_path)
    (s.tmp / "PLAN.md").write_text("# Plan\n\nDo AC-1.\n")
    s.configure([s.answer_reviewer("house", result(findings=[finding(location="PLAN.md:3", link="AC-1")]))])
    proc = s.run("--subject", str(s.tmp / "PLAN.md"), "--criteria", "docs/criteria.md", "--base", s.base,
                 "--head", s.head[:10], "--expect-head", "HEAD", stage="plan")
    assert proc.returncode == 0, proc.stderr.decode()
    round_dir = s.repo / "reviews" / "r1"
    rj = load(round_dir / "round.json")
    assert rj["stage"] == "plan" and rj["expect_head"] == s.head and rj["head"] == s.head
    assert rj["documents"]["subject"][0] == {
        "name": "PLAN.md", "path": str((s.tmp / "PLAN.md").resolve()),
        "sha256": sha256_file(s.tmp / "PLAN.md"), "lines": 3}
    packet = (round_dir / "packet.md").read_text()
    assert "### Diff" not in packet and "### PLAN.md" in packet
    f = load(round_dir / "findings.json")[0]
    assert f["path"] == "PLAN.md" and f["location_unreadable"] is False


def test_a_missing_spar_config_is_skipped_with_a_warning(tmp_path):
    s = make_setup(tmp_path)
    s.configure([s.example_reviewer("example")])
    home_config = s.tmp / "home" / ".config" / "jaekit" / "spar.toml"
    home_config.parent.mkdir(parents=True)
    home_config.write_text(s.config.read_text())  # the next source (G16) holds the reviewer
    env = dict(s.env, SPAR_CONFIG=str(s.tmp / "nowhere.toml"))
    proc = s.run(env=env)
    assert proc.returncode == 0, proc.stderr.decode()
    assert (f"spar: warning: SPAR_CONFIG {s.tmp / 'nowhere.toml'} was skipped (does not exist); "
            "using the next configuration source") in proc.stderr.decode()
    rj = load(s.repo / "reviews" / "r1" / "round.json")
    assert [f["path"] for f in rj["config_files"] if f["role"] == "user"] == [str(home_config)]
