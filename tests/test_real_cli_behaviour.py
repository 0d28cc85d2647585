"""What the real CLIs do that the first fakes did not (issue 10 points 1-3, 5, 6, 9): transient
notices, refusals anywhere in stderr, over-long lines, agy's own limits, claude hygiene, and
the notices reaching progress."""

from __future__ import annotations

import io

import pytest

from spar.progress import Progress
from tests.reviewerround import Round

ANSWER = {"reviewed_head": "abc1234", "verdict": "no_blocking_findings", "angles_checked": [],
          "angles_unchecked": [], "findings": [], "limits": ""}
SEVENTEEN_MIB = 17 * 1024 * 1024
QUOTA = "You've hit your usage limit. Upgrade to Pro or try again at 12:16 PM."


def _reconnects(message_extra: str = "") -> list[dict]:
    """codex-cli 0.171.0's notices while the network comes and goes (tests/data/real-cli)."""
    return ([{"type": "error", "message": f"Reconnecting... {n}/5 (stream disconnected before completion{message_extra})"}
             for n in range(2, 6)]
            + [{"type": "item.completed", "item": {"id": "item_0", "type": "error", "message":
                "Falling back from WebSockets to HTTPS transport. stream disconnected before completion"}},
               {"type": "error", "message": "Reconnecting... waiting for network (Connection failed)"}])


@pytest.mark.anyio
async def test_codex_notices_then_a_completed_turn_is_completed(tmp_path):
    rnd = Round(tmp_path)
    # the last notice even holds a refusal phrase: the turn completed, so it is no refusal
    notices = _reconnects() + [{"type": "error", "message": "Reconnecting... 1/5 (429 Too Many Requests)"}]
    jobs = [rnd.job("codex", "codex", {"before": notices, "result": ANSWER}, fallback_model="gpt-5-mini"),
            rnd.job("fails", "codex", {"before": _reconnects(), "turn_failed": "stream disconnected"})]
    stream = io.StringIO()
    progress = Progress(stream)
    # no backoff before the one retry of the transient failure (tests/test_transient_retry.py
    # tests the retry and its backoff; here it would only wait)
    ok, failed = await rnd.run(jobs, progress=progress, transient_backoff=0)
    assert (ok.status, ok.result, len(ok.attempts)) == ("completed", ANSWER, 1)  # no fallback spent
    assert failed.status == "failed" and "turn failed: stream disconnected" in failed.reason
    lines = stream.getvalue().splitlines()
    assert "spar: codex: reconnecting 2/5" in lines and "spar: codex: reconnecting 5/5" in lines
    assert "spar: codex: reconnecting: waiting for network" in lines


@pytest.mark.anyio
async def test_codex_notices_without_a_completed_turn_fail_with_the_last_error(tmp_path):
    rnd = Round(tmp_path)
    (outcome,) = await rnd.run([rnd.job("codex", "codex", {"before": _reconnects(), "no_result": True,
                                                          "exit_code": 1})], transient_backoff=0)
    assert outcome.status == "failed"
    assert "error: Reconnecting... waiting for network" in outcome.reason


@pytest.mark.anyio
async def test_a_quota_notice_without_a_completed_turn_is_a_refusal(tmp_path):
    rnd = Round(tmp_path)
    (outcome,) = await rnd.run([rnd.job("codex", "codex", {
        "before": [{"type": "error", "message": QUOTA}], "no_result": True, "exit_code": 1})])
    assert outcome.status == "unavailable" and outcome.reason.startswith("quota or rate limit: ")


@pytest.mark.anyio
async def test_claude_api_retries_show_in_progress_and_do_not_fail(tmp_path):
    rnd = Round(tmp_path)
    retries = [{"type": "system", "subtype": "api_retry", "attempt": n, "max_retries": 10, "retry_delay_ms": 5,
                "error_status": None, "error": "unknown"} for n in range(1, 5)]
    stream = io.StringIO()
    (outcome,) = await rnd.run([rnd.job("claude", "claude", {"before": retries, "result": ANSWER})],
                               progress=Progress(stream))
    assert outcome.status == "completed"
    assert "spar: claude: API retry 4/10" in stream.getvalue().splitlines()


@pytest.mark.slow
@pytest.mark.anyio
async def test_quota_phrase_followed_by_100_kb_of_stderr_is_found_and_the_fallback_runs(tmp_path):
    rnd = Round(tmp_path)
    noise = "".join(f"debug line {n}: nothing to see here, just more text\n" for n in range(2500))
    assert len(noise) > 100 * 1024
    scenario = {"result": ANSWER, "by_model": {"big": {"stderr": QUOTA + "\n" + noise, "turn_failed": "stream error"}}}
    (outcome,) = await rnd.run([rnd.job("codex", "codex", scenario, model="big", fallback_model="small")])
    assert [a["status"] for a in outcome.attempts] == ["unavailable", "completed"]
    assert outcome.attempts[0]["reason"] == f"quota or rate limit: {QUOTA}"
    assert outcome.attempts[0]["resets"] == "12:16 PM"
    assert outcome.status == "completed" and outcome.model == "small"


@pytest.mark.anyio
async def test_a_refusal_phrase_on_one_huge_stderr_line_is_found(tmp_path):
    rnd = Round(tmp_path)
    stderr = "x" * (300 * 1024) + " Not logged in · Please run /login " + "y" * (300 * 1024)
    (outcome,) = await rnd.run([rnd.job("claude", "claude", {"stderr": stderr, "is_error": "boom"})])
    assert outcome.status == "unavailable" and "run /login" in outcome.reason


