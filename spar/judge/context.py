"""What location (G7) and link (G8, G9) judgments look at: the two copies, the
round documents, the check paths and the criterion IDs of one round.

The dataclasses are plain data so judgments stay pure; the one builder that
talks to git is `spar.round.context.context_from_git`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cached_property

DOC_KINDS = ("criteria", "rules", "subject")
REGULAR_MODES = ("100644", "100755")  # G8: a contract link's head file must be one of these


def count_lines(text: bytes) -> int:
    """Newlines, plus one when the last line does not end with one (empty = 0)."""
    n = text.count(b"\n")
    if text and not text.endswith(b"\n"):
        n += 1
    return n


@dataclass
class RoundDoc:
    """A round document (criteria, rules, subject) as the judgments see it."""

    kind: str  # "criteria", "rules" or "subject"
    name: str  # G26 name: repository-relative path inside the repository, file name outside
    real_path: str  # real absolute path
    file_name: str
    text: bytes

    @property
    def lines(self) -> int:
        return count_lines(self.text)


def _folders(paths: Iterable[str]) -> frozenset[str]:
    """Every folder above a file ("" for the root is left out: the root is handled apart)."""
    out: set[str] = set()
    for path in paths:
        parts = path.split("/")
        for i in range(1, len(parts)):
            out.add("/".join(parts[:i]))
    return frozenset(out)


@dataclass
class RoundContext:
    """What location and link judgments look at."""

    head_files: dict[str, str]  # path -> mode of the head commit's blob entries
    base_files: dict[str, str]
    documents: list[RoundDoc]
    check_paths: list[str]
    criteria_ids: set[str]
    read_head_blob: Callable[[str], bytes] | None = None  # bytes of a head file (line counts)

    @cached_property
    def head_folders(self) -> frozenset[str]:
        return _folders(self.head_files)

    @cached_property
    def base_folders(self) -> frozenset[str]:
        return _folders(self.base_files)

    @property
    def rule_documents(self) -> list[RoundDoc]:
        return [d for d in self.documents if d.kind == "rules"]

    def in_copy(self, copy: str, path: str) -> bool:
        """Whether `path` (already without its trailing "/") is a file or folder of the
        "head" or "base" copy. "" is the repository root, always there."""
        if path == "":
            return True
        files, folders = ((self.head_files, self.head_folders) if copy == "head"
                          else (self.base_files, self.base_folders))
        return path in files or path in folders


__all__ = ["DOC_KINDS", "REGULAR_MODES", "RoundContext", "RoundDoc", "count_lines"]
