"""What an attempt cost: the `usage` object of each attempt, and totals over attempts (pure).

Every attempt in round.json carries
`{"duration_seconds", "input_tokens", "cached_input_tokens", "output_tokens", "cost_usd"}`:
`duration_seconds` is Spar's own wall-clock measure of the attempt (version check
included), so it exists for every attempt of every preset; the others are what
the CLI reported, `null` when it reported nothing. `input_tokens` counts every
input token, cached ones included; `cached_input_tokens` is the part read from a
cache. Rounds written before usage existed have no `usage`: readers treat every
field as null.

Totals add the reported values; a total is `null` only when no attempt reported
that field.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from spar.jsonvalue import array_at

TOKEN_KEYS = ("input_tokens", "cached_input_tokens", "output_tokens")
USAGE_KEYS = ("duration_seconds", *TOKEN_KEYS, "cost_usd")


def count(value: object) -> int | None:
    """A token count as reported: a non-negative integer, else None (not reported)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


def amount(value: object) -> float | None:
    """A cost in USD as reported: a finite non-negative number, else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if not math.isfinite(value) or value < 0:
        return None
    return float(value)


def add_counts(*values: int | None) -> int | None:
    """Sum of the reported counts; None when none was reported."""
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def reported(*, input_tokens: int | None = None, cached_input_tokens: int | None = None,
             output_tokens: int | None = None, cost_usd: float | None = None) -> dict[str, Any]:
    """What a CLI reported, in the usage keys (duration excluded)."""
    return {"input_tokens": input_tokens, "cached_input_tokens": cached_input_tokens,
            "output_tokens": output_tokens, "cost_usd": cost_usd}


def attempt_usage(duration_seconds: float, cli: Mapping[str, object] | None) -> dict[str, Any]:
    """The `usage` object of one attempt."""
    cli = cli or {}
    out: dict[str, Any] = {"duration_seconds": round(max(duration_seconds, 0.0), 3)}
    for key in TOKEN_KEYS:
        out[key] = count(cli.get(key))
    out["cost_usd"] = amount(cli.get("cost_usd"))
    return out


def total(usages: Iterable[Mapping[str, Any] | None]) -> dict[str, Any]:
    """Totals of several usage objects (attempts, reviewers, rounds); absent or
    malformed fields count as not reported."""
    sums: dict[str, float | int | None] = dict.fromkeys(USAGE_KEYS)
    for usage in usages:
        if not isinstance(usage, Mapping):
            continue
        for key in USAGE_KEYS:
            value = amount(usage.get(key)) if key in ("duration_seconds", "cost_usd") else count(usage.get(key))
            if value is None:
                continue
            current = sums[key]
            sums[key] = value if current is None else current + value
    for key in ("duration_seconds", "cost_usd"):
        value = sums[key]
        if value is not None:
            sums[key] = round(float(value), 6)  # sums of floats: no 0.30000000000000004 in records
    return sums


def of_reviewer(entry: Mapping[str, Any]) -> dict[str, Any]:
    """Totals over one reviewer entry's attempts."""
    attempts = array_at(entry, "attempts")
    return total(a.get("usage") for a in attempts if isinstance(a, Mapping))


def spent_anything(usage: Mapping[str, Any]) -> bool:
    """Whether a usage (or a total) reports any token or cost above zero."""
    return any(usage.get(key) for key in (*TOKEN_KEYS, "cost_usd"))


def duration_text(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds:.1f}s"


def tokens_text(usage: Mapping[str, Any]) -> str:
    """`in 12,000 (cached 3,000) / out 400`, `-` when nothing was reported."""
    inp, cached, out = (usage.get(k) for k in TOKEN_KEYS)
    if inp is None and cached is None and out is None:
        return "-"
    text = f"in {'?' if inp is None else f'{inp:,}'}"
    if cached:
        text += f" (cached {cached:,})"
    return text + f" / out {'?' if out is None else f'{out:,}'}"


def cost_text(cost: float | None) -> str:
    return "-" if cost is None else f"${cost:.4f}"


__all__ = [
    "TOKEN_KEYS",
    "USAGE_KEYS",
    "add_counts",
    "amount",
    "attempt_usage",
    "cost_text",
    "count",
    "duration_text",
    "of_reviewer",
    "reported",
    "spent_anything",
    "tokens_text",
    "total",
]
