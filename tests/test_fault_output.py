"""Reviewers that print invalid UTF-8, 100 MB of output, or never let their stdout
close are handled within their time limit, with bounded memory and whole records.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys

import pytest

from tests.faulttools import records_whole, run_with_usage
from tests.proctools import LIMITS, gone, written
from tests.runsetup import BACKENDS, make_setup

pytestmark = pytest.mark.slow  # real spar runs with floods of output and hung reviewers

ANGLES = ["criteria", "correctness", "checks", "contracts", "risk"]
CAP = 64 * 1024 * 1024  # spar.proc.process.OUTPUT_CAP: bytes of a reviewer's log spar keeps
HUNDRED_MB = 100 * 1024 * 1024
MEMORY_LIMIT_MB = 150  # far below the 100 MB a reader that buffers the output would add


@pytest.fixture(params=BACKENDS)
def backend(request):
    """spar's async backend (SPAR_ASYNC_BACKEND): the process layer differs between them."""
    return request.param


def _answer(head: str) -> dict:
    return {"reviewed_head": head[:12], "verdict": "no_blocking_findings",
            "angles_checked": [{"angle": a, "result": "looked"} for a in ANGLES], "angles_unchecked": [],
            "findings": [], "limits": ""}


def _run(s, round_name: str = "r1", timeout: float = 600):
    argv = [sys.executable, "-m", "spar", "run", "--stage", "code", "--out", f"reviews/{round_name}"]
    return run_with_usage(argv, cwd=s.repo, env=s.env, timeout=timeout)


def _round(s, round_name: str = "r1") -> dict:
    return json.loads((s.repo / "reviews" / round_name / "round.json").read_text(encoding="utf-8"))


def _status(s, name: str) -> tuple[str, str]:
    entry = next(r for r in _round(s)["reviewers"] if r["name"] == name)
    return entry["status"], entry["reason"]


def _sh_reviewer(s, name: str, script: str) -> dict:
    """A command reviewer running `script` with sh; ANSWER is a file holding a valid answer."""
    answer = s.tmp / f"{name}-answer.json"
    answer.write_text(json.dumps(_answer(s.head)), encoding="utf-8")
    return {"name": name, "preset": "command", "argv": ["/bin/sh", "-c", script.replace("ANSWER", str(answer))]}


# ---------------------------------------------------------------- invalid UTF-8


@pytest.mark.parametrize("preset", ["claude", "codex", "agy"])
def test_invalid_utf8_lines_from_a_cli_are_skipped(tmp_path, preset):
    s = make_setup(tmp_path)
    s.configure([{"name": preset, "preset": preset}], timeout=60)
    s.scenario({preset: {"invalid_utf8": True, "result": _answer(s.head)}})
    code, _out, err, _mb = _run(s)
    assert code == 0, err
    assert _status(s, preset) == ("completed", "")
    # the raw bytes stay in the reviewer's log; the records are valid UTF-8 JSON
    assert b"\xff\xfe" in (s.repo / "reviews" / "r1" / preset / "stdout.log").read_bytes()
    assert b"\xff\xfe" in (s.repo / "reviews" / "r1" / preset / "stderr.log").read_bytes()
    assert records_whole(s.repo / "reviews") == []


def test_command_answer_that_is_not_utf8(tmp_path):
    s = make_setup(tmp_path)
    garbage = _sh_reviewer(s, "garbage", r"printf '\377\376 not JSON \303\050\n'; printf 'bad \377' >&2")
    good = _sh_reviewer(s, "good", "cat ANSWER")
    s.configure([garbage, good], timeout=60)
    code, _out, err, _mb = _run(s)
    assert code == 1, err  # recorded, one reviewer not completed
    status, reason = _status(s, "garbage")
    assert status == "invalid_output" and "stdout" in reason, reason
    assert _status(s, "good") == ("completed", "")
    assert records_whole(s.repo / "reviews") == []
    assert "not completed: garbage (invalid_output)" in err.splitlines()[-1]


# ---------------------------------------------------------------- 100 MB of output


