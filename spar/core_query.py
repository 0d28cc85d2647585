"""Asking a Jaekit Core executable what it supports (core-capabilities §1–§2).

The executable's absolute path is settled first (symbolic links resolved) and
queried by that path, its sha256 taken before and after: a binary replaced
during the query is not a successful check. The query runs in its own process
group under a time limit (5 s, as the contract's check tool) and is never
retried; its interpretation is `spar.judge.core_caps`.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import anyio

from spar.judge.core_caps import QUERY_ARGS, Capabilities, interpret
from spar.proc.executable import find_executable
from spar.proc.process import GuardedProcess, OutputHandling

QUERY_TIMEOUT = 5.0
OUTPUT_CAP = 1024 * 1024  # a capability object is a few KiB; more is not an answer


@dataclass
class CoreCheck:
    """What the Core query found: the executable, its digest and capabilities."""

    requested: str  # what was asked for: --core PATH, or "ha" looked up on PATH
    executable: str | None  # the resolved absolute path, None when not found
    sha256: str | None
    capabilities: Capabilities


def _sha256(path: str) -> str | None:
    try:
        with open(path, "rb") as fh:
            return hashlib.file_digest(fh, "sha256").hexdigest()
    except OSError:
        return None


async def query_core(requested: str, path_env: str | None, env: dict[str, str],
                     timeout: float = QUERY_TIMEOUT) -> CoreCheck:
    lookup = find_executable(requested, path_env)
    if lookup.status != "ok" or lookup.path is None:
        return CoreCheck(requested, None, None, Capabilities("missing", lookup.reason))
    exe = os.path.realpath(lookup.path)
    before = _sha256(exe)
    with tempfile.TemporaryDirectory(prefix="spar-core-") as tmp:
        out = Path(tmp) / "stdout"
        try:
            output = OutputHandling(stdout_path=out, stderr_path=Path(tmp) / "stderr", cap=OUTPUT_CAP)
            async with GuardedProcess([exe, *QUERY_ARGS], cwd=tmp, env=env, output=output) as running:
                with anyio.move_on_after(timeout):
                    await running.wait()
            proc = running.result
        except OSError as err:
            return CoreCheck(requested, exe, before,
                             Capabilities("failed", f"could not start: {err.strerror or err}"))
        data = out.read_bytes()
    after = _sha256(exe)
    if before is None or before != after:
        return CoreCheck(requested, exe, after, Capabilities("failed", "the executable changed during the query"))
    if proc.stdout.truncated:
        return CoreCheck(requested, exe, before,
                         Capabilities("invalid", f"cannot be interpreted: more than {OUTPUT_CAP} bytes of output"))
    return CoreCheck(requested, exe, before, interpret(proc.exit_code, data, timed_out=proc.timed_out))
