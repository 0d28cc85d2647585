"""Steps of a round in their order: the guard before the checks, a reviewer's process
group looked at again soon after its keeper ends, the records synced as one batch."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest


def test_the_guard_starts_before_the_checks_and_stops_on_a_refusal(monkeypatch):
    import contextlib

    import pytest

    from spar.commands import run
    from spar.errors import Refused

    calls = []

    @contextlib.contextmanager
    def guard():
        calls.append("guard forked")
        try:
            yield
        finally:
            calls.append("guard told to go")

    def refuse(args, **kw):
        calls.append("checks")
        raise Refused("no")

    monkeypatch.setattr(run, "reviewer_guard", guard)
    monkeypatch.setattr(run, "plan_round", refuse)
    with pytest.raises(Refused):
        run.main(["--stage", "code", "--out", "r1"])
    assert calls == ["guard forked", "checks", "guard told to go"]
    calls.clear()
    with pytest.raises(Refused):
        run.main(["--stage", "code", "--out", "r1", "--dry-run"])  # a dry run starts no program
    assert calls == ["checks"]


@pytest.mark.anyio
async def test_a_group_is_checked_again_soon_then_less_often(monkeypatch):
    # once its leader has exited, a group is looked at again after 1 ms, doubling up to
    # _POLL: the keeper leaving last is a zombie within a moment, and a first check only
    # after _POLL used to cost every reviewer whose keeper was caught on its way out 50 ms
    import anyio

    from spar.proc import process

    alive = iter([True] * 8 + [False])
    pauses = []

    async def sleep(seconds):
        pauses.append(seconds)
        await anyio.lowlevel.checkpoint()

    monkeypatch.setattr(process, "_group_alive", lambda pgid: next(alive))
    monkeypatch.setattr(process.anyio, "sleep", sleep)
    exited = anyio.Event()
    exited.set()
    assert await process._wait_group_gone(12345, exited, 60)
    assert pauses == [0.001, 0.002, 0.004, 0.008, 0.016, 0.032, 0.05, 0.05]


@pytest.mark.anyio
async def test_a_finished_group_is_told_by_killpg_alone(monkeypatch):
    # after a keeper reports its reviewer's end, killpg looks first; /proc (every process
    # of the machine) is read only for a group still there after a few looks
    from spar.proc import process

    scans = []
    real_table = process.process_table
    monkeypatch.setattr(process, "process_table", lambda: scans.append(1) or real_table())
    child = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        assert await process._group_outlives_keeper(child.pid) is True
        assert scans == [1]
    finally:
        child.kill()
        child.wait()
    assert await process._group_outlives_keeper(child.pid) is False
    assert scans == [1]


def test_a_new_rounds_records_are_synced_as_one_batch_before_round_json(repo, monkeypatch):
    # findings.json, ledger.jsonl (written whole: the lines the appends would have made) and
    # summary.md go through one atomic.write_files batch, in that order; round.json after it
    from spar.records import atomic, readers
    from spar.round import recording
    from tests import roundfactory as rf

    series = rf.fresh_series(repo)
    folder = rf.make_round(series, "r1", repo=repo, recorded=False)
    writes = []
    real_files, real_bytes = atomic.write_files, atomic.write_bytes
    monkeypatch.setattr(atomic, "write_files",
                        lambda files: writes.append([p.name for p, _ in files]) or real_files(files))
    monkeypatch.setattr(atomic, "write_bytes",
                        lambda path, data, **kw: writes.append(Path(path).name) or real_bytes(path, data, **kw))
    findings = [rf.finding("claude", 1, cls="hardening"), rf.finding("claude", 2, cls="note")]
    recording.write_round_outputs(folder, readers.read_round(folder), findings)
    assert writes == [["findings.json", "ledger.jsonl", "summary.md"], "round.json"]
    ledger = readers.read_ledger(folder, readers.read_findings(folder))
    assert [(line["finding"], line["disposition"], line["auto"]) for line in ledger] == [
        ("claude-F1", "deferred", True)]
    assert readers.read_round(folder)["recorded_at"]
