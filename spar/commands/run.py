"""`spar run`: one review round (design §5).

1. every argument and the configuration are checked: nothing is written before;
2. under the series lock: the cap decision, the round folder with packet.md,
   schema.json, each reviewer's input files, round.json (not finished) and the
   read-only workspace;
3. all reviewers at once; then validation, classification and the records.

SIGINT or SIGTERM while the reviewers run kills every reviewer's process group
and leaves the round unrecorded (round.json as written in step 2), with exit
128 + the signal number; the series lock is released on the way out.
"""

from __future__ import annotations

import os
import shlex
import signal
import sys
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import anyio

from spar import git
from spar import series as series_mod
from spar.config.load import load_config
from spar.config.model import AppliedConfig
from spar.config.select import apply_selection
from spar.errors import EXIT_NOT_CLEAN, EXIT_OK, Refused, WriteFailed, exit_for_signal, quote
from spar.judge.context import RoundDoc
from spar.presets import Preset, get_preset, prepare_input
from spar.progress import Progress, make_progress
from spar.records import atomic, readers
from spar.records.clock import now
from spar.records.lock import series_lock
from spar.records.model import ExtensionLine, Finding, ReviewerStatus, RoundRecord
from spar.records.paths import check_run_out
from spar.round import caps as caps_mod
from spar.round import history, reuse
from spar.round.args import RunArgs, check_standpoints, parse_run_args
from spar.round.context import context_from_git
from spar.round.documents import read_round_documents
from spar.round.memory import memory_sha256, render_memory
from spar.round.packet import DIFF_LIMIT, PacketInput, build_packet, packet_sha256
from spar.round.process import start_guard, stop_guard
from spar.round.recording import (
    apply_outcome,
    new_round_json,
    reviewer_entry,
    reviewer_of,
    write_round_outputs,
)
from spar.round.reuse import earlier_copy
from spar.round.runner import ReviewerJob, ReviewerOutcome, command_line, run_reviewers
from spar.round.schema import schema_text
from spar.round.summary import counts_text
from spar.round.treeplan import TreePlan, escaped_names, workspace_warnings
from spar.round.workspace import build_workspace, describe_changes, plan_commit, workspace_state
from spar.textsafe import terminal_safe

if TYPE_CHECKING:  # anyio.abc (with typing_extensions) is left to the backend's import in its thread
    from anyio.abc import TaskStatus

T = TypeVar("T")
BACKENDS = ("trio", "asyncio")
BACKEND_ENV = "SPAR_ASYNC_BACKEND"
# while reviewers run, these stop the round: every reviewer's process group is killed (the
# reviewers run in sessions of their own, so a terminal's Ctrl-C never reaches them itself)
INTERRUPT_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@dataclass
class RoundPlan:
    """Everything decided before the first write."""

    args: RunArgs
    repo: Path
    config: AppliedConfig
    base: str
    head: str
    expect_head: str | None
    documents: dict[str, list[RoundDoc]]
    packet_text: str
    packet_sha256: str
    tree_plans: dict[str, TreePlan]  # "head", "base": what the workspace copies hold
    out: Path  # absolute round folder
    series: Path
    backend: str
    memory_text: str = ""  # decided under the series lock (spar.round.memory)


def async_backend(env: Mapping[str, str]) -> str:
    value = env.get(BACKEND_ENV, "") or "asyncio"
    if value not in BACKENDS:
        raise Refused(f"{BACKEND_ENV} {quote(value)}: expected asyncio or trio")
    return value


def _config(args: RunArgs, repo: Path, env: Mapping[str, str]) -> AppliedConfig:
    cfg = load_config(repo, env=env)
    named = env.get("SPAR_CONFIG")
    for skipped in cfg.skipped:
        if named and skipped["path"] == named:
            # G16 skips a missing SPAR_CONFIG; a file the user named by hand deserves a word
            print(f"spar: warning: SPAR_CONFIG {named} was skipped ({skipped['why']}); "
                  "using the next configuration source", file=sys.stderr)
    configured = [r.name for r in cfg.reviewers]
    cfg = apply_selection(cfg, args)
    # standpoints may name a configured reviewer left out of this run (contract)
    accepted = configured + [r.name for r in cfg.reviewers if r.name not in configured]
    check_standpoints(args.standpoints, accepted)
    return cfg


