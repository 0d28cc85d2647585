"""conftest.py bounds every in-process async test with anyio.fail_after."""

from __future__ import annotations

import sys
import types

import anyio
import pytest

from tests import conftest


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_hanging_async_test_fails_after_the_bound(monkeypatch, backend):
    monkeypatch.setattr(conftest, "ASYNC_TEST_BOUND", 0.1)

    async def hangs():
        await anyio.sleep(600)

    item = types.SimpleNamespace(obj=hangs)
    conftest.pytest_pyfunc_call(item)
    with pytest.raises(TimeoutError):
        anyio.run(item.obj, backend=backend)


@pytest.mark.anyio
async def test_this_test_runs_wrapped():
    # the frame that awaits this test is the wrapper conftest.py put around it
    caller = sys._getframe(1)
    assert caller.f_code.co_name == "bounded" and caller.f_code.co_filename == conftest.__file__