@pytest.mark.parametrize("preset, tool", [
    ("claude", {"name": "Bash", "input": {"command": "rm -rf head"}, "pad": SEVENTEEN_MIB}),
    ("codex", {"type": "file_change", "pad": SEVENTEEN_MIB}),
    ("agy", {"name": "run_command", "command": "rm -rf head", "pad": SEVENTEEN_MIB}),
])
@pytest.mark.slow  # 17 MiB through a pipe, per preset
@pytest.mark.anyio
async def test_a_17_mib_tool_use_line_is_a_tool_violation(tmp_path, preset, tool):
    rnd = Round(tmp_path)
    (outcome,) = await rnd.run([rnd.job(preset, preset, {"tools": [tool], "result": ANSWER})])
    assert outcome.status == "tool_violation", outcome.reason
    assert "a stdout line of more than " in outcome.reason and "16777216-byte line limit" in outcome.reason


@pytest.mark.slow  # 17 MiB through a pipe
@pytest.mark.anyio
async def test_an_answer_line_too_long_to_read_is_invalid_output(tmp_path):
    rnd = Round(tmp_path)
    big = dict(ANSWER, limits="z" * SEVENTEEN_MIB)
    (outcome,) = await rnd.run([rnd.job("codex", "codex", {"result": big})])
    assert outcome.status == "completed" and outcome.result is None
    assert "the stdout line holding the final answer" in outcome.output_error
    assert "line limit" in outcome.output_error


@pytest.mark.parametrize("preset, line, status", [
    # a line the parser cannot read might hold a tool use: never passed unchecked
    ("claude", '{"type": "assistant", "message": {"content": [{"type": "tool_use", "name": "Read", "x": DEEP}]}}',
     "tool_violation"),
    ("agy", '{"event": "step_update", "step_update": DEEP}', "tool_violation"),
    # the final answer's line cannot hold a tool use: the answer is unreadable, invalid_output
    ("claude", '{"type": "result", "subtype": "success", "is_error": false, "structured_output": DEEP}',
     "invalid_output"),
    ("agy", '{"event": "result", "result": DEEP}', "invalid_output"),
    # claude's structured answer comes first as a StructuredOutput tool use: too deep, it is the
    # answer that cannot be read, unless another tool name appears anywhere in the line
    ("claude", '{"type": "assistant", "message": {"content": [{"type": "tool_use", "name": "StructuredOutput", '
               '"input": {"findings": DEEP}}]}}', "invalid_output"),
    ("claude", '{"type": "assistant", "message": {"content": [{"type": "tool_use", "name": "StructuredOutput", '
               '"input": {"findings": DEEP}}, {"type": "tool_use", "name": "B\\u0061sh", "input": {}}]}}',
     "tool_violation"),
    ("claude", '{"type": "assistant", "message": {"content": [{"type": "tool_use", "name": "StructuredOutput", '
               '"input": {"findings": DEEP}}, {"type": "tool_use", "name": ["Bash"], "input": {}}]}}',
     "tool_violation"),
])
def test_a_stream_line_nested_too_deeply_fails_closed(preset, line, status):
    from spar.presets import get_preset

    monitor = get_preset(preset).monitor()
    reason = monitor.feed(line.replace("DEEP", "[" * 100_000 + "]" * 100_000))
    if status == "tool_violation":
        assert reason and "nested too deeply" in reason and "fails closed" in reason
    else:
        assert reason is None and "nested too deeply" in monitor.unreadable_answer


@pytest.mark.anyio
async def test_agy_print_timeout_partial_output_is_a_timeout(tmp_path):
    rnd = Round(tmp_path)
    (outcome,) = await rnd.run([rnd.job("agy", "agy", {"print_timeout": "5s"}, timeout_seconds=30)])
    assert outcome.status == "timeout"
    assert "print timeout after 5s" in outcome.reason
    assert outcome.attempts[0]["argv"][-2:] == ["--print-timeout", "90s"]


@pytest.mark.anyio
async def test_agy_auto_denied_permission_is_failed_with_its_text(tmp_path):
    rnd = Round(tmp_path)
    (outcome,) = await rnd.run([rnd.job("agy", "agy", {"auto_denied": "read_file"})])
    assert outcome.status == "failed"
    assert "no output produced" in outcome.reason and '"read_file" permission' in outcome.reason


def test_stderr_scan_finds_a_phrase_across_piece_boundaries_in_bounded_memory():
    from spar.judge.refusal import RefusalScan
    from spar.proc.process import SCAN_PIECE, _Scanner

    scan = RefusalScan()
    longest = 0

    def feed(text: str) -> None:
        nonlocal longest
        longest = max(longest, len(text))
        scan.feed(text)

    scanner = _Scanner(feed)
    # one 1 MiB line, the phrase straddling the first piece boundary, fed in odd chunks
    line = ("x" * (SCAN_PIECE - 7) + "Quota exceeded. Check your plan" + "y" * (1024 * 1024)).encode()
    for i in range(0, len(line), 4093):
        scanner.write(line[i:i + 4093])
    scanner.write(b"\nlast line\n")
    scanner.eof()
    assert scan.result() is not None and scan.result().kind == "quota"
    assert longest <= SCAN_PIECE + 4093  # never the whole line at once


def test_older_agy_print_timeout_result_is_a_timeout():
    from spar.presets import get_preset
    from spar.round.interface import StreamInfo

    monitor = get_preset("agy").monitor()
    monitor.feed('{"event":"result","result":{"status":"ERROR","response":"","error":"timeout waiting for response"}}')
    answer = monitor.finish(0, StreamInfo(None))
    assert answer.timed_out and not answer.completed and "timeout waiting for response" in answer.failure
