"""Cross-vendor verification of a recorded round: the calls, verifications.json and
round.json's `verification` index (docs/records.md "verifications.json").

The plan (spar/judge/verify_plan.py) gives each call its verifier. Each verifier works
through its own calls one at a time, all verifiers at once: at most one call per
`[verify]` reviewer runs at any moment. Before a call starts, the cost the finished
calls reported is summed; once it reaches `max_cost_usd` no further call starts and
the findings left are unverified (`max_cost_usd`). A finished call that ran a program
(any status but `unavailable`) and reported no cost (codex reports tokens only) counts
as over the bound, since nothing shows it stayed under: with `max_cost_usd` set, no
call starts after it. The bound is checked before a call starts: calls already
running finish, and may pass it. Calls run through the reviewers' runner (`run_reviewer`): the verifier's
own time limit, the read-only workspace as working folder, its preset's argv and
monitor, refusal detection with its fallback model, liveness and usage records.

Files: `verify/schema.json` (the answer's JSON Schema) and per call `verify/V<n>/`
(input.md, what the call received; stdout.log and stderr.log). A new verification
replaces the verify/ folder, then verifications.json (atomic), then round.json
(atomic whole-file replace), then summary.md.
"""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar, cast

import anyio

from spar import git
from spar.config.model import ReviewerConfig, VerifyConfig
from spar.errors import Refused, quote
from spar.judge.context import RoundContext
from spar.judge.verify_plan import UNSURE, Plan, PlannedCall, Verifier, judge_answer, plan_verification
from spar.progress import Progress, make_progress
from spar.records import atomic, readers
from spar.records.clock import now
from spar.records.model import (
    Finding,
    RoundRecord,
    Unverified,
    Verification,
    VerificationIndex,
    VerificationsRecord,
    VerificationUsage,
)
from spar.records.model import ReviewerStatus as S
from spar.records.record_rules import VERIFICATIONS_SCHEMA
from spar.records.usage import total
from spar.round.interface import InputContext, Preset
from spar.round.interrupt import work_until_signal
from spar.round.recording import context_for_round
from spar.round.runner import ReviewerJob, ReviewerOutcome, RunSettings, run_reviewer, run_settings
from spar.round.summary_file import write_summary
from spar.series import repository_of
from spar.verify.verify_input import VERIFY_SCHEMA, verifier_input

VERIFY_DIR = "verify"
T = TypeVar("T")


@dataclass
class _Call:
    """One planned call on its way: its id once started, its outcome once finished."""

    plan: PlannedCall
    config: ReviewerConfig
    text: str  # what the verifier receives
    call_id: str = ""
    outcome: ReviewerOutcome | None = None
    skipped: bool = False  # not started: max_cost_usd was reached first


@dataclass
class Spend:
    """What every verifier's queue shares: the next call number and the cost so far. One
    budget for a command's verification and then its repeat checks: `max_cost_usd` bounds
    the two together."""

    max_cost: float | None
    next_number: int = 1
    cost: float = 0.0
    stopped: bool = False  # a call was left out for max_cost_usd
    unknown: list[str] = field(default_factory=list)  # finished calls that ran and reported no cost

    def over(self) -> bool:
        """True once no further call may start: the bound is reached, or a cost is unknown."""
        return self.max_cost is not None and (self.cost >= self.max_cost or bool(self.unknown))

    def take(self, call_id: str, outcome: ReviewerOutcome) -> None:
        """Count what a finished call cost (one that ran and reported none: unknown)."""
        cost = _cost(outcome)
        if cost is None:
            self.unknown.append(call_id)
        else:
            self.cost += cost


@dataclass
class VerifyRun:
    """What a verification needs: the recorded round and the `[verify]` configuration."""

    round_dir: Path
    round_json: RoundRecord
    findings: list[Finding]
    config: VerifyConfig
    ctx: RoundContext
    presets: Mapping[str, Preset]  # each verifier's preset object (the caller asks the registry)


@dataclass
class VerifyResult:
    record: VerificationsRecord
    spend: Spend  # what its calls cost: the repeat checks after it go on from there
    notes: list[str] = field(default_factory=list)  # what stderr says of the bounds


def vendors(round_json: RoundRecord, config: VerifyConfig) -> tuple[dict[str, str], list[Verifier]]:
    """Who wrote the round's findings and who may check them, each by vendor: an endpoint
    reviewer's `vendor` (or its host), else the preset. Verification and repeat checks alike."""
    authors = {e["name"]: e.get("vendor") or e["preset"] for e in round_json["reviewers"]}
    return authors, [Verifier(r.name, r.vendor_name()) for r in config.reviewers]


def plan_calls(v: VerifyRun) -> Plan:
    """The plan of `v`'s round: who wrote each finding, who may check it."""
    authors, verifiers = vendors(v.round_json, v.config)
    return plan_verification(v.findings, authors, verifiers, v.config.max_findings)


