"""SPAR_ASYNC_BACKEND: spar runs its reviewers on asyncio unless trio is asked for.

The behaviour that differs between the backends (subprocesses, signals,
cancellation) is tested on both: the `anyio_backend` fixture (conftest.py) runs
every in-process async test twice, and the end-to-end tests run `spar run` with
each value of SPAR_ASYNC_BACKEND.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from spar.backend import BACKEND_ENV, async_backend
from spar.errors import Refused

README = Path(__file__).resolve().parent.parent / "README.md"


@pytest.mark.parametrize(("env", "backend"), [
    ({}, "asyncio"), ({BACKEND_ENV: ""}, "asyncio"), ({BACKEND_ENV: "trio"}, "trio"),
    ({BACKEND_ENV: "asyncio"}, "asyncio"),
])
def test_asyncio_unless_trio_is_asked_for(env, backend):
    assert async_backend(env) == backend


@pytest.mark.parametrize("value", ["curio", "Trio", "asyncio ", "uvloop"])
def test_any_other_value_is_refused(value):
    with pytest.raises(Refused, match="expected asyncio or trio"):
        async_backend({BACKEND_ENV: value})


def test_the_readme_documents_the_switch():
    text = README.read_text(encoding="utf-8")
    assert f"{BACKEND_ENV}=trio" in text and "asyncio" in text
