"""The `openai-compatible` reviewer: one chat completion from an OpenAI-compatible endpoint.

Run by the round like any reviewer CLI (`python -I -m spar.endpoint.client …`, the
packet on stdin, under the same keeper, time limit, logs and output cap). It posts
the packet with the answer schema as strict structured output, reads the streamed
answer, and prints what happened as JSON lines the preset's monitor reads:

    {"type": "request", "try": 1, "model": M, "prompt_chars": N}
    {"type": "retry", "try": 1, "kind": "rate_limit", "detail": "HTTP 429 …", "wait_seconds": 2.0,
     "usage": {…}, "cost_usd": X|null}   (usage and cost: when the failed try's stream reported usage)
    {"type": "answer", "model": M, "finish_reason": "stop", "content": "…", "usage": {…}|null,
     "cost_usd": X|null, "cut": null|"where it was cut", "prompt_chars": N}
    {"type": "error", "kind": K, "detail": "…", "tries": n}

A rate limit or server trouble (spar/judge/endpoint.py: `RETRIED`) is tried again
after a backoff while the time limit leaves room; everything else ends the run at
once. Every read is bounded in bytes and time. Exit 0 after an answer, 1 otherwise.
It also answers `spar doctor` and `spar init` (`list_models`). Standard library only.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import socket
import ssl
import sys
import threading
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from spar.endpoint.proxy import Proxy, UnusableProxy, proxy_for
from spar.judge.endpoint import ServerError, backoff, classify_error, cost_usd, usage_counts

MAX_ANSWER = 8 * 1024 * 1024  # bytes of a response read at most
MAX_ERROR = 64 * 1024  # bytes of an error body read at most
MAX_SCHEMA = 1024 * 1024
MAX_TRIES = 6
RETRY_MARGIN = 0.2  # of the time limit: what a retry must leave for its own request
CHAT_PATH = "/chat/completions"


class NetworkError(Exception):
    """The endpoint could not be reached (no name, no connection, TLS, no answer in time)."""


@dataclass
class Endpoint:
    """Where to send requests and how to authenticate."""

    base_url: str
    key: str | None = None

    def url(self, path: str) -> urllib.parse.SplitResult:
        return urllib.parse.urlsplit(self.base_url.rstrip("/") + path)

    def headers(self) -> dict[str, str]:
        out = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
               "User-Agent": "spar"}
        if self.key:
            out["Authorization"] = f"Bearer {self.key}"
        return out


def _connect(url: urllib.parse.SplitResult, timeout: float, proxy: Proxy | None) -> http.client.HTTPConnection:
    if proxy is None:
        if url.scheme == "https":
            return http.client.HTTPSConnection(url.hostname or "", url.port, timeout=timeout,
                                               context=ssl.create_default_context())
        return http.client.HTTPConnection(url.hostname or "", url.port, timeout=timeout)
    if url.scheme == "https":  # a CONNECT tunnel: TLS with the endpoint itself, its certificate checked
        conn = http.client.HTTPSConnection(proxy.host, proxy.port, timeout=timeout,
                                           context=ssl.create_default_context())
        conn.set_tunnel(url.hostname or "", url.port or 443, headers=proxy.headers())
        return conn
    return http.client.HTTPConnection(proxy.host, proxy.port, timeout=timeout)


def _target(url: urllib.parse.SplitResult, proxy: Proxy | None) -> str:
    if proxy is not None and url.scheme != "https":
        return urllib.parse.urlunsplit((url.scheme, url.netloc, url.path or "/", url.query, ""))
    return (url.path or "/") + (f"?{url.query}" if url.query else "")


def request(endpoint: Endpoint, method: str, path: str, body: bytes | None, timeout: float,
            watch: Callable[[http.client.HTTPConnection], None] | None = None,
            ) -> tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
    """Send one request (through the proxy the environment names, spar.endpoint.proxy) and
    read the status line and headers; NetworkError when it cannot. `timeout` bounds each
    socket operation; `watch` is given the connection before it is used (a total deadline)."""
    url = endpoint.url(path)
    where = f"{url.hostname}:{url.port or (443 if url.scheme == 'https' else 80)}"
    try:
        proxy = proxy_for(url, os.environ)
    except UnusableProxy as exc:
        raise NetworkError(str(exc)) from exc
    headers = endpoint.headers()
    if proxy is not None:
        where += f" through the proxy {proxy.where}"
        if url.scheme != "https":
            headers.update(proxy.headers())
    conn = _connect(url, max(timeout, 0.001), proxy)
    if watch is not None:
        watch(conn)
    try:
        conn.request(method, _target(url, proxy), body=body, headers=headers)
        return conn, conn.getresponse()
    except socket.gaierror as exc:
        conn.close()
        named = f"{url.hostname!r}" if proxy is None else f"{proxy.host!r} of the proxy"
        raise NetworkError(f"cannot resolve the host name {named}: {exc.strerror or exc}") from exc
    except TimeoutError as exc:
        conn.close()
        raise NetworkError(f"no answer from {where} within the time limit") from exc
    except ssl.SSLError as exc:
        conn.close()
        raise NetworkError(f"TLS with {where} failed: {exc.reason or exc}") from exc
    except (OSError, http.client.HTTPException) as exc:
        conn.close()
        raise NetworkError(f"cannot connect to {where}: {getattr(exc, 'strerror', None) or exc}") from exc


def read_bounded(resp: http.client.HTTPResponse, limit: int) -> bytes:
    """The body, at most `limit` bytes (the rest is left unread)."""
    return resp.read(limit)


class _Deadline:
    """Ends a connection's socket at a total deadline: a socket timeout bounds each read, and
    a server sending one byte at a time keeps every read short."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.passed = False
        self._conns: list[http.client.HTTPConnection] = []
        self._timer = threading.Timer(max(seconds, 0.0), self._end)
        self._timer.daemon = True

    def watch(self, conn: http.client.HTTPConnection) -> None:
        self._conns.append(conn)

    def _end(self) -> None:
        self.passed = True
        for conn in self._conns:
            if conn.sock is not None:  # the plain socket's own shutdown, under TLS too: reads end at once
                with contextlib.suppress(OSError):
                    socket.socket.shutdown(conn.sock, socket.SHUT_RDWR)

    def __enter__(self) -> _Deadline:
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()


