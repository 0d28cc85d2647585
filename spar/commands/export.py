"""`spar export ROUND... --format sarif|codeclimate|rdjsonl [--out FILE]`.

Reads each round (refusing on an unreadable record, G32, or a round that was
never recorded) and writes its findings in a standard format for code hosts
and CI (`spar.export`). Nothing in the series changes.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from spar.argparsing import Parser, command_parser
from spar.errors import EXIT_NOT_CLEAN, EXIT_OK, RecordError, Refused, quote
from spar.export import codeclimate, rdjsonl, sarif
from spar.export.collect import Item, RoundLookup, RoundRecords, collect, series_identity, unfinished_reviewers
from spar.records import atomic, paths, readers
from spar.series import read_series, round_folder
from spar.textsafe import for_stream

FORMATS = ("sarif", "codeclimate", "rdjsonl")

DESCRIPTION = """\
Write the findings of one or more recorded rounds in a standard format:

  sarif        SARIF 2.1.0 for GitHub code scanning: one run per reviewer
               (tool "Spar (<reviewer>)", Spar's version, preset, model and CLI version),
               ruleId spar/<class>, level error (defect), warning
               (requirement-question, hardening) or note, a stable
               partialFingerprints value (sparFinding/v1), and every standing
               disposition (fixed, duplicate, rejected, deferred, answered) as
               a suppression with its justification. GitHub's limits (20 runs
               per file, 25,000 results per run) are refused, not truncated.
  codeclimate  GitLab Code Quality (description, check_name, fingerprint,
               severity, location.path, location.lines.begin); dispositions
               become severity info with the disposition in the description.
  rdjsonl      reviewdog diagnostics, one JSON object per line; the smallest
               fix is text in the message ("Smallest fix: ..."), never a code
               suggestion.

Each finding chain (a finding and its repeats and duplicates in later
rounds) is given once, as its newest round given has it (that round's head
and lines; open when that finding is open, a duplicate followed to what it
duplicates); a corroborated group (findings of several reviewers that match,
in one round) is one result: SARIF relatedLocations, Code Climate
other_locations and rdjsonl related_locations name each reviewer's finding.
Fingerprints are unique within the file. A location that is not a line of a head file is
kept and said in the message: `base/` locations carry the path without lines
(they are base lines), round documents outside the repository their document
name, and unreadable locations (outside the location grammar or naming
nothing in either copy) the repository root "." with the
reviewer's own text; a path that is not a plain repository path (absolute,
or with a "..", "." or empty part) is never exported: the finding goes to "."
and the message says why; stderr counts them. The fingerprint hashes what
identifies the finding (its series, round, id, path and claim), or the earlier
finding it is the same as (a triaged duplicate, else a recorded repeat_of),
followed to the first, so a repeat in a later round is the same alert and
equal names in two series are two alerts; a group's is that of its first
finding's chain.

