"""Recording a round's results: validation, classification and the files that hold them.

Shared by `spar run` (results it collected) and `spar record` (results a host
collected), so both apply the same checks (G1–G9, standpoint report) and the
same record shapes (docs/records.md). Callers hold the series lock.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Set
from pathlib import Path
from typing import Literal, cast, get_args

from spar import __version__
from spar.config.model import DEFAULT_MAX_FINDINGS, ENDPOINT, AppliedConfig, ReviewerConfig, sha256_canonical
from spar.errors import RecordError
from spar.judge.context import RoundContext, RoundDoc
from spar.judge.coverage import ChangedFiles, had
from spar.judge.criteria import ids_of_documents
from spar.judge.findings import auto_deferrals, build_findings
from spar.judge.result import InvalidOutput, is_could_not_review, validate_result
from spar.records import atomic, jsonl, readers
from spar.records.clock import now
from spar.records.model import (
    UNFINISHED,
    Finding,
    LedgerLine,
    Links,
    ReviewerEntry,
    ReviewerStatus,
    RoundRecord,
    find_reviewer,
)
from spar.round.context import context_from_git
from spar.round.documents import documents_record
from spar.round.runner import ReviewerOutcome
from spar.round.summary import render_summary
from spar.round.summary_file import shown_verifications

SCHEMA = "review-round/v1"
CompletedKey = Literal["verdict", "reviewed_head", "angles_checked", "angles_unchecked", "limits", "finding_count"]
COMPLETED_KEYS: tuple[CompletedKey, ...] = get_args(CompletedKey)


# ------------------------------------------------------------------ round.json building


def reviewer_entry(cfg: ReviewerConfig, standpoint: str | None) -> ReviewerEntry:
    """A reviewer entry before it ran (`pending`)."""
    entry: ReviewerEntry = {
        "name": cfg.name,
        "preset": cfg.preset,
        "status": ReviewerStatus.PENDING,
        "reason": "",
        "resets": None,
        "not_run": None,
        "model": cfg.model,
        "effort": cfg.effort,
        "timeout_seconds": cfg.timeout_seconds,
        "max_findings": cfg.max_findings,
        "observed_model": None,
        "attempts": [],
        "warnings": [],
        "standpoint": standpoint,
        "standpoint_report": None,
    }
    if cfg.preset == ENDPOINT:
        entry["vendor"] = cfg.vendor_name()  # its endpoint, not its preset, is its vendor
    return entry


def criteria_digest(criteria: list[RoundDoc]) -> str:
    return sha256_canonical([{"name": d.name, "sha256": hashlib.sha256(d.text).hexdigest()} for d in criteria])


def links_record(documents: dict[str, list[RoundDoc]]) -> Links:
    return {
        "rules": [
            {"names": [d.name, d.real_path], "file_name": d.file_name, "lines": d.lines}
            for d in documents["rules"]
        ],
        "criteria_ids": ids_of_documents(d.text for d in documents["criteria"]),
    }


def standpoints_uncovered(round_json: RoundRecord) -> list[str]:
    """Standpoint reviewers without a completed reviewer (also those not in this round)."""
    done = {r["name"] for r in round_json.get("reviewers", []) if r.get("status") == ReviewerStatus.COMPLETED}
    return [sp["reviewer"] for sp in round_json.get("standpoints") or [] if sp["reviewer"] not in done]


# ------------------------------------------------------------------ one reviewer's result


def _clear_completed(entry: ReviewerEntry) -> None:
    for key in COMPLETED_KEYS:
        entry.pop(key, None)
    entry["standpoint_report"] = None


def _answered(entry: ReviewerEntry) -> None:
    """A result is recorded for the reviewer (`spar run`'s, or `spar record` over an earlier
    outcome): it got to review, whatever it answered."""
    _clear_completed(entry)
    entry["not_run"] = None


def record_reviewer_result(round_json: RoundRecord, name: str, result: object, ctx: RoundContext) -> list[Finding]:
    """Validate and classify one reviewer's result object.

    Updates that reviewer's entry in `round_json` in place (status `completed`,
    `invalid_output` with the key in the reason, or `failed` for
    `could_not_review`) and returns its findings, numbered `<name>-F<n>`
    (empty unless completed).
    """
    entry = reviewer_of(round_json, name)
    standpoints_active = bool(round_json.get("standpoints"))
    _answered(entry)
    try:
        accepted = validate_result(
            result,
            packet_head=round_json["head"],
            requested_angles=list(round_json["config"]["angles"]),
            standpoints_active=standpoints_active,
            assigned=entry.get("standpoint") is not None,
            max_findings=_max_findings(entry),
        )
    except InvalidOutput as exc:
        entry["status"] = ReviewerStatus.INVALID_OUTPUT
        entry["reason"] = exc.reason
        return []
    if is_could_not_review(accepted):
        entry["status"] = ReviewerStatus.FAILED
        entry["reason"] = "could_not_review" + (f": {accepted['limits']}" if accepted["limits"].strip() else "")
        return []
    findings = build_findings(name, accepted, ctx)
    entry["status"] = ReviewerStatus.COMPLETED
    entry["reason"] = ""
    entry["standpoint_report"] = accepted["standpoint_report"]
    entry["verdict"] = accepted["verdict"]
    entry["reviewed_head"] = accepted["reviewed_head"]
    entry["angles_checked"] = accepted["angles_checked"]
    entry["angles_unchecked"] = accepted["angles_unchecked"]
    entry["limits"] = accepted["limits"]
    entry["finding_count"] = len(findings)
    return findings


def _max_findings(entry: ReviewerEntry) -> int:
    cap = entry.get("max_findings")
    return cap if isinstance(cap, int) and not isinstance(cap, bool) and cap > 0 else DEFAULT_MAX_FINDINGS


def record_invalid(round_json: RoundRecord, name: str, reason: str) -> None:
    """An answer that is not one JSON object: invalid_output with the reason given."""
    entry = reviewer_of(round_json, name)
    _answered(entry)
    entry["status"] = ReviewerStatus.INVALID_OUTPUT
    entry["reason"] = reason


def apply_outcome(round_json: RoundRecord, outcome: ReviewerOutcome, ctx: RoundContext) -> list[Finding]:
    """Record one runner outcome (`spar run`): the run's facts, then the result's checks."""
    entry = reviewer_of(round_json, outcome.name)
    entry["resets"] = outcome.resets
    entry["not_run"] = outcome.not_run
    entry["observed_model"] = outcome.observed_model
    entry["attempts"] = [a.copy() for a in outcome.attempts]
    # how many credentials the round's output held, masked (never which)
    round_json["masked_secrets"] = round_json.get("masked_secrets", 0) + sum(
        a.get("masked_secrets", 0) for a in outcome.attempts)
    entry["model"] = outcome.model  # the last attempt's model (the fallback after a quota refusal)
    for warning in getattr(outcome, "warnings", []):
        round_json.setdefault("warnings", []).append(f"{outcome.name}: {warning}")
    if outcome.status != ReviewerStatus.COMPLETED:
        _clear_completed(entry)
        entry["status"] = outcome.status
        entry["reason"] = outcome.reason
        return []
    if outcome.output_error is not None or outcome.result is None:
        record_invalid(round_json, outcome.name, outcome.output_error or "no result object")
        return []
    return record_reviewer_result(round_json, outcome.name, outcome.result, ctx)


def record_coverage(round_json: RoundRecord, outcomes: list[ReviewerOutcome], changed: list[str],
                    inline: set[str], workspace: Path, not_copied: Set[str] = frozenset(),
                    change_diff: bool = False) -> None:
    """Each attempt's observed coverage and the round's changed files no completed reviewer saw:
    inline in the packet, or named by the attempt's read and search calls (never a file
    `not_copied`: the copies hold only a note for it; `change_diff`: an incremental round,
    whose workspace/change.diff holds every file's diff)."""
    changed = list(dict.fromkeys(changed))  # each path once, as the lists the record rules check
    files = ChangedFiles(changed)
    inline = inline & set(changed)
    roots = list(dict.fromkeys([str(workspace.absolute()), os.path.realpath(workspace)]))
    seen: set[str] = set()
    for outcome in outcomes:
        entry = reviewer_of(round_json, outcome.name)
        words = outcome.named_words  # None: Spar cannot see this reviewer's calls
        opened: set[str] = set()
        for n, attempt in enumerate(entry["attempts"]):
            named = words[n] if words is not None and n < len(words) else None
            opened = files.named(named, roots, change_diff) - inline - not_copied if named is not None else set()
            attempt["coverage"] = {"inline": len(inline), "opened": len(opened), "changed_files": len(changed),
                                   "observed": named is not None,
                                   "opened_files": [path for path in changed if path in opened]}
        if entry["status"] == ReviewerStatus.COMPLETED:
            seen |= inline | opened  # the last attempt gave the answer
    round_json["changed_files"] = len(changed)
    round_json["unseen"] = [path for path in changed if path not in seen]
    # once per round: every reviewer got the same packet (a big change's list would repeat per attempt)
    round_json["inline_files"] = [path for path in changed if path in inline]