Models = tuple[int, list[str], ServerError | None]


def list_models(endpoint: Endpoint, timeout: float) -> Models:
    """`GET /models`: (status, the model ids listed, the error when the status is not 200),
    all within `timeout` seconds. Raises NetworkError when the endpoint cannot be reached or
    has not answered whole by then."""
    # the host name's lookup has no timeout of its own: the probe runs in a thread the caller
    # stops waiting for (its socket is shut at the deadline; a lookup ends by itself)
    box: list[Models | Exception] = []

    def probe() -> None:
        try:
            box.append(_list_models(endpoint, timeout))
        except Exception as exc:  # raised again in the caller's thread
            box.append(exc)

    worker = threading.Thread(target=probe, name="spar-list-models", daemon=True)
    worker.start()
    worker.join(timeout + 1.0)
    if not box:
        raise NetworkError(f"no answer to GET /models from {endpoint.base_url} within {timeout:g}s "
                           "(its host name was not resolved by then)")
    if isinstance(box[0], Exception):
        raise box[0]
    return box[0]


def _list_models(endpoint: Endpoint, timeout: float) -> Models:
    late = f"no whole answer to GET /models from {endpoint.base_url} within {timeout:g}s"
    with _Deadline(timeout) as limit:
        try:
            conn, resp = request(endpoint, "GET", "/models", None, timeout, watch=limit.watch)
        except NetworkError as exc:
            raise NetworkError(late) if limit.passed else exc from None
        try:
            body = read_bounded(resp, MAX_ERROR if resp.status != 200 else MAX_ANSWER)
        except (OSError, http.client.HTTPException) as exc:
            raise NetworkError(late if limit.passed else f"the answer to GET /models broke off: {exc}") from exc
        finally:
            conn.close()
    if limit.passed:
        raise NetworkError(late)
    if resp.status != 200:
        return resp.status, [], classify_error(resp.status, body, dict(resp.getheaders()))
    try:
        data = json.loads(body).get("data")
    except (ValueError, AttributeError, RecursionError):
        data = None
    ids = [m["id"] for m in data if isinstance(m, dict) and isinstance(m.get("id"), str)] \
        if isinstance(data, list) else []
    return resp.status, ids, None


