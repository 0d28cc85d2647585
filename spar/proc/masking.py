"""Fixed byte strings (a reviewer's credentials) replaced by one mask in a stream, as it
streams: whatever reads the stream after the mask (log files, tails, monitors and every
record built from them) never holds them.

A string cut between two chunks is still found: the end of a chunk that could be the
start of one is held back until the next chunk (or the end) decides. Memory stays
bounded by the longest string.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

MASK = b"[masked by spar]"
MIN_SECRET = 8  # shorter values (flags such as "1", "true") are no secrets and would mask ordinary text


def secrets_of(values: Iterable[str]) -> tuple[bytes, ...]:
    """The values worth masking (MIN_SECRET characters or more), longest first, once each."""
    kept = {v.encode("utf-8", errors="surrogateescape") for v in values if len(v) >= MIN_SECRET}
    return tuple(sorted(kept, key=lambda s: (-len(s), s)))


class Masker:
    """Feed chunks in, get the masked bytes that are safe to pass on; `flush` at the end."""

    def __init__(self, secrets: tuple[bytes, ...]) -> None:
        self._secrets = secrets
        self._pattern = re.compile(b"|".join(re.escape(s) for s in secrets))  # longest first: longest wins
        self._longest = max(len(s) for s in secrets)
        self._held = b""
        self.count = 0  # strings replaced so far

    def feed(self, chunk: bytes) -> bytes:
        data = self._held + chunk
        out = bytearray()
        start = 0
        for m in self._pattern.finditer(data):
            out += data[start:m.start()]
            out += MASK
            self.count += 1
            start = m.end()
        rest = data[start:]
        hold = self._held_length(rest)
        out += rest[:len(rest) - hold]
        self._held = rest[len(rest) - hold:]
        return bytes(out)

    def _held_length(self, rest: bytes) -> int:
        """The longest end of `rest` that is the start of a secret (so may complete later)."""
        for size in range(min(len(rest), self._longest - 1), 0, -1):
            tail = rest[-size:]
            if any(s.startswith(tail) for s in self._secrets):
                return size
        return 0

    def flush(self) -> bytes:
        held, self._held = self._held, b""
        return held


__all__ = ["MASK", "MIN_SECRET", "Masker", "secrets_of"]