def recount_unseen(round_json: RoundRecord, name: str) -> None:
    """After `spar record` of reviewer `name`: the round's `unseen` without the files it had
    (a recorded reviewer had the packet, so its inline files); nothing for a round that
    recorded no file lists, or a reviewer that did not complete."""
    if "unseen" not in round_json or "inline_files" not in round_json:
        return
    entry, inline = reviewer_of(round_json, name), set(round_json["inline_files"])
    if entry["status"] == ReviewerStatus.COMPLETED:
        files = inline | (had(entry, inline) or set())
        round_json["unseen"] = [path for path in round_json["unseen"] if path not in files]


def reviewer_of(round_json: RoundRecord, name: str) -> ReviewerEntry:
    entry = find_reviewer(round_json, name)
    if entry is None:
        raise RecordError(f"round {round_json.get('name')}: no reviewer named {name!r}")
    return entry


def merge_findings(existing: list[Finding], name: str, new: list[Finding],
                   reviewer_order: list[str]) -> list[Finding]:
    """Replace `name`'s findings by `new`, keeping reviewer order (findings.json order)."""
    by_reviewer: dict[str, list[Finding]] = {}
    for f in existing:
        if f.get("reviewer") != name:
            by_reviewer.setdefault(f.get("reviewer") or "", []).append(f)
    by_reviewer[name] = list(new)
    out: list[Finding] = []
    for reviewer in reviewer_order:
        out += by_reviewer.pop(reviewer, [])
    for rest in by_reviewer.values():  # findings of a name no longer listed stay, at the end
        out += rest
    return out


