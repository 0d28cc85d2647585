"""Connected groups of indexes joined by links (union-find with path halving): how
corroborated findings form one group and how export joins chains and groups (pure)."""

from __future__ import annotations

from collections.abc import Iterable


def connected(count: int, links: Iterable[tuple[int, int]]) -> list[list[int]]:
    """The indexes 0..count-1 grouped by `links` (pairs that belong together, joined
    through shared members); each group in index order, groups by their first index."""
    parent = list(range(count))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for a, b in links:
        parent[root(b)] = root(a)
    groups: dict[int, list[int]] = {}
    for i in range(count):
        groups.setdefault(root(i), []).append(i)
    return list(groups.values())
