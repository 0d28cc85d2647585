"""Building a round's `RoundContext` from git: the one place the location and
link judgments' inputs are read (spar.judge stays free of I/O)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from spar import git
from spar.judge.context import RoundContext, RoundDoc
from spar.pathtext import path_text


def context_from_git(repo: Path | str, base: str, head: str, documents: list[RoundDoc],
                     check_paths: list[str], criteria_ids: Iterable[str]) -> RoundContext:
    """Build a RoundContext from the trees of two commits (blob entries only, so a
    gitlink is in neither copy). Head blobs are read lazily and only for contract
    links that give lines."""
    # paths in their one text form (spar.pathtext): a name that is not UTF-8 is found by
    # its escaped spelling and is written to the records in it
    head_entries = [(path_text(e.path), e) for e in git.ls_tree(repo, head)]
    base_entries = [(path_text(e.path), e) for e in git.ls_tree(repo, base)]
    shas = {p: e.sha for p, e in head_entries}
    cache: dict[str, bytes] = {}

    def read_head_blob(path: str) -> bytes:
        if path not in cache:
            sha = shas[path]
            cache[path] = git.read_blobs(repo, [sha])[sha]
        return cache[path]

    return RoundContext(
        head_files={p: e.mode for p, e in head_entries},
        base_files={p: e.mode for p, e in base_entries},
        documents=list(documents),
        check_paths=list(check_paths),
        criteria_ids=set(criteria_ids),
        read_head_blob=read_head_blob,
    )
