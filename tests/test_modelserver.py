"""The scripted model server of tests/modelserver.py, spoken to over loopback HTTP."""

from __future__ import annotations

import http.client
import json
import threading
from typing import Any

import pytest

from tests.modelserver import (
    CHAT,
    MESSAGES,
    RESPONSES,
    Answer,
    Cut,
    Delay,
    Error,
    Events,
    Hang,
    ModelServer,
    Text,
    ToolCall,
    Usage,
    anthropic_error,
    structured,
    text,
    tool_call,
)


def _post(server: ModelServer, path: str, body: dict[str, Any], headers: dict[str, str] | None = None,
          timeout: float = 60) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=timeout)
    try:
        conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json", **(headers or {})})
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


def _sse(data: bytes) -> list[tuple[str | None, Any]]:
    events = []
    for frame in data.decode().split("\n\n"):
        if not frame.strip():
            continue
        name = None
        payload = ""
        for line in frame.splitlines():
            if line.startswith("event: "):
                name = line[len("event: "):]
            elif line.startswith("data: "):
                payload = line[len("data: "):]
        events.append((name, payload if payload == "[DONE]" else json.loads(payload)))
    return events


def test_anthropic_stream_text_then_tool_use_with_usage_and_the_requested_model():
    script = [Answer((Text("looking"), ToolCall("Read", {"file_path": "/w/a.py"})), usage=Usage(input=7, output=3)),
              structured({"findings": []})]
    with ModelServer(script) as server:
        status, headers, body = _post(server, "/v1/messages?beta=true",
                                      {"model": "claude-x", "stream": True, "messages": []}, {"x-api-key": "k"})
        assert status == 200 and headers["content-type"] == "text/event-stream"
        events = _sse(body)
        assert [name for name, _ in events] == [
            "message_start", "content_block_start", "content_block_delta", "content_block_stop",
            "content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop"]
        start = events[0][1]["message"]
        assert start["model"] == "claude-x" and start["usage"]["input_tokens"] == 7
        assert events[2][1]["delta"] == {"type": "text_delta", "text": "looking"}
        tool = events[4][1]["content_block"]
        assert tool["type"] == "tool_use" and tool["name"] == "Read" and tool["input"] == {}
        assert json.loads(events[5][1]["delta"]["partial_json"]) == {"file_path": "/w/a.py"}
        assert events[7][1]["delta"]["stop_reason"] == "tool_use" and events[7][1]["usage"]["output_tokens"] == 3

        _, _, body = _post(server, "/v1/messages", {"model": "claude-x", "messages": [
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool["id"], "content": "x = 1"}]}]})
        whole = json.loads(body)  # not streamed: one JSON message
        (block,) = whole["content"]
        assert block["name"] == "StructuredOutput" and block["input"] == {"findings": []}
        assert whole["stop_reason"] == "tool_use"
    first, second = server.requests
    assert first.api == MESSAGES and first.query == {"beta": ["true"]} and first.headers["x-api-key"] == "k"
    assert first.stream and not second.stream
    assert second.tool_results() == ["x = 1"]


def test_responses_stream_function_call_and_structured_text_with_usage():
    review = {"findings": [{"title": "t"}]}
    script = [tool_call("shell", {"command": ["cat", "a.py"]}), structured(review, usage=Usage(50, 9, 10, 4))]
    with ModelServer(script) as server:
        _, _, body = _post(server, "/v1/responses", {"model": "gpt-x", "stream": True,
                                                     "tools": [{"type": "function", "name": "shell"}]})
        events = _sse(body)
        assert [n for n, _ in events] == ["response.created", "response.output_item.done", "response.completed"]
        item = events[1][1]["item"]
        assert item["type"] == "function_call" and item["name"] == "shell"
        assert json.loads(item["arguments"]) == {"command": ["cat", "a.py"]}
        _, _, body = _post(server, "/v1/responses", {"model": "gpt-x", "stream": True, "input": [
            {"type": "function_call_output", "call_id": item["call_id"], "output": "x = 1"}]})
        events = _sse(body)
        message = events[1][1]["item"]
        assert json.loads(message["content"][0]["text"]) == review
        completed = events[-1][1]["response"]
        assert completed["usage"] == {"input_tokens": 50, "input_tokens_details": {"cached_tokens": 10},
                                      "output_tokens": 9, "output_tokens_details": {"reasoning_tokens": 4},
                                      "total_tokens": 59}
        assert completed["model"] == "gpt-x"
    assert [r.api for r in server.requests] == [RESPONSES, RESPONSES]
    assert server.requests[0].tool_names() == ["shell"]
    assert server.requests[1].tool_results() == ["x = 1"]


