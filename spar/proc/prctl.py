"""Two Linux settings of a process that Spar relies on, set through prctl(2).

- *Child subreaper* (`become_subreaper`): orphans of this process's subtree come to it
  instead of to init, so none can leave it (`spar.proc.reaper`, for the guard and keepers).
- *Not dumpable* (`make_undumpable`): besides writing no core file, the process's
  `/proc/<pid>/` entries belong to root, so another process of the same user cannot open
  its descriptors through `/proc/<pid>/fd` (a reviewer reaching the user's terminal through
  Spar's stderr) nor trace it. Spar sets it on itself before it forks its guard; the guard
  and every keeper inherit it across fork, and a reviewer's exec makes the reviewer alone
  dumpable again. It does not stop a process running as root, whose capabilities pass over it.

Standard library only (ctypes), as the guard. Elsewhere than Linux each call returns False
and nothing changes.
"""

from __future__ import annotations

import ctypes
import functools

PR_GET_DUMPABLE = 3
PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36


@functools.cache
def _libc() -> ctypes.CDLL | None:
    try:
        return ctypes.CDLL(None, use_errno=True)  # this process's own symbols hold libc's prctl
    except OSError:
        return None


def _prctl(option: int, value: int = 0) -> int | None:
    """prctl's answer (-1: refused); None where there is no prctl."""
    libc = _libc()
    try:
        return int(libc.prctl(option, value, 0, 0, 0)) if libc is not None else None
    except AttributeError:
        return None


def become_subreaper() -> bool:
    """Make this process the reaper of its orphaned descendants; False where unsupported."""
    return _prctl(PR_SET_CHILD_SUBREAPER, 1) == 0


def make_undumpable() -> bool:
    """Make this process not dumpable (see the module's text); False where unsupported."""
    return _prctl(PR_SET_DUMPABLE, 0) == 0


def dumpable() -> bool | None:
    """Whether this process is dumpable; None where it cannot be told."""
    answer = _prctl(PR_GET_DUMPABLE)
    return None if answer is None or answer < 0 else answer != 0


__all__ = ["become_subreaper", "dumpable", "make_undumpable"]