def _head_rev(args: RunArgs) -> str:
    return args.head if args.head is not None else "HEAD"


def _revisions(args: RunArgs, repo: Path) -> tuple[str, str, str | None]:
    """--base, --head and --expect-head as commit IDs."""
    head = git.resolve_commit(repo, _head_rev(args), what="--head")
    if args.base is None:
        base = git.default_base(repo, head)
    else:
        base = git.resolve_commit(repo, args.base, what="--base")
    expect = None
    if args.expect_head is not None:
        expect = git.resolve_commit(repo, args.expect_head, what="--expect-head")
        if expect != head:
            raise Refused(f"--expect-head {quote(args.expect_head)} is {expect}, but the head to review is {head}")
    return base, head, expect


def prepare(args: RunArgs, *, cwd: str, env: Mapping[str, str]) -> RoundPlan:
    """Every check of step 1; reads only."""
    backend = async_backend(env)
    try:
        root = git.repo_root(cwd)
    except git.GitError as exc:
        raise Refused(f"cannot tell which git repository holds {cwd}: {exc}") from None
    if root is None:
        raise Refused(f"{cwd} is not inside a git repository")
    repo = root
    cfg = _config(args, repo, env)
    base, head, expect = _revisions(args, repo)
    documents = read_round_documents(
        str(repo), config_rules=list(cfg.rules), criteria=args.criteria, rules=args.rules,
        subject=args.subject, cwd=cwd,
    )
    out = Path(os.path.abspath(os.path.join(cwd, args.out)))
    check_run_out(out)
    series = out.parent
    plans = {"head": plan_commit(repo, head), "base": plan_commit(repo, base)}
    packet = PacketInput(
        stage=args.stage, series=series.name, base=base, head=head, angles=list(cfg.angles),
        check_paths=list(cfg.check_paths), documents=documents,
        standpoints=list(args.standpoints), decisions=list(args.decisions),
        workspace_notes=[n for copy, tree in plans.items() for n in tree.notes(copy)],
        escaped_names=escaped_names(plans.values()),
    )
    if args.stage == "code":
        diff = git.diff_with_stat(repo, base, head, DIFF_LIMIT)  # the packet keeps no more than DIFF_LIMIT
        packet.diff_stat, packet.diff, packet.diff_complete = diff.stat, diff.patch, diff.complete
    since = last_round_elsewhere(series, args.stage, head)
    if since is not None:
        packet.since_round, packet.since_head = since.name, since.round["head"]
        try:
            moved = git.diff_with_stat(repo, packet.since_head, head, DIFF_LIMIT)
            packet.since_stat, packet.since_diff, packet.since_diff_complete = moved.stat, moved.patch, moved.complete
        except git.GitError:  # that head is gone (rebased and pruned): the packet says so
            packet.since_diff = None
    text = build_packet(packet)
    return RoundPlan(args=args, repo=repo, config=cfg, base=base, head=head, expect_head=expect,
                     documents=documents, packet_text=text, packet_sha256=packet_sha256(text),
                     tree_plans=plans, out=out, series=series, backend=backend)


def last_round_elsewhere(series: Path, stage: str, head: str) -> series_mod.SeriesRound | None:
    """The series' last non-dry round of `stage` at another head, or None: its diff to
    `head` is in the packet. A rerun at the same head finds the same round, so it keeps
    the same packet."""
    rounds = [r for r in series_mod.read_series(series)
              if r.round.get("stage") == stage and r.round.get("dry_run") is not True and r.round["head"] != head]
    return rounds[-1] if rounds else None


def read_series(series: Path) -> tuple[list[RoundRecord], list[ExtensionLine]]:
    """The series' rounds (round.json objects) and extensions; refused when unreadable (G32)."""
    rounds = [readers.read_round(p) for p in readers.series_rounds(series)]
    return rounds, readers.read_extensions(series)


