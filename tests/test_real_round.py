"""Real rounds with the real claude and codex CLIs (pinned, from npm: tests/realclis.py), run by
Spar in its kernel sandbox as root and as an unprivileged user, and an openai-compatible
reviewer, all against the scripted model server on loopback (tests/modelserver.py,
tests/realround.py).

The change adds `divide` without a check for 0 (the planted defect). Each CLI reads files through
its own tool, then answers; Spar records the findings, reviewed_head, the model the server said
answered, the usage and cost as reported, and observed coverage from the files the real
transcript shows read. The other vendor's real CLI verifies the finding; the gate blocks; after
the fix a second round passes it.
"""

from __future__ import annotations

import json

import pytest

from tests.modelserver import CHAT, MESSAGES, RESPONSES, ModelServer
from tests.realround import (
    BIG_FILE,
    SERVED,
    USAGE,
    as_user,
    entry,
    real_setup,
    review_script,
    round_json,
    run_spar,
)
from tests.runsetup import finding, result

pytestmark = [pytest.mark.realcli, pytest.mark.slow]


FIXED = ("def add(a, b):\n    return a + b\n\n\ndef divide(a, b):\n    if b == 0:\n"
         "        raise ValueError(\"b must not be 0\")\n    return a / b\n")
CONFIRMED = {"verdict": "confirmed", "evidence": "divide(1, 0) raises ZeroDivisionError: no check for 0",
             "location": "head/calc.py:6"}


def _assert_reviewed(s, name: str, api: str, head: str) -> dict:
    e = entry(s, name)
    assert e["status"] == "completed", e["reason"]
    assert e["reviewed_head"] == head and e["verdict"] == "blocking_findings"
    # codex 0.171.0's --json events never name the model that answered (the server's
    # response.completed does, but codex keeps it to itself): nothing observed
    assert e["observed_model"] == (None if api == RESPONSES else SERVED[api])
    (attempt,) = e["attempts"]
    usage, scripted = attempt["usage"], USAGE[api]
    assert usage["output_tokens"] >= scripted.output and usage["input_tokens"] >= scripted.input
    return attempt


@pytest.mark.parametrize("user", ["root", "nobody"])
def test_real_claude_and_codex_review_verify_block_the_gate_and_pass_after_the_fix(world, npm_clis, user):
    answer = result(findings=[finding()])
    with ModelServer(review_script(answer, CONFIRMED)) as server:
        s = real_setup(world, npm_clis, server, [{"name": "claude", "preset": "claude", "model": "opus"},
                                                  {"name": "codex", "preset": "codex"}],
                       user=user, verify=["claude", "codex"])
        proc = run_spar(s, "run", "--stage", "code", "--criteria", "docs/criteria.md", "--out", "reviews/r1")
        assert proc.returncode == 0, proc.stderr.decode()[-3000:]  # every reviewer answered
        rj = round_json(s)
        assert rj["sandbox"] == {"kind": "bwrap", "network": "allowlist"}

        claude = _assert_reviewed(s, "claude", MESSAGES, s.head)
        # the usage and cost claude reported: the server's tokens, claude's own price table
        assert claude["usage"]["cached_input_tokens"] == USAGE[MESSAGES].cached
        assert claude["usage"]["cost_usd"] > 0
        assert claude["cli_version"].startswith(npm_clis.claude_version)
        assert claude["coverage"]["observed"] is True and claude["coverage"]["opened_files"] == [BIG_FILE]
        codex = _assert_reviewed(s, "codex", RESPONSES, s.head)
        assert codex["usage"]["cached_input_tokens"] >= USAGE[RESPONSES].cached
        codex_read = [t for r in server.model_requests() if r.api == RESPONSES for t in r.tool_results()]
        # codex runs each command in a bubblewrap sandbox of its own, nested in Spar's: as root
        # too (Spar's jail then runs it as a uid of its own, which the kernel lets map itself)
        assert codex["coverage"]["opened_files"] == [BIG_FILE]
        assert any("def divide(a, b):" in t for t in codex_read)
        assert not any("bwrap:" in t for t in codex_read)
        assert BIG_FILE not in rj["unseen"]

        reviews = [r for r in server.model_requests() if r.api in (MESSAGES, RESPONSES)]
        first_claude = next(r for r in reviews if r.api == MESSAGES and r.tool_names())
        assert "StructuredOutput" in first_claude.tool_names()  # the schema reached claude usable
        read_back = "\n".join(t for r in reviews if r.api == MESSAGES for t in r.tool_results())
        assert "def divide(a, b):" in read_back and "row 000000" in read_back  # their tools read the files

        findings = json.loads((s.repo / "reviews" / "r1" / "findings.json").read_text())
        assert sorted(f["id"] for f in findings) == ["claude-F1", "codex-F1"]
        calls = json.loads((s.repo / "reviews" / "r1" / "verifications.json").read_text())["calls"]
        verified = {(c["finding"], c["verifier"], c["verdict"]) for c in calls}
        assert verified == {("claude-F1", "codex", "confirmed"), ("codex-F1", "claude", "confirmed")}

        gate = run_spar(s, "gate", "reviews/r1", "--out", "reviews/gate.json")
        assert gate.returncode == 1, gate.stderr.decode()
        assert json.loads((s.repo / "reviews" / "gate.json").read_text())["state"] == "blocked"

        (s.repo / "calc.py").write_text(FIXED, encoding="utf-8")
        as_user(s, ["git", "commit", "-q", "-am", "divide refuses 0"])
        head2 = as_user(s, ["git", "rev-parse", "HEAD"]).stdout.decode().strip()
        for fid in ("claude-F1", "codex-F1"):
            proc = run_spar(s, "triage", "reviews/r1", fid, "--to", "fixed", "--commit", head2,
                            "--failed-before", "divide(1, 0) raised ZeroDivisionError",
                            "--passed-after", "divide(1, 0) raises ValueError")
            assert proc.returncode == 0, proc.stderr.decode()
        server.set_script(review_script(result(findings=[], verdict="no_blocking_findings")))
        proc = run_spar(s, "run", "--stage", "code", "--criteria", "docs/criteria.md", "--base", s.base, "--out", "reviews/r2")
        assert proc.returncode == 0, proc.stderr.decode()[-3000:]
        assert {e["name"]: e["reviewed_head"] for e in round_json(s, "reviews/r2")["reviewers"]} == {
            "claude": head2, "codex": head2}
        gate = run_spar(s, "gate", "reviews/r1", "reviews/r2", "--out", "reviews/gate.json")
        assert gate.returncode == 0, (gate.stderr.decode(), (s.repo / "reviews" / "gate.json").read_text())


def test_an_openai_compatible_reviewer_on_the_same_server(world, npm_clis):
    with ModelServer(review_script(result(findings=[finding()]))) as server:
        s = real_setup(world, npm_clis, server, [{"name": "endpoint", "preset": "openai-compatible"}])
        proc = run_spar(s, "run", "--stage", "code", "--criteria", "docs/criteria.md", "--out", "reviews/r1")
    assert proc.returncode == 0, proc.stderr.decode()[-3000:]
    usage = _assert_reviewed(s, "endpoint", CHAT, s.head)["usage"]
    # the cost from the tokens the server reported and the configured prices
    assert usage["cost_usd"] == pytest.approx((usage["input_tokens"] * 1 + usage["output_tokens"] * 4) / 1e6)
    assert usage["output_tokens"] == USAGE[CHAT].output
    (request,) = server.model_requests()
    assert request.api == CHAT and request.body["model"] == "chat-scripted-1"
    assert request.headers["authorization"] == "Bearer sk-endpoint"
