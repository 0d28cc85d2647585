"""What `spar run` does before its first useful step: which modules it imports, and what
it starts early. Speed itself is measured by bench/round_cost.py, never here."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

SPAR = Path(__file__).resolve().parent.parent / "spar"

def _dataclasses_without_docstring(path: Path) -> list[str]:
    """`file: class` for every class decorated with dataclass that has no docstring."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ClassDef):
            continue
        for deco in node.decorator_list:
            target = deco.func if isinstance(deco, ast.Call) else deco
            if isinstance(target, ast.Name) and target.id == "dataclass" and ast.get_docstring(node) is None:
                out.append(f"{path.name}: {node.name}")
    return out


def test_every_dataclass_has_a_docstring():
    # without one, dataclasses builds a docstring at import time through inspect.signature
    # (~0.2 ms a class, dozens of them on every start)
    missing = [name for path in sorted(SPAR.rglob("*.py")) for name in _dataclasses_without_docstring(path)]
    assert missing == []


def test_the_docstring_rule_sees_a_missing_one(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("from dataclasses import dataclass\n\n@dataclass(frozen=True)\nclass Bare:\n    x: int\n\n"
                      "@dataclass\nclass Told:\n    \"\"\"Has one.\"\"\"\n\n    y: int\n")
    assert _dataclasses_without_docstring(sample) == ["sample.py: Bare"]


def test_the_cyclic_collector_is_off_for_the_start_up():
    # spar and `python -m spar` (cli.entry) run every command with it off; main alone
    # (what the in-process tests call) leaves it as it is
    code = ("import gc, sys\nimport spar.cli as cli\n"
            "cli.main = lambda: print('collector on' if gc.isenabled() else 'collector off') or 0\n"
            "cli.entry()")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout == "collector off\n"


def test_the_guard_starts_before_the_checks_and_stops_on_a_refusal(monkeypatch):
    import pytest

    from spar.commands import run
    from spar.errors import Refused

    calls = []

    def refuse(args, **kw):
        calls.append("checks")
        raise Refused("no")

    monkeypatch.setattr(run, "start_guard", lambda: calls.append("start guard"))
    monkeypatch.setattr(run, "stop_guard", lambda: calls.append("stop guard"))
    monkeypatch.setattr(run, "plan_round", refuse)
    with pytest.raises(Refused):
        run.main(["--stage", "code", "--out", "r1"])
    assert calls == ["start guard", "checks", "stop guard"]
    calls.clear()
    with pytest.raises(Refused):
        run.main(["--stage", "code", "--out", "r1", "--dry-run"])  # a dry run starts no reviewer
    assert calls == ["checks", "stop guard"]


def test_the_help_width_is_what_shutil_would_say(monkeypatch):
    import shutil

    from spar.argparsing import terminal_columns

    for columns in ("50", "0", "wide", None):
        if columns is None:
            monkeypatch.delenv("COLUMNS", raising=False)
        else:
            monkeypatch.setenv("COLUMNS", columns)
        assert terminal_columns() == shutil.get_terminal_size().columns


@pytest.mark.anyio
async def test_a_group_is_checked_again_soon_then_less_often(monkeypatch):
    # once its leader has exited, a group is looked at again after 1 ms, doubling up to
    # _POLL: the keeper leaving last is a zombie within a moment, and a first check only
    # after _POLL used to cost every reviewer whose keeper was caught on its way out 50 ms
    import anyio

    from spar.round import process

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
    from spar.round import process

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
