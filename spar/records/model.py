"""The shapes of Spar's records (docs/records.md) as types, and the reviewer statuses.

Plain typing only, no I/O, so `spar.judge` may use it too. Readers return these
types after checking the keys they rely on; keys a record written by an older
Spar may lack are `NotRequired` and every reader treats them as absent.
"""

# no `from __future__ import annotations` here: each string annotation of a TypedDict
# becomes a ForwardRef compiled at import (~0.75 ms for this module, which every command
# imports); the types below are all defined before they are named
from enum import StrEnum
from typing import Any, NotRequired, TypedDict

from spar.errors import Refused, quote


class ReviewerStatus(StrEnum):
    """A reviewer's status: in round.json, in the runner's outcome and on the progress display."""

    # in round.json
    PENDING = "pending"  # before recording (and in dry runs)
    COMPLETED = "completed"
    INVALID_OUTPUT = "invalid_output"
    FAILED = "failed"
    UNAVAILABLE = "unavailable"
    TIMEOUT = "timeout"
    TOOL_VIOLATION = "tool_violation"
    AWAITING_RECORD = "awaiting_record"  # native: the host records the result
    # progress only: a reviewer on its way, and an answer spar has not judged yet
    STARTING = "starting"
    RUNNING = "running"
    FALLBACK = "fallback"  # a quota refusal; the next attempt uses the fallback model
    RETRYING = "retrying"  # a transient failure; the same model is tried once more
    ANSWERED = "answered"


# the statuses round.json holds (the others are progress only)
RECORDED = (
    ReviewerStatus.PENDING, ReviewerStatus.COMPLETED, ReviewerStatus.INVALID_OUTPUT, ReviewerStatus.FAILED,
    ReviewerStatus.UNAVAILABLE, ReviewerStatus.TIMEOUT, ReviewerStatus.TOOL_VIOLATION, ReviewerStatus.AWAITING_RECORD,
)
# a reviewer in one of these has not finished, so neither has its round
UNFINISHED = (ReviewerStatus.PENDING, ReviewerStatus.AWAITING_RECORD)


class NotRun(StrEnum):
    """Why a reviewer never got to review: `not_run` of an attempt and of a reviewer entry, set
    by the runner where it records the outcome (null when the reviewer ran, whatever it
    answered; absent in rounds written before it was kept). Nothing the agent changes in
    its own work makes such a reviewer run: the person has to act."""

    NOT_INSTALLED = "not_installed"  # its executable is not there
    NOT_STARTED = "not_started"  # its executable is there but could not be started (or its command line built)
    SANDBOX = "sandbox"  # its jail could not be prepared
    VERSION_CHECK = "version_check"  # its version check failed or did not answer
    EGRESS = "egress"  # Spar's egress allowlist refused a host it reached for
    QUOTA = "quota"  # quota or rate limit
    AUTHENTICATION = "authentication"  # not logged in, or its credentials refused
    NETWORK = "network"  # it could not reach its service
    SERVICE = "service"  # its service kept failing past the retries (openai-compatible)


# the statuses a reviewer that never got to review may have (the others say it ran, or has yet to)
NOT_RUN_STATUSES = (ReviewerStatus.FAILED, ReviewerStatus.UNAVAILABLE, ReviewerStatus.TIMEOUT,
                    ReviewerStatus.TOOL_VIOLATION)


class Usage(TypedDict):
    duration_seconds: float | None
    input_tokens: int | None
    cached_input_tokens: int | None
    output_tokens: int | None
    cost_usd: float | None


class Coverage(TypedDict):
    """How many changed files one attempt saw: inline in its packet, or opened beyond that."""

    inline: int
    opened: int
    changed_files: int
    observed: bool  # False: Spar cannot see the reviewer's calls (command, native): inline only
    opened_files: NotRequired[list[str]]  # those `opened` counts (text form); absent in older rounds


class EgressRefusal(TypedDict):
    host: str  # as the reviewer's program asked for it (a name or an IP address)
    port: int
    count: int  # how many connections to it the egress proxy refused


class Attempt(TypedDict):
    model: str
    observed_model: NotRequired[str]  # absent when unknown
    started_at: str
    finished_at: str
    exit_code: int | None  # None: killed or never started
    status: str
    reason: str
    resets: str | None
    argv: NotRequired[list[str]]  # the prompt argument replaced by `<prompt: N bytes, sha256 HEX>`
    usage: NotRequired[Usage]
    cli_version: NotRequired[str]  # first line of the version check's answer; absent when none answered
    coverage: NotRequired[Coverage]  # code-stage rounds recorded by `spar run` (which changed files its reviewers saw)
    masked_secrets: NotRequired[int]  # credentials masked in its output; absent when none
    egress_refused: NotRequired[list[EgressRefusal]]  # connections its sandbox's proxy refused; absent when none
    not_run: NotRequired[str | None]  # a NotRun value: why it never got to review; absent in older rounds


class AngleChecked(TypedDict):
    angle: str
    result: str


