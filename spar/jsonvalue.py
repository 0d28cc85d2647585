"""Reading parsed JSON whose shape is not guaranteed (reviewer CLI events,
transcripts, records of older Spar versions): a member of the wrong type reads
as empty instead of raising."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NoReturn


def object_at(parent: Mapping[str, Any], key: str) -> dict[str, Any]:
    """`parent[key]` when it is a JSON object, else an empty one."""
    value = parent.get(key)
    return value if isinstance(value, dict) else {}


def array_at(parent: Mapping[str, Any], key: str) -> list[Any]:
    """`parent[key]` when it is a JSON array, else an empty one."""
    value = parent.get(key)
    return value if isinstance(value, list) else []


class NotJSON(ValueError):
    """NaN, Infinity or -Infinity: Python's json reads them, JSON has none."""


def no_constants(name: str) -> NoReturn:
    """`parse_constant` for every strict JSON read."""
    raise NotJSON(f"{name} is not JSON")
