"""Which anyio backend Spar runs on: `SPAR_ASYNC_BACKEND` (asyncio, the default, or trio).

Every command that runs an event loop (`spar run`, `spar doctor`) asks here.
"""

from __future__ import annotations

from collections.abc import Mapping

from spar.errors import Refused, quote

BACKENDS = ("trio", "asyncio")
BACKEND_ENV = "SPAR_ASYNC_BACKEND"


def async_backend(env: Mapping[str, str]) -> str:
    value = env.get(BACKEND_ENV, "") or "asyncio"
    if value not in BACKENDS:
        raise Refused(f"{BACKEND_ENV} {quote(value)}: expected asyncio or trio")
    return value
