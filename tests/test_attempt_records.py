"""What ran and what it cost: `argv` and `usage` in every attempt (issue 10 points 7 and 8),
the claude cost budget, and the dry run printing each reviewer's command line."""

from __future__ import annotations

import hashlib
import subprocess

import pytest

from spar.records import usage
from spar.round.interface import InputSpec, recorded_argv
from spar.round.summary import render_summary
from tests.reviewerround import Round

ANSWER = {"reviewed_head": "abc1234", "verdict": "no_blocking_findings", "angles_checked": [],
          "angles_unchecked": [], "findings": [], "limits": ""}


def _shown(text: str) -> str:
    data = text.encode("utf-8")
    return f"<prompt: {len(data)} bytes, sha256 {hashlib.sha256(data).hexdigest()}>"


def test_recorded_argv_replaces_only_the_prompt_argument():
    spec = InputSpec(text="Review this é\n")
    assert recorded_argv(["agy", "-p", "Review this é\n", "--mode", "plan"], spec) == [
        "agy", "-p", _shown("Review this é\n"), "--mode", "plan"]
    assert recorded_argv(["claude", "-p", "--verbose"], spec) == ["claude", "-p", "--verbose"]
    assert recorded_argv(["x", ""], InputSpec(text="")) == ["x", ""]


@pytest.mark.anyio
async def test_each_preset_records_its_argv_and_usage(tmp_path):
    rnd = Round(tmp_path)
    jobs = [rnd.job("claude", "claude", {"result": ANSWER}, model="opus", max_budget_usd=2.5),
            rnd.job("codex", "codex", {"result": ANSWER}),
            rnd.job("agy", "agy", {"result": ANSWER})]
    claude, codex, agy = await rnd.run(jobs)
    assert [o.status for o in (claude, codex, agy)] == ["completed"] * 3
    runs = {r["prog"]: r for r in rnd.records() if "--version" not in r["argv"]}
    for outcome, job in zip((claude, codex, agy), jobs):
        (attempt,) = outcome.attempts
        # exactly what the fake received, the prompt argument aside
        assert attempt["argv"][0] == job.config.binary
        assert attempt["argv"][1:] == recorded_argv(runs[job.config.preset]["argv"], job.input)
        assert attempt["usage"]["duration_seconds"] > 0
    assert "--no-session-persistence" in claude.attempts[0]["argv"]
    assert claude.attempts[0]["argv"][-2:] == ["--max-budget-usd", "2.5"]
    assert _shown(jobs[2].input.text) in agy.attempts[0]["argv"]
    assert jobs[2].input.text not in agy.attempts[0]["argv"]
    # the fakes report what the real CLIs report (reviewer-clis.md)
    reported = {o.name: {k: v for k, v in o.attempts[0]["usage"].items() if k != "duration_seconds"}
                for o in (claude, codex, agy)}
    assert reported == {
        "claude": {"input_tokens": 1200, "cached_input_tokens": 1000, "output_tokens": 300, "cost_usd": 0.01},
        "codex": {"input_tokens": 1000, "cached_input_tokens": 400, "output_tokens": 200, "cost_usd": None},
        "agy": {"input_tokens": 900, "cached_input_tokens": 300, "output_tokens": 160, "cost_usd": None},
    }


@pytest.mark.anyio
async def test_budget_reached_is_failed_and_says_so(tmp_path):
    rnd = Round(tmp_path)
    (outcome,) = await rnd.run([rnd.job("claude", "claude", {"budget_exceeded": True}, max_budget_usd=0.5)])
    assert outcome.status == "failed"
    assert "the cost budget was reached" in outcome.reason and "max_budget_usd" in outcome.reason
    (attempt,) = outcome.attempts
    assert attempt["argv"][-2:] == ["--max-budget-usd", "0.5"]
    assert attempt["usage"]["cost_usd"] == 0.51


@pytest.mark.anyio
async def test_fallback_attempts_each_keep_their_argv(tmp_path):
    rnd = Round(tmp_path)
    scenario = {"result": ANSWER, "by_model": {"opus": {"refusal": "You've hit your limit · resets 3pm"}}}
    (outcome,) = await rnd.run([rnd.job("claude", "claude", scenario, model="opus", fallback_model="sonnet")])
    assert outcome.status == "completed"
    first, second = outcome.attempts
    assert first["argv"][first["argv"].index("--model") + 1] == "opus"
    assert second["argv"][second["argv"].index("--model") + 1] == "sonnet"
    assert first["usage"]["cost_usd"] is None  # the refusal's result reports no cost
    assert second["usage"]["cost_usd"] == 0.01


