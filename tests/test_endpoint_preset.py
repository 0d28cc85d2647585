"""The openai-compatible preset against a loopback fake endpoint: every failure of the
server told apart by its own words, the answer judged by the one answer rule, usage and
cost from the server's usage, and the request it sends (structured output, key, effort)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spar.judge.endpoint import classify_error, prompt_cut, retry_after
from spar.records.model import ReviewerStatus as S
from tests.endpointfake import FakeEndpoint, Reply, answer_chunks
from tests.innerloop import first_in_inner_loop, kept_in_inner_loop
from tests.reviewerround import STRICT_SCHEMA, Round, bwrap_or_skip

pytestmark = pytest.mark.anyio


CASES = json.loads((Path(__file__).parent / "data" / "endpoint-errors.json").read_text())["cases"]
GOOD = json.dumps({"x": "fine"})
USAGE = {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150,
         "prompt_tokens_details": {"cached_tokens": 100}}


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_each_documented_error_body_is_classified_by_its_own_words(case):
    got = classify_error(case["status"], json.dumps(case["body"]), case.get("headers", {}))
    assert got.kind == case["kind"]
    assert got.retried == (case["kind"] in ("rate_limit", "server"))


def test_retry_after_headers_are_read_in_every_documented_form():
    assert retry_after({"Retry-After": "3"}, 0) == 3.0
    assert retry_after({"retry-after-ms": "250"}, 0) == 0.25
    assert retry_after({"x-ratelimit-reset-requests": "1m30s", "x-ratelimit-reset-tokens": "20ms"}, 0) == 60.0
    assert retry_after({"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}, now=1445412475.0) == 5.0
    assert retry_after({}, 0) is None


def test_prompt_cut_only_when_far_fewer_tokens_than_the_text_holds():
    assert prompt_cut(100_000, 4096) is not None  # ollama's default context: 4k tokens of 25k
    assert prompt_cut(100_000, 25_000) is None
    assert prompt_cut(2_000, 10) is None  # too short to judge
    assert prompt_cut(100_000, None) is None


async def _run(tmp_path: Path, replies: list[Reply], **config):
    r = Round(tmp_path)
    with FakeEndpoint(replies) as fake:
        config.setdefault("model", "fake-model")
        job = r.job("ep", "openai-compatible", base_url=fake.base_url, **config)
        [outcome] = await r.run([job])
    return outcome, fake


async def test_an_answer_is_judged_and_its_usage_and_cost_recorded(tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_ENDPOINT_KEY", "sk-test")
    outcome, fake = await _run(tmp_path, [Reply(chunks=answer_chunks(GOOD, model="fake-model-2026", usage=USAGE))],
                               api_key_env="FAKE_ENDPOINT_KEY", effort="high",
                               input_usd_per_million=2.0, output_usd_per_million=8.0)
    assert outcome.status == S.COMPLETED and outcome.result == {"x": "fine"}
    assert outcome.observed_model == "fake-model-2026"
    usage = outcome.attempts[0]["usage"]
    assert (usage["input_tokens"], usage["cached_input_tokens"], usage["output_tokens"]) == (120, 100, 30)
    assert usage["cost_usd"] == pytest.approx((120 * 2.0 + 30 * 8.0) / 1e6)
    [sent] = fake.requests
    assert sent["response_format"] == {"type": "json_schema", "json_schema": {
        "name": "review_answer", "strict": True, "schema": STRICT_SCHEMA}}
    assert sent["reasoning_effort"] == "high" and sent["stream"] is True
    assert sent["stream_options"] == {"include_usage": True}
    assert "no tools" in sent["messages"][0]["content"]
    assert fake.headers[0]["Authorization"] == "Bearer sk-test"
    # the key itself is in no record: the argv names its variable
    assert "sk-test" not in json.dumps(outcome.attempts)
    assert outcome.named_words == [[]]  # no tools: it opened nothing, and Spar saw that


async def test_cost_is_unknown_without_prices(tmp_path):
    outcome, _ = await _run(tmp_path, [Reply(chunks=answer_chunks(GOOD, usage=USAGE))])
    assert outcome.attempts[0]["usage"]["cost_usd"] is None
    assert outcome.attempts[0]["usage"]["input_tokens"] == 120


async def test_a_plain_json_answer_is_read_too(tmp_path):
    body = {"model": "m1", "choices": [{"index": 0, "message": {"role": "assistant", "content": GOOD},
                                        "finish_reason": "stop"}], "usage": USAGE}
    outcome, _ = await _run(tmp_path, [Reply(body=body)])
    assert outcome.status == S.COMPLETED and outcome.result == {"x": "fine"}


async def test_an_answer_outside_the_format_is_invalid_output(tmp_path):
    outcome, _ = await _run(tmp_path, [Reply(chunks=answer_chunks("```json\n" + GOOD + "\n```"))])
    assert outcome.status == S.COMPLETED and "Markdown code fence" in outcome.output_error


async def test_finish_reason_length_is_invalid_output_saying_where(tmp_path):
    outcome, _ = await _run(tmp_path, [Reply(chunks=answer_chunks('{"x": "abcdefgh', finish="length"))])
    assert outcome.status == S.COMPLETED
    assert "cut after 15 characters" in outcome.output_error and '"length"' in outcome.output_error


async def test_a_stream_that_breaks_off_is_invalid_output_saying_where(tmp_path):
    chunks = answer_chunks('{"x": "abcdefgh', finish=None, done=False)
    outcome, _ = await _run(tmp_path, [Reply(chunks=chunks)])
    assert outcome.status == S.COMPLETED
    assert "ended after 15 characters" in outcome.output_error


async def test_a_prompt_the_server_cut_is_said_plainly(tmp_path):
    r = Round(tmp_path)
    big = "# Review packet\n\n" + "diff line with some code in it\n" * 2000
    with FakeEndpoint([Reply(chunks=answer_chunks(GOOD, usage={"prompt_tokens": 2048, "completion_tokens": 5}))]) as f:
        job = r.job("ep", "openai-compatible", base_url=f.base_url, model="m")
        job.input.text = big
        [outcome] = await r.run([job])
    assert outcome.status == S.FAILED and "cut the prompt" in outcome.reason


def _case(name: str) -> dict:
    return next(c for c in CASES if c["name"] == name)


def _reply(name: str, headers: dict | None = None) -> Reply:
    c = _case(name)
    return Reply(c["status"], c["body"], headers=dict(headers if headers is not None else c.get("headers", {})))


# each body's kind is read by the test above (every case, no server); a round per provider's
# body runs in the full suite, one of each kind in the inner loop
@pytest.mark.parametrize("name", first_in_inner_loop([c["name"] for c in CASES if c["kind"] == "quota"]))
async def test_quota_moves_to_the_fallback_model_at_once_and_never_retries(tmp_path, name):
    outcome, fake = await _run(tmp_path, [_reply(name), Reply(chunks=answer_chunks(GOOD))],
                               fallback_model="cheap-model")
    assert [a["status"] for a in outcome.attempts] == ["unavailable", "completed"]
    assert outcome.attempts[0]["reason"].startswith("quota or rate limit: quota exhausted: HTTP")
    assert [a["not_run"] for a in outcome.attempts] == ["quota", None]
    assert [req["model"] for req in fake.requests] == ["fake-model", "cheap-model"]  # one try each


@pytest.mark.parametrize("name", kept_in_inner_loop(
    ["openai-rate-limit", "litellm-rate-limit", "openai-server-error", "anthropic-overloaded", "bad-gateway",
     "litellm-timeout"], lambda _, name: name in ("openai-rate-limit", "openai-server-error")))
async def test_rate_limits_and_server_trouble_are_retried_then_answered(tmp_path, name):
    outcome, fake = await _run(tmp_path, [_reply(name, {"retry-after": "0"}), Reply(chunks=answer_chunks(GOOD))])
    assert outcome.status == S.COMPLETED and len(outcome.attempts) == 1
    assert len(fake.requests) == 2


async def test_server_trouble_that_outlasts_the_limit_is_unavailable(tmp_path):
    # a wait the time limit cannot hold ends the tries at once
    outcome, fake = await _run(tmp_path, [_reply("unavailable", {"retry-after": "30"})], timeout_seconds=20)
    assert outcome.status == S.UNAVAILABLE and outcome.reason.startswith("server: HTTP 503")
    assert outcome.not_run == "service"
    assert len(fake.requests) == 1


async def test_a_rate_limit_that_lasts_is_a_refusal_after_the_retries(tmp_path):
    outcome, fake = await _run(tmp_path, [_reply("litellm-throttling", {"retry-after": "0"})])
    assert outcome.status == S.UNAVAILABLE
    assert outcome.reason.startswith("quota or rate limit: rate limit: HTTP 429 throttling_error")
    assert len(fake.requests) == 6


@pytest.mark.parametrize("name", first_in_inner_loop(["openai-invalid-api-key", "litellm-authentication", "forbidden"]))
async def test_authentication_is_unavailable_at_once(tmp_path, name):
    outcome, fake = await _run(tmp_path, [_reply(name)], fallback_model="other")
    assert outcome.status == S.UNAVAILABLE and outcome.reason.startswith("authentication: HTTP 40")
    assert outcome.not_run == "authentication"
    assert len(outcome.attempts) == 1 and len(fake.requests) == 1


async def test_a_missing_key_variable_is_unavailable_without_a_request(tmp_path, monkeypatch):
    monkeypatch.delenv("NO_SUCH_KEY_VAR", raising=False)
    outcome, fake = await _run(tmp_path, [Reply(chunks=answer_chunks(GOOD))], api_key_env="NO_SUCH_KEY_VAR")
    assert outcome.status == S.UNAVAILABLE and "NO_SUCH_KEY_VAR" in outcome.reason
    assert fake.requests == []


async def test_no_connection_is_unavailable_network_at_once(tmp_path):
    r = Round(tmp_path)
    with FakeEndpoint([Reply()]) as fake:
        url = fake.base_url  # a port nothing listens on once the fake is gone
    job = r.job("ep", "openai-compatible", base_url=url, model="m")
    [outcome] = await r.run([job])
    assert outcome.status == S.UNAVAILABLE and outcome.reason.startswith("network: cannot connect to 127.0.0.1")
    assert outcome.not_run == "network"


def test_no_name_is_a_network_error_at_once(monkeypatch):
    import socket

    from spar.endpoint import client

    def no_name(*args, **kw):  # what the resolver says of a name it cannot find (no lookup leaves the machine)
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", no_name)
    events = []
    call = client.Call(client.Endpoint("http://no-such-host.invalid/v1"), b"{}", deadline=1e12)
    assert client.converse(call, "m", 2, client._parser().parse_args(
        ["--base-url", "x", "--model", "m", "--schema", "s", "--time-limit", "1"]), out=events.append) == 1
    assert events[-1]["kind"] == "network" and events[-1]["detail"].startswith("cannot resolve the host name")
    assert [e["type"] for e in events] == ["request", "error"]


@pytest.mark.parametrize("name", first_in_inner_loop(["openai-context-length", "litellm-context-window"]))
async def test_a_prompt_too_long_is_said_plainly(tmp_path, name):
    outcome, fake = await _run(tmp_path, [_reply(name)])
    assert outcome.status == S.FAILED and "the prompt is too long for the model" in outcome.reason
    assert len(fake.requests) == 1


async def test_another_refusal_is_failed_with_the_servers_words(tmp_path):
    outcome, _ = await _run(tmp_path, [_reply("model-not-found")])
    assert outcome.status == S.FAILED and "model_not_found" in outcome.reason


async def test_the_client_runs_inside_the_sandbox_too(tmp_path):
    """Spar's own client is a reviewer process like any other: in bwrap it must still find
    Python and the spar package (an editable install keeps it outside the interpreter's prefix)."""
    bwrap = bwrap_or_skip()
    r = Round(tmp_path)
    with FakeEndpoint([Reply(chunks=answer_chunks(GOOD, usage=USAGE))]) as fake:
        job = r.job("ep", "openai-compatible", base_url=fake.base_url, model="fake-model")
        [outcome] = await r.run([job], sandbox=bwrap)
    assert outcome.status == S.COMPLETED, outcome.reason
    assert outcome.result == {"x": "fine"}


async def test_every_try_s_usage_and_cost_is_recorded_not_only_the_last(tmp_path):
    """Two streams that broke off with a server error after their usage, then an answer:
    three streams were paid for, and the attempt records all three."""
    broken = answer_chunks(GOOD[:5], finish=None, usage=USAGE, done=False) + [
        {"error": {"message": "Overloaded", "type": "overloaded_error", "code": 529}}]
    outcome, fake = await _run(tmp_path, [Reply(chunks=broken), Reply(chunks=broken),
                                          Reply(chunks=answer_chunks(GOOD, usage=USAGE))],
                               input_usd_per_million=2.0, output_usd_per_million=8.0)
    assert outcome.status == S.COMPLETED and len(fake.requests) == 3
    [attempt] = outcome.attempts
    usage = attempt["usage"]
    assert (usage["input_tokens"], usage["cached_input_tokens"], usage["output_tokens"]) == (360, 300, 90)
    assert usage["cost_usd"] == pytest.approx(3 * (120 * 2.0 + 30 * 8.0) / 1e6)
    log = (tmp_path / "ROUND" / "ep" / "stdout.log").read_text()
    retries = [json.loads(line) for line in log.splitlines() if '"retry"' in line]
    assert [r["usage"]["prompt_tokens"] for r in retries] == [120, 120]  # each try's own, in the log too
