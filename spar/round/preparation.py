"""`spar run`'s first two steps, planned (`plan_round` -> `PlannedRound`) and prepared
(`prepare_round` -> `PreparedRound`), and their work: the commits it reviews (HEAD, a named
one, or the working tree made a commit), what packet.md is built from, and the round
folder the reviewers read (docs/records.md)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spar import git
from spar import series as series_mod
from spar.backend import async_backend
from spar.config.load import load_config
from spar.config.model import CAP_KEYS, AppliedConfig
from spar.config.scaffold import is_setup_file
from spar.config.select import apply_selection
from spar.config.sources import named_skipped
from spar.errors import Refused, WriteFailed, quote
from spar.judge import caps
from spar.judge.context import RoundDoc
from spar.records import atomic, readers
from spar.records.clock import now
from spar.records.model import InputBytes, PacketKind, RoundRecord, UncommittedCounts
from spar.records.paths import check_run_out, check_series_folder_exists
from spar.round import history
from spar.round.args import RunArgs, check_standpoints
from spar.round.documents import read_round_documents
from spar.round.interface import Preset, reviewer_input
from spar.round.memory import memory_sha256, render_memory
from spar.round.packet import (
    DIFF_LIMIT,
    PacketInput,
    build_packet,
    diff_parts,
    inline_paths,
    packet_sha256,
    reading_order,
)
from spar.round.recording import new_round_json, reviewer_entry
from spar.round.runner import ReviewerJob
from spar.round.sandboxing import SandboxChoice, round_sandbox
from spar.round.schema import schema_text
from spar.textsafe import terminal_safe
from spar.workspace import reuse
from spar.workspace.blobcache import series_cache
from spar.workspace.build import build_workspace, plan_commit
from spar.workspace.treeplan import TreePlan, escaped_names, workspace_warnings


@dataclass(frozen=True)
class RoundCommits:
    """The commits a round reviews, and where its head came from (docs/records.md)."""

    base: str
    head: str
    expect_head: str | None
    source: str = "commit"  # "worktree": `head` is a commit Spar made of the working tree
    head_tree: str | None = None  # the worktree commit's tree: what the gate compares
    parent: str | None = None  # the worktree commit's parent, HEAD when it was made
    uncommitted: git.Uncommitted | None = None  # None when --head named the commit
    nested: tuple[str, ...] = ()  # --worktree: untracked folders holding a repository, not reviewed
    too_large: tuple[tuple[str, int], ...] = ()  # --worktree: (path, size) of untracked files over the cap


def work_tree_of(cwd: str) -> Path:
    """The root of the work tree holding `cwd`; refused outside one."""
    try:
        root = git.repo_root(cwd)
    except git.GitError as exc:
        raise Refused(f"cannot tell which git repository holds {cwd}: {exc}") from None
    if root is None:
        raise Refused(f"{cwd} is not inside a git repository")
    return root


def run_config(args: RunArgs, repo: Path, env: Mapping[str, str]) -> AppliedConfig:
    """The configuration with this run's selection applied; refused when a standpoint names no reviewer."""
    cfg = load_config(repo, env=env)
    skipped = named_skipped(env, cfg.skipped)
    if skipped is not None:  # G16 skips a missing SPAR_CONFIG; a file the user named by hand deserves a word
        print(f"spar: warning: SPAR_CONFIG {env['SPAR_CONFIG']} was skipped ({skipped['why']}); "
              "using the next configuration source", file=sys.stderr)
    configured = [r.name for r in cfg.reviewers]
    cfg = apply_selection(cfg, args)
    # standpoints may name a configured reviewer left out of this run (contract)
    check_standpoints(args.standpoints, configured + [r.name for r in cfg.reviewers if r.name not in configured])
    return cfg


def _head(args: RunArgs, repo: Path) -> str:
    try:
        return git.resolve_commit(repo, args.head if args.head is not None else "HEAD", what="--head")
    except Refused:
        if args.head is None and git.unborn_head(repo):  # no --head to blame
            raise Refused(f"{git.NO_COMMITS}; commit the change to review") from None
        raise