--out never names a record of a series (a file inside a round folder, a
series' extensions.jsonl): that is refused, as `spar gate --out` refuses it.

A reviewer that did not complete a round (failed, timed out, unavailable, ...)
is named on stderr; SARIF also carries it: each run's invocation has
executionSuccessful false and one notification per round it did not complete
(a waived reviewer is a note and leaves executionSuccessful true). A rerun of
the same input in which it completed, given too, settles it, as for the gate.

A verified round (verifications.json) adds each finding's verdict: SARIF
properties verdict, verifier, verifier_preset, call, verification_evidence and a
rank (confirmed 90, unsure or none 50, refuted 10); Code Quality and rdjsonl end
the text with "Verification: ...". Levels, severities and suppressions stay.

Exit codes: 0 written; 1 written, not clean (a reviewer did not complete and
was not waived: the file does not cover the whole review); 64 usage error; 65
refused (a round unreadable or not recorded, a GitHub limit exceeded, --out a
record or in a folder that does not exist; nothing written); 70 the write
failed."""


def _parser() -> Parser:
    p = command_parser("export", DESCRIPTION)
    p.add_argument("rounds", nargs="+", metavar="ROUND", help="round folders, in series order")
    p.add_argument("--format", required=True, choices=FORMATS, help="sarif, codeclimate or rdjsonl")
    p.add_argument("--out", metavar="FILE", help="write here (replaced whole); default: standard output")
    return p


def _series_id(series: Path) -> str:
    """`collect.series_identity` of the series folder: its first round in series order
    (none readable: the folder's name alone)."""
    try:
        rounds = read_series(series)
    except (RecordError, OSError):
        rounds = []
    return series_identity(series.resolve().name, rounds[0].round if rounds else None)


def _read(folder: Path, series_ids: dict[Path, str]) -> RoundRecords:
    r = readers.read_round(folder)
    findings = readers.read_findings(folder, round_json=r)
    series = folder.parent
    if series not in series_ids:
        series_ids[series] = _series_id(series)
    return RoundRecords(folder.name, r, findings, readers.read_ledger(folder, findings), str(series),
                        series_ids[series], readers.read_waivers(folder), readers.read_verifications(folder, findings))


def read_listed_rounds(args: list[str]) -> tuple[list[RoundRecords], dict[str, Path]]:
    out = []
    folders: dict[str, Path] = {}
    series_ids: dict[Path, str] = {}  # per series folder, read once
    for arg in args:
        folder, _ = round_folder(arg)
        r = readers.read_round(folder)
        if r.get("dry_run") or not (r.get("recorded_at") or r.get("finished_at")):
            raise Refused(f"round {quote(arg)} was not recorded (a dry run or an unfinished round): "
                          "it has no findings to export")
        out.append(_read(folder, series_ids))
        folders[str(folder)] = folder
    return out, folders


def _sibling_reader(rounds: list[RoundRecords]) -> RoundLookup:
    """Reads another round of a given round's series by name (for fingerprint chains);
    a round that cannot be read ends the chain (None)."""
    series_ids = {Path(r.series): r.series_id for r in rounds}

    def read(series: str, name: str) -> RoundRecords | None:
        if not name or name in (".", "..") or "/" in name:
            return None  # a link names a round of the same series, nothing else
        try:
            return _read(Path(series) / name, series_ids)
        except (RecordError, OSError):
            return None
    return read


def render_export(fmt: str, rounds: list[RoundRecords]) -> tuple[str, list[Item]]:
    items, reviewers = collect(rounds, _sibling_reader(rounds))
    if fmt == "sarif":
        return json.dumps(sarif.build(items, reviewers), indent=2, ensure_ascii=False) + "\n", items
    if fmt == "codeclimate":
        return json.dumps(codeclimate.build(items), indent=2, ensure_ascii=False) + "\n", items
    return rdjsonl.build(items), items


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    rounds, folders = read_listed_rounds(args.rounds)
    if args.out:  # never over a record: the series would be unreadable, its dispositions lost
        paths.check_not_record(args.out, folders.values(), {p.parent for p in folders.values()})
        paths.check_out_folder(args.out)
    text, items = render_export(args.format, rounds)
    if args.out:
        atomic.write_text(args.out, text)
    else:
        sys.stdout.write(for_stream(text, sys.stdout))
    kinds = {k: sum(i.kind == k for i in items) for k in ("unreadable", "unsafe", "document", "base")}
    notes = [f"{n} {k} location(s)" for k, n in kinds.items() if n]
    where = args.out or "standard output"
    merged = sum(len(i.chain) for i in items)
    print(f"spar: exported {len(items)} result(s) for {merged} finding(s) as {args.format} to {where}"
          + (f"; kept with a note in the message: {', '.join(notes)}" if notes else ""), file=sys.stderr)
    return _tell_unfinished(rounds)


def _tell_unfinished(rounds: list[RoundRecords]) -> int:
    """Say on stderr which reviewers did not complete (every format: Code Quality and
    rdjsonl have no place for it in the file); 1 when one of them was not waived."""
    missing = unfinished_reviewers(rounds)
    for u in missing:
        print(f"spar: reviewer {quote(u.reviewer)} did not complete round {quote(u.round)}: "
              f"{quote(u.status)}, {quote(u.reason)}" + (" (waived)" if u.waived else ""), file=sys.stderr)
    if any(not u.waived for u in missing):
        print("spar: written, not clean: a reviewer of these rounds did not complete and was not waived, "
              "so the export does not cover all of the review", file=sys.stderr)
        return EXIT_NOT_CLEAN
    return EXIT_OK
