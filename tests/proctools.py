"""Process helpers shared by the tests that kill reviewers (no tests here)."""

from __future__ import annotations

import os
import time
from pathlib import Path


def gone(pid: int, wait: float = 3.0) -> bool:
    """The process no longer runs within `wait` seconds (a zombie nobody has reaped
    yet counts as gone: it runs nothing and holds no pipe)."""
    end = time.monotonic() + wait
    while time.monotonic() < end:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        try:
            if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in ("Z", "X"):
                return True
        except (OSError, IndexError):
            return True
        time.sleep(0.05)
    return False