# ------------------------------------------------------------------ the files


def finish_round_json(round_json: RoundRecord, at: str | None = None) -> RoundRecord:
    """Mark the round recorded: `recorded_at`, `finished_at` unless a reviewer is unfinished,
    and `standpoints_uncovered`. Changes and returns `round_json`."""
    at = at or now()
    round_json["recorded_at"] = at
    round_json["standpoints_uncovered"] = standpoints_uncovered(round_json)
    if any(r.get("status") in UNFINISHED for r in round_json.get("reviewers", [])):
        round_json.pop("finished_at", None)
    else:
        round_json["finished_at"] = at
    return round_json


def write_round_outputs(round_dir: str | Path, round_json: RoundRecord, findings: list[Finding],
                        new_findings: list[Finding] | None = None, *, at: str | None = None) -> None:
    """Write findings.json, append the automatic deferrals of `new_findings` (default: all)
    to ledger.jsonl, write summary.md, then round.json (recorded) last: a reader that
    sees `recorded_at` finds everything else in place.

    A round recorded for the first time (`spar run`: no ledger yet) writes the first
    three as one batch (`atomic.write_files`: their fsyncs at once, renamed into place
    in that order, then the folder synced) before round.json; the ledger is then
    written whole, with the lines the appends would have made."""
    round_dir = Path(round_dir)
    at = at or now()
    new_findings = findings if new_findings is None else new_findings
    # read before the first write: a refusal after it would leave the round half-updated.
    # waivers.jsonl is only judged by waive and gate (G32); unreadable here = none shown
    ledger_path = round_dir / "ledger.jsonl"
    # lines as they are: summary.md shows what stands, and only triage and gate judge lines
    ledger = cast(list[LedgerLine], jsonl.read(ledger_path, missing_ok=True))
    try:
        waivers = readers.read_waivers(round_dir)
    except RecordError:
        waivers = []
    lines: list[LedgerLine] = [{"finding": fid, "disposition": "deferred", "auto": True, "at": at}
                               for fid in auto_deferrals(new_findings)]
    findings_text = atomic.dumps(findings).encode("utf-8")  # encoded before the first write
    if ledger_path.exists():
        atomic.write_bytes(round_dir / "findings.json", findings_text)
        for line in lines:
            jsonl.append(ledger_path, line)
            ledger.append(line)
        finish_round_json(round_json, at)
        atomic.write_text(round_dir / "summary.md", render_summary(round_json, findings, ledger, waivers,
                                                                   shown_verifications(round_dir, findings)))
    else:
        # an empty ledger still says "recorded, nothing disposed" to readers
        ledger += lines
        finish_round_json(round_json, at)
        summary = render_summary(round_json, findings, ledger, waivers, shown_verifications(round_dir, findings))
        atomic.write_files([(round_dir / "findings.json", findings_text),
                            (ledger_path, b"".join(jsonl.dumps_line(line) for line in lines)),
                            (round_dir / "summary.md", summary.encode("utf-8"))])
    atomic.write_json(round_dir / "round.json", round_json)


