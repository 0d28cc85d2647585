"""End every descendant of this process, whatever session or group it moved to.

A process group is not enough: a reviewer's grandchild can call `setsid()` (or
`setpgid()`) and leave the group spar kills. On Linux a *child subreaper*
(`prctl(PR_SET_CHILD_SUBREAPER)`) receives every orphan of its subtree instead
of init, so no descendant can leave the subtree; `end_descendants()` then
finds the whole subtree through `/proc` (parent links) and ends it: SIGTERM,
`grace` seconds, SIGKILL until nothing is left, reaping as it goes.

Used by `spar.round.guard`: by the guard of the round and by each reviewer's
keeper. Standard library only: the guard runs with
`python -I`. Without `/proc` or `prctl` (not Linux) `become_subreaper()`
returns False and only the process group is ended by the caller.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable

PR_SET_CHILD_SUBREAPER = 36
_POLL = 0.02


def become_subreaper() -> bool:
    """Make this process the reaper of its orphaned descendants; False where unsupported."""
    import ctypes  # here: only the guard and its keepers need it, not every spar start

    try:
        libc = ctypes.CDLL(None, use_errno=True)  # this process's own symbols hold libc's prctl
        return bool(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def process_table() -> dict[int, tuple[int, int, str]] | None:
    """pid -> (parent pid, process group, state) of every process /proc shows; None without /proc."""
    out: dict[int, tuple[int, int, str]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return None
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
            out[int(entry)] = (int(fields[1]), int(fields[2]), fields[0].decode("ascii", "replace"))
        except (OSError, IndexError, ValueError):
            continue  # it ended while we looked
    return out


def descendants(root: int | None = None) -> list[int]:
    """Living (not zombie) processes below `root` (default: this process)."""
    root = os.getpid() if root is None else root
    children: dict[int, list[int]] = {}
    table = process_table() or {}
    for pid, (ppid, _pgid, _state) in table.items():
        children.setdefault(ppid, []).append(pid)
    found: list[int] = []
    stack = [root]
    while stack:
        for child in children.get(stack.pop(), []):
            stack.append(child)
            if table[child][2] not in ("Z", "X"):
                found.append(child)
    return found


def reap(on_exit: Callable[[int, int], None] | None = None) -> None:
    """Collect every child that has ended; `on_exit(pid, wait status)` for each."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        if on_exit is not None:
            on_exit(pid, status)


def _signal_all(pids: list[int], sig: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def end_descendants(grace: float, on_exit: Callable[[int, int], None] | None = None,
                    *, rounds: int = 250) -> bool:
    """SIGTERM every descendant, SIGKILL what is left after `grace` seconds (again until
    none is left: a process may fork while being ended), reaping all along. True when
    none is left; False after `rounds` SIGKILL passes (a process we may not signal)."""
    reap(on_exit)
    pids = descendants()
    if not pids:
        return True
    _signal_all(pids, signal.SIGTERM)
    end = time.monotonic() + grace
    while time.monotonic() < end:
        reap(on_exit)
        if not descendants():
            return True
        time.sleep(_POLL)
    for _ in range(rounds):
        reap(on_exit)
        pids = descendants()
        if not pids:
            return True
        _signal_all(pids, signal.SIGKILL)
        time.sleep(_POLL)
    return False


__all__ = ["become_subreaper", "descendants", "end_descendants", "process_table", "reap"]
