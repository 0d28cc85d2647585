"""clean-review's `config.json` as a user configuration source (G18).

Only `reviewers` is read; other keys belong to clean-review and are left
alone. Problems are configuration errors at the JSON line of the problem.
"""

from __future__ import annotations

import bisect
import json
import re

from spar.config.checks import default_reviewers, show
from spar.config.model import DEFAULT_TIMEOUT, ReviewerConfig
from spar.errors import ConfigError, quote
from spar.whitespace import trim

CLEAN_REVIEW_NAMES = ("claude", "codex", "agy", "native")
# Python refuses to turn more digits than this into an int (ValueError); Go reads
# any JSON number, and a huge one in a key spar ignores must not stop spar
_MAX_INT_DIGITS = 4000


def _number(digits: str) -> int | float:
    return int(digits) if len(digits) <= _MAX_INT_DIGITS else float(digits)


def check_clean_review(file: str, text: str) -> list[ReviewerConfig]:
    try:
        data = json.loads(text, parse_int=_number)
    except json.JSONDecodeError as err:
        raise ConfigError(file, err.lineno, f"JSON syntax error: {err.msg}") from None
    lines = _json_lines(text)

    def line(path: tuple[str | int, ...]) -> int:
        return lines.get(path) or lines.get(path[:-1]) or lines.get(()) or 1

    if not isinstance(data, dict):
        raise ConfigError(file, line(()), f"clean-review configuration must be a JSON object, got {_kind(data)}")
    if "reviewers" not in data:
        return default_reviewers(DEFAULT_TIMEOUT)
    items = data["reviewers"]
    if not isinstance(items, list):
        raise ConfigError(file, line(("reviewers",)), f"reviewers must be an array of strings, got {_kind(items)}")
    names: list[tuple[str, int]] = []
    for n, item in enumerate(items):
        where = line(("reviewers", n))
        if not isinstance(item, str):
            raise ConfigError(file, where, f"reviewers item {n + 1} must be a string, got {_kind(item)}")
        name = trim(item)  # Unicode whitespace, as Go's strings.TrimSpace in clean-review
        if name == "":  # skipped, as clean-review does
            continue
        if name not in CLEAN_REVIEW_NAMES:
            raise ConfigError(file, where, f"reviewers item {n + 1} {quote(name)} is not one of "
                                           f"{', '.join(CLEAN_REVIEW_NAMES)}")
        if any(name == seen for seen, _ in names):
            raise ConfigError(file, where, f"reviewers item {n + 1} {quote(name)} is a duplicate")
        names.append((name, where))
    if not names:  # every item empty: native alone
        return default_reviewers(DEFAULT_TIMEOUT, ("native",), f"{file}:{line(('reviewers',))}")
    return [ReviewerConfig(name=n, preset=n, timeout_seconds=DEFAULT_TIMEOUT, source=f"{file}:{where}")
            for n, where in names]


def _kind(value: object) -> str:
    if isinstance(value, dict):
        return "an object"
    return show(value)


_WS = re.compile(r"[ \t\n\r]*")


def _skip_ws(text: str, i: int) -> int:
    """The index after the JSON whitespace at `i`."""
    m = _WS.match(text, i)
    return m.end() if m else i


def _json_lines(text: str) -> dict[tuple[str | int, ...], int]:
    """Lines of the top-level value, its keys and the items of `reviewers`.

    Walks text json.loads already accepted; a repeated key keeps its last
    position, as the value json.loads keeps is the last one."""
    newlines = [m.start() for m in re.finditer("\n", text)]
    dec = json.JSONDecoder(parse_int=_number)

    def line_at(i: int) -> int:
        return bisect.bisect_left(newlines, i) + 1

    i = _skip_ws(text, 0)
    lines: dict[tuple[str | int, ...], int] = {(): line_at(i)}
    if not text.startswith("{", i):
        return lines
    i += 1
    while True:
        i = _skip_ws(text, i)
        if text.startswith("}", i):
            return lines
        start = i
        key, i = dec.raw_decode(text, i)
        i = _skip_ws(text, i) + 1  # ':'
        i = _skip_ws(text, i)
        lines[(key,)] = line_at(start)
        if key == "reviewers" and text.startswith("[", i):
            for path in [p for p in lines if len(p) == 2 and p[0] == key]:
                del lines[path]  # an earlier `reviewers` key is overridden
            i += 1
            n = 0
            while True:
                i = _skip_ws(text, i)
                if text.startswith("]", i):
                    i += 1
                    break
                lines[(key, n)] = line_at(i)
                _, i = dec.raw_decode(text, i)
                n += 1
                i = _skip_ws(text, i)
                if text.startswith(",", i):
                    i += 1
        else:
            _, i = dec.raw_decode(text, i)
        i = _skip_ws(text, i)
        if text.startswith(",", i):
            i += 1
