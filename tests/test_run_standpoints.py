"""Standpoint and decision rounds end to end: the exact bytes each reviewer receives and what is recorded."""

from __future__ import annotations

import hashlib
import json

import pytest

from tests.runsetup import make_setup, result

pytestmark = pytest.mark.slow


def load(path):
    return json.loads(path.read_text(encoding="utf-8"))


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_standpoint_round(tmp_path):
    s = make_setup(tmp_path)
    report = {"checked": True, "detail": "looked for division by zero"}
    no_report = result()
    s.configure([
        {"name": "claude", "preset": "claude"},
        {"name": "codex", "preset": "codex"},
        s.answer_reviewer("house", no_report),
        s.answer_reviewer("idle", result()),
    ])
    s.scenario({
        "claude": {"result": result(head=s.head, standpoint_report=report)},
        "codex": {"result": result(head=s.head, findings=[], standpoint_report={"checked": "yes"})},
    })
    claude_text = "Attack zero division.\n  Keep `this` exactly  "
    house_text = "-starts with a dash = and: colons"
    proc = s.run("--reviewers", "claude,codex,house", "--standpoint", f"claude={claude_text}",
                 "--standpoint", f"house={house_text}", "--standpoint", "idle=docs only")
    assert proc.returncode == 1, proc.stderr.decode()
    rd = s.repo / "reviews" / "r1"
    packet = (rd / "packet.md").read_bytes()
    section = packet.decode().split("## Standpoints for this round", 1)[1].split("## How to report", 1)[0]
    assert f"### Standpoint of `claude`\n\n```\n{claude_text}\n```\n" in section
    assert f"### Standpoint of `house`\n\n```\n{house_text}\n```\n" in section
    assert "### Standpoint of `idle`\n\n```\ndocs only\n```\n" in section

    calls = {c["prog"]: c for c in s.fake_calls() if "--version" not in c["argv"]}
    for name in ("claude", "codex", "house"):
        received = (rd / name / "input.md").read_bytes()
        assert received.endswith(packet), name
        if name == "house":
            assert (s.answers / "house.received").read_bytes() == received
        else:
            assert calls[name]["stdin_sha256"] == sha(received), name
    claude_input = (rd / "claude" / "input.md").read_text()
    assert claude_text in claude_input.split("# Review packet", 1)[0]
    assert "you have none" in (rd / "codex" / "input.md").read_text().split("# Review packet", 1)[0]
    assert not (rd / "idle").exists()

    schema = load(rd / "schema.json")
    assert schema["properties"]["standpoint_report"]["type"] == ["object", "null"]
    assert "standpoint_report" in schema["required"]

    rj = load(rd / "round.json")
    assert rj["standpoints"] == [{"reviewer": "claude", "text": claude_text},
                                 {"reviewer": "house", "text": house_text},
                                 {"reviewer": "idle", "text": "docs only"}]
    by = {r["name"]: r for r in rj["reviewers"]}
    assert by["claude"]["standpoint"] == claude_text and by["claude"]["standpoint_report"] == report
    # an unassigned reviewer's report is not checked and recorded as null
    assert by["codex"]["status"] == "completed" and by["codex"]["standpoint"] is None
    assert by["codex"]["standpoint_report"] is None
    assert by["house"]["status"] == "invalid_output" and "standpoint_report" in by["house"]["reason"]
    assert rj["standpoints_uncovered"] == ["house", "idle"]
    summary = (rd / "summary.md").read_text()
    assert "Report (checked): looked for division by zero" in summary
    assert "Standpoints without a completed reviewer: `house`, `idle`" in summary


DECISIONS = [
    ("-use SQLite, not Postgres", "  yes -- SQLite is fine  "),
    ("Error format:\n```json\n{\"error\": \"...\"}\n```\n", "=as `shown`:\n\tkeep it"),
]


def test_decision_round_and_its_dry_run(tmp_path):
    s = make_setup(tmp_path)
    s.configure([{"name": "claude", "preset": "claude"}, s.answer_reviewer("house", result())])
    s.scenario({"claude": {"result": result(head=s.head)}})
    args = []
    for decision, words in DECISIONS:
        args += ["--decision", decision, "--decision-quote", words]
    dry = s.run(*args, "--dry-run", out="reviews/dry")
    assert dry.returncode == 0, dry.stderr.decode()
    assert s.fake_calls() == []
    real = s.run(*args, out="reviews/r1")
    assert real.returncode == 0, real.stderr.decode()

    dry_dir, rd = s.repo / "reviews" / "dry", s.repo / "reviews" / "r1"
    packet = (rd / "packet.md").read_bytes()
    # the packet names no round: a dry run and a real run of the same input share it
    assert (dry_dir / "packet.md").read_bytes() == packet
    assert load(dry_dir / "round.json")["packet_sha256"] == load(rd / "round.json")["packet_sha256"]

    expected = (
        b"## Decisions the user made\n\n"
        b"The user settled these questions. Do not ask them again as requirement questions; "
        b"do report where the change does not follow a decision.\n\n"
        b"### Decision 1\n\nWhat it settles:\n\n"
        b"```\n-use SQLite, not Postgres\n```\n\n"
        b"The user's words:\n\n"
        b"```\n  yes -- SQLite is fine  \n```\n\n"
        b"### Decision 2\n\nWhat it settles:\n\n"
        b"````\nError format:\n```json\n{\"error\": \"...\"}\n```\n\n````\n\n"
        b"The user's words:\n\n"
        b"```\n=as `shown`:\n\tkeep it\n```\n\n"
        b"## How to report\n"
    )
    assert expected in packet
    # no standpoints: the dry run's input.md is the packet itself, and that is what claude got
    for name in ("claude", "house"):
        assert (dry_dir / name / "input.md").read_bytes() == packet
        assert not (rd / name / "input.md").exists()
    [claude_call] = [c for c in s.fake_calls() if "--version" not in c["argv"]]
    assert claude_call["stdin_sha256"] == sha(packet)
    assert (s.answers / "house.received").read_bytes() == packet
    for d in (dry_dir, rd):
        assert load(d / "round.json")["decisions"] == [{"decision": a, "quote": b} for a, b in DECISIONS]
    assert "standpoint" not in (rd / "schema.json").read_text()
