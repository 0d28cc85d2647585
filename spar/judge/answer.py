"""G1's one answer rule: when is a reviewer's answer text "one JSON object" (pure).

Every consumer of an answer given as text or bytes uses `parse_answer`: `spar
run` for every preset (claude's result text, codex's last agent_message, agy's
response, a command's whole stdout), `spar record --result` and the last
assistant text of `spar record --transcript`. An answer given as an object
(claude's and agy's `structured_output`, a transcript's `StructuredOutput`
tool use) is that object.

The rule, from the contract ("One JSON object"; input outside the format "is
never read as another value or silently accepted"):

- bytes must be valid UTF-8 (no byte order mark: JSON text has none);
- the text is exactly one JSON value (RFC 8259), with only JSON whitespace
  (space, tab, line feed, carriage return) around it: a Markdown code fence
  or any other text before or after the object is outside the format, as are
  `NaN`, `Infinity` and numbers Python cannot hold;
- the value is an object, and no object in it (at any depth) holds a key twice: a
  repeated key is ambiguous (JSON parsers differ on which value wins), so an answer
  saying `"verdict": "refuted", ..., "verdict": "confirmed"` is not read as either;
- anything else, including input the parser cannot handle at all (100,000
  nested arrays), is `invalid_output` with a reason, never an error of Spar.
"""

from __future__ import annotations

import json
from typing import Any

from spar.jsonvalue import NotJSON, no_constants
from spar.judge.result import json_type


class _DuplicateKey(ValueError):
    """An object of the answer holds one key twice."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            shown = key if len(key) <= 80 else key[:80] + "[…]"
            raise _DuplicateKey(f"the key {json.dumps(shown, ensure_ascii=False)} appears twice in one object")
        out[key] = value
    return out


def parse_answer(data: bytes | str, what: str) -> tuple[dict[str, Any] | None, str | None]:
    """(the object, None) or (None, why `what` is not one JSON object)."""
    if isinstance(data, bytes):
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            return None, f"{what} is not valid UTF-8 (byte {exc.start})"
    else:
        text = data
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:  # lone surrogates: bytes that were not UTF-8 (surrogateescape)
            return None, f"{what} is not valid UTF-8 (character {exc.start})"
    if text.startswith("\ufeff"):
        return None, f"{what} starts with a byte order mark, not a JSON object"
    stripped = text.strip(" \t\n\r")
    if not stripped:
        return None, f"{what} is empty, not one JSON object"
    if stripped.startswith("```"):
        return None, f"{what} is wrapped in a Markdown code fence; the answer must be one JSON object alone"
    try:
        value = json.loads(text, parse_constant=no_constants, object_pairs_hook=_unique_keys)
    except (NotJSON, _DuplicateKey) as exc:
        return None, f"{what} is not one JSON object: {exc}"
    except json.JSONDecodeError as exc:
        where = "text after the JSON value" if exc.msg == "Extra data" else exc.msg
        return None, f"{what} is not one JSON object: {where} (line {exc.lineno} column {exc.colno})"
    except RecursionError:
        return None, f"{what} is nested too deeply to read"
    except (ValueError, OverflowError, MemoryError) as exc:  # e.g. an integer of over 4300 digits
        return None, f"{what} cannot be read as JSON: {exc}"
    if not isinstance(value, dict):
        return None, f"{what} is not a JSON object (got {json_type(value)})"
    return value, None


__all__ = ["parse_answer"]
