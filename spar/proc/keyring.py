"""A new session keyring of the kernel for each program Spar starts.

The kernel's keyrings (keyctl(2)) are not files: no sandbox's view of the file system hides
them. A process finds keys through its session keyring (Kerberos tickets, keys a login
stored) and its user's keyring. The guard's keeper joins a new, empty, anonymous session
keyring (KEYCTL_JOIN_SESSION_KEYRING) before it starts a program, which inherits it: the
user's session keyring is out of its reach. The user's keyring is reached by uid: inside a
jail, the seccomp filter of `spar.proc.sandbox` refuses every keyring call.

Standard library only (ctypes), as the guard. Where the system call is unknown (not Linux,
an architecture not listed) nothing changes and the call says so.
"""

from __future__ import annotations

import ctypes
import functools
import platform
import sys
from collections.abc import Callable
from typing import Any

KEYCTL_JOIN_SESSION_KEYRING = 1
# keyctl's system call number per architecture (glibc has no wrapper of its own)
SYS_KEYCTL = {"x86_64": 250, "amd64": 250, "aarch64": 219, "arm64": 219, "riscv64": 219, "i386": 288,
              "i686": 288, "armv7l": 311, "armv6l": 311, "ppc64le": 271, "ppc64": 271, "s390x": 280}


_NUMBER = SYS_KEYCTL.get(platform.machine())  # known before the guard forks


@functools.cache
def _syscall() -> Callable[..., Any] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).syscall
    except (OSError, AttributeError):
        return None


def join_new_session_keyring() -> bool:
    """Make a new anonymous session keyring this process's own; False where it could not."""
    call = _syscall()
    if _NUMBER is None or call is None:
        return False
    return int(call(ctypes.c_long(_NUMBER), ctypes.c_long(KEYCTL_JOIN_SESSION_KEYRING), ctypes.c_void_p(None))) >= 0


__all__ = ["join_new_session_keyring"]
