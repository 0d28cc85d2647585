"""summary.md from the records of a round folder as they are on disk: what triage, waive,
`spar record` and `spar verify` write again after they changed a record (the rendering
itself is `spar.round.summary`, pure)."""

from __future__ import annotations

from pathlib import Path

from spar.errors import RecordError
from spar.records import atomic, readers
from spar.records.model import Finding, LedgerLine, RoundRecord, VerificationsRecord, WaiverLine
from spar.records.repeat_checks import RepeatChecksRecord, read_repeat_checks
from spar.round.summary import render_summary


def shown_verifications(round_dir: Path, findings: list[Finding]) -> VerificationsRecord | None:
    """verifications.json as summary.md shows it: None when the round was never verified,
    and when the file cannot be read (or names a finding the round does not have): the
    verdicts are advice on reading order, so summary.md never refuses a write for them
    (`spar triage --refuted`, which acts on them, refuses instead)."""
    try:
        return readers.read_verifications(round_dir, findings)
    except RecordError:
        return None


def shown_repeat_checks(round_dir: Path, findings: list[Finding]) -> RepeatChecksRecord | None:
    """repeat-checks.json as summary.md shows it: None when no repeat was put to a verifier,
    and when the file cannot be read (advice as the verdicts are: `spar triage --repeats`,
    which acts on it, refuses instead)."""
    try:
        return read_repeat_checks(round_dir, {str(f["id"]) for f in findings})
    except RecordError:
        return None


def summary_text(round_dir: Path, ledger: list[LedgerLine], waivers: list[WaiverLine] | None = None, *,
                 round_json: RoundRecord | None = None, findings: list[Finding] | None = None) -> str:
    """summary.md of a recorded round as it reads with `ledger` (and `waivers`) on disk: round.json,
    findings.json, verifications.json and repeat-checks.json read from the folder unless the caller has read them
    (`round_json`, `findings`). An unreadable waivers.jsonl (only waive and gate judge it, G32)
    shows no waiver."""
    if round_json is None:
        round_json = readers.read_round(round_dir)
    if findings is None:
        findings = readers.read_findings(round_dir)
    if waivers is None:
        try:
            waivers = readers.read_waivers(round_dir)
        except RecordError:
            waivers = []
    return render_summary(round_json, findings, ledger, waivers, shown_verifications(round_dir, findings),
                          shown_repeat_checks(round_dir, findings))


def write_summary(round_dir: str | Path) -> None:
    """Write summary.md again from the round's records as they are (after `spar verify` wrote
    verifications.json, so the summary shows the verdicts). The caller holds the series lock."""
    round_dir = Path(round_dir)
    findings = readers.read_findings(round_dir)
    ledger = readers.read_ledger(round_dir, findings)
    atomic.write_text(round_dir / "summary.md", summary_text(round_dir, ledger, findings=findings))
