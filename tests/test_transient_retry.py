"""Transient failures retried for every preset: one more try of the same model after a short
backoff, inside the limit of the attempt it repeats, recorded as an attempt of its own;
quota and authentication refusals never retried (spar/judge/transient.py, spar/round/runner.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spar.judge.transient import transient_failure
from spar.records.model import ReviewerStatus as S
from spar.records.usage import of_reviewer
from tests.reviewerround import Round

NOTICES = json.loads((Path(__file__).parent / "data" / "transient_notices.json").read_text(encoding="utf-8"))
GOOD = {"x": "fine"}


@pytest.mark.parametrize("text", NOTICES["transient"])
def test_the_collected_transient_shapes_are_transient(text):
    assert transient_failure([text]) is not None


@pytest.mark.parametrize("text", NOTICES["not_transient"])
def test_refusals_and_unreachable_services_are_not_transient(text):
    assert transient_failure([text]) is None


CLAUDE_529 = NOTICES["transient"][0]
CODEX_DROP = NOTICES["transient"][5]


@pytest.mark.anyio
@pytest.mark.parametrize(("preset", "failure"), [("claude", {"is_error": CLAUDE_529}),
                                                  ("codex", {"turn_failed": CODEX_DROP})])
async def test_a_transient_failure_is_tried_once_more_and_answers(tmp_path, preset, failure):
    r = Round(tmp_path)
    job = r.job("rev", preset, {"result": GOOD, "first_call": failure,
                                "first_call_marker": str(tmp_path / "called")}, model="m1")
    [outcome] = await r.run([job], transient_backoff=0)
    assert outcome.status == S.COMPLETED and outcome.result == GOOD
    assert [a["status"] for a in outcome.attempts] == ["failed", "completed"]
    assert [a["model"] for a in outcome.attempts] == ["m1", "m1"]
    assert (tmp_path / "ROUND" / "rev" / "stdout.2.log").exists()


@pytest.mark.anyio
async def test_a_transient_failure_is_retried_once_only(tmp_path):
    r = Round(tmp_path)
    job = r.job("rev", "claude", {"is_error": CLAUDE_529}, model="m1", fallback_model="m2")
    [outcome] = await r.run([job], transient_backoff=0)
    assert outcome.status == S.FAILED
    assert [a["model"] for a in outcome.attempts] == ["m1", "m1"]  # no fallback: it was no refusal


@pytest.mark.anyio
async def test_the_retry_stays_inside_the_limit_of_the_attempt_it_repeats(tmp_path):
    r = Round(tmp_path)
    job = r.job("rev", "claude", {"is_error": CLAUDE_529}, model="m1", timeout_seconds=60)
    [outcome] = await r.run([job], transient_backoff=58)  # the backoff leaves no time for a try
    assert [a["status"] for a in outcome.attempts] == ["failed"]


@pytest.mark.anyio
@pytest.mark.parametrize("scenario", [{"refusal": "You've hit your usage limit · resets 12pm"},
                                      {"refusal": "Invalid API key · Please run /login", "refusal_kind": "auth"}])
async def test_quota_and_authentication_are_never_retried(tmp_path, scenario):
    r = Round(tmp_path)
    job = r.job("rev", "claude", scenario, model="m1")
    [outcome] = await r.run([job], transient_backoff=0)
    assert outcome.status == S.UNAVAILABLE and len(outcome.attempts) == 1


@pytest.mark.anyio
async def test_a_retried_try_s_usage_is_recorded_and_summed(tmp_path):
    """The failed try used the service too: its usage stays on its own attempt record and
    counts in the reviewer's totals beside the retry's."""
    r = Round(tmp_path)
    job = r.job("rev", "claude", {"result": GOOD, "cost_usd": 0.24,
                                  "first_call": {"is_error": CLAUDE_529, "error_cost_usd": 0.24},
                                  "first_call_marker": str(tmp_path / "called")}, model="m1")
    [outcome] = await r.run([job], transient_backoff=0)
    assert [a["status"] for a in outcome.attempts] == ["failed", "completed"]
    assert [a["usage"]["cost_usd"] for a in outcome.attempts] == [0.24, 0.24]
    assert [a["usage"]["input_tokens"] for a in outcome.attempts] == [1200, 1200]
    spent = of_reviewer({"attempts": outcome.attempts})
    assert spent["cost_usd"] == pytest.approx(0.48) and spent["input_tokens"] == 2400
