"""The record types and reviewer statuses of spar/records/model.py."""

from __future__ import annotations

import json
import re
from pathlib import Path

from spar.progress import FINAL, QUIET
from spar.records.model import RECORDED, ReviewerStatus, find_reviewer, reviewer_names

DOCS = Path(__file__).resolve().parent.parent / "docs" / "records.md"


def test_statuses_are_their_text_in_json():
    assert json.dumps({"status": ReviewerStatus.TOOL_VIOLATION}) == '{"status": "tool_violation"}'
    assert ReviewerStatus("awaiting_record") is ReviewerStatus.AWAITING_RECORD
    assert ReviewerStatus.COMPLETED == "completed"


def test_recorded_statuses_are_the_documented_ones():
    text = DOCS.read_text(encoding="utf-8")
    paragraph = text.split("\n`status`: ", 1)[1].split("\n\n", 1)[0]
    assert set(re.findall(r"`([a-z_]+)`", paragraph)) == {str(s) for s in RECORDED}


def test_progress_knows_every_status():
    """Every status but pending ends a row or is a quiet step on the way."""
    shown = set(FINAL) | set(QUIET) | {ReviewerStatus.PENDING, ReviewerStatus.FALLBACK, ReviewerStatus.RETRYING}
    assert shown == set(ReviewerStatus)
    assert set(RECORDED) - {ReviewerStatus.PENDING} <= set(FINAL)


def test_find_reviewer_is_literal():
    round_json = {"reviewers": [{"name": "claude", "status": "completed"}, {"name": "Codex", "status": "failed"}]}
    assert find_reviewer(round_json, "Codex") is round_json["reviewers"][1]
    assert find_reviewer(round_json, "codex") is None
    assert find_reviewer(round_json, " claude") is None
    assert reviewer_names(round_json) == "claude, Codex"
    assert reviewer_names({"reviewers": []}) == "none"
