"""End every descendant of this process, whatever session or group it moved to.

A process group is not enough: a reviewer's grandchild can call `setsid()` (or
`setpgid()`) and leave the group spar kills. On Linux a *child subreaper*
(`prctl(PR_SET_CHILD_SUBREAPER)`) receives every orphan of its subtree instead
of init, so no descendant can leave the subtree; `end_descendants()` then
finds the whole subtree through `/proc` (parent links) and ends it: SIGTERM,
`grace` seconds, SIGKILL until nothing is left, reaping as it goes.

Used by `spar.proc.guard`: by the guard of the round and by each reviewer's
keeper. Standard library only, as the guard. Without `/proc` or `prctl` (not Linux) `become_subreaper()`
(`spar.proc.prctl`) returns False and only the process group is ended by the caller.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable

from spar.proc.prctl import become_subreaper

_POLL = 0.02


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


def _children(pid: int) -> list[int] | None:
    """Children of `pid` from /proc/PID/task/*/children; None where the kernel has no such
    file (then the caller scans every process)."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except FileNotFoundError:
        return []  # it has ended meanwhile
    except OSError:
        return None
    out: list[int] = []
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children", "rb") as f:
                out += [int(x) for x in f.read().split()]
        except FileNotFoundError:
            if os.path.isdir(f"/proc/{pid}/task/{task}"):
                return None  # this kernel has no children files
            continue  # the thread (or the process) ended meanwhile
        except (OSError, ValueError):
            return None
    return out


def _state(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0].decode("ascii", "replace")
    except (OSError, IndexError):
        return None


def _descendants_by_children(root: int) -> list[int] | None:
    """Walk the children links down from `root`: as many reads as there are descendants,
    not as processes on the machine (a keeper whose reviewer left nothing reads one file)."""
    found: list[int] = []
    stack = [root]
    while stack:
        kids = _children(stack.pop())
        if kids is None:
            return None
        for kid in kids:
            stack.append(kid)
            if _state(kid) not in (None, "Z", "X"):
                found.append(kid)
    return found


def descendants(root: int | None = None) -> list[int]:
    """Living (not zombie) processes below `root` (default: this process)."""
    root = os.getpid() if root is None else root
    quick = _descendants_by_children(root)
    if quick is not None:
        return quick
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