def choose_commits(args: RunArgs, repo: Path, max_copy_bytes: int | None = None) -> RoundCommits:
    """--head (default HEAD, or the working tree with --worktree), --base and --expect-head as
    commit IDs; refused when one does not name a commit. Files over `max_copy_bytes` are not
    copied, so --worktree streams them into git rather than reading them whole."""
    head = _head(args, repo)
    # only the checked-out HEAD has a working tree whose changes this round could miss
    try:
        uncommitted = git.uncommitted(repo, is_setup_file) if args.head is None else None
    except git.GitError as exc:  # a FIFO among the ignore files, say: plainly refused, not a traceback
        raise Refused(f"cannot tell whether the working tree holds uncommitted work: {exc}") from None
    tree = parent = None
    nested: tuple[str, ...] = ()
    too_large: tuple[tuple[str, int], ...] = ()
    if args.worktree:
        try:
            made = git.snapshot_worktree(repo, head, max_copy_bytes)
        except git.GitError as exc:
            raise Refused(f"--worktree: cannot make a commit of the working tree: {exc}") from None
        head, tree, parent, nested, too_large = made.commit, made.tree, head, made.nested, made.too_large
        if made.nested:
            print(f"spar: warning: {terminal_safe(nested_warning(made.nested))}", file=sys.stderr)
    if args.base is None:
        base = git.default_base(repo, head)
    else:
        base = git.resolve_commit(repo, args.base, what="--base")
    expect = None
    if args.expect_head is not None:
        expect = git.resolve_commit(repo, args.expect_head, what="--expect-head")
        if expect != head:
            raise Refused(f"--expect-head {quote(args.expect_head)} is {expect}, but the head to review is {head}")
    return RoundCommits(base=base, head=head, expect_head=expect, source="worktree" if args.worktree else "commit",
                        head_tree=tree, parent=parent, uncommitted=uncommitted,
                        nested=nested, too_large=too_large)


def empty_change(args: RunArgs, commits: RoundCommits) -> str:
    """Why a code round of no changed file is refused: reviewers would be paid to read
    nothing, and the round would take one of the cap's slots."""
    head = "the working tree" if args.worktree else f"head {commits.head[:12]}"
    hint = "name an earlier --base"
    if args.head is None and not args.worktree:
        hint += ", or review uncommitted work with --worktree"
    return (f"nothing to review: {head} changes no file from base {commits.base[:12]}; {hint} "
            "(no reviewer started, no round counted)")


def nested_warning(nested: tuple[str, ...]) -> str:
    """The round warning (and stderr line) naming --worktree's nested repositories."""
    return (f"--worktree: {len(nested)} folder(s) of the working tree hold a git repository of their own and "
            f"were not reviewed (git records only their commit, none of their files): "
            f"{', '.join(nested)}")


def last_round_elsewhere(series: Path, stage: str, head: str) -> series_mod.SeriesRound | None:
    """The series' last non-dry round of `stage` at another head, or None: its diff to
    `head` is in the packet. A rerun at the same head finds the same round, so it keeps
    the same packet."""
    rounds = [r for r in series_mod.read_series(series)
              if r.round.get("stage") == stage and r.round.get("dry_run") is not True and r.round["head"] != head]
    return rounds[-1] if rounds else None


def packet_input(args: RunArgs, repo: Path, config: AppliedConfig, commits: RoundCommits,
                 documents: dict[str, list[RoundDoc]], plans: dict[str, TreePlan], series: Path) -> PacketInput:
    """Everything packet.md is built from: the arguments, the configuration, the change since
    the series' last round at another head and the changed files (code stage), and the
    diff, unless the round can have an incremental packet: `choose_packet` then reads it once."""
    base, head = commits.base, commits.head
    packet = PacketInput(
        stage=args.stage, series=series.name, base=base, head=head, angles=list(config.angles),
        check_paths=list(config.check_paths), documents=documents,
        standpoints=list(args.standpoints), decisions=list(args.decisions),
        workspace_notes=[n for copy, tree in plans.items() for n in tree.notes(copy)],
        escaped_names=escaped_names(plans.values()),
    )
    since = last_round_elsewhere(series, args.stage, head)
    if since is not None:
        packet.since_round, packet.since_head = since.name, since.round["head"]
        try:
            moved = git.diff_with_stat(repo, packet.since_head, head, DIFF_LIMIT)
            packet.since_stat, packet.since_diff, packet.since_diff_complete = moved.stat, moved.patch, moved.complete
        except git.GitError:  # that head is gone (rebased and pruned): the packet says so
            packet.since_diff = None
    if args.stage == "code":
        packet.changed = git.changed_files(repo, base, head)
        if config.packet[CAP_KEYS[packet.stage]] != "incremental" or _no_incremental(packet) is not None:
            _full_diff(packet, repo)
    return packet


