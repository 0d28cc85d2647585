"""Concurrent `spar triage` processes on one round never lose or tear a ledger line.

Two workers triage the same findings of one round at the same time (real
processes, started together); every line each of them was told it wrote is in
ledger.jsonl, whole, in each worker's own order, and nothing else of the round
changed. A third worker's triages are killed with SIGKILL at seeded random
moments: a killed triage leaves its line whole or not at all, and the others
still append after it.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time

import pytest

from tests.faulttools import file_hashes, records_whole
from tests.gitrepo import commit, make_repo
from tests.roundfactory import finding, make_round, reviewer

pytestmark = pytest.mark.slow  # real triage processes racing and killed

FINDINGS = 8


def _round(tmp_path):
    repo = make_repo(tmp_path, {"app/main.py": "print('hi')\n"})
    commit(repo, {"app/main.py": "print('hello')\n"}, message="change")
    series = tmp_path / "series"
    folder = make_round(series, "r1", repo=repo, reviewers=[reviewer("alpha")],
                        findings=[finding("alpha", n) for n in range(1, FINDINGS + 1)])
    return folder


def _triage_argv(folder, n: int, evidence: str) -> list[str]:
    return [sys.executable, "-m", "spar", "triage", str(folder), f"alpha-F{n}", "--to", "rejected",
            "--evidence", evidence]


def _ledger(folder) -> list[dict]:
    return [json.loads(line) for line in (folder / "ledger.jsonl").read_text(encoding="utf-8").splitlines()]


def _worker(folder, tag: str, order: list[int], start: threading.Barrier, results: list) -> None:
    start.wait()
    for n in order:
        proc = subprocess.run(_triage_argv(folder, n, f"{tag}-{n}"), capture_output=True, text=True, timeout=60)
        results.append((tag, n, proc.returncode, proc.stderr))


def test_two_triage_processes_keep_every_line(tmp_path):
    folder = _round(tmp_path)
    untouched = {k: v for k, v in file_hashes(folder).items() if k not in ("ledger.jsonl", "summary.md")}
    lines_before = _ledger(folder)
    start = threading.Barrier(2)
    results: list = []
    orders = {"A": list(range(1, FINDINGS + 1)), "B": list(range(FINDINGS, 0, -1))}
    threads = [threading.Thread(target=_worker, args=(folder, tag, order, start, results))
               for tag, order in orders.items()]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    assert [r for r in results if r[2] != 0] == []
    assert records_whole(folder.parent) == []
    lines = _ledger(folder)
    assert lines[: len(lines_before)] == lines_before
    added = lines[len(lines_before):]
    assert len(added) == 2 * FINDINGS
    for tag, order in orders.items():
        mine = [line for line in added if line["evidence"].startswith(f"{tag}-")]
        assert [(line["finding"], line["evidence"]) for line in mine] == \
            [(f"alpha-F{n}", f"{tag}-{n}") for n in order]
        assert all(line["disposition"] == "rejected" and line["auto"] is False for line in mine)
    # only the ledger and the summary that shows it may change
    assert {k: v for k, v in file_hashes(folder).items() if k not in ("ledger.jsonl", "summary.md")} == untouched
    assert "alpha-F1" in (folder / "summary.md").read_text(encoding="utf-8")


def test_killed_triages_leave_whole_lines_and_others_go_on(tmp_path):
    folder = _round(tmp_path)
    rng = random.Random(6)
    start = threading.Barrier(2)
    results: list = []
    steady = threading.Thread(target=_worker, args=(folder, "S", list(range(1, FINDINGS + 1)), start, results))
    steady.start()
    start.wait()
    killed = []
    for n in range(1, 6):
        proc = subprocess.Popen(_triage_argv(folder, n, f"K-{n}"), stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        # seeded: start-up (the last one at once: a triage may take less than 50 ms), waiting
        # for the lock, or writing
        time.sleep(rng.uniform(0.0, 0.6))
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            killed.append(n)
        proc.wait()
    steady.join()

    assert [r for r in results if r[2] != 0] == []
    assert records_whole(folder.parent) == []
    lines = _ledger(folder)
    assert [line["evidence"] for line in lines if line["evidence"].startswith("S-")] == \
        [f"S-{n}" for n in range(1, FINDINGS + 1)]
    kept = [line["evidence"] for line in lines if line["evidence"].startswith("K-")]
    assert len(kept) == len(set(kept))  # a killed triage never wrote its line twice
    # the series lock was released by every killed triage: one more goes through at once
    last = subprocess.run(_triage_argv(folder, 1, "after"), capture_output=True, text=True, timeout=30)
    assert last.returncode == 0, last.stderr
    assert "waiting for another write" not in last.stderr
    assert _ledger(folder)[-1]["evidence"] == "after"
    assert killed, "no triage was killed: the seeded delays no longer hit a running triage"
