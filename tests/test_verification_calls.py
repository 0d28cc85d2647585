"""Verification calls in-process (spar/verify/verification.py over the reviewers' runner):
verifiers run at once, one call at a time each; a hanging call ends at its verifier's
limit and the next call of that verifier still runs; max_cost_usd stops the calls not
started. Fake CLIs as verifiers, both anyio backends."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from spar.config.model import ReviewerConfig, VerifyConfig
from spar.judge.context import RoundContext
from spar.judge.verify_plan import EVIDENCE_LIMIT
from spar.presets import get_preset
from spar.round.runner import run_settings
from spar.verify.verification import VerifyRun, bound_notes, build_record, plan_calls, prepare_calls, run_calls
from tests.proctools import HANG, LIMITS, gone, written
from tests.runsetup import FAKE_ENV

pytestmark = pytest.mark.anyio

FAKES = Path(__file__).parent / "fakes"
ANSWER = {"verdict": "confirmed", "evidence": "line 1", "location": "head/a.py:1"}


def _finding(fid: str, reviewer: str, cls: str = "defect") -> Any:
    return {"id": fid, "reviewer": reviewer, "class": cls, "location": "head/a.py:1", "group": None,
            "claim": f"claim of {fid}", "failure_scenario": "", "evidence": "", "link_kind": "none", "link": ""}


def _setup(tmp_path: Path, verifiers: list[tuple[str, str, int]], scenarios: dict[str, dict],
           findings: list[Any], max_cost: float | None = None) -> tuple[VerifyRun, dict[str, str]]:
    round_dir = tmp_path / "ROUND"
    (round_dir / "workspace" / "head").mkdir(parents=True)
    (round_dir / "workspace" / "base").mkdir()
    (round_dir / "workspace" / "head" / "a.py").write_text("x = 1 / 0\n", encoding="utf-8")
    (tmp_path / "bin").mkdir()
    configs = []
    for name, preset, timeout in verifiers:
        link = tmp_path / "bin" / name  # the fake reads its scenario under its own file name
        link.symlink_to(FAKES / preset)
        configs.append(ReviewerConfig(name=name, preset=preset, binary=str(link), timeout_seconds=timeout))
    (tmp_path / "scenario.json").write_text(json.dumps(scenarios), encoding="utf-8")
    env = dict(os.environ, SPAR_FAKE_SCENARIO=str(tmp_path / "scenario.json"),
               PATH=os.pathsep.join([str(FAKES), os.path.dirname(sys.executable), "/usr/bin", "/bin"]))
    env.pop("FAKE_NAME", None)
    round_json: Any = {"name": "ROUND", "reviewers": [{"name": "opus", "preset": "claude"},
                                                      {"name": "gpt", "preset": "codex"},
                                                      {"name": "gem", "preset": "agy"}]}
    ctx = RoundContext(head_files={"a.py": "100644"}, base_files={}, documents=[], check_paths=[], criteria_ids=set())
    v = VerifyRun(round_dir=round_dir, round_json=round_json, findings=findings,
                  config=VerifyConfig(reviewers=configs, max_cost_usd=max_cost), ctx=ctx,
                  presets={p: get_preset(p) for _, p, _ in verifiers})
    return v, env


async def _verify(v: VerifyRun, env: dict[str, str]):
    plan = plan_calls(v)
    calls = prepare_calls(v, plan)
    with anyio.fail_after(HANG):
        spend = await run_calls(v, calls, run_settings(env=env, env_passthrough=FAKE_ENV))
    return build_record(v, plan, calls, "2026-12-03T10:00:00.000Z"), spend


async def test_verifiers_run_at_once(tmp_path):
    meet = tmp_path / "meet"
    meet.mkdir()
    # each answers only once the other verifier's call runs too (a barrier of two)
    answer = {"result": ANSWER, "meet": {"dir": str(meet), "count": 2}}
    findings = [_finding("opus-F1", "opus"), _finding("gpt-F1", "gpt")]
    v, env = _setup(tmp_path, [("ver-claude", "claude", 60), ("ver-codex", "codex", 60)],
                    {"ver-claude": answer, "ver-codex": answer}, findings)
    record, _ = await _verify(v, env)
    assert sorted((c["finding"], c["verifier"], c["verdict"]) for c in record["calls"]) == [
        ("gpt-F1", "ver-claude", "confirmed"), ("opus-F1", "ver-codex", "confirmed")]
    assert len(os.listdir(meet)) == 2


async def test_a_hanging_call_ends_at_its_limit_and_the_verifiers_next_call_runs(tmp_path):
    findings = [_finding("gpt-F1", "gpt"), _finding("gpt-F2", "gpt")]
    for k in LIMITS:  # until the second call answers within the limit (a loaded machine may need longer)
        folder = tmp_path / str(k)
        folder.mkdir()
        pid_file = folder / "hung.pid"
        scenario = {"result": ANSWER, "by_prompt": {"ID: `gpt-F1`": {"delay": 600, "pid_file": str(pid_file)}}}
        v, env = _setup(folder, [("ver", "claude", k)], {"ver": scenario}, findings)
        record, _ = await _verify(v, env)
        hung, after = record["calls"]
        if after["status"] == "completed" and pid_file.exists():  # the hung call had started
            break
    assert (hung["finding"], hung["status"], hung["verdict"]) == ("gpt-F1", "timeout", "unsure")
    assert hung["reason"].startswith(f"timeout: no answer within {k}s (timeout_seconds)")
    assert gone(int(written(pid_file)))
    assert (after["call"], after["finding"], after["verdict"]) == ("V2", "gpt-F2", "confirmed")


async def test_max_cost_usd_stops_the_calls_not_started(tmp_path):
    scenarios = {"ver": {"result": ANSWER, "cost_usd": 0.25}}
    findings = [_finding(f"gpt-F{n}", "gpt") for n in (1, 2, 3)]
    v, env = _setup(tmp_path, [("ver", "claude", 60)], scenarios, findings, max_cost=0.5)
    record, spend = await _verify(v, env)
    assert [(c["call"], c["finding"]) for c in record["calls"]] == [("V1", "gpt-F1"), ("V2", "gpt-F2")]
    assert record["unverified"] == [{"finding": "gpt-F3", "why": "max_cost_usd"}]
    assert spend.cost == 0.5 and spend.stopped
    assert sorted(p.name for p in (v.round_dir / "verify").iterdir()) == ["V1", "V2", "schema.json"]


async def test_a_repeated_key_in_a_verifiers_answer_is_no_verdict(tmp_path):
    """`"verdict": "refuted", ..., "verdict": "confirmed"` was recorded confirmed (the last value won)."""
    raw = '{"verdict": "refuted", "evidence": "x", "location": null, "verdict": "confirmed"}'
    v, env = _setup(tmp_path, [("ver", "codex", 60)], {"ver": {"raw_result": raw}}, [_finding("opus-F1", "opus")])
    record, _ = await _verify(v, env)
    (call,) = record["calls"]
    assert (call["status"], call["verdict"], call["evidence"]) == ("invalid_output", "unsure", "")
    assert 'the key "verdict" appears twice in one object' in call["reason"]


async def test_evidence_over_the_cap_is_no_verdict_and_is_not_kept(tmp_path):
    """3 MiB of evidence was kept whole in verifications.json and in one summary.md cell."""
    answer = {"verdict": "refuted", "evidence": "x" * (3 * 1024 * 1024), "location": None}
    v, env = _setup(tmp_path, [("ver", "codex", 60)], {"ver": {"result": answer}}, [_finding("opus-F1", "opus")])
    record, _ = await _verify(v, env)
    (call,) = record["calls"]
    assert (call["status"], call["verdict"], call["evidence"]) == ("invalid_output", "unsure", "")
    assert f"evidence is {3 * 1024 * 1024} characters, more than the {EVIDENCE_LIMIT}" in call["reason"]
    assert len(json.dumps(record)) < 16 * 1024


async def test_a_call_that_reports_no_cost_counts_as_over_max_cost_usd(tmp_path):
    """codex reports tokens, never a cost: under max_cost_usd its calls were never stopped."""
    findings = [_finding(f"opus-F{n}", "opus") for n in (1, 2, 3)]
    v, env = _setup(tmp_path, [("ver", "codex", 60)], {"ver": {"result": ANSWER}}, findings, max_cost=100.0)
    record, spend = await _verify(v, env)
    assert [(c["call"], c["finding"]) for c in record["calls"]] == [("V1", "opus-F1")]
    assert record["unverified"] == [{"finding": "opus-F2", "why": "max_cost_usd"},
                                    {"finding": "opus-F3", "why": "max_cost_usd"}]
    assert spend.unknown == ["V1"]
    assert bound_notes(record, spend) == [
        "verification stopped at max_cost_usd 100 (finished calls cost $0.0000; V1 reported no cost, which counts "
        "as over the bound): 2 finding(s) not verified"]
    # without the bound, the same calls all run
    v.config.max_cost_usd = None
    record, spend = await _verify(v, env)
    assert len(record["calls"]) == 3 and record["unverified"] == [] and spend.unknown == ["V1", "V2", "V3"]
