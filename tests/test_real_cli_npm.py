"""A real round with the real claude and codex CLIs, installed from the npm registry at
pinned versions, without credentials and without a network (issue 10 point 10).

- claude without a login answers "Not logged in · Please run /login": `unavailable`,
  reason `authentication: …`, no fallback model, no observed model, no session file
  left in HOME (`--no-session-persistence`).
- codex without a login is `unavailable` before it starts (tests/test_real_failures.py), and
  a hung server ends in `timeout` with nothing of its process tree left running (there too).

Both run in Spar's kernel sandbox (`[sandbox] mode = "required"`; skipped where bwrap cannot
start), with the same outcomes as without. HOME and XDG_CONFIG_HOME point into the test's folder (CODEX_HOME and CLAUDE_CONFIG_DIR are
unset, so both CLIs keep their state there), API keys are removed
from the environment and HTTPS_PROXY/HTTP_PROXY point at a closed local port, so no real
credentials are read and nothing leaves the machine whatever network the host has.

The CLIs come from tests/realclis.py: `npm ci` of tests/realcli/package-lock.json (pinned
versions, integrity hashes) into `.real-cli/`; without `npm`, or when the registry cannot be
reached, these tests skip.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.realclis import installed
from tests.runsetup import make_setup

CLOSED_PROXY = "http://127.0.0.1:9"  # the discard port: nothing listens, connections fail at once
SECRETS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN", "OPENAI_API_KEY",
           "CODEX_API_KEY", "AWS_BEARER_TOKEN_BEDROCK", "CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX")

pytestmark = [pytest.mark.realcli, pytest.mark.slow]


@pytest.fixture(scope="session")
def real_clis() -> Path:
    """The npm prefix holding both CLIs (node_modules/.bin/claude, codex)."""
    return installed().prefix


def _setup(tmp_path: Path, prefix: Path, reviewer: dict):
    s = make_setup(tmp_path)
    for key in (*SECRETS, "CODEX_HOME", "CLAUDE_CONFIG_DIR"):  # both then live under the test's HOME
        s.env.pop(key, None)
    s.env.update(HTTPS_PROXY=CLOSED_PROXY, HTTP_PROXY=CLOSED_PROXY,
                 https_proxy=CLOSED_PROXY, http_proxy=CLOSED_PROXY, NO_PROXY="", no_proxy="")
    # no env_passthrough: the network settings (the closed proxy) pass; the sandbox is required
    s.configure([{**reviewer, "binary": str(prefix / "node_modules" / ".bin" / reviewer["preset"])}], timeout=120,
                passthrough=None, sandbox="required")
    return s


def _sandbox(s) -> dict:
    return json.loads((s.repo / "reviews" / "r1" / "round.json").read_text(encoding="utf-8"))["sandbox"]


def _reviewer(s) -> dict:
    rj = json.loads((s.repo / "reviews" / "r1" / "round.json").read_text(encoding="utf-8"))
    (entry,) = rj["reviewers"]
    return entry


def test_real_claude_without_login_is_unavailable_for_authentication(tmp_path, real_clis):
    s = _setup(tmp_path, real_clis, {"name": "claude", "preset": "claude", "model": "opus",
                                     "fallback_model": "sonnet"})
    proc = s.run()
    assert proc.returncode == 1, proc.stderr.decode()
    entry = _reviewer(s)
    assert _sandbox(s) == {"kind": "bwrap", "network": "allowlist"}
    assert entry["status"] == "unavailable", entry["reason"]
    assert entry["reason"].startswith("authentication: ")
    assert "Not logged in" in entry["reason"] and "/login" in entry["reason"]
    assert entry["observed_model"] is None  # only the <synthetic> error message answered
    (attempt,) = entry["attempts"]  # a fallback model cannot fix a login
    assert attempt["argv"][0] == str(real_clis / "node_modules" / ".bin" / "claude")
    assert "--no-session-persistence" in attempt["argv"]
    assert attempt["usage"]["cost_usd"] == 0 and attempt["usage"]["duration_seconds"] > 0
    sessions = list((Path(s.env["HOME"]) / ".claude" / "projects").glob("**/*.jsonl"))
    assert sessions == []
