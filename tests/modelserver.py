"""A scripted model server on 127.0.0.1 for running the real reviewer CLIs offline.

It speaks the three wire formats the reviewers use: Anthropic Messages (`POST /v1/messages`,
claude), OpenAI Responses (`POST /v1/responses`, codex) and OpenAI chat completions
(`POST /v1/chat/completions`, the openai-compatible preset), each streamed as Server-Sent Events
when the request says `"stream": true` and as one JSON body otherwise. Every model request is
answered by the next step of the test's script, and every request is recorded.

    with ModelServer([tool_call("Read", {"file_path": p}), structured(review)]) as server:
        env["ANTHROPIC_BASE_URL"] = server.base_url
        ...
        assert server.requests[1].tool_results() ...

Steps (one per request): `Answer` (text, tool calls, structured output, usage, model),
`Error` (a status with a body and headers), `Events` (raw SSE events, e.g. an in-stream error),
`Delay` (wait, then another step), `Hang` (no answer, or part of one, until the server stops),
`Cut` (part of an answer, then the connection is dropped). A script is a list of steps (with
`then`, the step for every request after the list), or a callable from `Request` to step.
Stopping the server releases every hang and delay at once (they wait on one event).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import socket
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.loopserver import LoopbackServer

MESSAGES, RESPONSES, CHAT = "messages", "responses", "chat"  # the wire formats, Request.api


# --- what a test scripts -------------------------------------------------------------------------

@dataclass(frozen=True)
class Usage:
    """Token counts, written in each format's own field names."""

    input: int = 100
    output: int = 20
    cached: int = 0
    reasoning: int = 0


@dataclass(frozen=True)
class Text:
    text: str


@dataclass(frozen=True)
class ToolCall:
    """A tool call: claude's tool_use (Read, Grep, Glob …), codex's function_call (shell …), a
    chat completion's tool_calls entry."""

    name: str
    input: dict[str, Any]
    id: str = ""  # "" = numbered by the server


@dataclass(frozen=True)
class Structured:
    """The review as structured output: claude's `StructuredOutput` tool call; for the OpenAI
    formats (whose structured output is the answer's text) the JSON text of the value."""

    value: Any


Block = Text | ToolCall | Structured


@dataclass(frozen=True)
class Answer:
    blocks: tuple[Block, ...]
    usage: Usage = Usage()
    model: str | None = None  # None: the model the request named


@dataclass(frozen=True)
class Error:
    """An HTTP error: `body` a JSON value (or a str sent as is), `headers` e.g. retry-after."""

    status: int
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Events:
    """Raw SSE events, sent as given after a 200: (event name or None, JSON data or a str)."""

    events: tuple[tuple[str | None, Any], ...]


@dataclass(frozen=True)
class Delay:
    seconds: float
    step: Step


@dataclass(frozen=True)
class Hang:
    """No answer until the server stops; with `step`, its first `after` events go out first."""

    step: Step | None = None
    after: int = 0


@dataclass(frozen=True)
class Cut:
    """The first `after` events of `step` (a stream), then the connection is dropped mid-body."""

    step: Step
    after: int = 1


Step = Answer | Error | Events | Delay | Hang | Cut


def text(value: str, **kw: Any) -> Answer:
    return Answer((Text(value),), **kw)


def tool_call(name: str, args: dict[str, Any], **kw: Any) -> Answer:
    return Answer((ToolCall(name, args),), **kw)


def structured(value: Any, **kw: Any) -> Answer:
    return Answer((Structured(value),), **kw)


def anthropic_error(status: int, kind: str, message: str, headers: dict[str, str] | None = None) -> Error:
    return Error(status, {"type": "error", "error": {"type": kind, "message": message}}, headers or {})


def openai_error(status: int, message: str, kind: str | None = None, code: str | None = None,
                 headers: dict[str, str] | None = None, **extra: Any) -> Error:
    return Error(status, {"error": {"message": message, "type": kind, "code": code, **extra}}, headers or {})


