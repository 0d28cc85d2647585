"""A full disk or a read-only series folder: exit 70 (or 65) with one clear message,
and never a half-written JSON record.

The disk is a real tmpfs of a few megabytes. In one case a reviewer fills it
while it runs and gives back a chosen number of bytes, so spar's own writes
fail at different points (its stdout log, findings.json, summary.md,
round.json); in the other the disk is too small from the start. The read-only
series is a read-only bind mount (root ignores file modes), or plain modes when
not running as root.
"""

from __future__ import annotations

import json
import os

import pytest

from tests.faulttools import (
    fault_setup,
    file_hashes,
    one_clear_line,
    read_only,
    records_whole,
    round_state,
    run_round,
    small_disk,
    spar,
    with_env,
)

pytestmark = pytest.mark.slow  # real spar runs on full and read-only mounts

NO_SPACE = "No space left on device"
READ_ONLY = "Read-only file system"


def _leftovers(root) -> list[str]:
    """Temporary files of atomic writes that were not cleaned up."""
    return [os.path.join(d, f) for d, _dirs, files in os.walk(root) for f in files if f.endswith(".tmp")]


@pytest.fixture
def setup(tmp_path):
    return fault_setup(tmp_path, ("alpha",), timeout=30)


# bytes the filling reviewer gives back: 0 makes spar's log of the reviewer's answer fail;
# then findings.json, summary.md and round.json fail in turn as more room is left
@pytest.mark.parametrize("keep", [0, 4096, 8192, 12288])
def test_disk_fills_while_the_reviewer_runs(setup, tmp_path, keep):
    disk = tmp_path / "disk"
    with small_disk(disk, "2m"):
        (disk / "series").mkdir()  # spar run asks for the series folder outside the repository
        round_dir = disk / "series" / "r1"
        env = with_env(setup, FAULT_FILL=str(disk / "filler"), FAULT_KEEP=str(keep))
        proc = run_round(setup, round_dir, env=env)
        assert proc.returncode == 70, proc.stderr
        line = one_clear_line(proc.stderr)
        assert line.startswith("spar: cannot write ") and line.endswith(NO_SPACE), line
        assert records_whole(disk) == []
        assert _leftovers(disk) == []
        # round.json is replaced last and whole: it is still the unfinished one
        assert round_state(round_dir) in ("pending", "partial")
        assert json.loads((round_dir / "round.json").read_text())["reviewers"][0]["status"] == "pending"
        # the gate names the unfinished round (the gate file goes outside the full disk)
        gate = spar(setup, "gate", str(round_dir), "--out", str(tmp_path / "gate.json"))
        assert gate.returncode == 1 and str(round_dir) in gate.stdout + gate.stderr


def test_reviewer_log_on_full_disk_is_not_called_a_start_failure(setup, tmp_path):
    """The reviewer did start; only spar's copy of its output could not be written."""
    disk = tmp_path / "disk"
    with small_disk(disk, "2m"):
        env = with_env(setup, FAULT_FILL=str(disk / "filler"), FAULT_KEEP="0")
        (disk / "series").mkdir()
        proc = run_round(setup, disk / "series" / "r1", env=env)
    assert proc.returncode == 70, proc.stderr
    assert "could not start" not in proc.stderr, proc.stderr
    assert NO_SPACE in proc.stderr


# too small from the start: packet.md (16k) or the workspace copy (600k) cannot be written
@pytest.mark.parametrize("size", ["16k", "600k"])
def test_disk_too_small_for_the_round(tmp_path, size):
    big = {"data/blob.txt": ("y" * 79 + "\n") * 5000}  # 400 KB in head: packet diff and workspace
    setup = fault_setup(tmp_path, ("alpha",), timeout=30, extra_files=big)
    disk = tmp_path / "disk"
    with small_disk(disk, size):
        (disk / "series").mkdir()
        round_dir = disk / "series" / "r1"
        proc = run_round(setup, round_dir)
        assert proc.returncode in (65, 70), proc.stderr
        line = one_clear_line(proc.stderr)
        assert NO_SPACE in line and str(round_dir) in line, line
        assert records_whole(disk) == []
        assert _leftovers(disk) == []
        assert round_state(round_dir) in ("absent", "no_round_json", "pending")


def _earlier_round(setup, series):
    first = run_round(setup, series / "r1", env=with_env(setup, FAULT_FINDINGS="2"))
    assert first.returncode == 0, first.stderr
    return series / "r1"


def test_read_only_series_refuses_every_write(setup, tmp_path):
    series = setup.repo / "reviews"
    r1 = _earlier_round(setup, series)
    before = file_hashes(series)
    with read_only(series):
        commands = {
            "run": ["run", "--stage", "code", "--base", setup.base, "--head", setup.head, "--out", str(series / "r2")],
            "triage": ["triage", str(r1), "alpha-F1", "--to", "rejected", "--evidence", "not a bug"],
            "extend": ["extend", str(series), "--stage", "code", "--by", "1", "--cause", "churn"],
            "waive": ["waive", str(r1), "--reviewer", "alpha", "--user-quote", "fine"],
        }
        results = {name: spar(setup, *args) for name, args in commands.items()}
        # the gate never writes into the series; it still reads it
        gate = spar(setup, "gate", str(r1), "--out", str(tmp_path / "gate.json"))
    for name, proc in results.items():
        assert proc.returncode in (65, 70), (name, proc.stderr)
        line = one_clear_line(proc.stderr)
        if proc.returncode == 70:
            assert READ_ONLY in line, (name, line)
    # the series lock takes no file, so run gets as far as creating its round folder: refused,
    # nothing written (65); extend's append fails as a write (70)
    assert results["run"].returncode == 65 and results["extend"].returncode == 70
    assert file_hashes(series) == before
    assert not (series / "r2").exists()
    # blocked only by r1's open findings: the read-only series reads as usual
    assert gate.returncode == 1, gate.stdout + gate.stderr
    assert json.loads((tmp_path / "gate.json").read_text())["open"] == ["r1/alpha-F1", "r1/alpha-F2"]


def test_gate_out_in_read_only_folder(setup, tmp_path):
    series = setup.repo / "reviews"
    r1 = _earlier_round(setup, series)
    out_dir = tmp_path / "gates"
    out_dir.mkdir()
    with read_only(out_dir):
        gate = spar(setup, "gate", str(r1), "--out", str(out_dir / "gate.json"))
    assert gate.returncode == 70, gate.stdout + gate.stderr
    assert READ_ONLY in one_clear_line(gate.stderr)
    assert list(out_dir.iterdir()) == []


def test_file_where_the_series_folder_should_be(setup, tmp_path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file\n")
    proc = run_round(setup, blocker / "r1")
    assert proc.returncode in (65, 70), proc.stderr
    line = one_clear_line(proc.stderr)
    assert str(blocker) in line, line
    assert blocker.read_text() == "a file\n"
