"""The openai-compatible preset against a real third-party server: LiteLLM's proxy with mock
models (no provider, no weights), installed from PyPI with every file pinned by hash
(tests/data/litellm-requirements.txt) and started on loopback.

- A round with a claude fake, a codex fake and the preset against the real server
  completes, verifies, exports and gates (the issue's done-when).
- LiteLLM's own error shapes: a rate limit retried then a refusal, a server error retried
  then `unavailable`, a context window error said plainly (its mock error keywords); an
  exhausted quota (`insufficient_quota`, code "429") moving to the fallback model at once
  and a refused key (401) `unavailable` at once (raised by a callback through its own
  `ProxyException`, as its proxy raises them), and a stream ending in
  `finish_reason: "length"` `invalid_output` (its streaming hook).

The server is kept from the internet: every `LITELLM_LOCAL_*` setting points it at the
copies it ships, telemetry is off, HF_HUB_OFFLINE is set and HTTP(S)_PROXY point at a
closed local port, so a fetch it still tried would fail on the machine. The venv is
installed once per checkout into `.real-server/` (ignored by git; shared by pytest-xdist
workers, an install that did not finish is done again). When PyPI cannot be reached these
tests skip; any other install failure fails them.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from spar.records.model import ReviewerStatus as S
from tests.proctools import wait_for
from tests.reviewerround import Round
from tests.runsetup import finding, make_setup, result

pytestmark = [pytest.mark.realcli, pytest.mark.slow, pytest.mark.anyio]

VERSION = "1.108.7"
REQUIREMENTS = Path(__file__).parent / "data" / "litellm-requirements.txt"
INSTALLS = Path(__file__).resolve().parent.parent / ".real-server"  # in .gitignore
CLOSED_PROXY = "http://127.0.0.1:9"
KEY = "sk-spar-test-master"
# pip's words when the registry cannot be reached (the one case that skips)
UNREACHABLE = ("NewConnectionError", "Max retries exceeded", "Temporary failure in name resolution",
               "Network is unreachable", "No matching distribution found", "ProxyError", "Connection refused")
OFFLINE = {"LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_LOCAL_POLICY_TEMPLATES": "True",
           "LITELLM_LOCAL_AUTOROUTER_PRESETS": "True", "LITELLM_LOCAL_ANTHROPIC_BETA_HEADERS": "True",
           "LITELLM_LOCAL_BLOG_POSTS": "True", "LITELLM_TELEMETRY": "False", "HF_HUB_OFFLINE": "1",
           "HTTPS_PROXY": CLOSED_PROXY, "HTTP_PROXY": CLOSED_PROXY, "https_proxy": CLOSED_PROXY,
           "http_proxy": CLOSED_PROXY, "NO_PROXY": "", "no_proxy": ""}


@pytest.fixture(scope="session")
def litellm_bin() -> Path:
    """The `litellm` program of a venv holding exactly the pinned files."""
    prefix = INSTALLS / f"litellm-{VERSION}"
    prefix.mkdir(parents=True, exist_ok=True)
    exe = prefix / "venv" / "bin" / "litellm"
    with open(prefix / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one install, whichever worker or session comes first
        done = prefix / ".installed"
        if not done.exists() or done.read_text() != REQUIREMENTS.read_text():
            subprocess.run([sys.executable, "-m", "venv", "--clear", str(prefix / "venv")], check=True, timeout=300)
            proc = subprocess.run([str(prefix / "venv" / "bin" / "pip"), "install", "-q", "--require-hashes",
                                   "--no-deps", "--retries", "1", "-r", str(REQUIREMENTS)],
                                  capture_output=True, text=True, timeout=1800)
            if proc.returncode != 0:
                tail = proc.stderr.strip()[-800:]
                if any(word in proc.stderr for word in UNREACHABLE):
                    pytest.skip(f"PyPI cannot be reached: {tail}")
                pytest.fail(f"pip could not install the pinned LiteLLM: {tail}")
            done.write_text(REQUIREMENTS.read_text())
    assert exe.exists()
    return exe


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# LiteLLM's own extension point, a callback raising its own ProxyException or changing its
# stream, for the shapes its mock keywords cannot give: an exhausted quota, a refused key, a
# streamed answer cut at the output limit
HOOKS = '''
from litellm.integrations.custom_logger import CustomLogger
from litellm.proxy._types import ProxyException

REFUSALS = {
    "mock-quota": ("You exceeded your current quota, please check your plan and billing details.",
                   "insufficient_quota", 429),
    "mock-noauth": ("Authentication Error, Invalid proxy server token passed.", "auth_error", 401),
}


class Hooks(CustomLogger):
    async def async_pre_call_hook(self, user_api_key_dict, cache, data, call_type):
        if data.get("model") in REFUSALS:
            message, kind, code = REFUSALS[data["model"]]
            raise ProxyException(message=message, type=kind, param=None, code=code)
        return data

    async def async_post_call_streaming_iterator_hook(self, user_api_key_dict, response, request_data):
        async for chunk in response:  # mock-cut: the stream a server stopped at its output limit
            for choice in getattr(chunk, "choices", None) or []:
                if request_data.get("model") == "mock-cut" and getattr(choice, "finish_reason", None) == "stop":
                    choice.finish_reason = "length"
            yield chunk


hooks = Hooks()
'''


def _config(answer: dict) -> str:
    """Mock models: one answering `answer`, LiteLLM's mock error keywords, and two the hooks
    refuse."""
    models = {"mock-reviewer": json.dumps(answer), "mock-ratelimit": "litellm.RateLimitError",
              "mock-server": "litellm.InternalServerError", "mock-toolong": "litellm.ContextWindowExceededError",
              "mock-quota": "{}", "mock-noauth": "{}", "mock-cut": '{"x": "abcdefgh'}
    lines = ["model_list:"]
    for name, response in models.items():
        lines += [f"  - model_name: {name}", "    litellm_params:", f"      model: openai/{name}",
                  "      api_key: none", f"      mock_response: {json.dumps(response)}"]
    lines += ["general_settings:", f"  master_key: {KEY}", "litellm_settings:", "  num_retries: 0",
              "  callbacks: spar_hooks.hooks", ""]
    return "\n".join(lines)


def _alive(url: str) -> bool:
    try:
        with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(url, timeout=2) as r:
            return r.status == 200
    except OSError:
        return False


@pytest.fixture(scope="module")
def litellm(litellm_bin, tmp_path_factory):
    """The proxy on a loopback port: its base URL (…/v1). The answer of `mock-reviewer` is a
    review of the demo repository's head (the same commits in every set-up)."""
    folder = tmp_path_factory.mktemp("litellm")
    head = make_setup(folder).head
    answer = result(head=head, findings=[finding(
        id="f1", proposed_class="hardening", angle="risk", location="head/calc.py:6",
        claim="divide has no test for a zero divisor", failure_scenario="divide(1, 0) is never exercised",
        evidence="tests/test_calc.py divides 4 by 2 only", link_kind="none", link="", smallest_fix="")])
    (folder / "config.yaml").write_text(_config(answer), encoding="utf-8")
    (folder / "spar_hooks.py").write_text(HOOKS, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if "KEY" not in k and "TOKEN" not in k}
    env.update(OFFLINE, HOME=str(folder))
    port = _free_port()
    with open(folder / "server.log", "wb") as log:
        proc = subprocess.Popen([str(litellm_bin), "--config", str(folder / "config.yaml"), "--host", "127.0.0.1",
                                 "--port", str(port)], cwd=folder, env=env, start_new_session=True,
                                stdout=log, stderr=subprocess.STDOUT)
    try:
        up = wait_for(lambda: proc.poll() is not None or _alive(f"http://127.0.0.1:{port}/health/liveliness"),
                      timeout=600, poll=0.5)
        assert up and proc.poll() is None, (folder / "server.log").read_text(errors="replace")[-2000:]
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