class AngleUnchecked(TypedDict):
    angle: str
    reason: str


class TranscriptWarning(TypedDict):
    kind: str  # tool_not_allowed, host_added, prompt_not_read, read_outside_workspace
    tool: str


class InputBytes(TypedDict):
    """What one reviewer was handed, in bytes."""

    prompt: int  # the text it reads (stdin, argument or the file its {prompt} names)
    files: int  # the files Spar wrote into its folder for it (input.md, ...)


class ReviewerEntry(TypedDict):
    name: str
    preset: str
    status: str  # a ReviewerStatus value
    reason: str
    resets: str | None
    not_run: NotRequired[str | None]  # its last attempt's: a NotRun value, or null; absent in older rounds
    model: str
    effort: str
    timeout_seconds: int
    max_findings: NotRequired[int]  # absent in rounds written before the cap: 500
    observed_model: str | None
    attempts: list[Attempt]
    warnings: list[TranscriptWarning]
    standpoint: str | None
    standpoint_report: dict[str, Any] | None
    input_bytes: NotRequired[InputBytes]  # absent in rounds written before it was kept
    # openai-compatible only: the vendor verification counts it as (others: their preset)
    vendor: NotRequired[str]
    # when completed
    verdict: NotRequired[str]
    reviewed_head: NotRequired[str]
    angles_checked: NotRequired[list[AngleChecked]]
    angles_unchecked: NotRequired[list[AngleUnchecked]]
    limits: NotRequired[str]
    finding_count: NotRequired[int]


class DocumentEntry(TypedDict):
    name: str
    path: str
    sha256: str
    lines: int


class RuleLink(TypedDict):
    names: list[str]
    file_name: str
    lines: int


class Links(TypedDict):
    rules: list[RuleLink]
    criteria_ids: list[str]


class Standpoint(TypedDict):
    reviewer: str
    text: str


class Decision(TypedDict):
    decision: str
    quote: str


class UncommittedCounts(TypedDict):
    modified: int  # tracked files changed beyond HEAD, staged or not
    untracked: int  # files neither tracked nor ignored
    spar_files: NotRequired[list[str]]  # those of them where `spar init` writes (absent in older rounds)


class PacketKind(TypedDict):
    """What packet a round's reviewers got, and why it is not the configured one."""

    configured: str  # "full" or "incremental" ([packet] of the project configuration)
    kind: str  # what the packet is
    reason: str | None  # why `kind` differs from `configured`; None when it does not
    since_round: str | None  # the last round of the stage at another head, if any
    change_diff_bytes: int | None  # workspace/change.diff's size; None when not written


VERDICTS = ("confirmed", "refuted", "unsure")  # what a verifying reviewer may answer


class Verification(TypedDict):
    """One verification call of verifications.json (docs/records.md "Verification")."""

    call: str  # V1, V2, ... in the order the calls were planned
    finding: str  # the finding put to the verifier: the one its verdict covers
    group: str | None  # that finding's group id, when it is in one (its other members have calls of their own)
    verifier: str  # the reviewer name of [verify] reviewers that answered
    preset: str  # the verifier's preset (its vendor)
    status: str  # a recorded ReviewerStatus value of the call
    verdict: str  # one of VERDICTS; "unsure" when the call gave no valid answer
    evidence: str  # the verifier's evidence ("" without a valid answer)
    location: str | None  # where the verifier points, when it said
    reason: str  # why the verdict is "unsure" without a valid answer; "" otherwise
    attempts: list[Attempt]  # as a reviewer's: models, times, argv, usage


class Unverified(TypedDict):
    """A finding that got no verification call, and why."""

    finding: str
    why: str  # "max_findings", "max_cost_usd" or "no_other_vendor"


class VerificationsRecord(TypedDict):
    """verifications.json (`spar-verifications/v1`): one round's verification, whole."""

    schema: str
    round: str  # the round folder's name
    started_at: str
    finished_at: str
    verifiers: list[str]  # [verify] reviewers, as configured
    max_findings: int | None
    max_cost_usd: float | None
    calls: list[Verification]
    unverified: list[Unverified]


class VerificationUsage(TypedDict):
    """round.json's line for one call: who checked what, the verdict and what it cost."""

    call: str
    finding: str
    verifier: str
    verdict: str
    usage: Usage


class VerificationIndex(TypedDict):
    """round.json `verification`: where the verification is and what it cost."""

    file: str  # "verifications.json"
    sha256: str  # of that file's bytes
    calls: list[VerificationUsage]
    cost_usd: float | None  # the calls' cost; None when no call reported one


