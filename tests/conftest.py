"""Fixtures shared by every test file.

- `anyio_backend`: every `@pytest.mark.anyio` test runs on trio and on asyncio,
  Spar's two supported backends (README "Async backend").
- `repo`: one repository per test module, two commits, `reviews/` and `gates/`
  ignored (see `roundfactory.series_repo`); tests share it by giving each
  series its own folder, which is cheaper than a repository per test.
- `series`: a fresh series in that repository with one round, `r1`.
- `_guard_started_alone` (every test): the reviewer guard is running before each test
  starts, forked while the process ran one thread (spar.proc.guard refuses otherwise).
A module that needs a different repository defines its own `repo`.

Every in-process async test runs under `anyio.fail_after(ASYNC_TEST_BOUND)`, so a
hang fails the test instead of stopping the suite (pyproject's
`faulthandler_timeout`, longer, still dumps the stacks of a hang in sync code).

The suite keeps bytecode even where PYTHONDONTWRITEBYTECODE is set (`pytest_configure`):
otherwise each of the hundreds of `spar` and fake-CLI processes it starts compiles Spar
from source again (0.06 s of CPU each), and each worker rewrites every test module.
"""

from __future__ import annotations

import compileall
import functools
import inspect
import os
import sys
from pathlib import Path

import anyio
import pytest

from tests import roundfactory as rf

ASYNC_TEST_BOUND = 240.0  # seconds; a hang bound, never a measure of speed
ROOT = Path(__file__).resolve().parent.parent


def pytest_configure(config):
    # bytecode in the __pycache__ folders git ignores: imports and assertion rewriting in
    # this process, and Spar and the fakes compiled once for the processes tests start
    sys.dont_write_bytecode = False
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        for folder in (ROOT / "spar", ROOT / "tests" / "fakes"):
            compileall.compile_dir(folder, quiet=2)


@pytest.hookimpl(wrapper=True)
def pytest_xdist_auto_num_workers(config):
    # -n auto: one worker more than xdist's count (the cores). About a third of the suite's
    # worker time is spent waiting on its processes (time limits running out, process groups
    # ending), not computing: on 2 cores a third worker uses that time (2 min 54 s with two
    # workers, 2 min 20 s with three, 2 min 33 s with four, each under load 4 to 7).
    # PYTEST_XDIST_AUTO_NUM_WORKERS, when set, is taken as it is.
    count = yield
    return count if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS") else count + 1


def pytest_collection_modifyitems(config, items):
    # the slow end-to-end tests first (in their order): with --dist worksteal (pyproject) an
    # idle worker takes the end of the other's queue, so the run ends with short tests on
    # every worker instead of one long test on one of them
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem):
    # runs before anyio's plugin, which then runs the wrapped test on the chosen backend
    test = pyfuncitem.obj
    if inspect.iscoroutinefunction(test) and not hasattr(test, "__bounded__"):
        @functools.wraps(test)
        async def bounded(*args, **kwargs):
            with anyio.fail_after(ASYNC_TEST_BOUND):
                return await test(*args, **kwargs)

        bounded.__bounded__ = True
        pyfuncitem.obj = bounded


# trio, the backend Spar does not use by default, runs in the full suite only: the inner
# loop (-m "not slow") runs each async test once, on asyncio
@pytest.fixture(params=["asyncio", pytest.param("trio", marks=pytest.mark.slow)])
def anyio_backend(request):
    return request.param


@pytest.fixture(scope="session", autouse=True)
def _suite_guard():
    """One reviewer guard for this test process's life, as the enclosing `reviewer_guard`
    block of every test: a command called in-process (`cli.main`) finds it and leaves it
    running, and a test's own programs start through it. Forked first, while this process
    runs one thread."""
    from spar.proc.process import reviewer_guard
    from tests.proctools import wait_alone

    wait_alone()
    with reviewer_guard() as guard:
        yield guard


@pytest.fixture(autouse=True)
def _guard_started_alone(_suite_guard):
    """The suite's guard, replaced before a test when one before it ended it: at a moment
    with no other thread (anyio's trio test runner keeps a thread for a few seconds after a
    trio test)."""
    from tests.proctools import start_guard_alone

    if not _suite_guard.running():
        start_guard_alone(_suite_guard)


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    return rf.series_repo(tmp_path_factory.mktemp("repo"))[0]


@pytest.fixture
def series(repo):
    series = rf.fresh_series(repo)
    rf.make_round(series, "r1", repo=repo)
    return series


@pytest.fixture
def npm_clis():
    """The real claude and codex of tests/realcli's lock (installed once; skips without npm)."""
    from tests.realclis import installed

    return installed()


@pytest.fixture
def world():
    """A folder for a real-CLI test's world that another user may enter (tests/realround.py)."""
    from tests.realround import world_dir

    with world_dir() as root:
        yield root
