"""Criterion IDs (G9): `AC-<digits>` with no ASCII letter or digit right before or after.

Comparison is literal (AC-01 and AC-1 differ), so IDs are kept as written.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

# [0-9] and [A-Za-z] on purpose: \d and \w would take non-ASCII digits and letters.
_ID = re.compile(r"(?<![A-Za-z0-9])AC-[0-9]+(?![A-Za-z0-9])")


def find_ids(text: str) -> list[str]:
    """Every criterion ID in `text`, in order of first appearance, without duplicates."""
    return list(dict.fromkeys(_ID.findall(text)))


def ids_of_documents(texts: Iterable[bytes | str]) -> list[str]:
    """The criteria document ID set (links.criteria_ids): IDs of all documents' full
    text, in order of first appearance across the documents in the order given."""
    found: dict[str, None] = {}
    for raw in texts:
        # IDs are ASCII; undecodable bytes must not join or split neighbours
        text = raw.decode("utf-8", "surrogateescape") if isinstance(raw, bytes) else raw
        for ident in find_ids(text):
            found.setdefault(ident, None)
    return list(found)
