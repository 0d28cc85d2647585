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
# the kernel's keyring calls per machine (platform.machine()): its seccomp architecture
# (AUDIT_ARCH_*) and the numbers of add_key, request_key and keyctl (glibc wraps none);
# the one table, read here and by the jail's seccomp filter (spar.proc.sandbox)
_X86_64, _I386, _ARM64 = (0xC000003E, (248, 249, 250)), (0x40000003, (286, 287, 288)), (0xC00000B7, (217, 218, 219))
_ARM = (0x40000028, (309, 310, 311))
KEYRING_CALLS: dict[str, tuple[int, tuple[int, int, int]]] = {
    "x86_64": _X86_64, "amd64": _X86_64, "i386": _I386, "i686": _I386, "aarch64": _ARM64, "arm64": _ARM64,
    "armv7l": _ARM, "armv6l": _ARM, "riscv64": (0xC00000F3, (217, 218, 219)),
    "ppc64le": (0xC0000015, (269, 270, 271)), "ppc64": (0x80000015, (269, 270, 271)),
    "s390x": (0x80000016, (278, 279, 280))}


_CALLS = KEYRING_CALLS.get(platform.machine())
_NUMBER = _CALLS[1][2] if _CALLS is not None else None  # keyctl, known before the guard forks


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
