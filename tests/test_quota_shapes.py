"""Issue 22 point 5: a quota refusal in the service's own shape (the error body codex passes
on: `usage_limit_reached`, `status_code` 429, `resets_at` / `resets_in_seconds`) ends the
attempt `unavailable`, records the reset time and tries the fallback model."""

from __future__ import annotations

import json

import pytest

from spar.records.model import ReviewerStatus
from tests.innerloop import first_in_inner_loop
from tests.reviewerround import Round

BODY = {"type": "error", "error": {"type": "usage_limit_reached", "message": "The usage limit has been reached",
                                   "plan_type": "plus", "resets_at": 1777936568, "resets_in_seconds": 13872},
        "status_code": 429, "headers": {"x-request-id": "req_1"}}


@pytest.mark.anyio
# test_refusal reads both shapes' kind and reset (tests/data/refusals.json); a round with
# each runs in the full suite, with the reference body in the inner loop
@pytest.mark.parametrize("text, resets", first_in_inner_loop([
    (json.dumps(BODY, separators=(",", ":")), "2026-05-04T23:16:08Z"),
    ("stream error: " + json.dumps({"error": {"type": "usage_limit_reached", "resets_in_seconds": 13872}}),
     "3h51m12s"),
], ids=["reference body", "type alone"]))
async def test_service_quota_body_falls_back_and_records_the_reset(tmp_path, text, resets):
    """Point 5: codex's turn fails with the service's error body: unavailable (quota) with its
    reset time, then the fallback model answers."""
    rnd = Round(tmp_path)
    scenario = {"refusal": text, "by_model": {"gpt-5-mini": {"refusal": ""}}}
    (outcome,) = await rnd.run([rnd.job("codex", "codex", scenario, fallback_model="gpt-5-mini")])

    first, second = outcome.attempts
    assert first["status"] == ReviewerStatus.UNAVAILABLE, first["reason"]
    assert first["reason"].startswith("quota or rate limit: ") and "usage_limit_reached" in first["reason"]
    assert first["resets"] == resets
    assert second["model"] == "gpt-5-mini" and second["status"] == ReviewerStatus.COMPLETED
    assert outcome.status == ReviewerStatus.COMPLETED
