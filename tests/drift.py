"""`python -m tests.drift`: the real-CLI end-to-end tests against the newest published claude and
codex, and what changed since the pinned ones (not part of .ci/run: it asks the npm registry).

It asks npm for the latest versions, writes a package.json and lockfile for them into
`.real-cli/drift/` (`npm install --package-lock-only`), points the tests at it
(SPAR_REAL_CLI_LOCK, tests/realclis.py), runs tests/test_real_round.py and
tests/test_real_failures.py with the failure outputs captured, and prints for each shape
what differs from the pinned CLIs' captures (tests/data/real-cli/server/): event types and
subtypes, the keys of each kind of event, and the error words (refusal and retry messages).
Exit 0 when the tests pass and nothing changed, 1 otherwise.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

from tests.realclis import CLAUDE_PACKAGE, CODEX_PACKAGE, INSTALLS, ROOT

CAPTURES = ROOT / "tests" / "data" / "real-cli" / "server"
WORD_KEYS = ("result", "message", "error", "text", "subtype")  # where the CLIs put their words


def latest(package: str) -> str:
    proc = subprocess.run(["npm", "view", package, "version"], capture_output=True, text=True, timeout=120,
                          check=True)
    return proc.stdout.strip()


def write_lock(folder: Path, versions: dict[str, str]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "package.json").write_text(json.dumps({"name": "spar-real-cli-drift", "private": True,
                                                     "dependencies": versions}, indent=2) + "\n")
    subprocess.run(["npm", "install", "--package-lock-only", "--no-audit", "--no-fund", "--loglevel=error"],
                   cwd=folder, check=True, timeout=600)


def shape_of(path: Path) -> tuple[dict[str, list[str]], list[str]]:
    """What a capture shows: each kind of event (type/subtype or item type) with its keys, and
    the words of its errors and results."""
    kinds: dict[str, set[str]] = defaultdict(set)
    words: list[str] = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if not isinstance(event, dict):
            continue
        item = event.get("item") if isinstance(event.get("item"), dict) else {}
        kind = "/".join(str(x) for x in (event.get("type"), event.get("subtype") or item.get("type")) if x)
        kinds[kind].update(event)
        if event.get("is_error") or event.get("error") or kind.endswith("error") or "failed" in kind:
            words += [v for k in WORD_KEYS if isinstance(v := event.get(k) or item.get(k), str)]
    return {k: sorted(v) for k, v in sorted(kinds.items())}, words


def compare(pinned: Path, newest: Path) -> list[str]:
    """What changed from the pinned CLIs' captures to the newest ones, line by line."""
    changes = []
    for old in sorted(pinned.glob("*.stdout.log")):
        new = newest / old.name
        if not new.exists():
            changes.append(f"{old.name}: not captured with the newest CLIs (its test failed?)")
            continue
        (was_events, was_words), (events, words) = shape_of(old), shape_of(new)
        for kind in sorted(set(was_events) | set(events)):
            was, now = set(was_events.get(kind, [])), set(events.get(kind, []))
            if kind not in events or kind not in was_events:
                changes.append(f"{old.name}: event {kind} {'gone' if kind not in events else 'new'}")
            elif was != now:
                changes.append(f"{old.name}: event {kind}: new keys {sorted(now - was)}, gone {sorted(was - now)}")
        if was_words != words:
            changes.append(f"{old.name}: words {was_words} -> {words}")
    return changes


def main() -> int:
    versions = {CLAUDE_PACKAGE: latest(CLAUDE_PACKAGE), CODEX_PACKAGE: latest(CODEX_PACKAGE)}
    pinned = json.loads((ROOT / "tests" / "realcli" / "package.json").read_text())["dependencies"]
    print("pinned: " + ", ".join(f"{k} {v}" for k, v in pinned.items()))
    print("newest: " + ", ".join(f"{k} {v}" for k, v in versions.items()))
    folder = INSTALLS / "drift"
    write_lock(folder, versions)
    captured = folder / "captures"
    env = {**os.environ, "SPAR_REAL_CLI_LOCK": str(folder), "SPAR_REAL_CLI_CAPTURE": str(captured)}
    tests = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "0", "-m", "realcli",
                            "tests/test_real_round.py", "tests/test_real_failures.py"], cwd=ROOT, env=env)
    changes = compare(CAPTURES, captured)
    print("\n".join(changes) if changes else "no change in the captured events, keys or words")
    return 0 if tests.returncode == 0 and not changes else 1


if __name__ == "__main__":
    sys.exit(main())
