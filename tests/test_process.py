"""One reviewer subprocess: its own process group, streaming, output cap, kill."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

import anyio
import pytest

from spar.proc.process import GuardedProcess, OutputHandling
from tests.proctools import HANG, LIMITS, gone, run_for, written

PY = sys.executable


def py(code: str) -> list[str]:
    return [PY, "-c", code]


async def _run(tmp_path, argv, *, seconds=30.0, **kw):
    with anyio.fail_after(HANG):
        return await run_for(argv, cwd=tmp_path, seconds=seconds,
                             stdout_path=tmp_path / "stdout.log", stderr_path=tmp_path / "stderr.log", **kw)


@pytest.mark.anyio
async def test_streams_lines_to_the_monitor_and_logs_bytes(tmp_path):
    seen = []
    code = "import sys\nfor i in range(5): print(f'line {i}', flush=True)\nsys.stderr.write('oops\\nlast err\\n')\nsys.exit(3)"
    res = await _run(tmp_path, py(code), on_stdout_line=seen.append)
    assert seen == [f"line {i}" for i in range(5)]
    assert res.exit_code == 3 and not res.timed_out and res.violation is None
    assert (tmp_path / "stdout.log").read_text() == "".join(f"line {i}\n" for i in range(5))
    assert (tmp_path / "stderr.log").read_text() == "oops\nlast err\n"
    assert res.last_stderr_line == "last err"
    assert res.stdout.bytes_kept == res.stdout.bytes_seen and not res.stdout.truncated


@pytest.mark.anyio
async def test_stdin_is_written_whole_then_closed(tmp_path):
    text = "ä" * 300_000 + "\nend"
    code = "import sys, hashlib\nd = sys.stdin.buffer.read()\nprint(len(d), hashlib.sha256(d).hexdigest())"
    res = await _run(tmp_path, py(code), stdin_text=text)
    import hashlib

    data = text.encode()
    assert (tmp_path / "stdout.log").read_text().split() == [str(len(data)), hashlib.sha256(data).hexdigest()]
    assert res.exit_code == 0


@pytest.mark.anyio
async def test_child_that_ignores_stdin_does_not_block(tmp_path):
    res = await _run(tmp_path, py("print('done')"), stdin_text="x" * 5_000_000, seconds=10)
    assert res.exit_code == 0 and not res.timed_out


@pytest.mark.anyio
async def test_output_above_the_cap_is_truncated_but_drained_and_monitored(tmp_path):
    seen = []
    code = "import sys\nfor i in range(2000): sys.stdout.write('%05d' % i + 'x' * 94 + '\\n')\nsys.stderr.write('e' * 50000)"
    res = await _run(tmp_path, py(code), on_stdout_line=lambda l: seen.append(l) and None, cap=1000)
    assert res.exit_code == 0
    assert res.stdout.truncated and res.stdout.bytes_seen == 200_000 and res.stdout.bytes_kept == 1000
    assert (tmp_path / "stdout.log").stat().st_size == 1000
    assert res.stderr.truncated and (tmp_path / "stderr.log").stat().st_size == 1000
    assert len(seen) == 2000 and seen[-1].startswith("01999")


@pytest.mark.anyio
async def test_overlong_line_is_cut_and_counted(tmp_path):
    seen = []
    code = "import sys\nsys.stdout.write('a' * 5000 + '\\n' + 'short\\n' + 'b' * 3000)"
    res = await _run(tmp_path, py(code), on_stdout_line=lambda l: seen.append(l) and None, line_limit=1000)
    assert seen == ["short"]
    assert res.stdout.cut_lines == 2
    assert res.stdout.bytes_kept == 8007  # the log keeps everything below the cap


@pytest.mark.anyio
async def test_invalid_utf8_is_replaced_not_fatal(tmp_path):
    seen = []
    code = "import sys\nsys.stdout.buffer.write(b'\\xff\\xfe ok\\n\\xc3\\x28\\n'); sys.stderr.buffer.write(b'\\xff bad\\n')"
    res = await _run(tmp_path, py(code), on_stdout_line=lambda l: seen.append(l) and None)
    assert seen == ["\ufffd\ufffd ok", "\ufffd("]
    assert res.last_stderr_line == "\ufffd bad"
    assert (tmp_path / "stdout.log").read_bytes() == b"\xff\xfe ok\n\xc3\x28\n"


GRANDCHILD = (
    "import subprocess, sys, time\n"
    "c = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
    "open(sys.argv[1], 'w').write(str(c.pid))\n"
    "print('started', flush=True)\n"
)


@pytest.mark.slow
@pytest.mark.anyio
async def test_timeout_kills_the_whole_group(tmp_path):
    pid_file = tmp_path / "pid"
    for k in LIMITS:  # until the grandchild is up before the limit
        res = await _run(tmp_path, [*py(GRANDCHILD + "time.sleep(600)"), str(pid_file)], seconds=1.0 * k,
                         kill_grace=0.5)
        assert res.timed_out and res.exit_code is None and res.violation is None
        if written(pid_file):
            break
    assert gone(int(pid_file.read_text()))


@pytest.mark.slow
@pytest.mark.anyio
async def test_grandchild_holding_stdout_after_the_leader_exits_is_killed(tmp_path):
    pid_file = tmp_path / "pid"
    res = await _run(tmp_path, [*py(GRANDCHILD + "sys.exit(0)"), str(pid_file)], seconds=60, kill_grace=0.5)
    assert res.exit_code == 0 and not res.timed_out  # not waited for the grandchild's 600 s
    assert gone(int(pid_file.read_text()))


async def _times_out_after_printing(tmp_path, code: str, base: float) -> None:
    """Runs `code`, which prints and then never ends, under limits growing from `base` seconds
    until it printed before its limit ran out; every run must end as a timeout, killed."""
    for k in LIMITS:
        res = await _run(tmp_path, py(code), seconds=base * k, kill_grace=0.3)
        assert res.timed_out and res.exit_code is None
        if written(tmp_path / "stdout.log"):
            return
    pytest.fail(f"it never printed within {base * LIMITS[-1]} s")


@pytest.mark.slow
@pytest.mark.anyio
async def test_sigterm_ignored_gets_sigkill(tmp_path):
    code = "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nprint('x', flush=True)\ntime.sleep(600)"
    await _times_out_after_printing(tmp_path, code, 0.5)  # printed x: SIGTERM was ignored by then
    assert (tmp_path / "stdout.log").read_text() == "x\n"


@pytest.mark.slow
@pytest.mark.anyio
async def test_violation_stops_the_process_at_once(tmp_path):
    pid_file = tmp_path / "pid"
    code = GRANDCHILD + "print('ok'); print('BAD tool', flush=True)\ntime.sleep(600)"

    def monitor(line):
        return f"saw {line}" if line.startswith("BAD") else None

    res = await _run(tmp_path, [*py(code), str(pid_file)], seconds=60, on_stdout_line=monitor, kill_grace=0.5)
    assert res.violation == "saw BAD tool" and not res.timed_out and res.exit_code is None  # at once: no timeout
    assert gone(int(pid_file.read_text()))


@pytest.mark.slow
@pytest.mark.anyio
@pytest.mark.parametrize("tail", ["import os; os.close(1); time.sleep(600)", "time.sleep(600)"])
async def test_closed_or_open_stdout_while_running_is_bounded_by_the_deadline(tmp_path, tail):
    code = "import time\nprint('{\"answer\": 1}', flush=True)\n" + tail
    await _times_out_after_printing(tmp_path, code, 1.0)
    assert (tmp_path / "stdout.log").read_text() == '{"answer": 1}\n'


@pytest.mark.anyio
async def test_unstartable_program_says_why(tmp_path):
    # the guard starts the reviewer; an exec failure comes back as exit 127 with the reason
    bad = tmp_path / "bad"
    bad.write_bytes(b"\x00\x01garbage")
    bad.chmod(0o755)
    res = await _run(tmp_path, [str(bad)])
    assert res.exit_code == 127
    assert res.last_stderr_line == f"spar: cannot start {bad}: Exec format error"


@pytest.mark.anyio
@pytest.mark.parametrize("shell", ["/bin/sh", "sh"])  # a path (os.posix_spawn), a name looked up in PATH
async def test_the_reviewer_starts_in_its_folder_with_sigpipe_at_its_default(tmp_path, shell):
    # the keeper is Python, which ignores SIGPIPE; the reviewer must not inherit that
    (tmp_path / "here").mkdir()
    res = await run_for([shell, "-c", "pwd; grep SigIgn /proc/self/status"], cwd=tmp_path / "here", seconds=30)
    assert res.exit_code == 0
    folder, ignored = res.stdout_tail.splitlines()
    assert folder == str(tmp_path / "here")
    assert int(ignored.split()[1], 16) & (1 << (signal.SIGPIPE - 1)) == 0


@pytest.mark.anyio
async def test_memory_only_streams_keep_a_tail(tmp_path):
    res = await run_for(py("print('v' * 100000); print('1.2.3')"), cwd=tmp_path, seconds=10)
    assert res.last_stdout_line == "1.2.3" and res.stdout.path is None
    assert len(res.stdout_tail) <= 64 * 1024


STUBBORN_GRANDCHILD = (
    "import subprocess, sys\n"
    "c = subprocess.Popen([sys.executable, '-c', 'import signal, time\\n"
    "signal.signal(signal.SIGTERM, signal.SIG_IGN)\\nprint(1, flush=True)\\ntime.sleep(600)'],"
    " stdout=subprocess.PIPE)\n"
    "c.stdout.readline()  # its SIGTERM handler is in place\n"
    "open(sys.argv[1], 'w').write(str(c.pid))\n"
    "print('started', flush=True)\n"
)


@pytest.mark.slow
@pytest.mark.anyio
async def test_cancelled_from_outside_kills_descendants_of_an_exited_leader(tmp_path):
    """spar interrupted (its task group cancelled) while a descendant that ignores SIGTERM
    outlives its leader: the group is SIGKILLed even though the leader has exited."""
    pid_file = tmp_path / "pid"
    for k in LIMITS:  # until the stubborn grandchild is up before the cancellation
        with anyio.move_on_after(1.5 * k):
            await _run(tmp_path, [*py(STUBBORN_GRANDCHILD + "sys.exit(0)"), str(pid_file)], seconds=600,
                       kill_grace=600)
        if written(pid_file):
            break
    # killed at once: it ignores SIGTERM, and neither the 600 s grace nor the 600 s limit was waited for
    assert gone(int(pid_file.read_text()))


@pytest.mark.anyio
@pytest.mark.parametrize("lines", [3, 20000])  # lost on the final flush / lost while streaming
async def test_a_log_that_cannot_be_written_is_reported_and_the_stream_still_drains(tmp_path, lines):
    # /dev/full answers every write with ENOSPC, like a full disk
    seen = []
    code = f"for i in range({lines}): print('x' * 40, i, flush=True)"
    res = await run_for(py(code), cwd=tmp_path, seconds=10,
                            stdout_path=Path("/dev/full"), stderr_path=tmp_path / "stderr.log",
                            on_stdout_line=seen.append)
    assert res.exit_code == 0 and not res.timed_out
    assert len(seen) == lines  # the monitor saw every line although the log failed
    assert res.log_error == "cannot write /dev/full: No space left on device"


# ---------------------------------------------------------------- the handle (issue 21 point 3)


@pytest.mark.anyio
async def test_the_handle_reads_as_it_streams_and_says_how_it_ended(tmp_path):
    """Issue 21 point 3: a process handle used as an async context manager; its result is
    there once the block has ended, not before."""
    seen = []
    output = OutputHandling(on_stdout_line=lambda line: seen.append(line) and None)
    with anyio.fail_after(HANG):
        async with GuardedProcess(py("import sys; print('a'); print('b'); sys.exit(4)"), cwd=tmp_path,
                                  output=output) as proc:
            with pytest.raises(RuntimeError, match="not ended yet"):
                proc.result  # noqa: B018 (the property is what raises)
            await proc.wait()
    assert proc.result.exit_code == 4 and not proc.result.timed_out
    assert seen == ["a", "b"]


@pytest.mark.slow
@pytest.mark.anyio
async def test_the_callers_fail_after_ends_the_group_and_goes_on(tmp_path):
    """Issue 21 point 3: the time limit is the caller's cancel scope. A `fail_after` that runs
    out raises in the caller as anyio says, and the program's whole group is ended by then."""
    pid_file = tmp_path / "pid"
    for k in LIMITS:  # until the grandchild is up before the limit
        with pytest.raises(TimeoutError), anyio.fail_after(1.0 * k):
            async with GuardedProcess([*py(GRANDCHILD + "time.sleep(600)"), str(pid_file)], cwd=tmp_path,
                                      kill_grace=0.5) as proc:
                await proc.wait()
        if written(pid_file):
            break
    assert gone(int(pid_file.read_text()))
    assert proc.result.exit_code is None  # killed


@pytest.mark.anyio
async def test_leaving_the_block_without_waiting_ends_the_program(tmp_path):
    """Issue 21 point 3: the caller may stop waiting for a reason of its own; the block's end
    ends the program as a time limit would (`timed_out`, killed)."""
    with anyio.fail_after(HANG):
        async with GuardedProcess(py("import time; print('up', flush=True); time.sleep(600)"), cwd=tmp_path,
                                  kill_grace=0.3) as proc:
            pass
    assert proc.result.timed_out and proc.result.exit_code is None
