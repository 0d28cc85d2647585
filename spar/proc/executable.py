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


def find_executable(name: str, path_env: str | None, *, script: bool = True) -> ExecutableLookup:
    """A name containing / is that path; a bare name is an executable file on PATH. `script`:
    a script's #! interpreter is looked at too (one level: not the interpreter's own)."""
    if "/" in name:
        return _check_path(name, path_env, script)
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
            return _startable(name, candidate, path_env, script)
        seen_non_exec = True
    if seen_non_exec:
        return ExecutableLookup("unavailable",
                      reason=f"{quote(name)} not found on PATH (only files without execute permission)")
    return ExecutableLookup("unavailable", reason=f"{quote(name)} not found on PATH")


def _check_path(name: str, path_env: str | None, script: bool) -> ExecutableLookup:
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
    return _startable(name, path, path_env, script)


SHEBANG_LIMIT = 256  # bytes of a script read for its #! line (the kernel reads fewer)


def _startable(name: str, path: str, path_env: str | None, script: bool) -> ExecutableLookup:
    """`path`, unless it is a script whose #! line names an interpreter that cannot start
    (the kernel would refuse the script: say so before a round, not as a reviewer's exit 127).
    `script` False: the #! line is not looked at."""
    if not script:
        return ExecutableLookup("ok", path=path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return ExecutableLookup("ok", path=path)  # an execute-only file: the kernel's to judge
    try:
        head = os.read(fd, SHEBANG_LIMIT) if stat.S_ISREG(os.fstat(fd).st_mode) else b""
    finally:
        os.close(fd)
    problem = _interpreter_problem(head, path_env)
    if problem:
        return ExecutableLookup("failed", reason=f"executable {quote(name)} cannot start: {problem}")
    return ExecutableLookup("ok", path=path)


def _interpreter_problem(head: bytes, path_env: str | None) -> str:
    """Why the interpreter of a script's #! line cannot start ("" when it can, or when the
    line is not one this reads: the kernel then decides)."""
    if not head.startswith(b"#!"):
        return ""
    words = head[2:].split(b"\n", 1)[0].split()
    if not words or not words[0].startswith(b"/"):
        return ""
    interpreter = os.fsdecode(words[0])
    if not (os.path.isfile(interpreter) and os.access(interpreter, os.X_OK)):
        return f"its #! line names {quote(interpreter)}, which is not an executable file"
    rest = [os.fsdecode(w) for w in words[1:]]
    if os.path.basename(interpreter) == "env" and rest[:1] == ["-S"]:
        rest = rest[1:]
    if os.path.basename(interpreter) == "env" and rest and not rest[0].startswith("-") and "=" not in rest[0]:
        found = find_executable(rest[0], path_env, script=False)
        if found.status != "ok":
            return f"its #! line runs {quote(rest[0])} through env, and {found.reason}"
    return ""
