"""What an OpenAI-compatible endpoint's answer means, in its own words (pure).

The `openai-compatible` reviewer's client (spar/endpoint/client.py) asks these
functions whether an HTTP error is worth another try and how its attempt ends;
its preset's monitor asks them about the usage the server reported.

Decisions (the servers' shapes: reference/openai-compatible.md):
- The error body is `{"error": {"message", "type", "param", "code"}}`; `code` may be
  a number (LiteLLM puts the HTTP status there), so only words count as codes.
- Quota or billing exhausted (`QUOTA_CODES` as `code` or `type`, HTTP 402, or
  `QUOTA_WORDS` in the message) is `quota`, whatever the status: never retried.
- 401 and 403 are `authentication`; 429 is `rate_limit`; 408, 5xx, 529 and an
  `overloaded_error` type are `server`. Rate limits and server trouble are the
  only kinds retried (`RETRIED`).
- A prompt the server calls too long (`context_length_exceeded`, 413, or
  `TOO_LONG_WORDS` in a 400's message) is `too_long`; any other error is `refused`
  (a request the server will not take as it is: a model it does not know, a bad
  schema).
- A server that read far fewer prompt tokens than the text holds cut the prompt
  (ollama's `/v1` at its default context size): `prompt_cut` says so when the
  text is at least `CUT_MIN_CHARS` long and the server counted fewer than one
  token per `CUT_CHARS_PER_TOKEN` characters (tokenizers give one per 3-5
  characters of code or prose).
"""

from __future__ import annotations

import datetime
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

ErrorKind = Literal["quota", "rate_limit", "server", "authentication", "too_long", "refused"]
RETRIED: frozenset[str] = frozenset({"rate_limit", "server"})

QUOTA_CODES = ("insufficient_quota", "credit_balance_exhausted", "organization_spend_limit_exceeded",
               "project_spend_limit_exceeded", "organization_usage_limit_exceeded", "billing_hard_limit_reached",
               "insufficient_credits")
QUOTA_WORDS = ("exceeded your current quota", "insufficient credits", "credit balance", "billing details",
               "spend limit")
TOO_LONG_WORDS = ("context_length_exceeded", "context length", "maximum context", "context window",
                  "prompt is too long", "too many tokens", "input is too long")
SERVER_TYPES = ("overloaded_error", "server_error", "internal_server_error", "api_error", "service_unavailable")
MAX_MESSAGE = 300
MAX_WAIT = 60.0  # a Retry-After beyond this is read as this (the attempt's limit still bounds the wait)
CUT_MIN_CHARS = 16_000
CUT_CHARS_PER_TOKEN = 16


@dataclass(frozen=True)
class ServerError:
    """One HTTP error answer, classified."""

    kind: ErrorKind
    status: int
    code: str  # the error's code, else its type ("" when it gave neither as a word)
    message: str  # the server's message, stripped and bounded
    retry_after: float | None = None  # seconds the server asked to wait (Retry-After and kin)

    @property
    def retried(self) -> bool:
        return self.kind in RETRIED

    def describe(self) -> str:
        """`HTTP 429 rate_limit_exceeded: Rate limit reached for …`."""
        head = f"HTTP {self.status}" + (f" {self.code}" if self.code else "")
        return f"{head}: {self.message}" if self.message else head


def _word(value: object) -> str:
    return " ".join(value.split()) if isinstance(value, str) else ""  # one line, as a reason shows it


def error_fields(body: bytes | str) -> tuple[str, str, str]:
    """(code, type, message) of an error body; empty strings where it holds none."""
    try:
        value = json.loads(body)
    except (ValueError, RecursionError):
        text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
        return "", "", _word(text)[:MAX_MESSAGE]
    error = value.get("error") if isinstance(value, dict) else None
    if isinstance(error, str):
        return "", "", _word(error)[:MAX_MESSAGE]
    if not isinstance(error, dict):
        message = value.get("message") if isinstance(value, dict) else None
        return "", "", _word(message)[:MAX_MESSAGE]
    return _word(error.get("code")), _word(error.get("type")), _word(error.get("message"))[:MAX_MESSAGE]


def _header(headers: Mapping[str, str], name: str) -> str | None:
    for key, value in headers.items():
        if key.lower() == name:
            return value
    return None


_DURATION = re.compile(r"(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m(?!s))?(?:(\d+(?:\.\d+)?)s)?(?:(\d+(?:\.\d+)?)ms)?")


