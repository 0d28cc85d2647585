"""`spar run`: its parser and its messages. Its steps, each returning its own frozen result, are
in spar/round/preparation.py (planned, prepared) and spar/round/reviewing.py (reviewed, recorded,
verified); a signal while reviewers run raises spar.errors.Interrupted (exit 128 + the signal)."""

from __future__ import annotations

import os
import sys
from contextlib import nullcontext

from spar.argparsing import Parser, add_selection_options, command_parser
from spar.config.model import STAGES
from spar.errors import EXIT_NOT_CLEAN, EXIT_OK, UsageError
from spar.judge.findings import demoted_for_link, demotion_line
from spar.presets import get_preset
from spar.proc.process import reviewer_guard
from spar.progress import make_progress
from spar.records.lock import series_lock
from spar.round.args import DECISION, DECISION_QUOTE, RunArgs, run_args_from, split_decision_options
from spar.round.dryrun import dry_run_lines
from spar.round.preparation import PlannedRound, PreparedRound, cap_decision, plan_round, prepare_round
from spar.round.reviewing import RecordedRound, record_round, review_round
from spar.round.summary import closing_lines, uncommitted_text
from spar.textsafe import terminal_safe
from spar.verify.verifying import verify_findings

DESCRIPTION = """\
Run one review round: every configured reviewer at once on one packet, then
validate, classify and record their findings in the round folder --out.

Standard output holds one line, the round folder's path, once the folder exists
(also for --dry-run). Progress and the final summary line go to standard error.
Exit codes: 0 recorded and every reviewer completed (or a dry run written);
1 recorded with a reviewer that did not complete (awaiting_record included);
64 usage error; 65 refused or configuration error (nothing written);
70 internal error or a write that may have been applied; 130 (SIGINT, Ctrl-C)
or 143 (SIGTERM) while reviewers run: every reviewer's process group is
killed, the lock is released and the round folder stays unrecorded (its
round.json has no finished_at; a rerun of the same input is not counted).

--out names the round folder, SERIES/ROUND. Inside the repository under review
the first round creates the series folder (one new folder, in a folder that
exists: `reviews/r1`); elsewhere the series folder must exist (mkdir it to start
a series there), so a mistyped path never starts a new series with its caps,
memory and repeats over. A code round needs a change: base and head with no
changed file between them are refused before any reviewer starts.

A round reviews commits: without --head, changes not committed are named on
standard error and in the round (round.json `uncommitted`, summary.md), not
reviewed. --worktree reviews them: the head is a commit Spar makes of the
working tree (tracked changes and untracked files that are not ignored) on
HEAD, leaving the index, the files and every ref as they are.

The workspace copies are read-only by file modes, which stop any reviewer
not running as root; a change made anyway (root) is noticed and recorded as a
round warning.

With a [verify] table in the user configuration, the recorded round's defect
and hardening findings are then put to reviewers of other vendors (see spar
verify --help): verifications.json, never a change to the exit code above but
130 or 143 when a signal stops the verifiers (the round stays recorded). The
verifiers run as the user configuration sets them: --model and --effort
change this round's reviewers only.

--decision TEXT --decision-quote TEXT: a decision the user made and the user's
words, as a pair (repeatable, in order). Their texts may start with '-' and are
kept byte for byte."""


def build_parser() -> Parser:
    p = command_parser("run", DESCRIPTION)
    p.add_argument("--stage", required=True, choices=STAGES, help="plan, plan-delta or code")
    p.add_argument("--out", required=True, metavar="SERIES/ROUND", help="round folder to create (must not exist)")
    p.add_argument("--base", metavar="REV", help="default: merge-base with the default branch, else HEAD~1"
                   " (the empty tree for a first commit)")
    p.add_argument("--head", metavar="REV", help="default: HEAD")
    p.add_argument("--worktree", action="store_true",
                   help="review the working tree as it is (a commit Spar makes on HEAD), not HEAD")
    p.add_argument("--expect-head", metavar="REV", help="refuse unless head is this commit")
    p.add_argument("--criteria", action="append", default=[], metavar="FILE",
                   help="acceptance criteria document (AC-n IDs); repeatable")
    p.add_argument("--rules", action="append", default=[], metavar="FILE",
                   help="rule document, after the configured rules; repeatable")
    p.add_argument("--subject", action="append", default=[], metavar="FILE",
                   help="document under review (the plan); repeatable")
    add_selection_options(p)
    p.add_argument("--standpoint", dest="standpoints", action="append", default=[], metavar="NAME=TEXT",
                   help="a risk for one reviewer to attack in this round; repeatable")
    # listed for --help only: split_decision_options removes them before parsing
    p.add_argument(DECISION, dest="_decision_help", action="append", metavar="TEXT",
                   help="what a user decision settles (pair with --decision-quote)")
    p.add_argument(DECISION_QUOTE, dest="_decision_quote_help", action="append", metavar="TEXT",
                   help="the user's words for the decision before it")
    p.add_argument("--dry-run", action="store_true", help="write the round's inputs, start no reviewer")
    return p