def _full_diff(packet: PacketInput, repo: Path, whole: bytes | None = None) -> None:
    """The stat and the diff a full packet shows; from `whole` when it was read already."""
    args = (repo, packet.base, packet.head)
    if whole is None:
        diff = git.diff_with_stat(*args, DIFF_LIMIT)  # the packet keeps no more than DIFF_LIMIT
        packet.diff_stat, packet.diff, packet.diff_complete = diff.stat, diff.patch, diff.complete
    else:  # as diff_with_stat would have it: the first DIFF_LIMIT + 1 bytes of a longer one
        packet.diff_stat, packet.diff, packet.diff_complete = (git.diff_stat(*args), whole[:DIFF_LIMIT + 1],
                                                               len(whole) <= DIFF_LIMIT)
    if not packet.diff_complete:
        _sources_first(packet, repo)


def choose_packet(repo: Path, config: AppliedConfig, packet: PacketInput) -> tuple[PacketKind, bytes | None]:
    """The packet kind this round gets (round.json `packet`) and, for an incremental packet, the
    whole diff for workspace/change.diff, read here once; `packet` is made incremental when it
    can be, and given the full packet's diff when it cannot after all."""
    configured = config.packet[CAP_KEYS[packet.stage]]
    kind: PacketKind = {"configured": configured, "kind": "full", "reason": None,
                        "since_round": packet.since_round or None, "change_diff_bytes": None}
    if configured != "incremental":
        return kind, None
    reason = _no_incremental(packet)
    if reason is None:
        whole = git.diff(repo, packet.base, packet.head)
        if len(whole) > DIFF_LIMIT:  # listed as a full packet would list them: sources first
            _reading_order(packet)
        # the files packet_input listed, paired with their sections by path: no second numstat
        packet.parts = diff_parts(whole, [(f.path, f.added, f.removed) for f in packet.changed])
        if packet.parts or not whole:
            packet.kind, packet.change_size = "incremental", len(whole)
            kind["kind"], kind["change_diff_bytes"] = "incremental", len(whole)
            return kind, whole
        reason = "spar could not tell the files of the diff apart; the packet holds the whole diff"
        _full_diff(packet, repo, whole)
    kind["reason"] = reason
    return kind, None


def _no_incremental(packet: PacketInput) -> str | None:
    """Why this round's packet cannot be incremental, or None when it can."""
    if packet.stage != "code":
        return f"a {packet.stage} packet holds no diff of the change to leave out"
    if not packet.since_round:
        return "no earlier round of this stage reviewed another head: the first round gets the whole diff"
    if packet.since_diff is None:
        return (f"the last round of this stage, {packet.since_round}, reviewed head {packet.since_head}, which "
                "this repository no longer has: the packet holds the whole diff")
    return None


def input_bytes(text: str, files: Mapping[str, str]) -> InputBytes:
    return {"prompt": len(text.encode("utf-8")), "files": sum(len(c.encode("utf-8")) for c in files.values())}


def _reading_order(packet: PacketInput) -> list[str]:
    """The changed files listed sources first (generated and vendored files last); returns the generated ones."""
    packet.changed = reading_order(packet.changed)
    return [f.path for f in packet.changed if f.generated]


def _sources_first(packet: PacketInput, repo: Path) -> None:
    """A diff longer than the packet holds: the changed files listed sources first, and the
    diff's room spent in that order."""
    generated = _reading_order(packet)
    if not generated:
        return  # git's order is the reading order already
    args = (repo, packet.base, packet.head)
    sources = git.diff_with_stat(*args, DIFF_LIMIT, [git.literal_pathspec(p, exclude=True) for p in generated])
    patch, complete = sources.patch, sources.complete
    if complete:  # the generated files get what room is left (none: they show as cut)
        rest = git.diff_with_stat(*args, DIFF_LIMIT - len(patch), [git.literal_pathspec(p) for p in generated])
        patch, complete = patch + rest.patch, rest.complete
    packet.diff, packet.diff_complete = patch, complete


