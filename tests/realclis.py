"""The real claude and codex CLIs for the realcli tests (no tests here).

They are installed with `npm ci` from `tests/realcli/package.json` and its `package-lock.json`
(pinned versions, every file checked against the lock's integrity hash) into
`.real-cli/lock-<digest of the lock>/` (ignored by git; shared by pytest-xdist workers and later
sessions; a lock of other versions gets a folder of its own; an install that did not finish is
done again). `SPAR_REAL_CLI_LOCK` names another folder holding a package.json and a lock: the
drift command (tests/drift.py) points it at the newest published versions.

To bump a version: change it in tests/realcli/package.json, run
`npm install --package-lock-only` there, run `python -m pytest -m realcli`, and note in
reviewer-clis.md what the new version prints differently.
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from spar.round.sandboxing import choose_sandbox

ROOT = Path(__file__).resolve().parent.parent
LOCK_DIR = ROOT / "tests" / "realcli"
INSTALLS = ROOT / ".real-cli"  # in .gitignore
CLAUDE_PACKAGE = "@anthropic-ai/claude-code"
CODEX_PACKAGE = "@openai/codex"


@dataclass(frozen=True)
class RealCLIs:
    prefix: Path  # the npm prefix: node_modules/.bin/claude and codex
    claude_version: str
    codex_version: str

    def exe(self, name: str) -> str:
        return str(self.prefix / "node_modules" / ".bin" / name)

    def versions(self) -> str:
        return f"claude-code {self.claude_version}, codex {self.codex_version}"


def lock_dir() -> Path:
    return Path(os.environ.get("SPAR_REAL_CLI_LOCK") or LOCK_DIR)


def _installed_version(prefix: Path, package: str) -> str:
    data = json.loads((prefix / "node_modules" / package / "package.json").read_text(encoding="utf-8"))
    return str(data["version"])


def install(source: Path) -> RealCLIs:
    """`npm ci` of `source`'s package.json and lock into its own prefix (skips without npm or
    a registry); the real CLIs run in Spar's sandbox, so bwrap must work here."""
    why = choose_sandbox("auto", os.environ.get("PATH")).why
    if why:
        pytest.skip(f"the real CLIs run in Spar's sandbox, and there is none here: {why}")
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip("npm is not installed: the real-CLI tests need it (.ci/run installs it with apt-get)")
    lock = (source / "package-lock.json").read_bytes()
    prefix = INSTALLS / f"lock-{hashlib.sha256(lock).hexdigest()[:16]}"
    prefix.mkdir(parents=True, exist_ok=True)
    with open(prefix / ".lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # one install, whichever worker or session comes first
        done = prefix / ".installed"
        if not done.exists():
            for name in ("package.json", "package-lock.json"):
                shutil.copyfile(source / name, prefix / name)
            try:
                # --prefer-offline: the locked files come from npm's cache when it has them
                proc = subprocess.run([npm, "ci", "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error"],
                                      cwd=prefix, capture_output=True, text=True, timeout=900)
            except subprocess.TimeoutExpired:
                pytest.skip("npm ci of the real CLIs did not finish within 15 minutes")
            if proc.returncode != 0:
                pytest.skip(f"the npm registry is unavailable: {proc.stderr.strip()[-500:]}")
            done.write_text(lock.decode("utf-8", "replace")[:200])
    for name in ("claude", "codex"):
        if not (prefix / "node_modules" / ".bin" / name).exists():
            pytest.skip(f"npm installed no {name} executable")
    return RealCLIs(prefix, _installed_version(prefix, CLAUDE_PACKAGE), _installed_version(prefix, CODEX_PACKAGE))


@functools.cache
def installed() -> RealCLIs:
    """The CLIs of the lock the tests use, installed once per process."""
    return install(lock_dir())


def running_from(prefix: Path) -> list[int]:
    """Processes whose command line names a file under `prefix` (the real CLIs)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if str(prefix).encode() in cmdline and state not in ("Z", "X"):
            found.append(int(entry))
    return found
