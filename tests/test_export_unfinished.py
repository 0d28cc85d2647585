"""`spar export` of a round in which a reviewer did not complete: the export says so
(SARIF invocations, stderr) and exits 1, unless the reviewer was waived or a rerun of
the same input completed (issue 22 point 3)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from spar.cli import main
from tests.roundfactory import finding, make_round, reviewer, series_repo
from tests.test_export import sarif_schema

REASON = "exit status 1: \x1b[31mName does not resolve\x1b[0m\nretrying"


def run_export(capsys, fmt: str, *rounds: Path) -> tuple[int, str, str]:
    code = main(["export", *map(str, rounds), "--format", fmt])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def failed_round(tmp_path):
    repo, series = series_repo(tmp_path)
    r1 = make_round(series, "code-1", repo=repo, reviewers=[reviewer("codex", status="failed", reason=REASON)])
    return repo, series, r1


def test_only_reviewer_failed_sarif_says_execution_failed_and_exit_1(failed_round, capsys):
    """issue 22 point 3: an empty run with exit 0 read as "no problems" in code scanning."""
    _repo, _series, r1 = failed_round
    code, out, err = run_export(capsys, "sarif", r1)
    assert code == 1
    doc = json.loads(out)
    jsonschema.Draft4Validator(sarif_schema()).validate(doc)
    (run,) = doc["runs"]
    assert run["results"] == []
    (invocation,) = run["invocations"]
    assert invocation["executionSuccessful"] is False
    (note,) = invocation["toolExecutionNotifications"]
    assert note["level"] == "error"
    assert note["properties"] == {"reviewer": "codex", "round": "code-1", "status": "failed", "reason": REASON,
                                  "waived": False}
    # the CLI's text is data: quoted, no control character reaches a viewer
    text = note["message"]["text"]
    assert '"codex"' in text and '"failed"' in text and "\\x1b[31mName does not resolve" in text
    assert "\x1b" not in text and "\n" not in text
    assert "written, not clean" in err and "\x1b" not in err


@pytest.mark.parametrize("fmt", ["codeclimate", "rdjsonl"])
def test_codeclimate_and_rdjsonl_say_it_on_stderr(failed_round, capsys, fmt):
    """issue 22 point 3: Code Climate `[]` with exit 0 looked clean."""
    _repo, _series, r1 = failed_round
    code, out, err = run_export(capsys, fmt, r1)
    assert code == 1
    assert out.strip() in ("[]", "")
    assert 'reviewer "codex" did not complete round "code-1": "failed"' in err
    assert "Name does not resolve" in err and "\x1b" not in err


def test_export_out_is_written_and_still_exits_1(failed_round, tmp_path, capsys):
    _repo, _series, r1 = failed_round
    out = tmp_path / "out.sarif"
    assert main(["export", str(r1), "--format", "sarif", "--out", str(out)]) == 1
    assert json.loads(out.read_text())["runs"][0]["invocations"][0]["executionSuccessful"] is False
    capsys.readouterr()


def test_a_waived_reviewer_is_a_note_and_the_export_is_clean(tmp_path, capsys):
    repo, series = series_repo(tmp_path)
    waiver = {"reviewer": "codex", "preset": "codex", "user_quote": "codex is down today, go on", "at": "x"}
    r1 = make_round(series, "code-1", repo=repo, findings=[finding("claude", 1)],
                    reviewers=[reviewer("claude"), reviewer("codex", status="timeout")], waivers=[waiver])
    code, out, err = run_export(capsys, "sarif", r1)
    assert code == 0
    doc = json.loads(out)
    jsonschema.Draft4Validator(sarif_schema()).validate(doc)
    claude, codex = doc["runs"]
    assert claude["invocations"] == [{"executionSuccessful": True, "toolExecutionNotifications": []}]
    assert codex["invocations"][0]["executionSuccessful"] is True
    assert codex["invocations"][0]["toolExecutionNotifications"][0]["level"] == "note"
    assert "(waived)" in err and "not clean" not in err


def test_a_rerun_that_completed_settles_it(tmp_path, capsys):
    """The gate's view: a rerun of the same input in which the reviewer completed."""
    repo, series = series_repo(tmp_path)
    r1 = make_round(series, "code-1", repo=repo, reviewers=[reviewer("claude"), reviewer("codex", status="failed")])
    r2 = make_round(series, "code-1b", repo=repo, reviewers=[reviewer("codex")])
    assert run_export(capsys, "sarif", r1)[0] == 1
    code, out, _ = run_export(capsys, "sarif", r1, r2)
    assert code == 0
    assert all(run["invocations"][0]["executionSuccessful"] for run in json.loads(out)["runs"])
