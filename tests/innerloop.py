"""Which variants of a parametrized test the inner loop (`-m "not slow"`) runs.

A set of variants that take the same path through Spar with other data (one error body
per provider through the same retry, one damaged record per command) runs whole in the
full suite; the inner loop keeps the variants named here, the rest is marked `slow`.
Each test using this says what covers the variants it leaves to the full suite: a
cheaper test over the same data table, a covering choice of cells, or that the variants
run no Spar code at all.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import pytest


def first_in_inner_loop(values: Sequence, ids: Sequence[str] | None = None) -> list:
    """`values` as `pytest.param`s: the first in the inner loop, every other one `slow`."""
    return kept_in_inner_loop(values, lambda index, _value: index == 0, ids)


def kept_in_inner_loop(values: Iterable, keep: Callable[[int, object], bool],
                       ids: Sequence[str] | None = None) -> list:
    """`values` as `pytest.param`s: those `keep(index, value)` in the inner loop, every
    other one `slow`. A tuple value is one test's several arguments."""
    params = []
    for index, value in enumerate(values):
        args = value if isinstance(value, tuple) else (value,)
        marks = () if keep(index, value) else (pytest.mark.slow,)
        params.append(pytest.param(*args, marks=marks, id=None if ids is None else ids[index]))
    return params
