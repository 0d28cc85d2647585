"""Contract §5 (row G13): usage/rate-limit and authentication refusals, reset times.

spar looks, ignoring case, for the phrases of §5 in a reviewer's whole stderr
and in every error message of its output (`RefusalScan`, fed while they
stream); any other message is not a refusal. Only a run that did not complete
is searched: a transient notice of a run that completed is no refusal.

Decisions (documented here because §5 leaves them open):
- Phrases match as plain substrings of one line, ignoring case.
- `code 429` / `status 429` (and 401): `code` or `status`, then zero to four
  symbols, then the number not followed by another digit.  A symbol is any
  character that is not an ASCII letter or digit; a space counts (so
  `code 429`, `code: 429`, `(code 429)`, `status=429`, `status": 429` and
  `"error_code":429` all match; `code 4290` and a bare `429` do not).
- When both kinds appear anywhere in the texts, authentication wins: a fallback
  model cannot fix a login problem, so no second attempt is spent on it.
  Within one kind, the first matching line (texts in order, lines in order)
  is the message.
- `message` is that line stripped; a line longer than 300 characters is cut
  to a 300-character window around the phrase, with `…` marking the cuts.
- Reset (`find_resets`): `reset`/`resets` as a word, optionally followed by
  `in` or `at`, or `try again in`/`try again at`; then whitespace; then the
  text from the first word containing a digit (words before it are skipped,
  without crossing a period) up to a period or the end of the line, stripped.
  `resets Apr 24, 4am` → `24, 4am`.  The first reset phrase found in the
  texts (in order) gives `resets`, whichever line holds the refusal phrase.
- The service's own error body (codex surfaces OpenAI's, e.g. `{"type":"error",
  "error":{"type":"usage_limit_reached",…,"resets_at":1777936568,
  "resets_in_seconds":13872},"status_code":429}`) is read like the prose forms:
  its error type `usage_limit_reached` (SERVICE_QUOTA_TYPES) is a quota phrase,
  `status_code":429` already is one (`code`, two symbols, 429), and so is a
  429 standing alone (`HTTP 429`) in a line whose body names `resets_at` or
  `resets_in_seconds` (a number of that body). A line with no
  prose reset phrase gives its reset from the body: `resets_at` (Unix seconds)
  as UTC `2026-05-04T23:16:08Z`, else `resets_in_seconds` as `3h51m12s` (the
  shape agy's "Resets in 55h7m23s." records); each key may be written with
  escaped quotes (`\"resets_at\":`), as when the body sits inside a JSON string.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Literal, NamedTuple

MAX_MESSAGE = 300

QUOTA_PHRASES = (
    "RESOURCE_EXHAUSTED", "429 Too Many Requests", "too many requests", "rate limit",
    "rate_limit", "rate-limit", "ratelimit", "quota reached", "quota exceeded",
    "quota exhausted", "insufficient_quota", "hit your limit", "hit your usage limit",
    "usage limit reached",
)
# error types of a service's own error body that are quota refusals (not contract phrases)
SERVICE_QUOTA_TYPES = ("usage_limit_reached",)
AUTH_PHRASES = (
    "UNAUTHENTICATED", "401 Unauthorized", "not logged in", "authentication required",
    "authentication failed", "login again", "log in again", "sign in again", "codex login",
    "agy login", "claude login", "run /login", "oauth token expired", "oauth token has expired",
    "invalid api key", "incorrect api key",
)


def _phrase_pattern(phrases: tuple[str, ...], number: str) -> re.Pattern[str]:
    literal = "|".join(re.escape(p) for p in phrases)
    status = rf"(?:code|status)[^A-Za-z0-9]{{0,4}}{number}(?![0-9])"
    return re.compile(f"{literal}|{status}", re.IGNORECASE)


# `"resets_at":1777936568`, `\\"resets_in_seconds\\": 13872`: the key, up to four symbols, digits
BODY_RESETS = re.compile(r"\bresets_(at|in_seconds)\W{0,4}?(\d{1,12})(?![0-9])")
AUTH_PATTERN = _phrase_pattern(AUTH_PHRASES, "401")
QUOTA_PATTERN = _phrase_pattern(QUOTA_PHRASES + SERVICE_QUOTA_TYPES, "429")
# `in`/`at` must be whole words so `resets instantly` is not `resets in stantly`
RESET_PATTERN = re.compile(
    r"(?:\bresets?(?:\s+(?:in|at)\b)?|\btry again (?:in|at)\b)\s+[^.\n\d]*?(?<=\s)([^\s.]*\d[^.\n]*)",
    re.IGNORECASE,
)


class Refusal(NamedTuple):
    """A quota or authentication refusal found in a reviewer's output."""

    kind: Literal["quota", "auth"]
    message: str
    resets: str | None


