"""Append-only JSON Lines: each record is one whole line written by one `write`.

Appends happen under the series lock (G33), so lines never interleave; the
single `O_APPEND` write keeps a crash from leaving more than one torn line, and
readers refuse a torn line instead of guessing (G32).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from spar.errors import RecordError
from spar.jsonvalue import no_constants
from spar.records import atomic


def dumps_line(obj: Any) -> bytes:
    # json.dumps escapes newlines inside strings, so the only newline is the last byte
    return (json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False) + "\n").encode("utf-8")


def append(path: Path | str, obj: Mapping[str, object], *, create: bool = True) -> None:
    """One whole line, or nothing (see `atomic.append_line`)."""
    atomic.append_line(path, dumps_line(obj), create=create)


DECODER = json.JSONDecoder(parse_constant=no_constants)


def parse_records(data: bytes, path: Path | str) -> list[dict[str, Any]]:
    """Lines of `data` as JSON objects; RecordError names `path:line` of the first bad one."""
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


def file_bytes(path: Path | str) -> bytes:
    """The whole file: how the readers read a record."""
    with open(path, "rb") as file:
        return file.read()


def read(path: Path | str, *, missing_ok: bool = False) -> list[dict[str, Any]]:
    try:
        data = file_bytes(path)
    except FileNotFoundError:
        if missing_ok:
            return []
        raise RecordError(f"{path}: missing") from None
    except OSError as exc:
        raise RecordError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    return parse_records(data, path)
