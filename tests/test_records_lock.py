"""The series lock (G33) between real processes."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from spar.records import jsonl
from spar.records.lock import series_lock, waiting_message
from tests.proctools import HANG, blocked_on_lock, wait_for

pytestmark = pytest.mark.slow  # real processes holding and waiting for the lock

ROOT = Path(__file__).resolve().parent.parent

# Holds the lock, says "locked", waits for a line on stdin, appends one record, releases.
HOLDER = """
import sys
from spar.records.lock import series_lock
from spar.records import jsonl
series = sys.argv[1]
with series_lock(series):
    print("locked", flush=True)
    sys.stdin.readline()
    jsonl.append(series + "/extensions.jsonl", {"stage": "code", "by": 1, "at": "holder"})
"""

# Takes the lock (waiting if needed), then reads the records again and prints them.
WAITER = """
import json, sys
from spar.records.lock import series_lock
from spar.records import jsonl
series = sys.argv[1]
with series_lock(series):
    lines = jsonl.read(series + "/extensions.jsonl", missing_ok=True)
    print(json.dumps(lines), flush=True)
"""


def _spawn(code: str, series: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", code, str(series)], cwd=ROOT,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


@pytest.mark.parametrize("folder, alias", [
    ("reviews/goal-1", None),
    ("my reviews/goal 1", None),  # spaces: the path is never handed to a shell
    ("my reviews/목표 1 ", None),  # non-ASCII and a trailing space
    ("my reviews/goal 1", "other name/goal 1"),  # the same series through a symbolic link
])
def test_second_writer_waits_then_sees_fresh_records(tmp_path, folder, alias):
    series = tmp_path / folder
    waiter_series = series
    if alias is not None:
        series.parent.mkdir(parents=True)
        (tmp_path / alias).parent.symlink_to(series.parent, target_is_directory=True)
        waiter_series = tmp_path / alias
    holder = _spawn(HOLDER, series)
    waiter = None
    try:
        assert holder.stdout.readline() == "locked\n"
        waiter = _spawn(WAITER, waiter_series)
        # the waiter announces that it waits (naming the series as it was given), exactly once
        assert waiter.stderr.readline() == waiting_message(waiter_series) + "\n"
        assert wait_for(lambda: blocked_on_lock(waiter.pid) or waiter.poll() is not None)
        assert waiter.poll() is None
        holder.stdin.write("go\n")
        holder.stdin.flush()
        assert holder.wait(timeout=HANG) == 0
        out, err = waiter.communicate(timeout=HANG)
        assert waiter.returncode == 0, err
        assert err == ""
        assert json.loads(out) == [{"stage": "code", "by": 1, "at": "holder"}]
    finally:
        for proc in (holder, waiter):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()
    assert waiting_message(series) == f"spar: waiting for another write of {series} to finish"
    # the lock is the folder itself: nothing but the records is left behind
    assert sorted(os.listdir(series)) == ["extensions.jsonl"]


def test_killed_holder_releases(tmp_path):
    series = tmp_path / "s"
    holder = _spawn(HOLDER, series)
    try:
        assert holder.stdout.readline() == "locked\n"
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait(timeout=HANG)
        err = io.StringIO()
        with series_lock(series, stderr=err):
            pass
        # the dead holder's lock is gone; at most we waited for the kernel to drop it
        assert err.getvalue() in ("", waiting_message(series) + "\n")
        assert jsonl.read(series / "extensions.jsonl", missing_ok=True) == []
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()


def test_uncontended_is_silent_and_creates_series(tmp_path):
    series = tmp_path / "new" / "series"
    err = io.StringIO()
    with series_lock(series, stderr=err):
        assert series.is_dir()
    with series_lock(series, stderr=err):
        pass
    assert err.getvalue() == ""
    assert os.listdir(series) == []  # the lock leaves no file git could see


def test_nested_take_in_one_process_is_a_bug(tmp_path):
    with series_lock(tmp_path), pytest.raises(RuntimeError), series_lock(tmp_path / "." ):
        pass
    with series_lock(tmp_path):  # released properly after the error
        pass


def test_unlockable_series(tmp_path):
    from spar.errors import WriteFailed

    (tmp_path / "file").write_text("")
    with pytest.raises(WriteFailed, match="cannot lock"), series_lock(tmp_path / "file" / "series"):
        pass