async def _one(tmp_path: Path, base_url: str, model: str, **config):
    r = Round(tmp_path)
    r.env["LITELLM_TEST_KEY"] = KEY
    job = r.job("litellm", "openai-compatible", base_url=base_url, model=model, api_key_env="LITELLM_TEST_KEY",
                **config)
    [outcome] = await r.run([job])
    return outcome


async def test_a_real_rate_limit_is_retried_then_a_refusal(tmp_path, litellm):
    outcome = await _one(tmp_path, litellm, "mock-ratelimit", timeout_seconds=30)
    assert outcome.status == S.UNAVAILABLE
    assert outcome.reason.startswith("quota or rate limit: rate limit: HTTP 429 throttling_error: litellm.RateLimit")
    retries = [json.loads(x) for x in (tmp_path / "ROUND" / "litellm" / "stdout.log").read_text().splitlines()]
    assert [e["type"] for e in retries][:3] == ["request", "retry", "request"]


async def test_a_real_server_error_is_retried_then_unavailable(tmp_path, litellm):
    outcome = await _one(tmp_path, litellm, "mock-server", timeout_seconds=30)
    assert outcome.status == S.UNAVAILABLE
    assert outcome.reason.startswith("server: HTTP 500 internal_server_error: litellm.InternalServerError")