# ---------------------------------------------------------------- one chat completion


@dataclass
class Streamed:
    """What a response said so far."""

    content: list[str] = field(default_factory=list)
    finish_reason: str | None = None
    model: str | None = None
    usage: dict[str, Any] | None = None
    done: bool = False  # `data: [DONE]` seen, or a whole non-streamed answer read
    cut: str | None = None  # where and why the answer broke off
    error: ServerError | None = None  # an error the stream itself carried

    def text(self) -> str:
        return "".join(self.content)

    def take(self, chunk: dict[str, Any]) -> None:
        """One chunk of a stream, or a whole answer (`message` instead of `delta`)."""
        if isinstance(chunk.get("model"), str) and chunk["model"]:
            self.model = chunk["model"]
        if isinstance(chunk.get("usage"), dict):
            self.usage = chunk["usage"]
        if isinstance(chunk.get("error"), (dict, str)):
            code = chunk["error"].get("code") if isinstance(chunk["error"], dict) else None
            status = int(code) if isinstance(code, (int, str)) and str(code).isdigit() else 502
            self.error = classify_error(status, json.dumps(chunk), {})
        choices = chunk.get("choices")
        first = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else {}
        part = first.get("delta") if isinstance(first.get("delta"), dict) else first.get("message")
        if isinstance(part, dict) and isinstance(part.get("content"), str):
            self.content.append(part["content"])
        if isinstance(first.get("finish_reason"), str):
            self.finish_reason = first["finish_reason"]


def read_stream(resp: http.client.HTTPResponse, out: Streamed) -> None:
    """Server-Sent Events (`data: {chunk}` … `data: [DONE]`), or one JSON answer."""
    if "text/event-stream" not in (resp.getheader("Content-Type") or ""):
        body = read_bounded(resp, MAX_ANSWER + 1)
        if len(body) > MAX_ANSWER:
            out.cut = f"Spar stopped reading the answer after {MAX_ANSWER:,} bytes"
            return
        try:
            out.take(json.loads(body))
            out.done = True
        except (ValueError, AttributeError, RecursionError):
            out.cut = f"the answer is not a JSON object ({len(body):,} bytes)"
        return
    read = 0
    while not out.done and out.error is None:
        line = resp.readline(MAX_ANSWER - read + 1)
        if not line:
            return
        read += len(line)
        if read > MAX_ANSWER:
            out.cut = f"Spar stopped reading the stream after {MAX_ANSWER:,} bytes"
            return
        _sse_line(line, out)


def _sse_line(line: bytes, out: Streamed) -> None:
    text = line.decode("utf-8", "replace").strip()
    if not text.startswith("data:"):
        return  # comments, `event:` and blank lines carry nothing Spar reads
    data = text[5:].strip()
    if data == "[DONE]":
        out.done = True
        return
    try:
        chunk = json.loads(data)
    except (ValueError, RecursionError):
        return
    if isinstance(chunk, dict):
        out.take(chunk)


@dataclass
class Call:
    """One request's settings."""

    endpoint: Endpoint
    body: bytes
    deadline: float  # time.monotonic() by which everything must be over
    margin: float = 2.0  # a retry needs this much time left after its wait (the runner's clock started first)


def chat_once(call: Call) -> Streamed | ServerError:
    """One try: the stream read (maybe cut, maybe ended by an error it carried), or the
    server's error answer."""
    timeout = call.deadline - time.monotonic()
    conn, resp = request(call.endpoint, "POST", CHAT_PATH, call.body, timeout)
    try:
        if resp.status != 200:
            try:
                body = read_bounded(resp, MAX_ERROR)
            except (OSError, http.client.HTTPException):
                body = b""
            return classify_error(resp.status, body, dict(resp.getheaders()), time.time())
        out = Streamed()
        try:
            read_stream(resp, out)
        except (OSError, http.client.HTTPException) as exc:
            out.cut = f"the connection broke after {len(out.text()):,} characters of the answer: {exc or type(exc)}"
        if out.error is not None:
            return out  # the error its stream carried, with what the stream used until then
        if out.cut is None and not out.done and out.finish_reason is None:
            out.cut = (f"the stream ended after {len(out.text()):,} characters of the answer, "
                       "without a finish_reason or [DONE]")
        return out
    finally:
        conn.close()


