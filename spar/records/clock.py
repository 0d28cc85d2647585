"""Timestamps for records: RFC 3339 UTC with milliseconds and a Z."""

from datetime import datetime, timezone


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