def write_inputs(config: AppliedConfig, out: Path, args: RunArgs, packet_text: str, memory_text: str,
                 files: list[tuple[Path, bytes]], presets: Mapping[str, Preset]) -> list[ReviewerJob]:
    """Each reviewer's folder, its input files added to `files`; returns the runner's jobs."""
    standpoints = dict(args.standpoints)
    jobs = []
    for cfg in config.reviewers:
        reviewer_dir = out / cfg.name
        try:
            reviewer_dir.mkdir()
        except OSError as exc:  # the round folder exists already: exit 70, not a traceback
            raise WriteFailed(f"cannot create {reviewer_dir}: {exc.strerror or exc}") from exc
        preset = presets[cfg.preset]
        spec = reviewer_input(
            preset, cfg, reviewer_dir=reviewer_dir, packet_text=packet_text, packet_path=out / "packet.md",
            standpoint=standpoints.get(cfg.name), standpoints_active=bool(standpoints), dry_run=args.dry_run,
            memory_text=memory_text,
        )
        for rel, content in spec.files.items():  # presets name files directly in the folder
            files.append((reviewer_dir / rel, content.encode("utf-8")))
        jobs.append(ReviewerJob(config=cfg, reviewer_dir=reviewer_dir, round_dir=out, workspace=out / "workspace",
                                schema_path=out / "schema.json", input=spec, preset=preset))
    return jobs


def _add_head_source(record: RoundRecord, commits: RoundCommits) -> RoundRecord:
    """Where the head came from, and what the working tree held beyond HEAD."""
    record["head_source"] = commits.source
    if commits.head_tree is not None and commits.parent is not None:
        record["head_tree"], record["head_parent"] = commits.head_tree, commits.parent
    counts = commits.uncommitted
    held: UncommittedCounts | None = None
    if counts is not None:
        held = {"modified": counts.modified, "untracked": counts.untracked}
        if counts.marked:  # only when there are: other rounds' records stay as they were
            held["spar_files"] = list(counts.marked)
    record["uncommitted"] = held
    return record


def write_round_folder(planned: PlannedRound, memory_text: str, counted: bool) -> PreparedRound:
    """The round folder, its inputs, round.json (not finished) and the read-only workspace."""
    p, c = planned, planned.commits
    started = now()
    try:
        p.out.mkdir()
    except OSError as exc:
        raise Refused(f"--out {quote(str(p.args.out))}: cannot create it: {exc.strerror or exc}") from None
    files = [(p.out / "packet.md", p.packet_text.encode("utf-8"))]
    if memory_text:
        files.append((p.out / "memory.md", memory_text.encode("utf-8")))
    files.append((p.out / "schema.json", schema_text(bool(p.args.standpoints)).encode("utf-8")))
    jobs = write_inputs(p.config, p.out, p.args, p.packet_text, memory_text, files, p.presets)
    atomic.write_files(files)  # one batch: their fsyncs at once, before round.json names the round
    standpoints = dict(p.args.standpoints)
    record = new_round_json(
        name=p.out.name, stage=p.args.stage, repository=str(p.repo), base=c.base, head=c.head,
        expect_head=c.expect_head,
        packet_sha256=packet_sha256(p.packet_text), documents=p.documents, config=p.config,
        reviewers=[reviewer_entry(cfg, standpoints.get(cfg.name)) for cfg in p.config.reviewers],
        standpoints=list(p.args.standpoints), decisions=list(p.args.decisions),
        counted=counted, dry_run=p.args.dry_run, started_at=started,
    )
    _add_head_source(record, c)
    record["packet"] = p.packet_kind
    for entry, job in zip(record["reviewers"], jobs, strict=True):
        entry["input_bytes"] = input_bytes(job.input.text, job.input.files)
    record["warnings"] += workspace_warnings(p.tree_plans)
    if c.nested:
        record["warnings"].append(nested_warning(c.nested))
    if memory_text:  # its own digest: never part of packet_sha256 (a rerun stays a rerun)
        record["memory_sha256"] = memory_sha256(memory_text)
    atomic.write_json(p.out / "round.json", record)
    # files cloned from the series' blob cache (where the file system clones copy-on-write),
    # else bytes from the work tree (at the checked-out head) and the series' last copy, each
    # checked against its blob id; git inflates only the rest
    earlier = reuse.earlier_copy(readers.series_rounds(p.out.parent), p.out)
    sources = reuse.sources(p.repo if p.args.head is None else None, earlier)
    extra = {"change.diff": p.change_diff} if p.change_diff is not None else {}
    before = build_workspace(p.repo, c.base, c.head, p.out / "workspace", dict(p.tree_plans),
                             sources, extra=extra, cache=series_cache(p.out))
    return PreparedRound(p, memory_text, record, jobs, before)


