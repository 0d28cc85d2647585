"""Issue 22 point 1: a reviewer whose CLI cannot reach its service or cannot authenticate is
given up after its `unreachable_seconds` without model output (`unavailable`, reason
`network` or `authentication` quoting the CLI), its processes ended, the round going on.

The captures in tests/data/real-cli/ are replayed through the fake CLIs with a window of
one second; the time limit (60 s) is only reached when the watch fails."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from spar.errors import quote
from spar.progress import Progress
from spar.records.model import ReviewerStatus
from tests.proctools import gone
from tests.reviewerround import Round

CAPTURES = Path(__file__).parent / "data" / "real-cli"
OFFLINE_LAST = "Reconnecting... waiting for network (Connection failed: error sending request)"
AUTH_NOTICE = ("Reconnecting... 2/5 (unexpected status 401 Unauthorized: "
               "Missing bearer or basic authentication in header)")


def _replay(name: str, **kw) -> dict:
    return {"replay": {"stdout": str(CAPTURES / f"{name}.stdout.log"),
                       "stderr": str(CAPTURES / f"{name}.stderr.log"), **kw}}


@pytest.mark.anyio
async def test_offline_codex_is_given_up_as_network_quoting_codex(tmp_path):
    """Point 1: the real offline codex output (17 "waiting for network" notices, never an answer)
    ends `unavailable` (network) after the window, not `timeout`; no fallback for it, no process
    left (the fake nor its child); another reviewer of the round still answers."""
    rnd = Round(tmp_path)
    pid_file, child_file = tmp_path / "codex.pid", tmp_path / "child.pid"
    scenario = _replay("offline-900-codex", hang=True)
    scenario.update(pid_file=str(pid_file), spawn_child=str(child_file))
    jobs = [rnd.job("offline", "codex", scenario, unreachable_seconds=1, fallback_model="gpt-5-mini"),
            rnd.job("other", "claude")]
    stream = io.StringIO()
    offline, other = await rnd.run(jobs, progress=Progress(stream))

    assert offline.status == ReviewerStatus.UNAVAILABLE, offline.reason
    assert offline.reason.startswith("network: codex could not reach its service"), offline.reason
    assert offline.not_run == "network"
    assert offline.reason.endswith(f"its last message: {quote(OFFLINE_LAST)}")
    assert "for 1 s (unreachable_seconds)" in offline.reason
    assert len(offline.attempts) == 1 and offline.attempts[0]["exit_code"] is None
    assert offline.resets is None
    assert other.status == ReviewerStatus.COMPLETED
    assert gone(int(pid_file.read_text())) and gone(int(child_file.read_text())), "a process was left running"
    lines = stream.getvalue().splitlines()
    assert "spar: offline: waiting for network 0 s" in lines, lines
    # what codex printed is kept in its log, as for any attempt
    assert OFFLINE_LAST in (rnd.dir / "offline" / "stdout.log").read_text(encoding="utf-8")


@pytest.mark.anyio
async def test_never_ending_auth_failure_is_given_up_as_authentication(tmp_path):
    """Point 1: a CLI that keeps saying it is refused its credentials (401) and never answers
    ends `unavailable` (authentication) quoting its words, its process ended."""
    rnd = Round(tmp_path)
    pid_file = tmp_path / "codex.pid"
    notices = [{"type": "error", "message": AUTH_NOTICE} for _ in range(3)]
    jobs = [rnd.job("noauth", "codex", {"before": notices, "delay": 600, "pid_file": str(pid_file)},
                    unreachable_seconds=1)]
    stream = io.StringIO()
    (outcome,) = await rnd.run(jobs, progress=Progress(stream))

    assert outcome.status == ReviewerStatus.UNAVAILABLE, outcome.reason
    assert outcome.reason.startswith("authentication: codex could not authenticate"), outcome.reason
    assert outcome.not_run == "authentication"
    assert outcome.reason.endswith(quote(AUTH_NOTICE))
    assert len(outcome.attempts) == 1
    assert gone(int(pid_file.read_text()))
    assert "spar: noauth: cannot authenticate 0 s" in stream.getvalue().splitlines()


@pytest.mark.anyio
async def test_claude_retrying_without_connection_is_given_up(tmp_path):
    """Point 1: claude's api_retry events with no HTTP status (the connection failed; the real
    fakekey capture up to its last retry) and no model output: `unavailable` (network)."""
    rnd = Round(tmp_path)
    lines = (CAPTURES / "fakekey-300-claude.stdout.log").read_text(encoding="utf-8").splitlines(keepends=True)
    retries = [line for line in lines if json.loads(line).get("subtype") in ("init", "api_retry")]
    assert len(retries) == 11
    partial = tmp_path / "retrying.stdout.log"
    partial.write_text("".join(retries), encoding="utf-8")
    scenario = {"replay": {"stdout": str(partial), "stderr": str(CAPTURES / "fakekey-300-claude.stderr.log"),
                           "hang": True}}
    (outcome,) = await rnd.run([rnd.job("retrying", "claude", scenario, unreachable_seconds=1)])

    assert outcome.status == ReviewerStatus.UNAVAILABLE, outcome.reason
    assert outcome.reason.startswith("network: claude could not reach its service"), outcome.reason
    assert outcome.reason.endswith(quote("api_retry 10/10: error unknown, no HTTP status"))


@pytest.mark.anyio
async def test_notice_followed_by_model_output_stays_transient(tmp_path):
    """Point 1 (the previous rule holds): reconnect notices followed by model output are
    transient, even when the answer itself comes after the window (the fake waits twice the
    window before answering): the review is `completed`."""
    rnd = Round(tmp_path)
    offline = [json.loads(line) for line in
               (CAPTURES / "offline-900-codex.stdout.log").read_text(encoding="utf-8").splitlines()[2:9]]
    thinking = {"type": "item.completed", "item": {"id": "item_1", "type": "reasoning", "text": "back online"}}
    (outcome,) = await rnd.run([rnd.job("flaky", "codex", {"before": [*offline, thinking], "delay": 2},
                                        unreachable_seconds=1)])
    assert outcome.status == ReviewerStatus.COMPLETED, outcome.reason
    assert outcome.result is not None


def test_progress_shows_how_long_a_reviewer_has_waited():
    """Point 1: progress says "waiting for network 40 s" as the wait goes on: the live table
    every second, plain lines at the start and every 10 s; model output clears it."""
    now = [100.0]
    plain = io.StringIO()
    progress = Progress(plain, clock=lambda: now[0])
    progress.reviewer_started("codex", 1, "")
    for seconds in range(41):
        progress.reviewer_waiting("codex", f"waiting for network {seconds} s", seconds)
    (row,) = progress.rows()
    assert row.detail == "waiting for network 40 s"
    shown = [line for line in plain.getvalue().splitlines() if "waiting" in line]
    assert shown == [f"spar: codex: waiting for network {n} s" for n in (0, 10, 20, 30, 40)]
    progress.reviewer_waiting("codex", "", 0)
    (row,) = progress.rows()
    assert row.detail == ""

    # the live table, as rich draws it (wide enough for the whole status cell)
    from rich.console import Console

    from spar.progress import _Table

    live = Progress(io.StringIO(), clock=lambda: now[0])
    live.reviewer_started("codex", 1, "")
    live.reviewer_waiting("codex", "waiting for network 40 s", 40)
    console = Console(file=io.StringIO(), width=200)
    console.print(_Table(live))
    assert "starting: waiting for network 40 s" in console.file.getvalue()


def test_unreachable_seconds_joins_the_applied_values_only_when_not_the_default():
    """Point 1: a configuration that leaves unreachable_seconds at 60 keeps its digest."""
    from spar.config.model import DEFAULT_UNREACHABLE, ReviewerConfig

    assert DEFAULT_UNREACHABLE == 60
    assert "unreachable_seconds" not in ReviewerConfig(name="codex", preset="codex").applied()
    assert ReviewerConfig(name="codex", preset="codex", unreachable_seconds=30).applied()["unreachable_seconds"] == 30
