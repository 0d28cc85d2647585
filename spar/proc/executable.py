"""G14: finding a reviewer's executable (`binary`, the preset name, argv[0] of command)."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass

from spar.errors import quote


@dataclass
class ExecutableLookup:
    """Where a reviewer's executable is, or why it is not available."""

    status: str  # "ok" | "unavailable" | "failed"
    path: str | None = None  # absolute path of the executable when ok
    reason: str = ""


def find_executable(name: str, path_env: str | None) -> ExecutableLookup:
    """A name containing / is that path; a bare name is an executable file on PATH."""
    if "/" in name:
        return _check_path(name)
    if not name:
        return ExecutableLookup("unavailable", reason="no executable name given")
    seen_non_exec = False
    for folder in (path_env or "").split(os.pathsep):
        # POSIX: an empty PATH entry means the current folder
        candidate = os.path.abspath(os.path.join(folder or ".", name))
        try:
            st = os.stat(candidate)
        except OSError:
            continue
        if not stat.S_ISREG(st.st_mode):
            continue
        if os.access(candidate, os.X_OK):
            return ExecutableLookup("ok", path=candidate)
        seen_non_exec = True
    if seen_non_exec:
        return ExecutableLookup("unavailable",
                      reason=f"{quote(name)} not found on PATH (only files without execute permission)")
    return ExecutableLookup("unavailable", reason=f"{quote(name)} not found on PATH")


def _check_path(name: str) -> ExecutableLookup:
    path = os.path.abspath(name)  # the reviewer runs in the workspace: never pass a relative path on
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return ExecutableLookup("unavailable", reason=f"executable {quote(name)} does not exist")
    except NotADirectoryError:
        return ExecutableLookup("unavailable", reason=f"executable {quote(name)} does not exist")
    except OSError as exc:
        return ExecutableLookup("failed", reason=f"executable {quote(name)}: {exc.strerror or exc}")
    if not stat.S_ISREG(st.st_mode):
        return ExecutableLookup("failed", reason=f"executable {quote(name)} is not a regular file")
    if not os.access(path, os.X_OK):
        return ExecutableLookup("failed", reason=f"executable {quote(name)} has no execute permission")
    return ExecutableLookup("ok", path=path)
