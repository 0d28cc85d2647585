"""A real round with the real claude and codex CLIs, installed from the npm registry at
pinned versions, without credentials and without a network (issue 10 point 10).

- claude without a login answers "Not logged in · Please run /login": `unavailable`,
  reason `authentication: …`, no fallback model, no observed model, no session file
  left in HOME (`--no-session-persistence`).
- codex without a network retries forever (`Reconnecting...`): `timeout` under a short
  limit, and nothing of its process group is left running.

Both run in Spar's kernel sandbox (`[sandbox] mode = "required"`; skipped where bwrap cannot
start), with the same outcomes as without. HOME and XDG_CONFIG_HOME point into the test's folder (CODEX_HOME and CLAUDE_CONFIG_DIR are
unset, so both CLIs keep their state there), API keys are removed
from the environment and HTTPS_PROXY/HTTP_PROXY point at a closed local port, so no real
credentials are read and nothing leaves the machine whatever network the host has.

The CLIs are installed once per checkout into `.real-cli/<versions>/` (ignored by git; shared
by pytest-xdist workers and later sessions, a new pair of versions gets a folder of its own;
an install that did not finish is done again). Without `npm`, or when the registry cannot be
reached, these tests skip. To bump a version: change CLAUDE_VERSION / CODEX_VERSION below (confirm with
`npm view @anthropic-ai/claude-code@X version`), run `python -m pytest -m realcli`, and
note in reviewer-clis.md what the new version prints differently.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from spar.round.sandboxing import choose_sandbox
from tests.proctools import LIMITS, wait_for
from tests.runsetup import make_setup

CLAUDE_VERSION = "2.1.197"
CODEX_VERSION = "0.171.0"
PACKAGES = (f"@anthropic-ai/claude-code@{CLAUDE_VERSION}", f"@openai/codex@{CODEX_VERSION}")
INSTALLS = Path(__file__).resolve().parent.parent / ".real-cli"  # in .gitignore
CLOSED_PROXY = "http://127.0.0.1:9"  # the discard port: nothing listens, connections fail at once
SECRETS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN", "OPENAI_API_KEY",
           "CODEX_API_KEY", "AWS_BEARER_TOKEN_BEDROCK", "CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX")

pytestmark = [pytest.mark.realcli, pytest.mark.slow]


@pytest.fixture(scope="session")
def real_clis() -> Path:
    """The npm prefix holding both CLIs (node_modules/.bin/claude, codex); they run in Spar's
    sandbox, so bwrap must work here (`.ci/run` installs it)."""
    why = choose_sandbox("auto", os.environ.get("PATH")).why
    if why:
        pytest.skip(f"the real CLIs run in Spar's sandbox, and there is none here: {why}")
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip("npm is not installed: the real-CLI tests need it (.ci/run installs it with apt-get)")
    prefix = INSTALLS / f"{CLAUDE_VERSION}-{CODEX_VERSION}"
    prefix.mkdir(parents=True, exist_ok=True)
    with open(prefix / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one install, whichever worker or session comes first
        done = prefix / ".installed"
        if not done.exists():
            try:
                # --prefer-offline: the pinned versions come from npm's cache when it has them
                proc = subprocess.run([npm, "install", "--prefer-offline", "--prefix", str(prefix), "--no-audit",
                                       "--no-fund", "--fetch-retries=1",
                                       "--loglevel=error", *PACKAGES], capture_output=True, text=True, timeout=900)
            except subprocess.TimeoutExpired:
                pytest.skip("npm install of the real CLIs did not finish within 15 minutes")
            if proc.returncode != 0:
                pytest.skip(f"the npm registry is unavailable: {proc.stderr.strip()[-500:]}")
            done.write_text("\n".join(PACKAGES) + "\n")
    for name in ("claude", "codex"):
        if not (prefix / "node_modules" / ".bin" / name).exists():
            pytest.skip(f"npm installed no {name} executable")
    return prefix


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


def _running_from(prefix: Path) -> list[int]:
    """Processes whose command line names a file under `prefix` (the real codex)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if str(prefix).encode() in cmdline and state not in ("Z", "X"):
            found.append(int(entry))
    return found


def test_real_codex_without_network_times_out_and_leaves_nothing_running(tmp_path, real_clis):
    for k in LIMITS:  # until codex started its turn within the limit (a loaded machine may need longer)
        limit = 4 * k
        s = _setup(tmp_path / f"limit-{k}", real_clis, {"name": "codex", "preset": "codex",
                                                        "fallback_model": "gpt-5-mini", "timeout_seconds": limit})
        proc = s.run()
        assert proc.returncode == 1, proc.stderr.decode()
        log = (s.repo / "reviews" / "r1" / "codex" / "stdout.log").read_text(encoding="utf-8")
        if '"type":"turn.started"' in log:
            break
    entry = _reviewer(s)
    assert _sandbox(s) == {"kind": "bwrap", "network": "allowlist"}
    assert entry["status"] == "timeout", entry["reason"]
    assert f"no answer within {limit}s" in entry["reason"] and "process group killed" in entry["reason"]
    (attempt,) = entry["attempts"]  # a timeout is no quota refusal: no fallback
    assert attempt["exit_code"] is None
    assert attempt["argv"][1:3] == ["exec", "--json"]
    assert '"type":"turn.started"' in log  # it ran, then only retried
    assert wait_for(lambda: _running_from(real_clis) == [], timeout=30), _running_from(real_clis)