@dataclass(frozen=True)
class PlannedRound:
    """Step 1's result: every argument and the configuration checked, the packet built;
    nothing written (but for --worktree's commit object)."""

    args: RunArgs
    repo: Path
    config: AppliedConfig
    backend: str
    out: Path  # absolute round folder; its parent is the series
    commits: RoundCommits
    documents: dict[str, list[RoundDoc]]
    presets: dict[str, Preset]  # preset name -> the object; `spar run` asks the registry
    tree_plans: dict[str, TreePlan]  # "head", "base": what the copies hold
    packet_text: str
    packet_kind: PacketKind  # round.json `packet`
    change_diff: bytes | None  # workspace/change.diff (incremental packets only)
    changed_files: list[str] | None  # the code stage's changed files, in git's order
    inline_files: frozenset[str]  # those whose whole diff is in the packet
    sandbox: SandboxChoice  # the reviewers' kernel sandbox, or why none (a dry run starts no reviewer)


@dataclass(frozen=True)
class PreparedRound:
    """Step 2's result, under the series lock: the round folder with its inputs, round.json
    (not finished) and the read-only workspace."""

    planned: PlannedRound
    memory_text: str  # decided under the series lock (spar.round.memory)
    record: RoundRecord  # round.json as written
    jobs: list[ReviewerJob]
    workspace_before: dict[str, Any]  # the copies' state as built


def plan_round(args: RunArgs, *, cwd: str, env: Mapping[str, str],
               preset_of: Callable[[str], Preset]) -> PlannedRound:
    """Step 1: every check, and the packet; reads only (but for --worktree's commit object).
    `preset_of`: the registry `spar run` looks each reviewer's preset up in."""
    backend = async_backend(env)
    repo = work_tree_of(cwd)
    config = run_config(args, repo, env)
    commits = choose_commits(args, repo, config.max_copy_bytes)
    documents = read_round_documents(str(repo), config_rules=list(config.rules), criteria=args.criteria,
                                     rules=args.rules, subject=args.subject, cwd=cwd)
    out = Path(os.path.abspath(os.path.join(cwd, args.out)))
    check_run_out(out)
    check_series_folder_exists(out, repo)
    presets = {c.preset: preset_of(c.preset) for c in config.reviewers}
    # decided before anything is written: "required" refuses an uncounted round
    sandbox = SandboxChoice(None, "dry run") if args.dry_run else round_sandbox(config.sandbox, env.get("PATH"))
    plans = {copy: plan_commit(repo, commit, config.max_copy_bytes)
             for copy, commit in (("head", commits.head), ("base", commits.base))}
    plans["head"].leave_out(commits.too_large)
    packet = packet_input(args, repo, config, commits, documents, plans, out.parent)
    if args.stage == "code" and not packet.changed:
        raise Refused(empty_change(args, commits))
    kind, change_diff = choose_packet(repo, config, packet)
    changed, inline = None, frozenset[str]()
    if args.stage == "code":
        changed = [c.path for c in packet.changed]
        # an incremental packet holds no file's whole diff (only the changes since the last round)
        inline = frozenset(inline_paths(packet.diff)) if packet.kind == "full" else inline
    return PlannedRound(args, repo, config, backend, out, commits, documents, presets, plans, build_packet(packet),
                        kind, change_diff, changed, inline, sandbox)


def cap_decision(planned: PlannedRound) -> caps.CapDecision:
    """The series' cap decision for this round, over its records read again (refused when
    one is unreadable, G32)."""
    p = planned
    series = p.out.parent
    rounds = [readers.read_round(path) for path in readers.series_rounds(series)]
    return caps.decide(series=str(series), stage=p.args.stage, base=p.commits.base, head=p.commits.head,
                       packet_sha256=packet_sha256(p.packet_text), dry_run=p.args.dry_run, caps=p.config.caps,
                       extensions=readers.read_extensions(series), rounds=rounds)


def prepare_round(planned: PlannedRound) -> PreparedRound:
    """Step 2, under the series lock: the round folder, its inputs, round.json and the workspace."""
    decision = cap_decision(planned)
    # another run may have taken the name while we waited (G28's repository checks of step 1 stand)
    check_run_out(planned.out, repository=False)
    c = planned.commits  # what the series decided so far, as it stands now that no triage can slip in
    memory = render_memory(history.past_findings(planned.out.parent, None, str(planned.repo), c.base, c.head))
    return write_round_folder(planned, memory, decision.counted)
