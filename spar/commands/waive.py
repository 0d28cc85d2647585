"""`spar waive ROUND --reviewer NAME --user-quote TEXT` (design §9, G20, G30, G32).

The user accepts a round without one of its required reviewers (a reviewer
listed in that round.json) that did not complete. Appends one line to the
round's waivers.jsonl under the series lock.
"""

from __future__ import annotations

import sys

from spar.argparsing import Parser, command_parser
from spar.errors import EXIT_OK, RecordError, Refused
from spar.judge.dispositions import given
from spar.records import atomic, clock, jsonl, lock, readers
from spar.records.model import ReviewerEntry, ReviewerStatus, RoundRecord, WaiverLine, require_reviewer
from spar.round.summary_file import summary_text
from spar.series import round_folder

SUMMARY = "Accept a round without a required reviewer that did not complete, with the user's words."

EPILOG = """\
Refused (65, nothing written): a name that is not a reviewer of that round
(compared literally), a reviewer that completed, a reviewer of a round not
recorded yet (status pending) or of a dry run, a missing or blank
--user-quote, an unreadable round.json or waivers.jsonl.
Appends {"reviewer", "preset", "user_quote", "at"} to ROUND/waivers.jsonl."""


def waivable(round_json: RoundRecord, name: str) -> ReviewerEntry:
    """The reviewer entry `name` of a round when it may be waived; Refused otherwise."""
    entry = require_reviewer(round_json, name, dry_run="there is no reviewer to waive", role="a required reviewer")
    round_name = round_json["name"]
    status = entry["status"]
    if status == ReviewerStatus.COMPLETED:
        raise Refused(f"reviewer {name} of round {round_name} completed; "
                      "only a reviewer that did not complete can be waived")
    if status == ReviewerStatus.PENDING:
        raise Refused(f"reviewer {name} of round {round_name} has not been recorded yet (status pending)")
    if not isinstance(entry.get("preset"), str) or not entry["preset"]:
        raise RecordError(f"round {round_name}: reviewer {name} has no preset in round.json")
    return entry


def _parser() -> Parser:
    p = command_parser("waive", SUMMARY, EPILOG)
    p.add_argument("round", metavar="ROUND", help="the round folder")
    p.add_argument("--reviewer", required=True, metavar="NAME", help="a reviewer listed in that round.json")
    p.add_argument("--user-quote", metavar="TEXT", help="the user's words accepting the round without it")
    return p


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    if not given(args.user_quote):
        raise Refused("waive needs --user-quote with the user's words (a text that is not blank)")
    round_dir, series = round_folder(args.round)
    # check everything once before the lock, so a refusal never creates the lock file's folder state
    entry = waivable(readers.read_round(round_dir), args.reviewer)
    readers.read_waivers(round_dir)
    with lock.series_lock(series):
        round_json = readers.read_round(round_dir)  # G33: read again
        entry = waivable(round_json, args.reviewer)
        waivers = readers.read_waivers(round_dir)
        line: WaiverLine = {"reviewer": args.reviewer, "preset": entry["preset"], "user_quote": args.user_quote,
                "at": clock.now()}
        # summary.md names waived reviewers; its records are read before the append,
        # so a refusal (an unreadable findings.json or ledger) still writes nothing
        findings = readers.read_findings(round_dir, round_json=round_json)
        summary = summary_text(round_dir, readers.read_ledger(round_dir, findings), waivers + [line],
                               round_json=round_json, findings=findings)
        jsonl.append(round_dir / readers.WAIVERS_FILE, line)
        atomic.write_text(round_dir / "summary.md", summary)
    print(f"waived {args.reviewer} ({entry['status']}) in round {round_dir.name}", file=sys.stdout)
    return EXIT_OK