def context_for_round(round_json: RoundRecord) -> RoundContext:
    """The judging context of a recorded round, rebuilt from round.json alone (for `spar record`):
    its commits, check paths, criterion IDs and documents as they were when the round ran.

    Documents are not read again: the working tree may have moved on, and judging
    (G7, G8) uses only a document's names and line count, both recorded. Each
    RoundDoc's text is therefore a stand-in with the recorded number of lines."""
    docs: list[RoundDoc] = []
    for kind in ("criteria", "rules", "subject"):
        for rec in (round_json.get("documents") or {}).get(kind, []):
            try:
                path, name, lines = rec["path"], rec["name"], int(rec["lines"])
            except (KeyError, TypeError, ValueError):
                raise RecordError(f"round {round_json.get('name')}: a {kind} document entry lacks name, "
                                  "path or lines") from None
            docs.append(RoundDoc(kind=kind, name=name, real_path=path, file_name=os.path.basename(path),
                                 text=b"\n" * lines))
    return context_from_git(
        round_json["repository"], round_json["base"], round_json["head"], docs,
        list(round_json["config"]["check_paths"]), (round_json.get("links") or {}).get("criteria_ids", []),
    )


def new_round_json(*, name: str, stage: str, repository: str, base: str, head: str, expect_head: str | None,
                   packet_sha256: str,
                   documents: dict[str, list[RoundDoc]], config: AppliedConfig, reviewers: list[ReviewerEntry],
                   standpoints: list[tuple[str, str]], decisions: list[tuple[str, str]], counted: bool,
                   dry_run: bool, started_at: str) -> RoundRecord:
    """round.json as written before any reviewer runs (no finished_at, reviewers pending)."""

    values = config.applied_values()
    return {
        "schema": SCHEMA,
        "spar_version": __version__,
        "name": name,
        "stage": stage,
        "repository": repository,
        "base": base,
        "head": head,
        "expect_head": expect_head,
        "packet_sha256": packet_sha256,
        "documents": documents_record(documents),
        "criteria_digest": criteria_digest(documents["criteria"]),
        "links": links_record(documents),
        "config": values,
        "config_files": [dict(f) for f in config.files],
        "config_skipped": [dict(s) for s in config.skipped],
        "config_digest": sha256_canonical(values),
        "standpoints": [{"reviewer": n, "text": t} for n, t in standpoints],
        "standpoints_uncovered": [n for n, _ in standpoints],
        "decisions": [{"decision": d, "quote": q} for d, q in decisions],
        "counted": counted,
        "dry_run": dry_run,
        "started_at": started_at,
        "reviewers": reviewers,
        "warnings": [],
    }