@pytest.mark.anyio
async def test_an_attempt_that_never_started_still_records_argv_and_duration(tmp_path):
    rnd = Round(tmp_path)
    (outcome,) = await rnd.run([rnd.job("codex", "codex", binary=str(tmp_path / "missing" / "codex"))])
    assert outcome.status == "unavailable"
    (attempt,) = outcome.attempts
    assert attempt["argv"][:2] == [str(tmp_path / "missing" / "codex"), "exec"]
    assert attempt["usage"] == {"duration_seconds": attempt["usage"]["duration_seconds"], "input_tokens": None,
                                "cached_input_tokens": None, "output_tokens": None, "cost_usd": None}


def test_usage_totals_add_what_was_reported():
    a = {"duration_seconds": 1.5, "input_tokens": 10, "cached_input_tokens": None, "output_tokens": 2,
         "cost_usd": 0.1}
    b = {"duration_seconds": 2.0, "input_tokens": None, "cached_input_tokens": None, "output_tokens": 3,
         "cost_usd": 0.2}
    assert usage.total([a, b, None, {"input_tokens": True, "cost_usd": float("nan")}]) == {
        "duration_seconds": 3.5, "input_tokens": 10, "cached_input_tokens": None, "output_tokens": 5,
        "cost_usd": 0.3}
    assert usage.total([]) == dict.fromkeys(usage.USAGE_KEYS)


def test_summary_shows_time_tokens_and_cost_per_reviewer():
    attempts = [{"usage": {"duration_seconds": 3.0, "input_tokens": 12000, "cached_input_tokens": 3000,
                           "output_tokens": 400, "cost_usd": 0.5}},
                {"usage": {"duration_seconds": 1.25, "input_tokens": 1000, "cached_input_tokens": 0,
                           "output_tokens": 100, "cost_usd": 0.25}}]
    rj = {"name": "r1", "reviewers": [
        {"name": "claude", "preset": "claude", "status": "failed", "reason": "x", "attempts": attempts},
        {"name": "old", "preset": "codex", "status": "timeout", "reason": "y", "attempts": [{"model": ""}]}]}
    text = render_summary(rj, [], [])
    assert "| time | tokens | cost |" in text
    assert "| 4.2s | in 13,000 (cached 3,000) / out 500 | $0.7500 |" in text
    # a round written before usage existed: nothing reported, nothing invented
    assert "| old | codex | timeout | (default) | unknown | 1 | - | - | - |" in text


@pytest.mark.slow
def test_dry_run_prints_each_reviewers_command_line(tmp_path):
    from tests.runsetup import make_setup

    s = make_setup(tmp_path)
    s.configure([{"name": "claude", "preset": "claude", "model": "opus", "fallback_model": "sonnet"},
                 {"name": "agy", "preset": "agy"}, {"name": "host", "preset": "native"}])
    s.scenario({"claude": {}})  # the fakes record their calls
    proc = s.run("--dry-run")
    assert proc.returncode == 0, proc.stderr.decode()
    round_dir = s.repo / "reviews" / "r1"
    lines = [line for line in proc.stderr.decode().splitlines() if line.startswith("spar: dry run: ")]
    assert len(lines) == 4, lines
    assert lines[0].startswith("spar: dry run: claude would run: cd ")
    assert "--model opus" in lines[0] and lines[0].endswith(f"< {round_dir / 'claude' / 'input.md'}")
    assert lines[1].startswith("spar: dry run: claude after a quota refusal would run: ")
    assert "--model sonnet" in lines[1]
    assert f'-p "$(cat {round_dir / "agy" / "input.md"})"' in lines[2]
    assert "host runs nothing" in lines[3]
    # the printed line runs: the fake claude on PATH gets exactly the recorded prompt on stdin
    command = lines[0].split(" would run: ", 1)[1]
    done = subprocess.run(["bash", "-c", command], env=s.env, capture_output=True)
    assert done.returncode == 0, done.stderr.decode()
    assert s.fake_calls()[-1]["stdin_sha256"] == hashlib.sha256(
        (round_dir / "claude" / "input.md").read_bytes()).hexdigest()
