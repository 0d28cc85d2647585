"""G1's one answer rule (spar/judge/answer.py): the same answer bytes get the same status
through `spar run` (a command reviewer's stdout), `spar record --result` and `spar record
--transcript` (issue 10 point 4)."""

from __future__ import annotations

import json
import sys

import pytest

from spar.cli import main as spar_main
from spar.judge.answer import parse_answer
from spar.records import readers
from tests import roundfactory as rf
from tests.gitrepo import git
from tests.runsetup import make_setup

ANGLES = ("criteria", "correctness", "checks", "contracts", "risk")
DEEP = b"[" * 100_000 + b"]" * 100_000


def _answer(head: str) -> bytes:
    return json.dumps({"reviewed_head": head[:12], "verdict": "no_blocking_findings",
                       "angles_checked": [{"angle": a, "result": "looked"} for a in ANGLES],
                       "angles_unchecked": [], "findings": [], "limits": "é ok"}, ensure_ascii=False).encode("utf-8")


# name -> (bytes built from the valid answer, status, reason part)
CASES = {
    "plain": (lambda a: a, "completed", ""),
    "json whitespace around": (lambda a: b" \r\n\t" + a + b"\n\n", "completed", ""),
    "code fence": (lambda a: b"```json\n" + a + b"\n```\n", "invalid_output", "Markdown code fence"),
    "text before": (lambda a: b"Here is my review:\n" + a, "invalid_output", "not one JSON object"),
    "text after": (lambda a: a + b"\nThanks!", "invalid_output", "text after the JSON value"),
    "two objects": (lambda a: a + a, "invalid_output", "text after the JSON value"),
    "invalid UTF-8": (lambda a: a.replace("é".encode(), b"\xff"), "invalid_output", "not valid UTF-8"),
    "byte order mark": (lambda a: b"\xef\xbb\xbf" + a, "invalid_output", "byte order mark"),
    "NaN": (lambda a: a.replace(b'"findings": []', b'"findings": [], "x": NaN'), "invalid_output", "NaN is not JSON"),
    "array": (lambda a: b"[" + a + b"]", "invalid_output", "not a JSON object (got array)"),
    "empty": (lambda a: b"  \n", "invalid_output", "empty"),
    "100,000 nested arrays": (lambda a: DEEP, "invalid_output", "nested too deeply"),
    "huge integer": (lambda a: b"9" * 5000, "invalid_output", "cannot be read as JSON"),
    # a repeated key was read last-wins: the later verdict silently replaced the earlier one
    "duplicate key": (lambda a: a.replace(b'"verdict": "no_blocking_findings"',
                                          b'"verdict": "blocking_findings", "verdict": "no_blocking_findings"'),
                      "invalid_output", 'the key "verdict" appears twice in one object'),
    "duplicate nested key": (lambda a: a.replace(b'"result": "looked"}', b'"result": "looked", "result": "x"}', 1),
                             "invalid_output", 'the key "result" appears twice in one object'),
}
NAMES = {case: f"r{n}" for n, case in enumerate(CASES)}


@pytest.mark.parametrize("case", list(CASES))
def test_parse_answer_bytes_and_text_agree(case):
    data = CASES[case][0](_answer("abc1234def00"))
    by_bytes = parse_answer(data, "x")
    by_text = parse_answer(data.decode("utf-8", "surrogateescape"), "x")
    assert (by_bytes[0] is None) == (by_text[0] is None) == (CASES[case][1] != "completed")
    if by_bytes[1]:
        assert CASES[case][2] in by_bytes[1] and CASES[case][2] in by_text[1]


def _statuses(round_dir) -> dict[str, tuple[str, str]]:
    rj = readers.read_round(round_dir)
    return {r["name"]: (r["status"], r["reason"]) for r in rj["reviewers"]}


def _check(statuses: dict, consumer: str) -> None:
    problems = []
    for case, (_, status, reason) in CASES.items():
        got_status, got_reason = statuses[NAMES[case]]
        if got_status != status or reason not in got_reason:
            problems.append(f"{consumer}, {case}: {got_status} {got_reason!r}")
    assert not problems, "\n".join(problems)


@pytest.mark.slow
def test_spar_run_applies_the_rule_and_records_the_round(tmp_path):
    s = make_setup(tmp_path)
    printer = "import sys; sys.stdout.buffer.write(open(sys.argv[1], 'rb').read())"
    reviewers = []
    for case, (build, _, _) in CASES.items():
        path = s.answers / f"{NAMES[case]}.bin"
        path.write_bytes(build(_answer(s.head)))
        reviewers.append({"name": NAMES[case], "preset": "command", "argv": [sys.executable, "-c", printer, str(path)]})
    s.configure(reviewers)
    proc = s.run()
    # one reviewer's unreadable answer never costs the others theirs: the round is recorded
    assert proc.returncode == 1, proc.stderr.decode()
    _check(_statuses(s.repo / "reviews" / "r1"), "spar run")


def _native_round(repo):
    series = rf.fresh_series(repo)
    reviewers = [rf.reviewer(NAMES[c], preset="native", status="awaiting_record", reason="") for c in CASES]
    return rf.make_round(series, "r1", repo=repo, reviewers=reviewers, findings=[])


def test_spar_record_result_applies_the_same_rule(repo, tmp_path, capsys):
    round_dir = _native_round(repo)
    head = git(repo, "rev-parse", "HEAD").strip()
    for case, (build, status, _) in CASES.items():
        path = tmp_path / f"{NAMES[case]}.json"
        path.write_bytes(build(_answer(head)))
        code = spar_main(["record", str(round_dir), "--reviewer", NAMES[case], "--result", str(path)])
        assert code == (0 if status == "completed" else 1), capsys.readouterr().err
    _check(_statuses(round_dir), "spar record --result")


def test_spar_record_transcript_applies_the_same_rule(repo, tmp_path, capsys):
    round_dir = _native_round(repo)
    head = git(repo, "rev-parse", "HEAD").strip()
    for case, (build, status, _) in CASES.items():
        # the answer bytes as the last assistant text: invalid UTF-8 stays invalid in the line
        text = build(_answer(head)).decode("utf-8", "surrogateescape")
        line = json.dumps({"type": "assistant", "message": {"content": [{"type": "text", "text": text}]}})
        path = tmp_path / f"{NAMES[case]}.jsonl"
        path.write_text(line + "\n", encoding="utf-8")
        code = spar_main(["record", str(round_dir), "--reviewer", NAMES[case], "--transcript", str(path)])
        assert code == (0 if status == "completed" else 1), capsys.readouterr().err
    _check(_statuses(round_dir), "spar record --transcript")


def test_a_transcript_line_too_deep_to_read_is_invalid_output(repo, tmp_path, capsys):
    round_dir = _native_round(repo)
    line = b'{"type": "assistant", "message": {"content": ' + DEEP + b"}}\n"
    path = tmp_path / "deep.jsonl"
    path.write_bytes(line)
    name = NAMES["plain"]
    assert spar_main(["record", str(round_dir), "--reviewer", name, "--transcript", str(path)]) == 1
    capsys.readouterr()
    assert _statuses(round_dir)[name] == ("invalid_output", "transcript line 1 is nested too deeply to read")