def _trim(line: str, match_start: int) -> str:
    stripped = line.strip()
    if len(stripped) <= MAX_MESSAGE:
        return stripped
    at = match_start - (len(line) - len(line.lstrip()))
    # a window of MAX_MESSAGE characters (the `…` marks included) that starts
    # up to 100 characters before the phrase, so the phrase stays whole
    start = max(0, min(at - 100, len(stripped) - MAX_MESSAGE))
    end = start + MAX_MESSAGE
    head = "…" if start > 0 else ""
    tail = "…" if end < len(stripped) else ""
    return head + stripped[start + len(head): end - len(tail)] + tail


def find_resets(text: str) -> str | None:
    """The reset time a message names (§5 reset phrases, else a service error body's), or None."""
    for line in text.splitlines():
        for m in RESET_PATTERN.finditer(line):
            value = m.group(1).strip()
            if value:
                return value
        value = _body_resets(line)
        if value:
            return value
    return None


def _status_429_with_reset(line: str) -> re.Match[str] | None:
    """HTTP 429 (the number on its own) in a line whose error body names its reset time."""
    if _body_resets(line) is None:
        return None
    values = [m.span(2) for m in BODY_RESETS.finditer(line)]
    for m in re.finditer(r"(?<![0-9])429(?![0-9])", line):
        if m.span() not in values:  # `"resets_in_seconds":429` is a delay, not a status
            return m
    return None


def _body_resets(line: str) -> str | None:
    """`resets_at` as a UTC time, else `resets_in_seconds` as hours, minutes and seconds."""
    if "resets_" not in line:
        return None
    found = {m.group(1): int(m.group(2)) for m in reversed(list(BODY_RESETS.finditer(line)))}
    if "at" in found:
        import datetime  # only here: most texts hold no such body

        try:
            when = datetime.datetime.fromtimestamp(found["at"], datetime.UTC)
        except (OverflowError, OSError, ValueError):
            return f"{found['at']} (Unix time)"
        return when.strftime("%Y-%m-%dT%H:%M:%SZ")
    if "in_seconds" in found:
        hours, rest = divmod(found["in_seconds"], 3600)
        return f"{hours}h{rest // 60}m{rest % 60}s"
    return None


class RefusalScan:
    """The §5 search fed one text at a time, as the texts stream: it keeps only the first
    authentication line, the first quota line and the first reset phrase, so memory stays
    bounded however much a reviewer prints, and every line is searched, not a tail."""

    def __init__(self) -> None:
        self.auth: str | None = None
        self.quota: str | None = None
        self.resets: str | None = None

    def feed(self, text: str) -> None:
        if not isinstance(text, str) or not text:
            return
        for line in text.splitlines():
            self.line(line)

    def line(self, line: str) -> None:
        if self.resets is None:
            self.resets = find_resets(line)
        auth_re, quota_re = AUTH_PATTERN, QUOTA_PATTERN
        if self.auth is None:
            m = auth_re.search(line)
            if m:
                self.auth = _trim(line, m.start())
        if self.quota is None:
            m = quota_re.search(line) or _status_429_with_reset(line)
            if m:
                self.quota = _trim(line, m.start())

    def then(self, other: RefusalScan) -> RefusalScan:
        """This scan's texts followed by `other`'s: the first finds stay first."""
        both = RefusalScan()
        both.auth = self.auth if self.auth is not None else other.auth
        both.quota = self.quota if self.quota is not None else other.quota
        both.resets = self.resets if self.resets is not None else other.resets
        return both

    def result(self) -> Refusal | None:
        if self.auth is not None:
            return Refusal("auth", self.auth, self.resets)
        if self.quota is not None:
            return Refusal("quota", self.quota, self.resets)
        return None


def detect_refusal(texts: Iterable[str]) -> Refusal | None:
    """A §5 refusal in stderr text and output error messages, or None."""
    scan = RefusalScan()
    for text in texts:
        scan.feed(text)
    return scan.result()


def reason_for(refusal: Refusal) -> str:
    """The `reason` recorded for an unavailable reviewer (§5 Record column)."""
    if refusal.kind == "quota":
        return f"quota or rate limit: {refusal.message}"
    return f"authentication: {refusal.message}"


__all__ = ["AUTH_PHRASES", "QUOTA_PHRASES", "SERVICE_QUOTA_TYPES", "Refusal", "RefusalScan", "detect_refusal",
           "find_resets", "reason_for"]
