"""A loopback fake of an OpenAI-compatible endpoint for the openai-compatible preset's tests.

It replays scripted answers, one per request in order (the last one repeats), and keeps
every request it received. The bodies are the servers' documented shapes
(tests/data/endpoint-errors.json; reference: openai-compatible.md).
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """One scripted answer: a status with a JSON body, or an event stream."""

    status: int = 200
    body: Any = None  # a JSON value (sent as application/json)
    chunks: list[Any] | None = None  # stream: each a JSON chunk or the literal "[DONE]"
    headers: dict[str, str] = field(default_factory=dict)


def answer_chunks(content: str, *, model: str = "fake-model", finish: str | None = "stop",
                  usage: dict[str, Any] | None = None, done: bool = True, pieces: int = 3) -> list[Any]:
    """An OpenAI-style stream of `content` in `pieces`, then the finish and usage chunks."""
    step = max(1, len(content) // pieces)
    parts = [content[i:i + step] for i in range(0, len(content), step)] or [""]
    chunks: list[Any] = [{"id": "c1", "object": "chat.completion.chunk", "model": model,
                          "choices": [{"index": 0, "delta": {"content": p}, "finish_reason": None}]} for p in parts]
    if finish is not None:
        chunks.append({"id": "c1", "object": "chat.completion.chunk", "model": model,
                       "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
    if usage is not None:
        chunks.append({"id": "c1", "object": "chat.completion.chunk", "model": model, "choices": [], "usage": usage})
    if done:
        chunks.append("[DONE]")
    return chunks


class FakeEndpoint:
    """`with FakeEndpoint([...]) as fake:` serves on 127.0.0.1; `fake.base_url` ends in /v1."""

    def __init__(self, replies: list[Reply], models: tuple[str, ...] = ("fake-model",)) -> None:
        self.replies = list(replies)
        self.models = models
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        # shutdown() waits for the serving loop to look at its flag, once per poll interval
        # (0.5 s by default: half a second per test, with the reviewer long done)
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02},
                                        daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> FakeEndpoint:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def next_reply(self, body: dict[str, Any], headers: dict[str, str]) -> Reply:
        with self._lock:
            self.requests.append(body)
            self.headers.append(headers)
            return self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:  # GET /v1/models
                if self.headers.get("Authorization") == "Bearer wrong":
                    self._json(401, {"error": {"message": "Incorrect API key provided", "type":
                                               "invalid_request_error", "code": "invalid_api_key"}})
                    return
                self._json(200, {"object": "list", "data": [{"id": m, "object": "model"} for m in fake.models]})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length))
                reply = fake.next_reply(body, dict(self.headers.items()))
                if reply.chunks is None:
                    self._json(reply.status, reply.body, reply.headers)
                    return
                self.send_response(reply.status)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                for chunk in reply.chunks:
                    data = chunk if chunk == "[DONE]" else json.dumps(chunk)
                    self.wfile.write(f"data: {data}\n\n".encode())
                    self.wfile.flush()
                self.close_connection = True

            def _json(self, status: int, value: Any, headers: dict[str, str] | None = None) -> None:
                data = json.dumps(value).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

        return Handler
