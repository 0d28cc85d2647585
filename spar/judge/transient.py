"""Whether a failed attempt's own words say the failure was transient (pure).

A reviewer CLI whose service was overloaded or broke off a stream usually answers on a
second try of the same model, so the runner tries once more after a short backoff
(spar/round/runner.py). Quota and authentication refusals are judged before this and
are never retried; a notice that the CLI cannot reach its service at all (a name that
does not resolve, a refused connection: spar/judge/unreachable.py) is not transient
either, even inside a stream-disconnect message.

The shapes (tests/data/transient_notices.json): Claude Code's `API Error: 529 …
overloaded_error …` and `API Error: 500/502/503/504 …`, `Repeated 529 Overloaded
errors`, `Connection to the API was lost`; codex's `stream disconnected before completion`
and `exceeded retry limit, last status: 5xx …` / `unexpected status 5xx …`, `We’re currently
experiencing high demand`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from spar.judge.unreachable import NETWORK_PHRASES, short_message

STREAM_BROKE = "stream disconnected before completion"
# Claude Code 2.1.197 when a stream broke off mid-answer: "API Error: Connection to the API was
# lost (ECONNRESET). This is usually temporary — try again." (tests/data/real-cli/cut-claude.*)
CONNECTION_LOST = "connection to the API was lost"
# codex-cli 0.171.0 after its own retries of an HTTP 500: "We’re currently experiencing high
# demand, which may cause temporary errors." (tests/data/real-cli/500-codex.*)
HIGH_DEMAND = "currently experiencing high demand"
TRANSIENT = re.compile(
    r"API Error:\s*(?:5\d\d|529)(?![0-9])|overloaded_error|\boverloaded\b|" + re.escape(STREAM_BROKE)
    + "|" + re.escape(CONNECTION_LOST) + "|" + re.escape(HIGH_DEMAND)
    + r"|(?:last status|unexpected status):?\s*5\d\d(?![0-9])",
    re.IGNORECASE)
_CANNOT_REACH = re.compile("|".join(re.escape(p) for p in NETWORK_PHRASES if p != STREAM_BROKE), re.IGNORECASE)


def transient_failure(texts: Iterable[str]) -> str | None:
    """The first line that says the failure was transient, or None."""
    for text in texts:
        for line in text.splitlines():
            if TRANSIENT.search(line) and not _CANNOT_REACH.search(line):
                return short_message(line)
    return None


__all__ = ["transient_failure"]
