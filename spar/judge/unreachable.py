"""Whether a CLI's own notice says it cannot reach its service or cannot authenticate.

A notice alone is transient: the CLI retries and often goes on to answer. Spar
gives up on a reviewer only when such notices are all it has heard for a while
(spar/round/liveness.py keeps the time); this module only reads the text.

Decisions:
- Authentication first: a notice that holds one of the §5 authentication phrases
  (the same search as a refusal, spar/judge/refusal.py) is `authentication`.
- Else a notice holding one of NETWORK_PHRASES (plain substrings, ignoring case)
  is `network`: name resolution, connection and socket failures as codex-cli and
  Claude Code print them, and codex's "waiting for network".
- Anything else is no sign either way.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Literal

from spar.judge.refusal import RefusalScan

# "quota": only the service's own answer says so (a CLI retrying an HTTP 429), never a notice's words
StallKind = Literal["network", "authentication", "quota"]

NETWORK_PHRASES = (
    "waiting for network", "name does not resolve", "failed to lookup address",
    "temporary failure in name resolution", "name or service not known", "nodename nor servname",
    "could not resolve host", "dns error", "connection failed", "connection refused",
    "connection reset", "error sending request", "network is unreachable", "unable to connect",
    "failedtoopensocket", "stream disconnected before completion",
)
MAX_MESSAGE = 300  # characters of the CLI's message kept for a reason


@cache
def _network() -> re.Pattern[str]:
    return re.compile("|".join(re.escape(p) for p in NETWORK_PHRASES), re.IGNORECASE)


def notice_kind(text: str) -> StallKind | None:
    """`authentication` or `network` when the notice says the CLI cannot work, else None."""
    if not text:
        return None
    scan = RefusalScan()
    scan.feed(text)
    if scan.auth is not None:
        return "authentication"
    if _network().search(text):
        return "network"
    return None


def short_message(text: str) -> str:
    """The CLI's message as a reason quotes it: stripped, at most MAX_MESSAGE characters."""
    text = text.strip()
    return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 1] + "…"


__all__ = ["NETWORK_PHRASES", "StallKind", "notice_kind", "short_message"]
