"""`spar run`'s steps after the round folder: the reviewers run (`review_round` ->
`ReviewedRound`), their outcomes validated, classified and recorded (`record_round` ->
`RecordedRound`), and with a [verify] table the findings verified (`verify_findings`).
SIGINT or SIGTERM stops a step with `Interrupted` (spar.errors), saying what it left."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

from spar.proc.process import stop_guard
from spar.progress import Progress
from spar.records.model import Finding, ReviewerStatus, RoundRecord
from spar.round import history
from spar.round.context import context_from_git
from spar.round.interface import Preset
from spar.round.interrupt import run_until_signal
from spar.round.preparation import PreparedRound
from spar.round.recording import apply_outcome, record_coverage, reviewer_of, write_round_outputs
from spar.round.runner import ReviewerOutcome
from spar.round.verification import VerifyResult, verifiable_problem, verify_round
from spar.workspace.build import describe_changes, workspace_state


@dataclass(frozen=True)
class ReviewedRound:
    """Step 3's result: every reviewer's outcome."""

    prepared: PreparedRound
    outcomes: list[ReviewerOutcome]


@dataclass(frozen=True)
class RecordedRound:
    """Step 4's result: round.json and the findings as written."""

    prepared: PreparedRound
    record: RoundRecord
    findings: list[Finding]

    @property
    def completed(self) -> bool:
        """Every reviewer completed."""
        return all(e["status"] == ReviewerStatus.COMPLETED for e in self.record["reviewers"])


def review_round(prepared: PreparedRound, progress: Progress) -> ReviewedRound:
    """Step 3: every reviewer at once; `Interrupted` when SIGINT or SIGTERM stopped them."""
    p = prepared.planned
    left = f"every reviewer was stopped; round {p.out} was not recorded (its round.json has no finished_at)"
    outcomes = run_until_signal(prepared.jobs, progress, dict(os.environ), p.config.env_passthrough, p.backend,
                                left)
    if p.config.verify is None:
        stop_guard()  # no reviewer runs any more: it exits while the round is recorded
    return ReviewedRound(prepared, outcomes)


def record_round(reviewed: ReviewedRound, progress: Progress) -> RecordedRound:
    """Step 4: validate and classify every outcome, then write the records."""
    prepared = reviewed.prepared
    p, record = prepared.planned, prepared.record
    # the copies' file modes stop any reviewer that does not run as root; root ignores them,
    # so spar at least notices a change (against the state as built) and says so
    note = describe_changes(prepared.workspace_before, workspace_state(p.out / "workspace"))
    if note:
        record["warnings"].append(note)
    documents = [d for kind in ("criteria", "rules", "subject") for d in p.documents[kind]]
    ctx = context_from_git(p.repo, p.commits.base, p.commits.head, documents, list(p.config.check_paths),
                           record["links"]["criteria_ids"])
    findings: list[Finding] = []
    for outcome in reviewed.outcomes:
        findings += apply_outcome(record, outcome, ctx)
        if outcome.status == ReviewerStatus.COMPLETED:
            # the runner said "answered"; the checks decide completed or invalid_output
            entry = reviewer_of(record, outcome.name)
            progress.reviewer_status(outcome.name, entry["status"], entry["reason"])
    if p.changed_files is not None:
        record_coverage(record, reviewed.outcomes, p.changed_files, set(p.inline_files), p.out / "workspace")
    history.annotate(p.out, record, findings, ctx)
    write_round_outputs(p.out, record, findings)
    return RecordedRound(prepared, record, findings)


def verify_findings(recorded: RecordedRound, preset_of: Callable[[str], Preset]) -> VerifyResult | str | None:
    """Step 5, with a [verify] table: the round's findings put to verifiers of other vendors
    (None without one; why not, when the round cannot be verified now); `Interrupted` when
    SIGINT or SIGTERM stopped them (the round stays recorded, verifications.json unwritten)."""
    p = recorded.prepared.planned
    cfg = p.config.verify
    if cfg is None:
        return None
    problem = verifiable_problem(recorded.record)
    if problem:
        return problem
    presets = {c.preset: preset_of(c.preset) for c in cfg.reviewers}
    return verify_round(p.out, cfg, presets, env=os.environ, passthrough=p.config.env_passthrough, backend=p.backend,
                        left=f"every verifier was stopped; round {p.out} is recorded, its verification is not "
                             "(run `spar verify` on it)")
