"""Which changed files a reviewer saw (issue 24 point 1), judged from what it was handed.

A file counts as seen when its whole diff was inline in the packet, or when one of the
reviewer's tool calls named it: as `head/PATH` or `base/PATH` (or those under the
reviewer's workspace, or after `./`), or by naming a folder that holds it; in an
incremental round, a call naming `change.diff` (the whole diff, every file's part) names
every changed file. A reviewer Spar did not run (recorded by `spar record`) had the
packet: the inline files. A glob counts
only through its literal folder prefix (`head/src/*.py` names `head/src/`); a bare `head`
or `base` names nothing (it may be the `head` program). Paths with
`.` or `..` components, and anything else, are not read: nothing is guessed. Pure.
"""

from __future__ import annotations

import bisect
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from spar.records.model import ReviewerEntry, ReviewerStatus

COPIES = ("head", "base")
CHANGE_DIFF = "change.diff"  # an incremental round's whole diff, in the workspace
_GLOB = "*?["
_SHELLS = ("sh", "bash", "dash", "zsh")


def command_words(line: str, depth: int = 0) -> list[str]:
    """The words of a shell command line (those of `sh -c TEXT` too); [] when it cannot be split."""
    try:
        words = shlex.split(line, posix=True)
    except ValueError:
        return []
    out = list(words)
    for i, word in enumerate(words[:-1]):
        name = word.rsplit("/", 1)[-1]
        option = words[i + 1]
        if (depth < 3 and name in _SHELLS and i + 2 < len(words) and option.startswith("-")
                and "c" in option[1:] and not option.startswith("--")):
            out += command_words(words[i + 2], depth + 1)
    return out


def _in_workspace(word: str, workspaces: Sequence[str]) -> str:
    """`word` relative to the workspace when it is under it, without leading `./`."""
    for root in workspaces:
        prefix = root.rstrip("/") + "/"
        if word.startswith(prefix):
            word = word[len(prefix):]
            break
    while word.startswith("./"):
        word = word[2:]
    return word


def _relative(word: str, workspaces: Sequence[str]) -> str | None:
    """`word` as a path under the workspace (`head/...`), or None when it is not one."""
    word = _in_workspace(word, workspaces)
    for g in _GLOB:
        at = word.find(g)
        if at >= 0:  # only the literal folder before the first glob character
            word = word[: word.rfind("/", 0, at) + 1]
    parts = word.split("/")
    # a bare `head` is as likely the program as the folder: only `head/...` names the copy
    if len(parts) < 2 or parts[0] not in COPIES or any(p in (".", "..") for p in parts[1:]):
        return None
    return "/".join(p for p in parts[1:] if p)


@dataclass
class ChangedFiles:
    """The change's file paths (text form), sorted for folder lookups."""

    paths: list[str]

    def __post_init__(self) -> None:
        self.paths = sorted(set(self.paths))
        self._known = set(self.paths)

    def named(self, words: Iterable[str], workspaces: Sequence[str], change_diff: bool = False) -> set[str]:
        """The changed files the words name, each itself or through a folder holding it;
        `change_diff` (an incremental round): every one when a word names `change.diff`."""
        seen: set[str] = set()
        for word in words:
            if change_diff and _in_workspace(word, workspaces) == CHANGE_DIFF:
                return set(self.paths)
            rel = _relative(word, workspaces)
            if rel is None:
                continue
            if rel in self._known:
                seen.add(rel)
                continue
            folder = rel + "/" if rel else ""
            start = bisect.bisect_left(self.paths, folder)
            for path in self.paths[start:]:
                if not path.startswith(folder):
                    break
                seen.add(path)
        return seen


def had(entry: ReviewerEntry, inline: set[str]) -> set[str] | None:
    """The changed files a reviewer had by its last attempt: the inline ones and those its
    calls named. One with no attempt that completed was recorded by `spar record` (it ran
    outside Spar, on the packet): the inline ones. None when it had nothing to read: no
    answer recorded yet, or its last attempt recorded no coverage (it never started)."""
    attempts = entry.get("attempts") or []
    if not attempts:
        return set(inline) if entry["status"] == ReviewerStatus.COMPLETED else None
    coverage = attempts[-1].get("coverage")
    if coverage is None:
        return None
    return inline | set(coverage.get("opened_files") or [])


def shortened(paths: Sequence[str], most: int = 10) -> str:
    """`a, b, c, …` with at most `most` names and the count of the rest."""
    shown = ", ".join(paths[:most])
    rest = len(paths) - most
    return shown + (f", … ({rest} more)" if rest > 0 else "")
