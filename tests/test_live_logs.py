"""Issue 22 point 6: a reviewer's stdout and stderr reach its log files as they arrive, so
`tail -f ROUND/NAME/stdout.log` follows a running attempt."""

from __future__ import annotations

import json
import os

import anyio
import pytest

from spar.records.model import ReviewerStatus
from tests.proctools import written
from tests.reviewerround import Round


@pytest.mark.anyio
async def test_logs_hold_the_first_lines_while_the_reviewer_still_runs(tmp_path):
    """Point 6: while the reviewer is blocked (on a fifo only the test writes), its stdout.log
    and stderr.log already hold what it printed; the answer then completes the attempt."""
    rnd = Round(tmp_path)
    fifo, answer = tmp_path / "release", tmp_path / "answer.json"
    os.mkfifo(fifo)
    answer.write_text(json.dumps({"verdict": "no_blocking_findings"}), encoding="utf-8")
    script = 'echo "first line"; echo "err line" >&2; cat "$1" >/dev/null; cat "$2"'
    job = rnd.job("house", "command", argv=["sh", "-c", script, "sh", str(fifo), str(answer)])
    outcomes = []

    async def run() -> None:
        outcomes.extend(await rnd.run([job]))

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        stdout_log, stderr_log = rnd.dir / "house" / "stdout.log", rnd.dir / "house" / "stderr.log"
        # waits for the lines to reach the files (conftest bounds a hang); the reviewer cannot
        # end before the test writes to the fifo
        while "first line" not in written(stdout_log) or "err line" not in written(stderr_log):
            assert not outcomes, "the reviewer ended before its output reached the logs"
            await anyio.sleep(0.01)
        assert not outcomes

        def release() -> None:
            with open(fifo, "w") as f:
                f.write("go\n")

        await anyio.to_thread.run_sync(release)
    (outcome,) = outcomes
    assert outcome.status == ReviewerStatus.COMPLETED, outcome.reason
    assert written(stdout_log).startswith("first line\n")