def test_command_printing_100_mb(tmp_path, backend):
    s = make_setup(tmp_path, backend)
    flood = _sh_reviewer(s, "flood", f"head -c {HUNDRED_MB} /dev/zero | tr '\\0' 'x'; cat ANSWER")
    s.configure([flood], timeout=300)  # a limit only a hang reaches
    code, _out, err, peak_mb = _run(s)
    assert code == 1, err
    status, reason = _status(s, "flood")
    assert status == "invalid_output" and "cap" in reason, reason
    log = s.repo / "reviews" / "r1" / "flood" / "stdout.log"
    assert log.stat().st_size == CAP  # the first 64 MiB are kept, the rest was drained
    assert peak_mb < MEMORY_LIMIT_MB, peak_mb
    assert records_whole(s.repo / "reviews") == []


def test_agy_streaming_100_mb_of_events_still_completes(tmp_path):
    s = make_setup(tmp_path)
    s.configure([{"name": "agy", "preset": "agy"}], timeout=300)  # a limit only a hang reaches
    # ~1,750 bytes per event line: 60,000 lines are about 100 MB (the cap is in bytes: fewer,
    # longer lines reach it with a tenth of the JSON to write and read)
    s.scenario({"agy": {"lines": 60_000, "line_size": 1650, "result": _answer(s.head)}})
    code, _out, err, peak_mb = _run(s)
    assert code == 0, err
    assert _status(s, "agy") == ("completed", "")  # the monitor saw every line, the result last, within the limit
    assert (s.repo / "reviews" / "r1" / "agy" / "stdout.log").stat().st_size == CAP
    assert peak_mb < MEMORY_LIMIT_MB, peak_mb


# ---------------------------------------------------------------- stdout that never closes


def test_grandchild_in_the_group_holding_stdout(tmp_path, backend):
    s = make_setup(tmp_path, backend)
    pid_file = tmp_path / "grandchild.pid"
    s.configure([{"name": "agy", "preset": "agy"}], timeout=60)
    s.scenario({"agy": {"spawn_child": str(pid_file), "result": _answer(s.head)}})
    code, _out, err, _mb = _run(s)
    assert code == 0, err
    assert _status(s, "agy") == ("completed", "")  # not waited for the grandchild's 600 s, nor timed out
    assert gone(int(pid_file.read_text())), "spar left the grandchild running"


def test_grandchild_that_left_the_group_holding_stdout(tmp_path, backend):
    s = make_setup(tmp_path, backend)
    pid_file = tmp_path / "escaped.pid"
    # setsid: a new session, out of reach of the group kill; it keeps stdout open for 600 s
    escaped = _sh_reviewer(s, "escaped", f"setsid sleep 600 & echo $! > {pid_file}; cat ANSWER")
    s.configure([escaped], timeout=30)
    try:
        code, _out, err, _mb = _run(s)
        assert code == 0, err
        # spar stops reading after its drain grace: completed, not timed out waiting for the 600 s sleeper
        assert _status(s, "escaped") == ("completed", "")
    finally:
        if pid_file.exists():
            with contextlib.suppress(OSError, ValueError):
                os.kill(int(pid_file.read_text()), signal.SIGKILL)


@pytest.mark.parametrize("how", ["never_close_stdout", "close_stdout_and_hang"])
def test_reviewer_that_answers_but_never_exits_times_out(tmp_path, backend, how):
    for k in LIMITS:  # until the answer is out before the limit (a loaded machine may need longer)
        s = make_setup(tmp_path / f"limit-{k}", backend)
        s.configure([{"name": "codex", "preset": "codex"}], timeout=k)
        s.scenario({"codex": {how: True, "result": _answer(s.head)}})
        code, _out, err, _mb = _run(s)
        assert code == 1, err
        if "turn.completed" in written(s.repo / "reviews" / "r1" / "codex" / "stdout.log"):
            break
    status, reason = _status(s, "codex")
    assert status == "timeout" and f"no answer within {k}s" in reason, reason
    attempt = _round(s)["reviewers"][0]["attempts"][0]
    assert attempt["exit_code"] is None  # killed by spar, not exited
    assert records_whole(s.repo / "reviews") == []
