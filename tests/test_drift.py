"""The drift command's comparison (tests/drift.py): what changed between two sets of captures."""

from __future__ import annotations

import json
import shutil

from tests.drift import CAPTURES, compare


def test_the_pinned_captures_against_themselves_show_no_change():
    assert compare(CAPTURES, CAPTURES) == []


def test_a_new_key_a_new_event_and_new_refusal_words_are_named(tmp_path):
    newest = tmp_path / "newest"
    shutil.copytree(CAPTURES, newest)
    path = newest / "credit-400-claude.stdout.log"
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    result = next(e for e in lines if e.get("type") == "result")
    result["result"] = "Your balance is empty"
    result["billing"] = {"plan": "x"}
    lines.append({"type": "system", "subtype": "billing_notice"})
    path.write_text("".join(json.dumps(e) + "\n" for e in lines))
    (newest / "hang-codex.stdout.log").unlink()
    changes = compare(CAPTURES, newest)
    assert "credit-400-claude.stdout.log: event result/success: new keys ['billing'], gone []" in changes
    assert "credit-400-claude.stdout.log: event system/billing_notice new" in changes
    assert any("words" in c and "Your balance is empty" in c for c in changes)
    assert "hang-codex.stdout.log: not captured with the newest CLIs (its test failed?)" in changes
