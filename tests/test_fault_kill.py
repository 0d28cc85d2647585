"""`spar run` killed with SIGKILL at seeded random points leaves a usable series.

Points: during start-up (random time after launch), as soon as the round
folder exists (while its first files are written), before any reviewer runs
(as soon as round.json exists, while the workspace is being copied), while the
reviewers run (random time inside their sleep), after they answered (random
time before spar writes its records) and while spar records (as soon as
findings.json appears). After each kill: nothing of the earlier
round changed (every file hashed), every JSON record is whole, `spar gate`
names the unfinished round as a blocked reason, and a later `spar run` takes
the lock at once and records its round, after which the series passes the gate.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess

import pytest

from tests.faulttools import (
    WAITING,
    fault_setup,
    file_hashes,
    kill_marked_reviewers,
    marked_pids,
    records_whole,
    round_state,
    run_args,
    run_round,
    spar,
    with_env,
)
from tests.proctools import gone, wait_for

pytestmark = pytest.mark.slow  # real spar processes killed at chosen points

REVIEWERS = ("alpha", "beta")
SLEEP = 1.0  # the reviewers' sleep before they answer (kills before they run); "during" draws its kill time from its first 0.6 s
# enough files that copying the workspace takes a while: the window for "before reviewers"
MANY_FILES = {f"pkg/m{i // 100}/f{i}.txt": f"file {i}\n" * 20 for i in range(500)}
# (point, seed): two seeds where the random delay spans a wide window
CASES = [("startup", 1), ("startup", 2), ("round_folder", 1), ("before_reviewers", 1),
         ("during_reviewers", 1), ("during_reviewers", 2), ("after_reviewers", 1), ("recording", 1),
         ("recording", 2)]


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    s = fault_setup(tmp_path_factory.mktemp("kill"), REVIEWERS, extra_files=MANY_FILES)
    # one finished round, copied into each test's series as its earlier round
    (s.repo / "reviews").mkdir()  # spar run makes the series folder alone, inside a folder that exists
    first = run_round(s, s.repo / "reviews" / "template" / "r1", env=with_env(s, FAULT_SLEEP="0"))
    assert first.returncode == 0, first.stderr
    return s


def _kill_at(point: str, rng: random.Random, proc: subprocess.Popen, round_dir, markers) -> None:
    def marked(what: str) -> bool:
        return all((markers / f"{n}.{what}").exists() for n in REVIEWERS)

    if point == "startup":
        delay = rng.uniform(0.0, 0.6)
    elif point == "round_folder":
        assert wait_for(round_dir.exists, 30, poll=0.002), "the round folder never appeared"
        delay = 0
    elif point == "before_reviewers":
        assert wait_for((round_dir / "round.json").exists, 30, poll=0.002), "round.json never appeared"
        delay = rng.uniform(0, 0.005)
    elif point == "during_reviewers":
        assert wait_for(lambda: marked("started"), 30, poll=0.002), "the reviewers never started"
        delay = rng.uniform(0, SLEEP * 0.6)
    elif point == "after_reviewers":
        assert wait_for(lambda: marked("done"), 30, poll=0.002), "the reviewers never answered"
        delay = rng.uniform(0, 0.03)
    else:
        assert wait_for((round_dir / "findings.json").exists, 30, poll=0.002), "findings.json never appeared"
        delay = rng.uniform(0, 0.002)
    if delay:
        wait_for(lambda: proc.poll() is not None, delay, poll=0.001)
    if point == "recording" and proc.poll() is not None:
        return  # on a fast disk the last writes can beat the kill; the round is then simply recorded
    assert proc.poll() is None, f"spar ended before the {point} kill (exit {proc.returncode})"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)


@pytest.mark.parametrize(("point", "seed"), CASES)
def test_sigkill_leaves_series_usable(setup, point, seed, tmp_path):
    rng = random.Random(f"{point}-{seed}")
    series = setup.repo / "reviews" / f"{point}-{seed}"
    r1, r2, r3 = series / "r1", series / "r2", series / "r3"
    quick = with_env(setup, FAULT_SLEEP="0")

    shutil.copytree(setup.repo / "reviews" / "template" / "r1", r1, symlinks=True)
    before = file_hashes(series)

    markers = tmp_path / "markers"
    markers.mkdir()
    # "during": reviewers that would sleep 600 s, so the kill always comes while they run, however
    # slowly a loaded machine gets there, and only their guard can have ended them afterwards;
    # "after" and "recording" wait for the reviewers' answers, which need no sleep first
    sleep = {"during_reviewers": 600, "after_reviewers": 0, "recording": 0}.get(point, SLEEP)
    env = with_env(setup, FAULT_SLEEP=str(sleep), FAULT_MARKERS=str(markers))
    proc = subprocess.Popen(run_args(setup, r2), cwd=setup.repo, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _kill_at(point, rng, proc, r2, markers)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    # each reviewer's guard ends its group once spar is gone, SIGKILL included
    orphans = [pid for pid in marked_pids(markers) if not gone(pid, wait=30)]
    kill_marked_reviewers(markers)  # safety net only
    assert orphans == [], f"reviewers still running after spar was killed: {orphans}"

    state = round_state(r2)
    if point in ("before_reviewers", "during_reviewers"):
        assert state == "pending", state
    if point == "after_reviewers":  # killed before, or just as, spar began to write its records
        assert state in ("pending", "partial"), state
    if point == "recording":
        assert state in ("partial", "recorded"), state
    # the earlier round is untouched, and nothing anywhere is half-written JSON
    after_kill = file_hashes(series)
    assert {k: v for k, v in after_kill.items() if k.startswith("r1/")} == \
        {k: v for k, v in before.items() if k.startswith("r1/")}
    assert records_whole(series) == []

    if state in ("no_round_json", "pending", "partial"):
        gate = spar(setup, "gate", str(r1), str(r2), "--out", str(tmp_path / "gate-r2.json"))
        assert gate.returncode == 1, gate.stdout + gate.stderr
        assert str(r2) in gate.stdout + gate.stderr, gate.stdout + gate.stderr

    # a later run takes the lock at once (the kernel released the dead run's flock)
    later = run_round(setup, r3, env=quick, timeout=60)
    assert later.returncode == 0, later.stderr
    assert WAITING not in later.stderr
    assert round_state(r3) == "recorded"
    final = file_hashes(series)
    assert {k: v for k, v in final.items() if not k.startswith("r3/")} == after_kill
    assert records_whole(series) == []

    # the series is usable again: every round the gate must see (G29) passes. A round killed
    # while recording (findings.json written) is required by G29 and named "not finished":
    # the gate blocks until its folder is deleted
    if state == "partial":
        gate = spar(setup, "gate", str(r1), str(r3), "--out", str(tmp_path / "gate-partial.json"))
        assert gate.returncode == 1, gate.stdout + gate.stderr
        assert "round r2 of the series is not in the gate list" in gate.stdout + gate.stderr, gate.stdout + gate.stderr
        shutil.rmtree(r2)
    listed = [r1] + ([r2] if state == "recorded" else []) + [r3]
    gate = spar(setup, "gate", *map(str, listed), "--out", str(tmp_path / "gate.json"))
    assert gate.returncode == 0, gate.stdout + gate.stderr


@pytest.mark.parametrize("backend", ["trio", "asyncio"])
def test_reviewers_end_when_spar_is_killed(setup, tmp_path, backend):
    # reviewers that would run for a minute: once spar dies (SIGKILL, nothing to catch),
    # each reviewer's guard ends its process group within its poll and grace
    markers = tmp_path / "markers"
    markers.mkdir()
    env = with_env(setup, FAULT_SLEEP="60", FAULT_MARKERS=str(markers), SPAR_ASYNC_BACKEND=backend)
    proc = subprocess.Popen(run_args(setup, setup.repo / "reviews" / f"long-{backend}" / "r1"), cwd=setup.repo,
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert wait_for(lambda: all((markers / f"{r}.started").exists() for r in REVIEWERS), 30, poll=0.02)
        pids = marked_pids(markers)
        assert len(pids) == len(REVIEWERS)
        proc.kill()
        proc.wait()
        # the reviewers would sleep 60 s: each must end long before that, through its guard
        orphans = [pid for pid in pids if not gone(pid, wait=30)]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        kill_marked_reviewers(markers)  # safety net only
    assert orphans == [], f"reviewers still running after spar was killed: {orphans}"