@dataclass
class Request:
    """One request the server got: `body` is the parsed JSON (None when it was not JSON)."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]  # names lower-cased
    body: Any
    api: str | None  # MESSAGES, RESPONSES, CHAT, or None for anything else

    @property
    def stream(self) -> bool:
        return isinstance(self.body, dict) and self.body.get("stream") is True

    def tool_names(self) -> list[str]:
        """The names of the tools the request offers the model."""
        tools = self.body.get("tools") or [] if isinstance(self.body, dict) else []
        return [t.get("name") or (t.get("function") or {}).get("name") or t.get("type") for t in tools]

    def tool_results(self) -> list[str]:
        """The text of every tool result the request carries back (any format), in order."""
        found: list[str] = []
        for item in _walk(self.body):
            kind = item.get("type")
            if kind == "tool_result":
                content = item.get("content")
                found.append(content if isinstance(content, str) else json.dumps(content))
            elif kind == "function_call_output":
                found.append(str(item.get("output")))
            elif item.get("role") == "tool":
                found.append(str(item.get("content")))
        return found


Script = Sequence[Step] | Callable[[Request], Step]


# --- the server ----------------------------------------------------------------------------------

class ModelServer(LoopbackServer):
    """`with ModelServer(script) as server:` serves on 127.0.0.1 (a free port); `base_url` is
    the root (claude's ANTHROPIC_BASE_URL), `url("/v1")` an OpenAI base URL."""

    def __init__(self, script: Script, *, then: Step | None = None) -> None:
        self._script = script if callable(script) else iter(list(script))
        self._then = then if then is not None else openai_error(500, "the test's script ran out", "server_error")
        self.requests: list[Request] = []
        self._changed = threading.Condition()
        self._stopping = threading.Event()
        self._ids = itertools.count(1)
        super().__init__(_handler(self))

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url(self, path: str = "/v1") -> str:
        return self.base_url + path

    def model_requests(self) -> list[Request]:
        with self._changed:
            return [r for r in self.requests if r.api is not None]

    def wait_for_requests(self, count: int, timeout: float) -> bool:
        """True once `count` model requests came in (False after `timeout` seconds)."""
        with self._changed:
            return self._changed.wait_for(lambda: len([r for r in self.requests if r.api]) >= count, timeout)

    def __exit__(self, *exc: object) -> None:
        self._stopping.set()  # every Hang and Delay returns now
        super().__exit__(*exc)

    def next_id(self, prefix: str) -> str:
        return f"{prefix}_{next(self._ids)}"

    def _record(self, request: Request) -> Step | None:
        with self._changed:
            self.requests.append(request)
            self._changed.notify_all()
        if request.api is None:
            return None
        if callable(self._script):
            return self._script(request)
        return next(self._script, self._then)


def _walk(value: Any) -> Iterable[dict[str, Any]]:
    if isinstance(value, dict):
        yield value
        for v in value.values():
            yield from _walk(v)
    elif isinstance(value, list):
        for v in value:
            yield from _walk(v)


def _api(method: str, path: str) -> str | None:
    if method != "POST":
        return None
    if path.endswith("/messages"):
        return MESSAGES
    if path.endswith("/responses"):
        return RESPONSES
    if path.endswith("/chat/completions"):
        return CHAT
    return None


def _handler(server: ModelServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            self._serve("GET")

        def do_POST(self) -> None:
            self._serve("POST")

        def _serve(self, method: str) -> None:
            self.close_connection = True  # one request per connection: nothing lingers at stop
            parts = urlsplit(self.path)
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = None
            request = Request(method, parts.path, parse_qs(parts.query),
                              {k.lower(): v for k, v in self.headers.items()}, body, _api(method, parts.path))
            step = server._record(request)
            if step is None:
                self._other(request)
                return
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # the client gave up
                _Reply(self, server, request).send(step)

        def _other(self, request: Request) -> None:
            if request.method == "GET" and request.path.endswith("/models"):
                _Reply(self, server, request).json(200, {"object": "list", "data": []})
            else:
                _Reply(self, server, request).json(404, {"error": {"message": f"no route {request.path}"}})

    return Handler


class _Reply:
    """Writes one step as the answer to one request, in the request's format."""

    def __init__(self, handler: BaseHTTPRequestHandler, server: ModelServer, request: Request) -> None:
        self.h, self.server, self.request = handler, server, request

    def send(self, step: Step) -> None:
        match step:
            case Error(status, body, headers):
                self.json(status, body, headers)
            case Delay(seconds, inner):
                if not self.server._stopping.wait(seconds):
                    self.send(inner)
            case Hang(inner, after):
                if inner is not None:
                    self.stream(self.events(inner)[:after], end=False)
                self.server._stopping.wait()
            case Cut(inner, after):
                self.stream(self.events(inner)[:after], end=False)
                self.h.connection.shutdown(socket.SHUT_RDWR)  # mid-body: no last chunk
            case Events() | Answer() if self.request.stream:
                self.stream(self.events(step))
            case Answer():
                self.json(200, _whole(self.request.api, self._answer(step)))
            case Events():
                self.stream(self.events(step))

    def events(self, step: Step) -> list[tuple[str | None, Any]]:
        if isinstance(step, Events):
            return list(step.events)
        if not isinstance(step, Answer):
            raise TypeError(f"{type(step).__name__} has no events to stream")
        return _stream_events(self.request.api, self._answer(step))

    def _answer(self, step: Answer) -> _Filled:
        model = step.model or (self.request.body or {}).get("model") or "scripted-model"
        ids = [(b.id if isinstance(b, ToolCall) else "") or self.server.next_id("toolu")
               for b in step.blocks if not isinstance(b, Text)]
        return _Filled(step, model, self.server.next_id("msg"), ids)

    def json(self, status: int, value: Any, headers: dict[str, str] | None = None) -> None:
        data = value.encode() if isinstance(value, str) else json.dumps(value).encode()
        self.h.send_response(status)
        self.h.send_header("Content-Type", "application/json" if not isinstance(value, str) else "text/plain")
        self.h.send_header("Content-Length", str(len(data)))
        self.h.send_header("Connection", "close")
        for k, v in (headers or {}).items():
            self.h.send_header(k, v)
        self.h.end_headers()
        self.h.wfile.write(data)
        self.h.wfile.flush()

    def stream(self, events: list[tuple[str | None, Any]], end: bool = True) -> None:
        """SSE in chunked transfer encoding, as the real APIs send it (so a cut is visible)."""
        self.h.send_response(200)
        self.h.send_header("Content-Type", "text/event-stream")
        self.h.send_header("Transfer-Encoding", "chunked")
        self.h.send_header("Connection", "close")
        self.h.end_headers()
        for name, data in events:
            payload = data if isinstance(data, str) else json.dumps(data)
            frame = (f"event: {name}\n" if name else "") + f"data: {payload}\n\n"
            self._chunk(frame.encode())
        if end:
            self.h.wfile.write(b"0\r\n\r\n")
        self.h.wfile.flush()

    def _chunk(self, data: bytes) -> None:
        self.h.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.h.wfile.flush()


@dataclass
class _Filled:
    """An Answer with what the server fills in: the model, a message id, the tool call ids."""

    answer: Answer
    model: str
    id: str
    call_ids: list[str]

    def calls(self) -> list[tuple[str, ToolCall | Structured]]:
        """Each tool call or structured output block with its id."""
        blocks = [b for b in self.answer.blocks if not isinstance(b, Text)]
        return list(zip(self.call_ids, blocks, strict=True))


def _call(block: ToolCall | Structured) -> tuple[str, Any]:
    """(name, input) of a tool call; structured output is claude's StructuredOutput tool."""
    return (block.name, block.input) if isinstance(block, ToolCall) else ("StructuredOutput", block.value)


def _stream_events(api: str | None, f: _Filled) -> list[tuple[str | None, Any]]:
    if api == MESSAGES:
        return _anthropic_events(f)
    if api == RESPONSES:
        return _responses_events(f)
    return _chat_events(f)


def _whole(api: str | None, f: _Filled) -> Any:
    if api == MESSAGES:
        return _anthropic_message(f)
    if api == RESPONSES:
        return _responses_object(f, "completed")
    return _chat_completion(f)


# --- Anthropic Messages --------------------------------------------------------------------------

def _anthropic_usage(u: Usage) -> dict[str, int]:
    return {"input_tokens": u.input, "output_tokens": u.output, "cache_read_input_tokens": u.cached,
            "cache_creation_input_tokens": 0}


def _anthropic_blocks(f: _Filled) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    ids = iter(f.call_ids)  # one per block that is not text, in order
    for b in f.answer.blocks:
        if isinstance(b, Text):
            blocks.append({"type": "text", "text": b.text})
        else:
            name, value = _call(b)
            blocks.append({"type": "tool_use", "id": next(ids), "name": name, "input": value})
    return blocks


def _anthropic_stop(f: _Filled) -> str:
    return "tool_use" if f.call_ids else "end_turn"


def _anthropic_message(f: _Filled) -> dict[str, Any]:
    return {"id": f.id, "type": "message", "role": "assistant", "model": f.model, "content": _anthropic_blocks(f),
            "stop_reason": _anthropic_stop(f), "stop_sequence": None, "usage": _anthropic_usage(f.answer.usage)}


def _anthropic_events(f: _Filled) -> list[tuple[str | None, Any]]:
    start = {**_anthropic_message(f), "content": [], "stop_reason": None,
             "usage": {**_anthropic_usage(f.answer.usage), "output_tokens": 1}}
    events: list[tuple[str | None, Any]] = [("message_start", {"type": "message_start", "message": start})]
    for index, block in enumerate(_anthropic_blocks(f)):
        opening: dict[str, Any]
        if block["type"] == "text":
            opening, delta = {"type": "text", "text": ""}, {"type": "text_delta", "text": block["text"]}
        else:
            opening = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        events += [("content_block_start", {"type": "content_block_start", "index": index, "content_block": opening}),
                   ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}),
                   ("content_block_stop", {"type": "content_block_stop", "index": index})]
    events += [("message_delta", {"type": "message_delta",
                                  "delta": {"stop_reason": _anthropic_stop(f), "stop_sequence": None},
                                  "usage": {"output_tokens": f.answer.usage.output}}),
               ("message_stop", {"type": "message_stop"})]
    return events


