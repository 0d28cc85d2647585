"""G14: finding a reviewer's executable (`binary`, the preset name, argv[0] of command)."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass

from spar.errors import quote


@dataclass
class Lookup:
    """Where a reviewer's executable is, or why it is not available."""

    status: str  # "ok" | "unavailable" | "failed"
    path: str | None = None  # absolute path of the executable when ok
    reason: str = ""


def find_executable(name: str, path_env: str | None) -> Lookup:
    """A name containing / is that path; a bare name is an executable file on PATH."""
    if "/" in name:
        return _check_path(name)
    if not name:
        return Lookup("unavailable", reason="no executable name given")
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
            return Lookup("ok", path=candidate)
        seen_non_exec = True
    if seen_non_exec:
        return Lookup("unavailable",
                      reason=f"{quote(name)} not found on PATH (only files without execute permission)")
    return Lookup("unavailable", reason=f"{quote(name)} not found on PATH")


def _check_path(name: str) -> Lookup:
    path = os.path.abspath(name)  # the reviewer runs in the workspace: never pass a relative path on
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return Lookup("unavailable", reason=f"executable {quote(name)} does not exist")
    except NotADirectoryError:
        return Lookup("unavailable", reason=f"executable {quote(name)} does not exist")
    except OSError as exc:
        return Lookup("failed", reason=f"executable {quote(name)}: {exc.strerror or exc}")
    if not stat.S_ISREG(st.st_mode):
        return Lookup("failed", reason=f"executable {quote(name)} is not a regular file")
    if not os.access(path, os.X_OK):
        return Lookup("failed", reason=f"executable {quote(name)} has no execute permission")
    return Lookup("ok", path=path)