def prepare_calls(v: VerifyRun, plan: Plan) -> list[_Call]:
    """The verify/ folder made afresh with its schema, and each call's input text."""
    folder = v.round_dir / VERIFY_DIR
    if folder.is_dir() and not folder.is_symlink():
        shutil.rmtree(folder)  # the previous verification's logs: verifications.json is replaced next
    elif folder.is_symlink() or folder.exists():
        folder.unlink()
    folder.mkdir()
    atomic.write_json(folder / "schema.json", VERIFY_SCHEMA)
    by_id = {f["id"]: f for f in v.findings}
    configs = {r.name: r for r in v.config.reviewers}
    calls = []
    for planned in plan.calls:
        text = verifier_input(v.round_dir, by_id[planned.finding], v.ctx)
        calls.append(_Call(planned, configs[planned.verifier.name], text))
    return calls


def _job(v: VerifyRun, call: _Call) -> ReviewerJob:
    """The call's folder, its input.md, and the runner's job for it."""
    call_dir = v.round_dir / VERIFY_DIR / call.call_id
    call_dir.mkdir()
    input_path = call_dir / "input.md"
    atomic.write_text(input_path, call.text)
    preset = v.presets[call.config.preset]
    ctx = InputContext(reviewer_dir=call_dir.absolute(), packet_text=call.text, packet_path=input_path.absolute(),
                       standpoint=None, standpoints_active=False, dry_run=False)
    spec = preset.prepare_input(call.config, ctx)
    for rel, text in spec.files.items():
        if rel != "input.md":
            atomic.write_text(call_dir / rel, text)
    # the progress display names the job by its config: say it is a verification
    config = call.config.with_changes(name=progress_label(call.config.name))
    return ReviewerJob(config=config, reviewer_dir=call_dir, round_dir=v.round_dir,
                       workspace=v.round_dir / "workspace", schema_path=v.round_dir / VERIFY_DIR / "schema.json",
                       input=spec, preset=preset)


def _cost(outcome: ReviewerOutcome) -> float | None:
    """What a finished call cost: 0 when it ran no program (unavailable), None when it ran
    one that reported no cost."""
    cost = total(a.get("usage") for a in outcome.attempts)["cost_usd"]
    if cost is None:
        return 0.0 if outcome.status == S.UNAVAILABLE else None
    return float(cost)


async def per_verifier(items: Sequence[T], verifier_of: Callable[[T], str], spend: Spend,
                       start: Callable[[T], Awaitable[None]], skip: Callable[[T], None]) -> None:
    """Each verifier's items one at a time, all verifiers at once (verification and repeat
    checks alike): an item whose turn comes once `spend` is over is skipped, never started."""
    queues: dict[str, list[T]] = {}
    for item in items:
        queues.setdefault(verifier_of(item), []).append(item)

    async def work(queue: list[T]) -> None:
        for item in queue:
            if spend.over():
                skip(item)
            else:
                await start(item)

    async with anyio.create_task_group() as tg:
        for queue in queues.values():
            tg.start_soon(work, queue)


async def run_calls(v: VerifyRun, calls: list[_Call], settings: RunSettings) -> Spend:
    """Every call, one at a time per verifier, all verifiers at once; ids in start order."""
    cost_bound = v.config.max_cost_usd
    spend = Spend(max_cost=float(cost_bound) if cost_bound is not None else None)

    async def start(call: _Call) -> None:
        call.call_id = f"V{spend.next_number}"  # taken before any await: no two calls share one
        spend.next_number += 1
        call.outcome = await run_reviewer(_job(v, call), settings)
        spend.take(call.call_id, call.outcome)

    def skip(call: _Call) -> None:
        call.skipped = spend.stopped = True

    await per_verifier(calls, lambda call: call.plan.verifier.name, spend, start, skip)
    return spend


def call_record(call: _Call, ctx: RoundContext) -> Verification:
    """The record of one finished call: its status, and its verdict by the answer rule."""
    outcome = call.outcome
    assert outcome is not None
    status, reason = outcome.status, outcome.reason
    verdict = judge_answer(outcome.result, ctx) if status == S.COMPLETED and outcome.output_error is None else None
    if status == S.COMPLETED and outcome.output_error is not None:
        status, reason = S.INVALID_OUTPUT, outcome.output_error
    elif verdict is not None and verdict.verdict == UNSURE and verdict.reason:
        status, reason = S.INVALID_OUTPUT, verdict.reason
    if verdict is None or status != S.COMPLETED:
        why = f"{status}: {reason}" if reason else str(status)
        verdict_text, evidence, location, reason = UNSURE, "", None, why
    else:
        verdict_text, evidence, location, reason = verdict.verdict, verdict.evidence, verdict.location, ""
    return {"call": call.call_id, "finding": call.plan.finding, "group": call.plan.group,
            "verifier": call.config.name, "preset": call.config.preset, "status": str(status),
            "verdict": verdict_text, "evidence": evidence, "location": location, "reason": reason,
            "attempts": outcome.attempts}