def retry_after(headers: Mapping[str, str], now: float) -> float | None:
    """Seconds to wait the headers ask for: `retry-after-ms`, `Retry-After` (seconds or an
    HTTP date, against `now` in Unix seconds), else OpenAI's `x-ratelimit-reset-requests`/
    `-tokens` (`1s`, `6m0s`, `20ms`)."""
    ms = _header(headers, "retry-after-ms")
    if ms is not None:
        try:
            return _bounded_wait(float(ms) / 1000)
        except ValueError:
            pass
    value = _header(headers, "retry-after")
    if value is not None:
        try:
            return _bounded_wait(float(value))
        except ValueError:
            try:
                when = datetime.datetime.strptime(value.strip(), "%a, %d %b %Y %H:%M:%S GMT")
            except ValueError:
                return None
            return _bounded_wait(when.replace(tzinfo=datetime.UTC).timestamp() - now)
    waits = [w for name in ("x-ratelimit-reset-requests", "x-ratelimit-reset-tokens")
             if (w := _duration(_header(headers, name))) is not None]
    return _bounded_wait(max(waits)) if waits else None


def _duration(text: str | None) -> float | None:
    if not text:
        return None
    m = _DURATION.fullmatch(text.strip())
    if m is None or not any(m.groups()):
        return None
    h, mins, s, ms = (float(g) if g else 0.0 for g in m.groups())
    return h * 3600 + mins * 60 + s + ms / 1000


def _bounded_wait(seconds: float) -> float | None:
    if not math.isfinite(seconds):
        return None
    return min(max(seconds, 0.0), MAX_WAIT)


def classify_error(status: int, body: bytes | str, headers: Mapping[str, str], now: float = 0.0) -> ServerError:
    """What an HTTP error answer of the endpoint means (`now`: Unix seconds, for an HTTP-date
    Retry-After)."""
    code, kind_word, message = error_fields(body)
    words = {code.lower(), kind_word.lower()}
    lowered = message.lower()
    shown = code if code and not code.isdigit() else kind_word
    wait = retry_after(headers, now)
    if words & set(QUOTA_CODES) or status == 402 or any(w in lowered for w in QUOTA_WORDS):
        return ServerError("quota", status, shown, message)
    if status in (401, 403):
        return ServerError("authentication", status, shown, message)
    if status == 429:
        return ServerError("rate_limit", status, shown, message, wait)
    if status in (408, 529) or status >= 500 or words & set(SERVER_TYPES):
        return ServerError("server", status, shown, message, wait)
    if status == 413 or "context_length_exceeded" in words or any(w in lowered for w in TOO_LONG_WORDS):
        return ServerError("too_long", status, shown, message)
    return ServerError("refused", status, shown, message)


def backoff(tries: int, asked: float | None, base: float) -> float:
    """Seconds before the next try after `tries` tries: what the server asked for, else
    `base` doubled per try (at most MAX_WAIT)."""
    if asked is not None:
        return asked
    return float(min(base * 2.0 ** max(tries - 1, 0), MAX_WAIT))


def prompt_cut(sent_chars: int, prompt_tokens: int | None) -> str | None:
    """Why the server's prompt token count shows it read only part of the prompt, or None."""
    if prompt_tokens is None or sent_chars < CUT_MIN_CHARS:
        return None
    if prompt_tokens * CUT_CHARS_PER_TOKEN >= sent_chars:
        return None
    return (f"the server read {prompt_tokens:,} prompt tokens of a {sent_chars:,}-character prompt "
            f"(under one token per {CUT_CHARS_PER_TOKEN} characters): it cut the prompt, so the reviewer "
            "did not see the whole change (raise the server's context size, e.g. ollama's num_ctx)")


def usage_counts(usage: Mapping[str, Any]) -> tuple[int | None, int | None, int | None]:
    """(prompt tokens, cached prompt tokens, completion tokens) of a `usage` object."""
    def number(value: object) -> int | None:
        return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None

    details = usage.get("prompt_tokens_details")
    cached = number(details.get("cached_tokens")) if isinstance(details, dict) else None
    return number(usage.get("prompt_tokens")), cached, number(usage.get("completion_tokens"))


def cost_usd(prompt_tokens: int | None, completion_tokens: int | None,
             input_price: float | None, output_price: float | None) -> float | None:
    """Cost from the configured prices per million tokens; None when a price or a count is
    missing (cached input is charged at the input price: an upper bound)."""
    if input_price is None or output_price is None or prompt_tokens is None or completion_tokens is None:
        return None
    return round((prompt_tokens * input_price + completion_tokens * output_price) / 1_000_000, 6)


__all__ = ["QUOTA_CODES", "RETRIED", "ErrorKind", "ServerError", "backoff", "classify_error", "cost_usd",
           "error_fields", "prompt_cut", "retry_after", "usage_counts"]