def cap_decision(plan: RoundPlan, rounds: list[RoundRecord], extensions: list[ExtensionLine]) -> caps_mod.CapDecision:
    return caps_mod.decide(
        series=str(plan.series), stage=plan.args.stage, base=plan.base, head=plan.head,
        packet_sha256=plan.packet_sha256, dry_run=plan.args.dry_run, caps=plan.config.caps,
        extensions=extensions, rounds=rounds,
    )


def _write_inputs(plan: RoundPlan, files: list[tuple[Path, bytes]]) -> list[Any]:
    """Each reviewer's folder, its input files added to `files`; returns the runner's jobs."""
    standpoints = dict(plan.args.standpoints)
    active = bool(standpoints)
    jobs = []
    for cfg in plan.config.reviewers:
        reviewer_dir = plan.out / cfg.name
        try:
            reviewer_dir.mkdir()
        except OSError as exc:  # the round folder exists already: exit 70, not a traceback
            raise WriteFailed(f"cannot create {reviewer_dir}: {exc.strerror or exc}") from exc
        spec = prepare_input(
            cfg, reviewer_dir=reviewer_dir, packet_text=plan.packet_text, packet_path=plan.out / "packet.md",
            standpoint=standpoints.get(cfg.name), standpoints_active=active, dry_run=plan.args.dry_run,
            memory_text=plan.memory_text,
        )
        for rel, content in spec.files.items():  # presets name files directly in the folder
            files.append((reviewer_dir / rel, content.encode("utf-8")))
        jobs.append(ReviewerJob(config=cfg, reviewer_dir=reviewer_dir, round_dir=plan.out,
                                workspace=plan.out / "workspace", schema_path=plan.out / "schema.json",
                                input=spec))
    return jobs


def _create_round(plan: RoundPlan,
                  decision: caps_mod.CapDecision) -> tuple[RoundRecord, list[ReviewerJob], dict[str, Any]]:
    """The round folder, its round.json and the workspace; returns the workspace's state as built."""
    started = now()
    try:
        plan.out.mkdir()
    except OSError as exc:
        raise Refused(f"--out {quote(str(plan.args.out))}: cannot create it: {exc.strerror or exc}") from None
    files = [(plan.out / "packet.md", plan.packet_text.encode("utf-8"))]
    if plan.memory_text:
        files.append((plan.out / "memory.md", plan.memory_text.encode("utf-8")))
    files.append((plan.out / "schema.json", schema_text(bool(plan.args.standpoints)).encode("utf-8")))
    jobs = _write_inputs(plan, files)
    atomic.write_files(files)  # one batch: their fsyncs at once, before round.json names the round
    standpoints = dict(plan.args.standpoints)
    round_json = new_round_json(
        name=plan.out.name, stage=plan.args.stage, repository=str(plan.repo), base=plan.base, head=plan.head,
        expect_head=plan.expect_head, packet_sha256=plan.packet_sha256, documents=plan.documents,
        config=plan.config, reviewers=[reviewer_entry(c, standpoints.get(c.name)) for c in plan.config.reviewers],
        standpoints=list(plan.args.standpoints), decisions=list(plan.args.decisions),
        counted=decision.counted, dry_run=plan.args.dry_run, started_at=started,
    )
    round_json["warnings"] += workspace_warnings(plan.tree_plans)
    if plan.memory_text:  # its own digest: never part of packet_sha256 (a rerun stays a rerun)
        round_json["memory_sha256"] = memory_sha256(plan.memory_text)
    atomic.write_json(plan.out / "round.json", round_json)
    # files' bytes from the work tree (at the checked-out head) and the series' last copy, each
    # checked against its blob id; git inflates only the rest
    earlier = earlier_copy(readers.series_rounds(plan.series), plan.out)
    sources = reuse.sources(plan.repo if plan.args.head is None else None, earlier)
    built = build_workspace(plan.repo, plan.base, plan.head, plan.out / "workspace", plan.tree_plans, sources)
    return round_json, jobs, built