def build_record(v: VerifyRun, plan: Plan, calls: list[_Call], started_at: str) -> VerificationsRecord:
    ran = sorted((c for c in calls if c.outcome is not None), key=lambda c: int(c.call_id[1:]))
    # unverified in plan order: the plan's own, and calls max_cost_usd left out
    order = {f: n for n, f in enumerate(plan.order)}
    left = plan.unverified + [(c.plan.finding, "max_cost_usd") for c in calls if c.skipped]
    unverified = [cast(Unverified, {"finding": f, "why": why}) for f, why in sorted(left, key=lambda x: order[x[0]])]
    cfg = v.config
    return {"schema": VERIFICATIONS_SCHEMA, "round": str(v.round_json["name"]), "started_at": started_at,
            "finished_at": now(), "verifiers": [r.name for r in cfg.reviewers], "max_findings": cfg.max_findings,
            "max_cost_usd": float(cfg.max_cost_usd) if cfg.max_cost_usd is not None else None,
            "calls": [call_record(c, v.ctx) for c in ran], "unverified": unverified}


def _index(record: VerificationsRecord, data: bytes) -> VerificationIndex:
    calls: list[VerificationUsage] = []
    for call in record["calls"]:
        usage = cast(Any, total(a.get("usage") for a in call["attempts"]))
        calls.append({"call": call["call"], "finding": call["finding"], "verifier": call["verifier"],
                      "verdict": call["verdict"], "usage": usage})
    costs = [c["usage"]["cost_usd"] for c in calls if c["usage"]["cost_usd"] is not None]
    return {"file": readers.VERIFICATIONS_FILE, "sha256": hashlib.sha256(data).hexdigest(), "calls": calls,
            "cost_usd": round(sum(costs), 6) if costs else None}


def write_verification(round_dir: Path, record: VerificationsRecord) -> None:
    """verifications.json (atomic replace), then round.json's `verification` (atomic
    whole-file replace of round.json as it is on disk, nothing else changed)."""
    data = atomic.dumps(record).encode("utf-8")
    atomic.write_bytes(round_dir / readers.VERIFICATIONS_FILE, data)
    round_path = round_dir / readers.ROUND_FILE
    raw = readers.read_json(str(round_path))  # as written: read_round fills defaults in
    raw["verification"] = _index(record, data)
    atomic.write_json(round_path, raw)


def bound_notes(record: VerificationsRecord, spend: Spend) -> list[str]:
    """What stderr says of the findings left unverified, and why."""
    notes = []
    counts: dict[str, int] = {}
    for entry in record["unverified"]:
        counts[entry["why"]] = counts.get(entry["why"], 0) + 1
    if counts.get("max_findings"):
        notes.append(f"verification stopped at max_findings {record['max_findings']}: "
                     f"{counts['max_findings']} finding(s) not verified")
    if counts.get("max_cost_usd"):
        unknown = (f"; {', '.join(spend.unknown)} reported no cost, which counts as over the bound"
                   if spend.unknown else "")
        notes.append(f"verification stopped at max_cost_usd {record['max_cost_usd']:g} (finished calls cost "
                     f"${spend.cost:.4f}{unknown}): {counts['max_cost_usd']} finding(s) not verified")
    if counts.get("no_other_vendor"):
        notes.append(f"{counts['no_other_vendor']} finding(s) not verified: no verifier of another vendor")
    return notes


def verdict_line(record: VerificationsRecord) -> str:
    """One line: how many calls and verdicts, and where they are."""
    verdicts = [c["verdict"] for c in record["calls"]]
    if not verdicts:  # the notes before it say why when findings were left unverified
        said = "no call made" if record["unverified"] else \
            "nothing to verify (no finding proposed or classed defect or hardening)"
        return f"verification of round {record['round']}: {said}"
    counts = ", ".join(f"{verdicts.count(v)} {v}" for v in ("confirmed", "refuted", "unsure"))
    return f"verification of round {record['round']}: {len(verdicts)} call(s): {counts}"