# ---------------------------------------------------------------- the reviewer program


def chat_body(model: str, packet: str, schema: dict[str, Any], effort: str) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": model,
        "messages": [{"role": "user", "content": packet}],
        "stream": True,
        "stream_options": {"include_usage": True},
        "response_format": {"type": "json_schema",
                            "json_schema": {"name": "review_answer", "strict": True, "schema": schema}},
    }
    if effort:
        body["reasoning_effort"] = effort
    return body


Emit = Callable[[dict[str, Any]], None]


def emit(event: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(event, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def converse(call: Call, model: str, prompt_chars: int, args: argparse.Namespace, out: Emit = emit) -> int:
    """Tries until an answer, an error not worth retrying, or no time left for another."""
    for tries in range(1, MAX_TRIES + 1):
        out({"type": "request", "try": tries, "model": model, "prompt_chars": prompt_chars})
        try:
            got = chat_once(call)
        except NetworkError as exc:
            out({"type": "error", "kind": "network", "detail": str(exc), "tries": tries})
            return 1
        if isinstance(got, ServerError):
            error = got
        elif got.error is None:
            out(_answer_event(got, prompt_chars, args))
            return 0
        else:
            error = got.error
        spent = _spent(got, args)  # a stream that broke off with an error was paid for all the same
        wait = backoff(tries, error.retry_after, args.backoff)
        if not error.retried or tries == MAX_TRIES or time.monotonic() + wait + call.margin >= call.deadline:
            out({"type": "error", "kind": error.kind, "detail": error.describe(), "tries": tries, **spent})
            return 1
        out({"type": "retry", "try": tries, "kind": error.kind, "detail": error.describe(), "wait_seconds": wait,
             **spent})
        time.sleep(wait)
    return 1  # pragma: no cover - the loop always returns


def _spent(got: Streamed | ServerError, args: argparse.Namespace) -> dict[str, Any]:
    """The usage a failed try's stream reported, and its cost; {} when it reported none."""
    if not isinstance(got, Streamed) or got.usage is None:
        return {}
    prompt, _, completion = usage_counts(got.usage)
    return {"usage": got.usage, "cost_usd": cost_usd(prompt, completion, args.input_price, args.output_price)}


def _answer_event(got: Streamed, prompt_chars: int, args: argparse.Namespace) -> dict[str, Any]:
    prompt, _, completion = usage_counts(got.usage or {})
    return {"type": "answer", "model": got.model, "finish_reason": got.finish_reason, "content": got.text(),
            "usage": got.usage, "cost_usd": cost_usd(prompt, completion, args.input_price, args.output_price),
            "cut": got.cut, "prompt_chars": prompt_chars}


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="spar.endpoint.client",
                                description="One chat completion from an OpenAI-compatible endpoint, for Spar.")
    p.add_argument("--base-url", required=True)
    p.add_argument("--model", required=True)
    p.add_argument("--schema", required=True, help="the answer schema (JSON file)")
    p.add_argument("--time-limit", type=float, required=True, help="seconds for every try and wait together")
    p.add_argument("--key-env", default="", help="the environment variable holding the API key")
    p.add_argument("--effort", default="")
    p.add_argument("--input-price", type=float, default=None, help="USD per million input tokens")
    p.add_argument("--output-price", type=float, default=None, help="USD per million output tokens")
    p.add_argument("--backoff", type=float, default=1.0, help="first wait before a retry, in seconds")
    return p


def review(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    deadline = time.monotonic() + args.time_limit
    key = None
    if args.key_env:
        key = os.environ.get(args.key_env, "")
        if not key:
            emit({"type": "error", "kind": "authentication", "tries": 0,
                  "detail": f"the variable {args.key_env} (api_key_env) is not set or empty"})
            return 1
    with open(args.schema, "rb") as f:
        schema = json.loads(f.read(MAX_SCHEMA))
    packet = sys.stdin.read()
    body = json.dumps(chat_body(args.model, packet, schema, args.effort), ensure_ascii=False).encode("utf-8")
    call = Call(Endpoint(args.base_url, key), body, deadline, margin=max(2.0, args.time_limit * RETRY_MARGIN))
    return converse(call, args.model, len(packet), args)


if __name__ == "__main__":
    sys.exit(review())
