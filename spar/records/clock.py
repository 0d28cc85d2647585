"""Timestamps for records: RFC 3339 UTC with milliseconds and a Z."""

from datetime import UTC, datetime


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