def report_verdicts(progress: Progress, record: VerificationsRecord) -> None:
    """Each verifier's progress row ends on its calls as judged (the runner could only say
    "answered": an answer is judged once it is read), e.g. `V1 confirmed, V3 unsure
    (invalid_output: ...)`; completed only when every call's answer was usable."""
    by_verifier: dict[str, list[Verification]] = {}
    for call in record["calls"]:
        by_verifier.setdefault(call["verifier"], []).append(call)
    for verifier, calls in by_verifier.items():
        failed = [c["status"] for c in calls if c["status"] != S.COMPLETED]
        detail = ", ".join(f"{c['call']} {c['verdict']}" + (f" ({c['reason']})" if c["reason"] else "")
                           for c in calls)
        progress.reviewer_status(progress_label(verifier), failed[0] if failed else S.COMPLETED, detail)


def progress_label(verifier: str) -> str:
    return f"{verifier} (verifying)"


def progress_names(plan: Plan) -> list[str]:
    """The verifiers with calls, each once (a progress row per verifier: one call at a time)."""
    return list(dict.fromkeys(progress_label(c.verifier.name) for c in plan.calls))


def verify_run_for(round_dir: Path, config: VerifyConfig, presets: Mapping[str, Preset]) -> VerifyRun:
    """What verifying a recorded round needs, read from its records (and git, for the
    locations' targets); RecordError or Refused as the readers and git say."""
    round_json = readers.read_round(round_dir)
    findings = readers.read_findings(round_dir, round_json=round_json)
    readers.read_ledger(round_dir, findings)  # summary.md is written from it last: refused now, before any write
    return VerifyRun(round_dir=round_dir, round_json=round_json, findings=findings, config=config,
                     ctx=_context(round_json), presets=presets)


def _context(round_json: RoundRecord) -> RoundContext:
    """The round's judging context (for the locations of findings and answers), from its
    repository, or the one holding the current folder when that one was moved."""
    where = round_json.copy()
    repo = repository_of(round_json)
    if repo is not None:
        where["repository"] = repo
    try:
        return context_for_round(where)
    except git.GitError as exc:
        raise Refused(f"round {round_json.get('name')}: cannot read the commits of its repository "
                      f"{quote(str(round_json.get('repository')))}: {exc}") from None


def verifiable_problem(round_json: RoundRecord) -> str | None:
    """Why a round cannot be verified (a dry run, or not finished), or None."""
    name = round_json.get("name")
    if round_json.get("dry_run") is True:
        return f"round {name} is a dry run: it has no findings to verify"
    if not round_json.get("finished_at"):
        return (f"round {name} is not finished (a reviewer is pending or awaits `spar record`): "
                "verify it once every reviewer is recorded")
    return None


def result_lines(result: VerifyResult, round_dir: Path) -> list[str]:
    """What stderr says once a verification is written."""
    return [*result.notes, f"{verdict_line(result.record)}; see {round_dir / readers.VERIFICATIONS_FILE}"]


def verify_round(round_dir: Path, config: VerifyConfig, presets: Mapping[str, Preset], *,
                 env: Mapping[str, str], passthrough: list[str] | None, backend: str, left: str,
                 sandbox: str | None = None, egress: bool = False) -> VerifyResult:
    """Verify a recorded round (`spar run` after its reviewers, `spar verify`), with a
    progress display; the caller holds the series lock. `left`: what an interruption
    leaves behind (spar.errors.Interrupted); `sandbox`: bwrap, for the verifiers."""
    v = verify_run_for(round_dir, config, presets)
    plan = plan_calls(v)
    progress = make_progress()
    progress.expect(progress_names(plan))
    try:
        return verify_recorded_round(v, plan, progress=progress, env=env, passthrough=passthrough, backend=backend,
                                     left=left, sandbox=sandbox, egress=egress)
    finally:
        progress.close()


def verify_recorded_round(v: VerifyRun, plan: Plan, *, progress: Progress | None, env: Mapping[str, str],
                          passthrough: list[str] | None, backend: str, left: str,
                          sandbox: str | None = None, egress: bool = False) -> VerifyResult:
    """Run `plan`'s calls and write the records; `Interrupted` (saying `left`) when SIGINT
    or SIGTERM stopped the calls (then nothing is written but logs)."""
    started = now()
    calls = prepare_calls(v, plan)
    settings = run_settings(progress=progress, env=env, env_passthrough=passthrough, sandbox=sandbox,
                            key_names=[r.api_key_env for r in v.config.reviewers], egress=egress)
    spend = work_until_signal(lambda: run_calls(v, calls, settings), backend, left)
    record = build_record(v, plan, calls, started)
    if progress is not None:
        report_verdicts(progress, record)
    write_verification(v.round_dir, record)
    write_summary(v.round_dir)
    return VerifyResult(record, spend, bound_notes(record, spend))


__all__ = ["VERIFY_DIR", "VerifyResult", "VerifyRun", "bound_notes", "build_record", "plan_calls", "prepare_calls",
           "progress_names", "result_lines", "run_calls", "verdict_line", "verifiable_problem", "verify_recorded_round",
           "verify_round", "verify_run_for", "write_verification"]
