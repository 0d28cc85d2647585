"""Append-only JSON Lines: each record is one whole line written by one `write`.

Appends happen under the series lock (G33), so lines never interleave; the
single `O_APPEND` write keeps a crash from leaving more than one torn line, and
readers refuse a torn line instead of guessing (G32).
"""

from __future__ import annotations

import json
import os
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


# one decoder for every record: json.loads with an argument would build a new one per call
DECODER = json.JSONDecoder(parse_constant=no_constants)


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
    """The lines as Spar writes them, decoded as one JSON array in C: every line one
    JSON object. None for anything else, and `parse` then reads line by line, naming
    the line of a problem. Each newline becomes "newline, comma": between values that
    is a separator, inside a string a raw control character the decoder refuses, so no
    value can span lines; as many objects as lines means no line holds two or none."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if text.endswith("\n"):
        text = text[:-1]  # the newline ending the last line
    if not text:
        return None if data else []
    try:
        records: list[dict[str, Any]] = DECODER.decode("[" + text.replace("\n", "\n,") + "]")
    except ValueError:
        return None
    if len(records) != text.count("\n") + 1:
        return None
    for value in records:
        if type(value) is not dict:
            return None
    return records


def file_bytes(path: Path | str) -> bytes:
    """The whole file, as `open(path, "rb").read()` reads it, in four system calls instead
    of seven (no buffer, position or terminal check): a long series reads thousands."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        size = os.fstat(fd).st_size
        data = os.read(fd, size + 1)  # one byte more than its size: at the end, or it grew
        if len(data) == size:
            return data
        chunks = [data]  # it grew or shrank since, or a short read: on to the end
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def read(path: Path | str, *, missing_ok: bool = False) -> list[dict[str, Any]]:
    try:
        data = file_bytes(path)
    except FileNotFoundError:
        if missing_ok:
            return []
        raise RecordError(f"{path}: missing") from None
    except OSError as exc:
        raise RecordError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    return parse(data, path)