# --- OpenAI Responses ----------------------------------------------------------------------------

def _responses_items(f: _Filled) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    ids = iter(f.call_ids)  # one per block that is not text, in order
    for n, b in enumerate(f.answer.blocks):
        if isinstance(b, ToolCall):
            items.append({"type": "function_call", "id": f"fc_{n}_{f.id}", "call_id": next(ids), "name": b.name,
                          "arguments": json.dumps(b.input), "status": "completed"})
            continue
        if isinstance(b, Structured):
            next(ids)
        words = b.text if isinstance(b, Text) else json.dumps(b.value)
        items.append({"type": "message", "id": f"{f.id}_{n}", "role": "assistant", "status": "completed",
                      "content": [{"type": "output_text", "text": words, "annotations": []}]})
    return items


def _responses_object(f: _Filled, status: str) -> dict[str, Any]:
    u = f.answer.usage
    usage = {"input_tokens": u.input, "input_tokens_details": {"cached_tokens": u.cached},
             "output_tokens": u.output, "output_tokens_details": {"reasoning_tokens": u.reasoning},
             "total_tokens": u.input + u.output}
    done = status == "completed"
    return {"id": "resp_" + f.id, "object": "response", "status": status, "model": f.model,
            "output": _responses_items(f) if done else [], "usage": usage if done else None}


