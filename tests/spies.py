"""Recording what a function is called with, while the real function still runs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def calls_to(monkeypatch: Any, owner: Any, name: str, pick: Callable[..., Any]) -> list[Any]:
    """Replace `owner.name` by a wrapper that appends `pick(*args, **kwargs)` to the list
    returned here, then calls the real function with the same arguments."""
    calls: list[Any] = []
    real = getattr(owner, name)

    def recording(*args: Any, **kwargs: Any) -> Any:
        calls.append(pick(*args, **kwargs))
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, recording)
    return calls
