"""`spar run`'s steps after the round folder: the reviewers run (`review_round` ->
`ReviewedRound`), their outcomes validated, classified and recorded (`record_round` ->
`RecordedRound`); step 5, verifying them, is `verifying.py`'s. SIGINT or SIGTERM stops
a step with `Interrupted` (spar.errors), saying what it left."""

from __future__ import annotations

import os
from dataclasses import dataclass

from spar.judge.gate import remove_advice
from spar.pathtext import path_text
from spar.progress import Progress
from spar.records.model import Finding, ReviewerStatus, RoundRecord
from spar.round import history
from spar.round.context import context_from_git
from spar.round.interrupt import run_until_signal
from spar.round.preparation import PreparedRound
from spar.round.recording import apply_outcome, record_coverage, reviewer_of, write_round_outputs
from spar.round.repowatch import RepoChange, repository_change, repository_state
from spar.round.runner import ReviewerOutcome
from spar.round.sandboxing import SandboxChoice
from spar.workspace.build import describe_changes, workspace_state


@dataclass(frozen=True)
class ReviewedRound:
    """Step 3's result: every reviewer's outcome."""

    prepared: PreparedRound
    outcomes: list[ReviewerOutcome]
    repo_change: RepoChange | None  # the user's repository changed while the reviewers ran

    def repo_warning(self) -> str | None:
        """What stderr says of a change to the user's repository while the reviewers ran."""
        if self.repo_change is None:
            return None
        return self.repo_change.message(reviewers_sandbox(self.prepared).bwrap is not None)


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


def reviewers_sandbox(prepared: PreparedRound) -> SandboxChoice:
    """The sandbox this round's reviewers ran in: none when no reviewer runs a program (a
    `native` reviewer is the host agent, answering outside Spar), whatever the round chose
    for its verifiers."""
    if any(job.preset.runs_process for job in prepared.jobs):
        return prepared.planned.sandbox
    return SandboxChoice(None, "no reviewer of this round runs a program (native: the host agent answers)")


def review_round(prepared: PreparedRound, progress: Progress) -> ReviewedRound:
    """Step 3: every reviewer at once; `Interrupted` when SIGINT or SIGTERM stopped them."""
    p = prepared.planned
    left = (f"every reviewer was stopped; round {p.out} was not recorded (its round.json has no finished_at): "
            f"spar gate --series, spar report and spar hook leave it out; {remove_advice(str(p.out))}")
    watched = repository_state(p.repo, p.out.parent)  # the user's repository, compared once they end
    outcomes = run_until_signal(prepared.jobs, progress, dict(os.environ), p.config.env_passthrough, p.backend,
                                left, p.sandbox.bwrap, p.sandbox.egress)
    repo_change = repository_change(watched, repository_state(p.repo, p.out.parent))
    return ReviewedRound(prepared, outcomes, repo_change)


def record_round(reviewed: ReviewedRound, progress: Progress) -> RecordedRound:
    """Step 4: validate and classify every outcome, then write the records."""
    prepared = reviewed.prepared
    p, record = prepared.planned, prepared.record
    # the copies' file modes stop any reviewer that does not run as root; root ignores them,
    # so spar at least notices a change (against the state as built) and says so
    note = describe_changes(prepared.workspace_before, workspace_state(p.out / "workspace"))
    if note:
        record["warnings"].append(note)
    sandbox = reviewers_sandbox(prepared)
    record["sandbox"] = sandbox.record()
    if reviewed.repo_change is not None:
        record["repository_changed"] = reviewed.repo_change.record(sandbox.bwrap is not None)
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
        not_copied = {path_text(path) for plan in p.tree_plans.values() for path in plan.too_large}
        record_coverage(record, reviewed.outcomes, p.changed_files, set(p.inline_files), p.out / "workspace",
                        not_copied, change_diff=p.change_diff is not None)
    history.annotate(p.out, record, findings, ctx)
    write_round_outputs(p.out, record, findings)
    return RecordedRound(prepared, record, findings)