def parse_run_args(argv: list[str]) -> RunArgs:
    """Usage errors (64) first, then the decision refusals (65); nothing else is checked here."""
    rest, items = split_decision_options(argv)
    ns = build_parser().parse_args(rest)
    if ns.worktree and (ns.head is not None or ns.expect_head is not None):
        raise UsageError("run: --worktree reviews the working tree: --head and --expect-head name commits")
    return run_args_from(ns, items)


def _prepared_lines(prepared: PreparedRound) -> None:
    p = prepared.planned  # stdout: the round folder, once it exists; stderr: what it holds of note
    print(p.out, flush=True)
    uncommitted = uncommitted_text(prepared.record)
    if uncommitted:
        print(f"spar: {'' if p.args.worktree else 'warning: '}{terminal_safe(uncommitted)}", file=sys.stderr)
    for job in prepared.jobs:
        if job.config.key_in_clear():  # allowed by allow_plain_http, or the configuration would be refused
            print(f"spar: warning: {job.config.name} sends the key in {job.config.api_key_env} unencrypted to "
                  f"{terminal_safe(job.config.base_url)} (http://, allow_plain_http = true)", file=sys.stderr)
    if p.args.dry_run:
        for line in dry_run_lines(prepared.jobs, os.environ.get("PATH")):
            print(line, file=sys.stderr)
        print(f"spar: dry run written to {p.out} (no reviewer started)", file=sys.stderr)


def _verified_lines(recorded: RecordedRound) -> None:
    verified = verify_findings(recorded, get_preset)
    if isinstance(verified, str):
        print(f"spar: not verified now: {verified}", file=sys.stderr)
    elif verified is not None:
        for line in verified.lines(recorded.prepared.planned.out):
            print(f"spar: {terminal_safe(line)}", file=sys.stderr)


def execute(planned: PlannedRound) -> int:
    # G33: the cap decision is taken under the lock, after reading the records again, so a run
    # at its cap waits for an `spar extend` in progress instead of refusing. Only a series that
    # does not exist yet is decided without it, so that a refusal there creates no series folder.
    if not os.path.isdir(planned.out.parent):
        cap_decision(planned)
    with series_lock(planned.out.parent):
        prepared = prepare_round(planned)
        _prepared_lines(prepared)
        if planned.args.dry_run:
            return EXIT_OK
        progress = make_progress()
        progress.expect([job.config.name for job in prepared.jobs])
        try:
            reviewed = review_round(prepared, progress)
            recorded = record_round(reviewed, progress)
        finally:
            progress.close()
        if (warning := reviewed.repo_warning()) is not None:
            print(f"spar: warning: {terminal_safe(warning)}", file=sys.stderr)
        _verified_lines(recorded)
    for finding in recorded.findings:
        if demoted_for_link(finding):
            print(f"spar: note: {terminal_safe(demotion_line(finding))}", file=sys.stderr)
    for line in closing_lines(recorded.record, planned.out, recorded.findings):
        print(line, file=sys.stderr)
    return EXIT_OK if recorded.completed else EXIT_NOT_CLEAN


def main(argv: list[str]) -> int:
    args = parse_run_args(argv)
    # the guard is forked before any thread starts (a refusal lets it go unused); a dry run starts no program
    with nullcontext() if args.dry_run else reviewer_guard():
        return execute(plan_round(args, cwd=os.getcwd(), env=os.environ, preset_of=get_preset))
