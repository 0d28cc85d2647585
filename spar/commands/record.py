"""`spar record ROUND --reviewer NAME (--result FILE | --transcript FILE [--result FILE])` (design §6).

Records a result Spar did not collect itself (a `native` reviewer, or a rerun
by hand) with the same validation and classification as `spar run`
(`spar.round.recording`), under the series lock, reading the round again
after taking it (G33).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from spar import git
from spar.argparsing import Parser, command_parser
from spar.errors import EXIT_NOT_CLEAN, EXIT_OK, Refused, UsageError, quote
from spar.judge.answer import parse_answer
from spar.judge.transcript import analyze_transcript
from spar.records import lock, readers
from spar.records.model import (
    Finding,
    LedgerLine,
    ReviewerEntry,
    ReviewerStatus,
    RoundRecord,
    TranscriptWarning,
    require_reviewer,
)
from spar.round import history, recording
from spar.series import repository_of, round_folder

if TYPE_CHECKING:
    from spar.judge.context import RoundContext
    from spar.judge.transcript import TranscriptAnalysis
from spar.textsafe import terminal_safe

EPILOG = """\
--result FILE: the reviewer's result object (JSON). --transcript FILE: a Claude
Code transcript (JSONL) of the host's subagent; its warnings go to the
reviewer's entry in round.json, and the result comes from the transcript
unless --result is also given.
Refused (65, nothing written): a reviewer not listed in round.json (compared
literally), a reviewer that already completed (recording over it would drop
findings that may still be open: start a new round instead), a dry run, an
unreadable --result or --transcript file, an unreadable round record (one
Spar could not have written: spar/docs/records.md, installed with Spar), a
round killed while recording (findings.json or ledger.jsonl there, round.json
never marked recorded).
A result that is not one JSON object is recorded as invalid_output, by
the same rule as spar run: valid UTF-8, exactly one
JSON object with only whitespace around it (no code fence, no other text).
finished_at is set once no reviewer awaits a record.
Exit 0 when the reviewer completed, 1 when its result was recorded as not
completed (invalid_output, failed), as spar run does."""

_ID = re.compile(r"-F([0-9]+)$")


def _parser() -> Parser:
    p = command_parser("record", "Record a result spar did not collect itself (native reviewer, transcript).", EPILOG)
    p.add_argument("round", metavar="ROUND", help="the round folder")
    p.add_argument("--reviewer", required=True, metavar="NAME", help="a reviewer listed in that round.json")
    p.add_argument("--result", metavar="FILE", help="the result object (JSON)")
    p.add_argument("--transcript", metavar="FILE", help="a Claude Code transcript (JSONL)")
    return p


def _read_input(path: str, option: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise Refused(f"{option} {quote(path)} cannot be read: {exc.strerror or exc}") from None


def recordable(round_json: RoundRecord, name: str) -> ReviewerEntry:
    """The reviewer entry `name` when a result may be recorded for it; Refused otherwise."""
    entry = require_reviewer(round_json, name, dry_run="it records no results", role="a reviewer")
    if entry["status"] == ReviewerStatus.COMPLETED:
        raise Refused(f"reviewer {name} of round {round_json.get('name')} already completed; "
                      "recording over it would drop its findings (start a new round instead)")
    return entry


def _warning(w: Any) -> TranscriptWarning:
    if isinstance(w, dict):
        return cast(TranscriptWarning, {"kind": w.get("kind"), "tool": w.get("tool")})
    return {"kind": w.kind, "tool": w.tool}


def _used_numbers(name: str, findings: list[Finding], ledger: list[LedgerLine]) -> int:
    """Highest n of `<name>-F<n>` already used in this round (findings or ledger)."""
    top = 0
    for fid in [f.get("id") for f in findings] + [line.get("finding") for line in ledger]:
        if isinstance(fid, str) and fid.startswith(f"{name}-F"):
            m = _ID.search(fid)
            if m and fid == f"{name}-F{m.group(1)}":
                top = max(top, int(m.group(1)))
    return top


def transcript_lines(data: bytes) -> list[str]:
    """JSONL lines of a transcript. Only "\n" ends a line: `str.splitlines` would also
    split at U+2028, U+0085 and friends, which JSON writers leave raw inside strings,
    and so lose the very line that holds the result."""
    return data.decode("utf-8", "surrogateescape").split("\n")


def analyze(round_dir: Path, name: str, data: bytes, source: str) -> TranscriptAnalysis:
    """G15 analysis of a transcript of reviewer `name` of `round_dir`.

    The analysis compares paths lexically, and the round folder may be spelled two
    ways (the path given here, and its real path, which is what a host working from
    a physical cwd sees). A warning that depends on the spelling is not a fact
    about the subagent, so only warnings found under every spelling are kept."""

    lines = transcript_lines(data)
    spellings = list(dict.fromkeys([str(round_dir), os.path.realpath(round_dir)]))
    results = [analyze_transcript(lines, workspace=os.path.join(folder, "workspace"),
                                  prompt_path=os.path.join(folder, name, "prompt.md"), source=source)
               for folder in spellings]
    first = results[0]
    first.warnings = [w for w in first.warnings if all(w in other.warnings for other in results[1:])]
    return first


def _context(round_json: RoundRecord) -> RoundContext:
    # a moved repository is found as gate and triage find it; round.json keeps its words
    where = round_json.copy()
    repo = repository_of(round_json)
    if repo is not None:
        where["repository"] = repo
    try:
        return recording.context_for_round(where)
    except git.GitError as exc:
        raise Refused(f"round {round_json.get('name')}: cannot read the commits of its repository "
                      f"{quote(str(round_json.get('repository')))}: {exc}") from None


def record(round_dir: Path, name: str, result_data: bytes | None, transcript_data: bytes | None,
           transcript_name: str = "transcript") -> ReviewerEntry:
    """Record under the lock already held; returns the reviewer's entry afterwards."""
    round_json = readers.read_round(round_dir)
    entry = recordable(round_json, name)
    # a round that says it was recorded must still hold its findings (G32): treating
    # a lost findings.json as empty would drop every other reviewer's findings
    recorded = bool(round_json.get("recorded_at") or round_json.get("finished_at"))
    if not recorded and any(os.path.lexists(round_dir / f) for f in (readers.FINDINGS_FILE, readers.LEDGER_FILE)):
        # a run killed while recording: its findings.json and ledger match no round.json
        raise Refused(f"round {round_dir.name} was not finished: its findings were written, but round.json "
                      "was never marked recorded; run the round again")
    existing = readers.read_findings(round_dir, missing_ok=not recorded, round_json=round_json)
    ledger = readers.read_ledger(round_dir, existing, missing_ok=not recorded)
    ctx = _context(round_json)
    result, problem = (None, None)
    if result_data is not None:
        result, problem = parse_answer(result_data, "the --result file")  # G1, as spar run
    if transcript_data is not None:
        analysis = analyze(round_dir, name, transcript_data, transcript_name)
        entry["warnings"] = [_warning(w) for w in analysis.warnings]
        if analysis.observed_model is not None:
            entry["observed_model"] = analysis.observed_model
        if result_data is None:
            result, problem = analysis.result, analysis.result_problem
    if problem is not None:
        recording.record_invalid(round_json, name, problem)
        new: list[Finding] = []
    else:
        new = recording.record_reviewer_result(round_json, name, result, ctx)
        recording.recount_unseen(round_json, name)
    # IDs continue the reviewer's numbering; never reuse an ID a ledger line may name
    offset = _used_numbers(name, existing, ledger)
    if offset:
        for n, f in enumerate(new, offset + 1):
            f["id"] = f"{name}-F{n}"
    order = [r["name"] for r in round_json["reviewers"]]
    merged = recording.merge_findings(existing, name, new, order)
    history.annotate(round_dir, round_json, merged, ctx)
    recording.write_round_outputs(round_dir, round_json, merged, new)
    return recording.reviewer_of(round_json, name)


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    if args.result is None and args.transcript is None:
        raise UsageError("record: give --result FILE or --transcript FILE (or both)")
    result_data = _read_input(args.result, "--result") if args.result is not None else None
    transcript_data = _read_input(args.transcript, "--transcript") if args.transcript is not None else None
    round_dir, series = round_folder(args.round)
    # refuse a wrong name before taking the lock; checked again under it
    recordable(readers.read_round(round_dir), args.reviewer)
    with lock.series_lock(series):
        entry = record(round_dir, args.reviewer, result_data, transcript_data,
                       f"--transcript {quote(args.transcript)}" if args.transcript is not None else "transcript")
    reason = f" ({terminal_safe(entry['reason'])})" if entry.get("reason") else ""
    print(f"round {round_dir.name}: {args.reviewer} {entry['status']}{reason}")
    return EXIT_OK if entry["status"] == ReviewerStatus.COMPLETED else EXIT_NOT_CLEAN
