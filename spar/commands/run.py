"""`spar run`: one review round (design §5), in four steps over one `Round`:

1. plan: every argument and the configuration are checked and the packet is built;
   nothing is written;
2. prepare, under the series lock: the cap decision, the round folder with packet.md,
   schema.json, each reviewer's input files, round.json (not finished) and the
   read-only workspace;
3. run the reviewers, all at once;
4. record: validation, classification and the records;
5. with a [verify] table in the user configuration: verify the recorded findings
   with reviewers of other vendors (spar/round/verification.py), still under the lock.

SIGINT or SIGTERM while the reviewers run kills every reviewer's process group and
leaves the round unrecorded (round.json as written in step 2), with exit 128 + the
signal number; the series lock is released on the way out.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Mapping
from pathlib import Path

from spar.argparsing import Parser, add_selection_options, command_parser
from spar.backend import async_backend
from spar.config.model import STAGES
from spar.errors import EXIT_NOT_CLEAN, EXIT_OK, UsageError, exit_for_signal
from spar.judge import caps
from spar.pathtext import path_text
from spar.presets import get_preset
from spar.proc.process import start_guard, stop_guard
from spar.progress import Progress, make_progress
from spar.records import readers
from spar.records.lock import series_lock
from spar.records.model import ReviewerStatus
from spar.records.paths import check_run_out
from spar.round import history
from spar.round.args import DECISION, DECISION_QUOTE, RunArgs, run_args_from, split_decision_options
from spar.round.context import context_from_git
from spar.round.documents import read_round_documents
from spar.round.dryrun import dry_run_lines
from spar.round.interrupt import run_until_signal
from spar.round.memory import render_memory
from spar.round.packet import build_packet, inline_paths, packet_sha256
from spar.round.preparation import (
    Round,
    choose_commits,
    choose_packet,
    packet_input,
    run_config,
    work_tree_of,
    write_round_folder,
)
from spar.round.recording import apply_outcome, record_coverage, reviewer_of, write_round_outputs
from spar.round.repeat_check import check_repeats, result_line
from spar.round.repowatch import repository_change, repository_state
from spar.round.sandboxing import round_sandbox
from spar.round.summary import closing_lines, uncommitted_text
from spar.round.verification import result_lines, verifiable_problem, verify_round
from spar.textsafe import terminal_safe
from spar.workspace.build import describe_changes, plan_commit, workspace_state

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
    p.add_argument("--base", metavar="REV", help="default: merge-base with the default branch, else HEAD~1")
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


def plan_round(args: RunArgs, *, cwd: str, env: Mapping[str, str]) -> Round:
    """Step 1: every check, and the packet; reads only (but for --worktree's commit object)."""
    backend = async_backend(env)
    repo = work_tree_of(cwd)
    config = run_config(args, repo, env)
    commits = choose_commits(args, repo, config.max_copy_bytes)
    documents = read_round_documents(str(repo), config_rules=list(config.rules), criteria=args.criteria,
                                     rules=args.rules, subject=args.subject, cwd=cwd)
    out = Path(os.path.abspath(os.path.join(cwd, args.out)))
    check_run_out(out)
    r = Round(args=args, repo=repo, config=config, backend=backend, out=out, commits=commits, documents=documents,
              presets={c.preset: get_preset(c.preset) for c in config.reviewers})
    if not args.dry_run:  # decided before anything is written: "required" refuses an uncounted round
        r.sandbox = round_sandbox(config.sandbox, env.get("PATH"))
    r.tree_plans = {copy: plan_commit(repo, commit, config.max_copy_bytes)
                    for copy, commit in (("head", commits.head), ("base", commits.base))}
    r.tree_plans["head"].leave_out(commits.too_large)
    packet = packet_input(args, repo, config, commits, documents, r.tree_plans, out.parent)
    r.packet_kind, r.change_diff = choose_packet(repo, config, packet)
    r.packet_text = build_packet(packet)
    if args.stage == "code":
        r.changed_files = [c.path for c in packet.changed]
        # an incremental packet holds no file's whole diff (only the changes since the last round)
        r.inline_files = inline_paths(packet.diff) if packet.kind == "full" else set()
    return r


def _cap_decision(r: Round) -> caps.CapDecision:
    series = r.out.parent
    rounds = [readers.read_round(p) for p in readers.series_rounds(series)]  # refused when unreadable (G32)
    return caps.decide(series=str(series), stage=r.args.stage, base=r.commits.base, head=r.commits.head,
                       packet_sha256=packet_sha256(r.packet_text), dry_run=r.args.dry_run, caps=r.config.caps,
                       extensions=readers.read_extensions(series), rounds=rounds)


def prepare_round(r: Round) -> None:
    """Step 2, under the series lock: the round folder, its inputs, round.json and the workspace."""
    decision = _cap_decision(r)
    # another run may have taken the name while we waited (G28's repository checks of step 1 stand)
    check_run_out(r.out, repository=False)
    c = r.commits  # what the series decided so far, as it stands now that no triage can slip in
    r.memory_text = render_memory(history.past_findings(r.out.parent, None, str(r.repo), c.base, c.head))
    if not r.args.dry_run:
        start_guard()  # started in main already: this replaces it if it died meanwhile
    write_round_folder(r, decision.counted)


def run_the_reviewers(r: Round, progress: Progress) -> int | None:
    """Step 3: every reviewer at once; the signal number when SIGINT or SIGTERM stopped them."""
    watched = repository_state(r.repo, r.out.parent)  # the user's repository, compared once they end
    outcomes, signum = run_until_signal(r.jobs, progress, dict(os.environ), r.config.env_passthrough, r.backend,
                                        r.sandbox.bwrap)
    r.repo_change = repository_change(watched, repository_state(r.repo, r.out.parent))
    if r.config.verify is None:
        stop_guard()  # no reviewer runs any more: it exits while the round is recorded
    r.outcomes = outcomes or []
    return signum


def record_round(r: Round, progress: Progress) -> None:
    """Step 4: validate and classify every outcome, then write the records."""
    assert r.record is not None  # written by prepare_round
    # the copies' file modes stop any reviewer that does not run as root; root ignores them,
    # so spar at least notices a change (against the state as built) and says so
    note = describe_changes(r.workspace_before, workspace_state(r.out / "workspace"))
    if note:
        r.record["warnings"].append(note)
    r.record["sandbox"] = r.sandbox.record()
    if r.repo_change is not None:
        r.record["repository_changed"] = r.repo_change.record(r.sandbox.bwrap is not None)
    documents = [d for kind in ("criteria", "rules", "subject") for d in r.documents[kind]]
    ctx = context_from_git(r.repo, r.commits.base, r.commits.head, documents, list(r.config.check_paths),
                           r.record["links"]["criteria_ids"])
    for outcome in r.outcomes:
        r.findings += apply_outcome(r.record, outcome, ctx)
        if outcome.status == ReviewerStatus.COMPLETED:
            # the runner said "answered"; the checks decide completed or invalid_output
            entry = reviewer_of(r.record, outcome.name)
            progress.reviewer_status(outcome.name, entry["status"], entry["reason"])
    if r.changed_files is not None:
        not_copied = {path_text(p) for plan in r.tree_plans.values() for p in plan.too_large}
        record_coverage(r.record, r.outcomes, r.changed_files, r.inline_files, r.out / "workspace", not_copied,
                        change_diff=r.change_diff is not None)
    history.annotate(r.out, r.record, r.findings, ctx)
    write_round_outputs(r.out, r.record, r.findings)


def verify_the_findings(r: Round) -> int | None:
    """Step 5, with a [verify] table: the round's findings put to verifiers of other
    vendors; the signal number when SIGINT or SIGTERM stopped them (the round stays
    recorded, verifications.json unwritten)."""
    cfg = r.config.verify
    if cfg is None:
        return None
    assert r.record is not None
    problem = verifiable_problem(r.record)
    if problem:
        print(f"spar: not verified now: {problem}", file=sys.stderr)
        return None
    presets = {c.preset: get_preset(c.preset) for c in cfg.reviewers}
    result, signum = verify_round(r.out, cfg, presets, env=os.environ, passthrough=r.config.env_passthrough,
                                  backend=r.backend, sandbox=r.sandbox.bwrap)
    if result is None:
        return signum
    for line in result_lines(result, r.out):
        print(f"spar: {terminal_safe(line)}", file=sys.stderr)
    checks, signum = check_repeats(r.out, cfg, presets, env=os.environ, passthrough=r.config.env_passthrough,
                                   backend=r.backend, sandbox=r.sandbox.bwrap)
    if checks is not None and (checks["calls"] or checks["unchecked"]):
        print(f"spar: {terminal_safe(result_line(checks, r.out))}", file=sys.stderr)
    return signum


def _final_lines(r: Round) -> int:
    assert r.record is not None
    for line in closing_lines(r.record, r.out, r.findings):
        print(line, file=sys.stderr)
    completed = all(e["status"] == ReviewerStatus.COMPLETED for e in r.record["reviewers"])
    return EXIT_OK if completed else EXIT_NOT_CLEAN


def execute(r: Round) -> int:
    # G33: the cap decision is taken under the lock, after reading the records again, so a run
    # at its cap waits for an `spar extend` in progress instead of refusing. Only a series that
    # does not exist yet is decided without it, so that a refusal there creates no series folder.
    if not os.path.isdir(r.out.parent):
        _cap_decision(r)
    with series_lock(r.out.parent):
        prepare_round(r)
        print(r.out, flush=True)
        assert r.record is not None
        uncommitted = uncommitted_text(r.record)
        if uncommitted:
            print(f"spar: {'' if r.args.worktree else 'warning: '}{terminal_safe(uncommitted)}", file=sys.stderr)
        if r.args.dry_run:
            for line in dry_run_lines(r.jobs, os.environ.get("PATH")):
                print(line, file=sys.stderr)
            print(f"spar: dry run written to {r.out} (no reviewer started)", file=sys.stderr)
            return EXIT_OK
        progress = make_progress()
        progress.expect([job.config.name for job in r.jobs])
        try:
            signum = run_the_reviewers(r, progress)
            if signum is None:
                record_round(r, progress)
        finally:
            progress.close()
        if r.repo_change is not None:
            print(f"spar: warning: {terminal_safe(r.repo_change.message(r.sandbox.bwrap is not None))}",
                  file=sys.stderr)
        if signum is not None:
            print(f"spar: interrupted by {signal.Signals(signum).name}: every reviewer was stopped; "
                  f"round {r.out} was not recorded (its round.json has no finished_at)", file=sys.stderr)
            return exit_for_signal(signum)
        signum = verify_the_findings(r)
        if signum is not None:
            print(f"spar: interrupted by {signal.Signals(signum).name}: every verifier was stopped; round {r.out} "
                  "is recorded, its verification is not (run `spar verify` on it)", file=sys.stderr)
            return exit_for_signal(signum)
    return _final_lines(r)


def main(argv: list[str]) -> int:
    args = parse_run_args(argv)
    try:
        if not args.dry_run:
            start_guard()  # forked before any thread starts (a refusal stops it unused)
        return execute(plan_round(args, cwd=os.getcwd(), env=os.environ))
    finally:
        stop_guard()  # told to go after the reviewers: reaped here when it is gone, else by init