async def test_a_real_exhausted_quota_moves_to_the_fallback_model_at_once(tmp_path, litellm):
    outcome = await _one(tmp_path, litellm, "mock-quota", fallback_model="mock-reviewer")
    assert [a["status"] for a in outcome.attempts] == ["unavailable", "completed"]
    assert outcome.attempts[0]["reason"].startswith(
        "quota or rate limit: quota exhausted: HTTP 429 insufficient_quota: You exceeded your current quota")
    events = [json.loads(x) for x in (tmp_path / "ROUND" / "litellm" / "stdout.log").read_text().splitlines()]
    assert [e["type"] for e in events] == ["request", "error"]  # never retried


async def test_a_real_refused_key_is_unavailable_at_once(tmp_path, litellm):
    outcome = await _one(tmp_path, litellm, "mock-noauth", fallback_model="mock-reviewer")
    assert outcome.status == S.UNAVAILABLE and len(outcome.attempts) == 1
    assert outcome.reason.startswith("authentication: HTTP 401 auth_error: Authentication Error")


async def test_a_real_stream_cut_at_the_output_limit_is_invalid_output(tmp_path, litellm):
    outcome = await _one(tmp_path, litellm, "mock-cut")
    assert outcome.status == S.COMPLETED and outcome.result is None
    assert outcome.output_error.startswith("the answer was cut after 15 characters")
    assert outcome.attempts[0]["usage"]["output_tokens"] > 0


async def test_a_real_context_window_error_is_said_plainly(tmp_path, litellm):
    outcome = await _one(tmp_path, litellm, "mock-toolong")
    assert outcome.status == S.FAILED
    assert "the prompt is too long for the model: HTTP 400 invalid_request_error: litellm.ContextWindow" in outcome.reason


def test_a_round_with_the_real_server_completes_verifies_exports_and_gates(tmp_path, litellm):
    s = make_setup(tmp_path)
    s.env["LITELLM_TEST_KEY"] = KEY
    s.configure([{"name": "claude", "preset": "claude"}, {"name": "codex", "preset": "codex"},
                 {"name": "litellm", "preset": "openai-compatible", "base_url": litellm, "model": "mock-reviewer",
                  "api_key_env": "LITELLM_TEST_KEY", "input_usd_per_million": 1, "output_usd_per_million": 4}])
    with s.config.open("a", encoding="utf-8") as f:
        f.write('\n[verify]\nreviewers = ["claude", "codex"]\n')
    verdict = {"result": {"verdict": "confirmed", "evidence": "no test divides by zero", "location": None}}
    s.scenario({name: {"result": result(head=s.head, verdict="no_blocking_findings", findings=[]),
                       "by_prompt": {"ID: `litellm-F1`": verdict}} for name in ("claude", "codex")})
    proc = s.run()
    assert proc.returncode == 0, proc.stderr.decode()
    round_dir = s.repo / "reviews" / "r1"
    round_json = json.loads((round_dir / "round.json").read_text())
    entry = next(r for r in round_json["reviewers"] if r["name"] == "litellm")
    assert entry["status"] == "completed" and entry["attempts"][0]["observed_model"] == "mock-reviewer"
    usage = entry["attempts"][0]["usage"]
    assert usage["input_tokens"] > 0 and usage["output_tokens"] > 0 and usage["cost_usd"] > 0
    assert entry["attempts"][0]["coverage"]["observed"] is True
    assert entry["attempts"][0]["coverage"]["opened_files"] == []
    [found] = json.loads((round_dir / "findings.json").read_text())
    assert found["id"] == "litellm-F1"
    calls = json.loads((round_dir / "verifications.json").read_text())["calls"]
    assert [(c["finding"], c["verdict"]) for c in calls] == [("litellm-F1", "confirmed")]
    sarif = s.spar("export", "--format", "sarif", str(round_dir))
    assert sarif.returncode == 0, sarif.stderr.decode()
    assert "litellm-F1" in sarif.stdout.decode()
    gate = s.spar("gate", str(round_dir), "--out", str(tmp_path / "gate.json"))
    assert gate.returncode == 0, gate.stderr.decode()
    assert json.loads((tmp_path / "gate.json").read_text())["state"] == "passed"
    summary = (round_dir / "summary.md").read_text()
    assert "litellm" in summary and "$0.0" in summary