async def _reviewers_or_signal(jobs: list[ReviewerJob], progress: Progress, env: dict[str, str],
                               passthrough: list[str] | None) -> tuple[list[ReviewerOutcome] | None, int | None]:
    """(outcomes, None), or (None, signal number) when SIGINT/SIGTERM came first: the task
    group is cancelled and each reviewer's GuardedProcess ends its whole process group."""
    caught: list[int] = []
    outcomes = None
    async with anyio.create_task_group() as tg:
        # a signal ignored when spar started (a background job in a script) stays ignored
        wanted = [s for s in INTERRUPT_SIGNALS if signal.getsignal(s) is not signal.SIG_IGN]

        async def watch(*, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
            with anyio.open_signal_receiver(*wanted) as signals:
                task_status.started()  # installed before any reviewer starts
                async for signum in signals:
                    caught.append(int(signum))
                    tg.cancel_scope.cancel()
                    return

        if wanted and threading.current_thread() is threading.main_thread():  # signals reach the main thread only
            await tg.start(watch)
        outcomes = await run_reviewers(jobs, progress=progress, env=env, env_passthrough=passthrough)
        tg.cancel_scope.cancel()  # stop the watcher
    return (None, caught[0]) if caught else (outcomes, None)


def _run_all(plan: RoundPlan, jobs: list[ReviewerJob],
             progress: Progress) -> tuple[list[ReviewerOutcome] | None, int | None]:
    try:
        # each reviewer inherits this through env_passthrough and its preset (spar.round.environment)
        passthrough = plan.config.env_passthrough
        return anyio.run(lambda: _reviewers_or_signal(jobs, progress, dict(os.environ), passthrough),
                         backend=plan.backend)
    except BaseExceptionGroup as group:
        # a Ctrl-C before the watcher was in place comes wrapped by trio: keep it a plain one
        interrupt, rest = group.split(KeyboardInterrupt)
        if interrupt is not None and rest is None:
            raise KeyboardInterrupt from None
        raise


def _record(plan: RoundPlan, round_json: RoundRecord, outcomes: list[ReviewerOutcome], progress: Progress,
            workspace_note: str | None) -> list[Finding]:
    """Validate and classify every outcome, then write the records."""
    if workspace_note:
        round_json["warnings"].append(workspace_note)
    ctx = context_from_git(plan.repo, plan.base, plan.head,
                           [d for kind in ("criteria", "rules", "subject") for d in plan.documents[kind]],
                           list(plan.config.check_paths), round_json["links"]["criteria_ids"])
    findings: list[Finding] = []
    for outcome in outcomes:
        findings += apply_outcome(round_json, outcome, ctx)
        if outcome.status == ReviewerStatus.COMPLETED:
            # the runner said "answered"; the checks decide completed or invalid_output
            entry = reviewer_of(round_json, outcome.name)
            progress.reviewer_status(outcome.name, entry["status"], entry["reason"])
    history.annotate(plan.out, round_json, findings, ctx)
    write_round_outputs(plan.out, round_json, findings)
    return findings


def dry_run_lines(jobs: list[Any], path_env: str | None) -> list[str]:
    """For each reviewer, the command line each attempt would run, as a shell line a user can
    paste: run in the workspace, the prompt from the reviewer's input.md (on stdin, or as
    agy's -p argument), claude's --json-schema from schema.json."""
    lines = []
    for job in jobs:
        cfg = job.config
        preset = get_preset(cfg.preset)
        if not preset.runs_process:
            lines.append(f"spar: dry run: {cfg.name} runs nothing: the host gives {job.reviewer_dir / 'prompt.md'} "
                         "to its subagent")
            continue
        models = [cfg.model] + ([cfg.fallback_model] if cfg.fallback_model else [])
        for number, model in enumerate(models, 1):
            lookup, argv = command_line(job, model, path_env)
            which = "would run" if number == 1 else "after a quota refusal would run"
            note = f" ({lookup.reason})" if lookup.status != "ok" else ""
            lines.append(f"spar: dry run: {cfg.name} {which}{note}: {shell_line(job, preset, argv)}")
    return lines


def shell_line(job: ReviewerJob, preset: Preset, argv: list[str]) -> str:
    """`argv` as one shell line run in the workspace, long texts read from their files."""
    prompt_file = shlex.quote(str(Path(job.reviewer_dir).absolute() / "input.md"))
    schema = Path(job.schema_path)
    schema_text = schema.read_text(encoding="utf-8") if schema.exists() else None
    words = []
    for arg in argv:
        if job.input.text and arg == job.input.text:
            words.append(f'"$(cat {prompt_file})"')
        elif schema_text is not None and arg == schema_text:
            words.append(f'"$(cat {shlex.quote(str(schema.absolute()))})"')
        else:
            words.append(shlex.quote(arg))
    line = f"cd {shlex.quote(str(Path(job.workspace).absolute()))} && " + " ".join(words)
    if preset.stdin_text(job.input) is not None:
        line += f" < {prompt_file}"
    return line


def execute(plan: RoundPlan) -> int:
    # G33: the cap decision is taken under the lock, after reading the records again, so
    # a run at its cap waits for an `spar extend` in progress instead of refusing. Only a
    # series that does not exist yet (no rounds, no extensions, nobody writing) is decided
    # without it, so that a refusal there creates no series folder.
    if not os.path.isdir(plan.series):
        cap_decision(plan, *read_series(plan.series))
    with series_lock(plan.series):
        decision = cap_decision(plan, *read_series(plan.series))
        # another run may have taken the name while we waited (G28's repository checks of
        # prepare stand: they cost a git process or three)
        check_run_out(plan.out, repository=False)
        # what the series decided so far, as it stands now that no triage can slip in
        plan.memory_text = render_memory(history.past_findings(plan.series, None, str(plan.repo), plan.base, plan.head))
        if not plan.args.dry_run:
            start_guard()  # started in main already: this replaces it if it died meanwhile
        round_json, jobs, before = _create_round(plan, decision)
        print(plan.out, flush=True)
        if plan.args.dry_run:
            for line in dry_run_lines(jobs, os.environ.get("PATH")):
                print(line, file=sys.stderr)
            print(f"spar: dry run written to {plan.out} (no reviewer started)", file=sys.stderr)
            return EXIT_OK
        workspace = plan.out / "workspace"
        # the copies' file modes stop any reviewer that does not run as root; root ignores
        # them, so spar at least notices a change (against `before`, the state as built)
        # and says so in the round
        progress = make_progress()
        progress.expect([job.config.name for job in jobs])
        signum = None
        try:
            outcomes, signum = _run_all(plan, jobs, progress)
            stop_guard()  # no reviewer runs any more: it exits while the round is recorded
            if outcomes is not None:  # else a signal came first (signum)
                note = describe_changes(before, workspace_state(workspace))
                findings = _record(plan, round_json, outcomes, progress, note)
        finally:
            progress.close()
        if signum is not None:
            print(f"spar: interrupted by {signal.Signals(signum).name}: every reviewer was stopped; "
                  f"round {plan.out} was not recorded (its round.json has no finished_at)", file=sys.stderr)
            return exit_for_signal(signum)
    for warning in round_json["warnings"]:
        print(f"spar: warning: {terminal_safe(warning)}", file=sys.stderr)
    for r in round_json["reviewers"]:
        if r["status"] == ReviewerStatus.AWAITING_RECORD:  # tell the host what to do with a native reviewer
            folder = plan.out / r["name"]
            print(f"spar: {r['name']}: give {folder / 'prompt.md'} to the host's subagent, save its answer "
                  f"and run: spar record {plan.out} --reviewer {r['name']} --result {folder / 'result.json'}",
                  file=sys.stderr)
    not_completed = [r for r in round_json["reviewers"] if r["status"] != ReviewerStatus.COMPLETED]
    line = f"spar: round {plan.out} recorded: {counts_text(findings)}"
    if not_completed:
        line += "; not completed: " + ", ".join(f"{r['name']} ({r['status']})" for r in not_completed)
    print(line, file=sys.stderr)
    return EXIT_NOT_CLEAN if not_completed else EXIT_OK


def main(argv: list[str]) -> int:
    args = parse_run_args(argv)
    try:
        if not args.dry_run:
            start_guard()  # forked before any thread starts (a refusal stops it unused)
        return execute(prepare(args, cwd=os.getcwd(), env=os.environ))
    finally:
        stop_guard()  # told to go after the reviewers: reaped here when it is gone, else by init
