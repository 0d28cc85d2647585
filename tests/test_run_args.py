"""`spar run` argument parsing: G35 decision pairs, standpoints, G31 stage, usage errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spar.commands.run import parse_run_args
from spar.errors import EXIT_REFUSED, EXIT_USAGE, Refused, UsageError
from spar.round.args import check_standpoints, split_decision_options

DATA = Path(__file__).parent / "data"
DECISIONS = json.loads((DATA / "run_decisions.json").read_text(encoding="utf-8"))
STANDPOINTS = json.loads((DATA / "run_standpoints.json").read_text(encoding="utf-8"))
BASE = ["--stage", "code", "--out", "reviews/r1"]


@pytest.mark.parametrize("row", DECISIONS["accepted"], ids=lambda r: repr(r["argv"])[:60])
def test_decision_pairs_accepted(row):
    args = parse_run_args(BASE + row["argv"])
    assert [list(p) for p in args.decisions] == row["pairs"]
    assert args.dry_run is row.get("dry_run", False)


@pytest.mark.parametrize("row", DECISIONS["refused"], ids=lambda r: repr(r["argv"])[:60])
def test_decision_refusals_name_decision_and_option(row):
    with pytest.raises(Refused) as info:
        parse_run_args(BASE + row["argv"])
    message = str(info.value)
    assert info.value.exit_code == EXIT_REFUSED
    assert message.startswith(f"decision {row['number']}: {row['option']} ")
    assert row["says"] in message


@pytest.mark.parametrize("row", DECISIONS["usage"], ids=lambda r: repr(r["argv"]))
def test_other_options_missing_value_stays_usage_error(row):
    with pytest.raises(UsageError) as info:
        parse_run_args(BASE + row["argv"])
    assert info.value.exit_code == EXIT_USAGE
    assert row["says"] in str(info.value)


def test_decision_values_are_never_read_as_options():
    rest, items = split_decision_options(["--decision", "--stage", "--decision-quote", "--out", "--dry-run"])
    assert rest == ["--dry-run"]
    assert items == [("--decision", "--stage"), ("--decision-quote", "--out")]


def test_other_option_values_are_not_taken_for_decisions():
    # `--subject --decision` keeps --decision as --subject's (bad) value: argparse judges it
    rest, items = split_decision_options(["--subject", "--decision", "x"])
    assert rest == ["--subject", "--decision", "x"] and items == []


def test_usage_error_beats_decision_refusal():
    with pytest.raises(UsageError):
        parse_run_args(BASE + ["--bogus", "--decision", "only"])


@pytest.mark.parametrize("stage", ["plan", "plan-delta", "code"])
def test_stage_values(stage):
    assert parse_run_args(["--stage", stage, "--out", "x"]).stage == stage


@pytest.mark.parametrize("argv", [
    ["--stage", "plan_delta", "--out", "x"],
    ["--stage", "Code", "--out", "x"],
    ["--stage", "", "--out", "x"],
    ["--out", "x"],
    ["--stage", "code"],
    ["--stage", "code", "--out", "x", "positional"],
    ["--stage", "code", "--out", "x", "--dry"],
])
def test_stage_and_out_usage_errors(argv):
    with pytest.raises(UsageError):
        parse_run_args(argv)


def test_all_options_parse():
    args = parse_run_args(BASE + [
        "--base", "main", "--head", "HEAD", "--expect-head", "abc1234",
        "--criteria", "c1.md", "--criteria", "c2.md", "--rules", "r.md", "--subject", "s.md",
        "--check-path", "tests/**", "--reviewers", "claude,codex", "--model", "claude=opus",
        "--effort", "codex=high", "--standpoint", "codex=perf", "--dry-run",
    ])
    assert (args.base, args.head, args.expect_head) == ("main", "HEAD", "abc1234")
    assert args.criteria == ["c1.md", "c2.md"] and args.rules == ["r.md"] and args.subject == ["s.md"]
    assert args.check_paths == ["tests/**"] and args.reviewers == "claude,codex"
    assert args.models == ["claude=opus"] and args.efforts == ["codex=high"]
    assert args.standpoints == [("codex", "perf")] and args.dry_run is True


@pytest.mark.parametrize("row", STANDPOINTS["accepted"], ids=lambda r: repr(r["argv"])[:60])
def test_standpoints_accepted(row):
    args = parse_run_args(BASE + row["argv"])
    check_standpoints(args.standpoints, STANDPOINTS["accepted_names"])
    assert [list(s) for s in args.standpoints] == row["standpoints"]


@pytest.mark.parametrize("row", STANDPOINTS["usage"], ids=lambda r: repr(r["argv"]))
def test_standpoint_usage_errors(row):
    with pytest.raises(UsageError) as info:
        parse_run_args(BASE + row["argv"])
    assert row["says"] in str(info.value)


@pytest.mark.parametrize("row", STANDPOINTS["refused"], ids=lambda r: repr(r["argv"])[:60])
def test_standpoint_refusals(row):
    args = parse_run_args(BASE + row["argv"])
    with pytest.raises(Refused) as info:
        check_standpoints(args.standpoints, STANDPOINTS["accepted_names"])
    assert row["says"] in str(info.value)


def test_help_mentions_stdout_and_exit_codes(capsys):
    with pytest.raises(SystemExit) as info:
        parse_run_args(["--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    assert "Standard output holds one line, the round folder's path" in out
    assert "--decision-quote" in out and "--standpoint" in out


@pytest.mark.parametrize("option", ["--model", "--effort"])
def test_model_effort_shape_is_a_usage_error_before_decision_refusals(option):
    with pytest.raises(UsageError):
        parse_run_args(BASE + [option, "claude", "--decision", "unpaired"])
    with pytest.raises(UsageError):
        parse_run_args(BASE + [option, "=opus"])


# "empty after trimming whitespace" uses Unicode White_Space like Go's TrimSpace:
# U+001C..U+001F are not whitespace there, U+2003 and U+3000 are
@pytest.mark.parametrize("text, blank", [("\u2003\u3000", True), (" \t\n", True), ("\x1c", False), ("\x1f ", False)])
def test_decision_and_standpoint_blankness_follows_go_trimspace(text, blank):
    from spar.round.args import pair_decisions

    items = [("--decision", text), ("--decision-quote", "yes")]
    if blank:
        with pytest.raises(Refused, match="decision 1: --decision text is empty"):
            pair_decisions(items)
        with pytest.raises(Refused, match="is empty"):
            check_standpoints([("claude", text)], ["claude"])
    else:
        assert pair_decisions(items) == [(text, "yes")]
        check_standpoints([("claude", text)], ["claude"])


@pytest.mark.parametrize("text, given", [("\u2003", False), ("\x1c", True), ("  x ", True), (None, False)])
def test_triage_texts_given_follows_go_trimspace(text, given):
    from spar.judge.dispositions import given as is_given

    assert is_given(text) is given
