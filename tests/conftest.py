"""Fixtures shared by every test file.

- `anyio_backend`: every `@pytest.mark.anyio` test runs on trio and on asyncio,
  Spar's two supported backends (README "Async backend").
- `repo`: one repository per test module, two commits, `reviews/` and `gates/`
  ignored (see `roundfactory.series_repo`); tests share it by giving each
  series its own folder, which is cheaper than a repository per test.
- `series`: a fresh series in that repository with one round, `r1`.
A module that needs a different repository defines its own `repo`.
"""

from __future__ import annotations

import pytest

from tests import roundfactory as rf


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request):
    return request.param


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    return rf.series_repo(tmp_path_factory.mktemp("repo"))[0]


@pytest.fixture
def series(repo):
    series = rf.fresh_series(repo)
    rf.make_round(series, "r1", repo=repo)
    return series