def _responses_events(f: _Filled) -> list[tuple[str | None, Any]]:
    events: list[tuple[str | None, Any]] = [
        ("response.created", {"type": "response.created", "response": _responses_object(f, "in_progress")})]
    for index, item in enumerate(_responses_items(f)):
        events.append(("response.output_item.done",
                       {"type": "response.output_item.done", "output_index": index, "item": item}))
    events.append(("response.completed", {"type": "response.completed",
                                          "response": _responses_object(f, "completed")}))
    return events


# --- OpenAI chat completions ---------------------------------------------------------------------

def _chat_message(f: _Filled) -> tuple[dict[str, Any], str]:
    words = "".join(b.text if isinstance(b, Text) else json.dumps(b.value)
                    for b in f.answer.blocks if not isinstance(b, ToolCall))
    message: dict[str, Any] = {"role": "assistant", "content": words or None}
    calls = [{"id": call_id, "type": "function", "function": {"name": b.name, "arguments": json.dumps(b.input)}}
             for call_id, b in f.calls() if isinstance(b, ToolCall)]
    if calls:
        message["tool_calls"] = calls
    return message, "tool_calls" if calls else "stop"


def _chat_usage(u: Usage) -> dict[str, Any]:
    return {"prompt_tokens": u.input, "completion_tokens": u.output, "total_tokens": u.input + u.output,
            "prompt_tokens_details": {"cached_tokens": u.cached},
            "completion_tokens_details": {"reasoning_tokens": u.reasoning}}


def _chat_completion(f: _Filled) -> dict[str, Any]:
    message, finish = _chat_message(f)
    return {"id": f.id, "object": "chat.completion", "model": f.model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}], "usage": _chat_usage(f.answer.usage)}


def _chat_events(f: _Filled) -> list[tuple[str | None, Any]]:
    message, finish = _chat_message(f)

    def chunk(delta: dict[str, Any], reason: str | None) -> tuple[None, dict[str, Any]]:
        return None, {"id": f.id, "object": "chat.completion.chunk", "model": f.model,
                      "choices": [{"index": 0, "delta": delta, "finish_reason": reason}]}

    events: list[tuple[str | None, Any]] = [chunk({"role": "assistant", "content": ""}, None)]
    if message["content"]:
        events.append(chunk({"content": message["content"]}, None))
    for n, call in enumerate(message.get("tool_calls", [])):
        events.append(chunk({"tool_calls": [{"index": n, **call}]}, None))
    events.append(chunk({}, finish))
    events.append((None, {"id": f.id, "object": "chat.completion.chunk", "model": f.model, "choices": [],
                          "usage": _chat_usage(f.answer.usage)}))
    events.append((None, "[DONE]"))
    return events


__all__ = ["CHAT", "MESSAGES", "RESPONSES", "Answer", "Cut", "Delay", "Error", "Events", "Hang", "ModelServer",
           "Request", "Script", "Structured", "Text", "ToolCall", "Usage", "anthropic_error", "openai_error",
           "structured", "text", "tool_call"]
