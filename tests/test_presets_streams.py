"""Preset output monitors against fixture lines for every shape in reviewer-clis.md."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spar.presets import get_preset
from spar.round.interface import StreamInfo

DATA = Path(__file__).parent / "data" / "preset_streams.json"
CASES = json.loads(DATA.read_text(encoding="utf-8"))


def _line(value) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _run(case: dict, tmp_path: Path):
    monitor = get_preset(case["preset"]).monitor()
    lines = [_line(v) for v in case["lines"]]
    stdout = tmp_path / "stdout.log"
    stdout.write_text("\n".join(lines), encoding="utf-8")
    violations = [v for v in (monitor.feed(line) for line in lines) if v]
    answer = monitor.finish(case["exit_code"], StreamInfo(stdout, bytes_seen=stdout.stat().st_size,
                                                          bytes_kept=stdout.stat().st_size))
    return monitor, violations, answer


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_stream_case(case, tmp_path):
    monitor, violations, answer = _run(case, tmp_path)
    expect = case["expect"]
    if "violation_contains" in expect:
        assert violations, "expected a violation"
        assert expect["violation_contains"] in violations[0]
        if "violation_contains_2" in expect:
            assert expect["violation_contains_2"] in violations[0]
        assert monitor.violation == violations[0]
        if "violations" in expect:
            # only the first violation is reported: the reviewer is stopped there
            assert len(violations) == expect["violations"]
        return
    assert violations == []
    assert monitor.violation is None
    assert answer.completed is expect["completed"]
    if "result" in expect:
        assert answer.result == expect["result"]
    if "observed_model" in expect:
        assert monitor.observed_model == expect["observed_model"]
    if "output_error_contains" in expect:
        assert answer.output_error is not None and expect["output_error_contains"] in answer.output_error
    elif answer.completed:
        assert answer.output_error is None and isinstance(answer.result, dict)
    if "failure_contains" in expect:
        assert expect["failure_contains"] in answer.failure
    if not answer.completed:
        assert answer.failure and answer.result is None
    for text in expect.get("error_texts_contain", []):
        assert text in answer.error_texts


def test_every_preset_with_output_has_cases():
    presets = {c["preset"] for c in CASES}
    assert presets == {"claude", "codex", "agy", "command"}


def test_invalid_utf8_replaced_lines_do_not_crash(tmp_path):
    monitor = get_preset("claude").monitor()
    raw = b'{"type":"assistant","message":{"model":"m\xff","content":[{"type":"text","text":"\xfe"}]}}'
    assert monitor.feed(raw.decode("utf-8", errors="replace")) is None
    assert monitor.observed_model == "m\ufffd"


def test_command_truncated_stdout_is_output_error(tmp_path):
    path = tmp_path / "stdout.log"
    path.write_text('{"a": 1', encoding="utf-8")
    answer = get_preset("command").monitor().finish(0, StreamInfo(path, bytes_seen=10**9, bytes_kept=7,
                                                                  truncated=True))
    assert answer.completed and answer.result is None
    assert "output cap" in answer.output_error