class RoundRecord(TypedDict):
    """round.json (`review-round/v1`)."""

    schema: str
    spar_version: str
    name: str
    stage: str
    repository: str
    base: str
    head: str
    expect_head: str | None
    # where the head came from (absent in rounds written before): "commit", or "worktree", a
    # commit Spar made of the working tree, with its tree (what the gate compares) and parent
    head_source: NotRequired[str]
    head_tree: NotRequired[str]
    head_parent: NotRequired[str]
    uncommitted: NotRequired[UncommittedCounts | None]  # the working tree beyond HEAD; None when --head named it
    packet_sha256: str
    memory_sha256: NotRequired[str]  # absent when the round has no series memory
    packet: NotRequired[PacketKind]  # absent in rounds written before [packet]
    documents: dict[str, list[DocumentEntry]]
    criteria_digest: str
    links: Links
    config: dict[str, Any]
    config_files: list[dict[str, str]]
    config_skipped: list[dict[str, str]]
    config_digest: str
    standpoints: list[Standpoint]
    standpoints_uncovered: list[str]
    changed_files: NotRequired[int]  # code-stage rounds: how many files the change touches
    unseen: NotRequired[list[str]]  # those no completed reviewer saw (inline or opened)
    inline_files: NotRequired[list[str]]  # those whose whole diff was in the packet; absent in older rounds
    decisions: list[Decision]
    counted: bool
    dry_run: bool
    started_at: str
    finished_at: NotRequired[str]
    recorded_at: NotRequired[str]
    reviewers: list[ReviewerEntry]
    warnings: list[str]
    masked_secrets: NotRequired[int]  # credentials masked in the reviewers' output (`spar run`)
    repository_changed: NotRequired[dict[str, Any]]  # the repository changed while reviewers ran
    # {"kind": "bwrap", "network": "allowlist"}, {"kind": "bwrap", "network": "host", "network_why"},
    # or {"kind": None, "why"}
    sandbox: NotRequired[dict[str, str | None]]
    verification: NotRequired[VerificationIndex]  # absent when the round was never verified


class RepeatOf(TypedDict):
    """The earlier finding of the series a finding repeats (series memory)."""

    round: str
    finding: str
    disposition: str | None  # its standing disposition when this round was recorded


class Group(TypedDict):
    """The corroborated group a finding belongs to (docs/records.md "Corroboration")."""

    id: str  # G1, G2, ... in summary order: most vendors first
    members: list[str]  # finding ids, in findings.json order
    vendors: list[str]  # distinct presets of the members, sorted


# one entry of findings.json ("class" is a keyword, hence the call form)
Finding = TypedDict("Finding", {
    "id": str,
    "reviewer": str,
    "reviewer_id": str,
    "proposed_class": str,
    "angle": str,
    "location": str,
    "claim": str,
    "failure_scenario": str,
    "evidence": str,
    "link_kind": str,
    "link": str,
    "introduced_by_change": str,
    "regression": str,
    "check_impact": str,
    "confidence": str,
    "smallest_fix": NotRequired[str],
    "path": str | None,
    "in_check_paths": bool,
    "location_unreadable": bool,
    "class": str,
    "class_reason": str,
    "claimed_link_kind": str,
    "claimed_link": str,
    # series memory: absent in rounds written before it (no repeat, no group)
    "repeat_of": NotRequired[RepeatOf | None],
    "corroborated_by": NotRequired[list[str]],
    "vendor_count": NotRequired[int],
    "group": NotRequired[Group | None],  # None: in no group
})


class LedgerLine(TypedDict):
    """One line of ledger.jsonl; the latest line per finding stands."""

    finding: str
    disposition: str  # fixed, duplicate, rejected, deferred, answered
    auto: bool
    at: str
    commit: NotRequired[str]
    of: NotRequired[str]
    evidence: NotRequired[str]
    user_quote: NotRequired[str]
    failed_before: NotRequired[str]
    passed_after: NotRequired[str]


class WaiverLine(TypedDict):
    reviewer: str
    preset: str
    user_quote: str
    at: str


class ExtensionLine(TypedDict):
    """One line of a series' extensions.jsonl; readers fill cause and reason with None."""

    stage: str
    by: int
    cause: NotRequired[str | None]  # code stage only
    reason: NotRequired[str | None]
    at: str


def find_reviewer(round_json: RoundRecord, name: str) -> ReviewerEntry | None:
    """The reviewer entry called `name` (compared literally, G20), or None."""
    for entry in round_json["reviewers"]:
        if entry["name"] == name:
            return entry
    return None


def reviewer_names(round_json: RoundRecord) -> str:
    """The round's reviewer names for a message: `a, b` or `none`."""
    return ", ".join(entry["name"] for entry in round_json["reviewers"]) or "none"


def require_reviewer(round_json: RoundRecord, name: str, *, dry_run: str, role: str) -> ReviewerEntry:
    """The entry called `name` of a round that is not a dry run, else Refused:
    `round R is a dry run; <dry_run>` or `"name" is not <role> of round R (...)`."""
    round_name = round_json.get("name")
    if round_json.get("dry_run") is True:
        raise Refused(f"round {round_name} is a dry run; {dry_run}")
    entry = find_reviewer(round_json, name)
    if entry is None:
        names = reviewer_names(round_json)
        raise Refused(f"{quote(name)} is not {role} of round {round_name} (its reviewers: {names})")
    return entry
