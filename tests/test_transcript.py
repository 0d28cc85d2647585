"""G15: Claude Code transcript analysis over fixture transcripts in tests/data/transcripts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spar.errors import Refused
from spar.judge.transcript import DEFAULT_ALLOWED, analyze_transcript

DIR = Path(__file__).resolve().parent / "data" / "transcripts"
CASES = json.loads((DIR / "cases.json").read_text(encoding="utf-8"))
WORKSPACE = CASES["workspace"]
PROMPT = CASES["prompt_path"]
KINDS = {"tool_not_allowed", "host_added", "prompt_not_read", "read_outside_workspace"}


def _lines(name: str) -> list[str]:
    return (DIR / name).read_text(encoding="utf-8").splitlines()


def _analyze(name: str, **kw):
    return analyze_transcript(_lines(name), workspace=WORKSPACE, prompt_path=PROMPT, **kw)


@pytest.mark.parametrize("case", [c for c in CASES["cases"] if not c.get("refused")], ids=lambda c: c["file"])
def test_fixture(case):
    got = _analyze(case["file"])
    assert got.result == case["result"]
    assert got.warnings == case["warnings"]
    assert got.observed_model == case["observed_model"]


@pytest.mark.parametrize("case", [c for c in CASES["cases"] if c.get("refused")], ids=lambda c: c["file"])
def test_unreadable_transcript_is_refused(case):
    with pytest.raises(Refused, match="unreadable transcript"):
        _analyze(case["file"])


def test_every_fixture_file_has_a_case():
    assert sorted(p.name for p in DIR.glob("*.jsonl")) == sorted(c["file"] for c in CASES["cases"])


@pytest.mark.parametrize("case", [c for c in CASES["cases"] if not c.get("refused")], ids=lambda c: c["file"])
def test_warnings_keep_only_kind_and_tool(case):
    text = (DIR / case["file"]).read_text(encoding="utf-8")
    for w in _analyze(case["file"]).warnings:
        assert set(w) == {"kind", "tool"}
        assert w["kind"] in KINDS
        assert "/" not in w["tool"]  # a tool name, never a path
        assert w["tool"] == "" or f'"{w["tool"]}"' in text  # a name taken from the transcript


def test_allowed_tools_can_be_widened():
    got = _analyze("violations.jsonl", allowed_tools=DEFAULT_ALLOWED + ("Bash",))
    assert {"kind": "tool_not_allowed", "tool": "Bash"} not in got.warnings
    assert {"kind": "tool_not_allowed", "tool": "Task"} in got.warnings


def test_workspace_given_with_trailing_slash():
    got = analyze_transcript(_lines("clean.jsonl"), workspace=WORKSPACE + "/", prompt_path=PROMPT)
    assert got.warnings == []


def test_source_names_the_file_in_the_refusal():
    with pytest.raises(Refused) as err:
        analyze_transcript(["nope"], workspace=WORKSPACE, prompt_path=PROMPT, source="t.jsonl")
    assert str(err.value).startswith("t.jsonl: ")


@pytest.mark.parametrize(
    "text, expected",
    [
        ('{"a": 1}', {"a": 1}),
        (' \n{"a": 1}\n', {"a": 1}),
        # G1's one rule (spar/judge/answer.py): nothing but the object, as for spar run
        ('```json\n{"a": 1}\n```', None),
        ('Result:\n```\n{"a": 2}\n```\n', None),
        ('Here: {"a": {"b": 4}} done', None),
        ("[1, 2]", None),
        ("no object", None),
    ],
)
def test_result_from_the_last_text_block(text, expected):
    lines = [
        json.dumps({"type": "user", "cwd": WORKSPACE, "message": {"content": "Review."}}),
        json.dumps({"type": "assistant", "cwd": WORKSPACE, "message": {"content": [
            {"type": "tool_use", "name": "Read", "input": {"file_path": PROMPT}}]}}),
        json.dumps({"type": "assistant", "message": {"content": [{"type": "text", "text": '{"early": true}'}]}}),
        json.dumps({"type": "assistant", "message": {"content": [{"type": "text", "text": text}]}}),
    ]
    got = analyze_transcript(lines, workspace=WORKSPACE, prompt_path=PROMPT)
    assert got.result == expected
    assert got.warnings == []
    assert got.observed_model is None


def test_relative_workspace_is_taken_from_the_working_folder(tmp_path, monkeypatch):
    line = json.dumps({"type": "assistant", "cwd": str(tmp_path / "ws"), "message": {"content": [
        {"type": "tool_use", "name": "Read", "input": {"file_path": str(tmp_path / "n" / "prompt.md")}},
        {"type": "tool_use", "name": "Read", "input": {"file_path": "head/a.go"}}]}})
    monkeypatch.chdir(tmp_path)
    got = analyze_transcript([line], workspace="ws", prompt_path="n/prompt.md")
    assert got.warnings == []