def test_chat_completions_streamed_and_whole():
    script = [text("hello", model="served-model"), tool_call("read_file", {"path": "a.py"})]
    with ModelServer(script) as server:
        _, _, body = _post(server, "/v1/chat/completions", {"model": "m", "stream": True})
        chunks = [data for _, data in _sse(body)]
        assert chunks[-1] == "[DONE]"
        assert "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks[:-2]) == "hello"
        assert chunks[-2]["usage"]["prompt_tokens"] == 100 and chunks[0]["model"] == "served-model"
        _, _, body = _post(server, "/v1/chat/completions", {"model": "m"})
        (choice,) = json.loads(body)["choices"]
        assert choice["finish_reason"] == "tool_calls"
        (call,) = choice["message"]["tool_calls"]
        assert call["function"]["name"] == "read_file" and json.loads(call["function"]["arguments"]) == {"path": "a.py"}
    assert [r.api for r in server.requests] == [CHAT, CHAT]


def test_errors_carry_status_body_and_headers_and_the_script_runs_out_into_then():
    script = [anthropic_error(429, "rate_limit_error", "slow down", {"retry-after": "7"})]
    with ModelServer(script, then=Error(529, "overloaded")) as server:
        status, headers, body = _post(server, "/v1/messages", {"model": "m"})
        assert status == 429 and headers["retry-after"] == "7"
        assert json.loads(body) == {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}
        for _ in range(2):
            status, _, body = _post(server, "/v1/messages", {"model": "m"})
            assert (status, body) == (529, b"overloaded")


def test_a_callable_script_sees_each_request_and_other_routes_are_recorded_not_scripted():
    seen = []

    def script(request):
        seen.append(request.body["n"])
        return text(f"answer {request.body['n']}")

    with ModelServer(script) as server:
        for n in (1, 2):
            _, _, body = _post(server, "/v1/chat/completions", {"model": "m", "n": n})
            assert json.loads(body)["choices"][0]["message"]["content"] == f"answer {n}"
        status, _, _ = _post(server, "/v1/other", {})
        assert status == 404
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
        conn.request("GET", "/v1/models")
        assert conn.getresponse().status == 200
        conn.close()
    assert seen == [1, 2]
    assert [r.path for r in server.requests] == ["/v1/chat/completions"] * 2 + ["/v1/other", "/v1/models"]
    assert len(server.model_requests()) == 2


def test_raw_events_go_out_as_given():
    failed = {"type": "response.failed", "response": {"error": {"code": "insufficient_quota", "message": "q"}}}
    with ModelServer([Events((("response.failed", failed),))]) as server:
        _, _, body = _post(server, "/v1/responses", {"model": "m", "stream": True})
    assert _sse(body) == [("response.failed", failed)]


def test_a_cut_stream_ends_mid_body():
    with ModelServer([Cut(text("hello"), after=2)]) as server:
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
        conn.request("POST", "/v1/messages", json.dumps({"model": "m", "stream": True}))
        resp = conn.getresponse()
        with pytest.raises(http.client.IncompleteRead) as cut:
            resp.read()
        conn.close()
    events = _sse(cut.value.partial)
    assert [n for n, _ in events] == ["message_start", "content_block_start"]


def _in_thread(fn) -> tuple[threading.Thread, list[Any]]:
    out: list[Any] = []

    def run():
        try:
            out.append(fn())
        except Exception as exc:  # the answer, or how the connection ended
            out.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, out


@pytest.mark.parametrize("step", [Hang(), Hang(text("partial"), after=1), Delay(3600, text("late"))],
                         ids=["hang", "hang-mid-stream", "long-delay"])
def test_hangs_and_delays_hold_the_answer_until_the_server_stops(step):
    with ModelServer([step]) as server:
        thread, out = _in_thread(lambda: _post(server, "/v1/messages", {"model": "m", "stream": True}, timeout=600))
        assert server.wait_for_requests(1, timeout=60)
        thread.join(0.2)
        assert thread.is_alive() and out == []  # still no whole answer
    thread.join(60)  # stopping released it
    assert not thread.is_alive()
    assert out and not (isinstance(out[0], tuple) and out[0][0] == 200 and b"message_stop" in out[0][2])


def test_a_short_delay_then_answers():
    with ModelServer([Delay(0.01, text("late"))]) as server:
        status, _, body = _post(server, "/v1/messages", {"model": "m"})
    assert status == 200 and json.loads(body)["content"] == [{"type": "text", "text": "late"}]


def test_the_server_listens_on_loopback_only():
    with ModelServer([]) as server:
        assert server._server.server_address[0] == "127.0.0.1"
        assert server.url("/v1") == f"http://127.0.0.1:{server.port}/v1"
