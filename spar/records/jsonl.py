"""Append-only JSON Lines: each record is one whole line written by one `write`.

Appends happen under the series lock (G33), so lines never interleave; the
single `O_APPEND` write keeps a crash from leaving more than one torn line, and
readers refuse a torn line instead of guessing (G32).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from spar.errors import RecordError
from spar.judge.jsonvalue import no_constants
from spar.records import atomic


def dumps_line(obj: Any) -> bytes:
    # json.dumps escapes newlines inside strings, so the only newline is the last byte
    return (json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False) + "\n").encode("utf-8")


def append(path: Path | str, obj: Mapping[str, object], *, create: bool = True) -> None:
    """One whole line, or nothing (see `atomic.append_line`)."""
    atomic.append_line(path, dumps_line(obj), create=create)


# one decoder for every record: json.loads with an argument would build a new one per call
DECODER = json.JSONDecoder(parse_constant=no_constants)
# one value at an index, with nothing skipped before it (C where available)
_SCAN: Callable[[str, int], tuple[Any, int]] = DECODER.scan_once  # type: ignore[attr-defined]  # set by __init__


def parse(data: bytes, path: Path | str) -> list[dict[str, Any]]:
    """Lines of `data` as JSON objects; RecordError names `path:line` of the first bad one."""
    records = _parse_plain(data)
    return records if records is not None else _parse_lines(data, path)


def _parse_lines(data: bytes, path: Path | str) -> list[dict[str, Any]]:
    """Line by line: what `parse` accepts, and the first problem's `path:line`."""
    pieces = data.split(b"\n")
    if pieces and pieces[-1] == b"":
        pieces.pop()  # the newline ending the last line
    records = []
    for number, raw in enumerate(pieces, start=1):
        try:
            text = raw.decode("utf-8")
            value = DECODER.decode(text)
        except UnicodeDecodeError:
            raise RecordError(f"{path}:{number}: not UTF-8") from None
        except ValueError as exc:
            torn = number == len(pieces) and not data.endswith(b"\n")
            what = "incomplete last line" if torn else "not JSON"
            raise RecordError(f"{path}:{number}: {what} ({exc})") from None
        if not isinstance(value, dict):
            raise RecordError(f"{path}:{number}: not a JSON object")
        records.append(value)
    return records


def _parse_plain(data: bytes) -> list[dict[str, Any]] | None:
    """The lines as Spar writes them, decoded in one pass: every line one JSON object
    with nothing before or after it. None for anything else (surrounding whitespace
    included, which is valid), and `parse` then reads line by line, naming the line
    of a problem. A value must end exactly at its line's end, so none spans lines
    (JSON strings never hold a raw newline)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    records = []
    scan, find = _SCAN, text.find
    pos, end = 0, len(text)
    while pos < end:
        newline = find("\n", pos)
        if newline < 0:
            newline = end
        try:
            value, stop = scan(text, pos)
        except (StopIteration, ValueError):
            return None
        if stop != newline or type(value) is not dict:
            return None
        records.append(value)
        pos = newline + 1
    return records


def read(path: Path | str, *, missing_ok: bool = False) -> list[dict[str, Any]]:
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        if missing_ok:
            return []
        raise RecordError(f"{path}: missing") from None
    except OSError as exc:
        raise RecordError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    return parse(data, path)
