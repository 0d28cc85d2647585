"""`spar extend SERIES --stage STAGE --by N [--cause C] [--reason R]` (design §8, G31).

Order: every usage check, then the refusals (missing reason, G28 on the series
path, an unreadable extensions.jsonl), then the series lock, a second read and
one appended line. Nothing is recorded when any check fails.
"""

from __future__ import annotations

import re
import sys
from typing import Any

from spar.argparsing import Parser, command_parser
from spar.config.model import STAGES
from spar.errors import EXIT_OK, Refused, UsageError, quote
from spar.records import clock, jsonl, lock, paths, readers
from spar.records.record_rules import CAUSES
from spar.series import series_folder
from spar.whitespace import trim

SUMMARY = "Raise a stage's round cap for a series, with a cause (one line in extensions.jsonl)."

EPILOG = f"""\
--cause (code only, required there): {', '.join(CAUSES)}.
--reason: required for a code extension with --by 2 or more or --cause other;
not accepted for plan or plan-delta, not even blank (nor is --cause): usage
error (64). For code, a reason that is blank after trimming counts as not
given; it is stored trimmed.
Appends {{"stage", "by", "cause", "reason", "at"}} to SERIES/extensions.jsonl.
SERIES may not exist yet (a project cap of 0 asks for an extension before the
first round); the folder holding it must. A round folder is not a series."""


def extension_line(stage: str, by: str, cause: str | None, reason: str | None) -> dict[str, Any]:
    """G31: the line to append (without `at`). UsageError for the shape, Refused for a missing reason."""
    if stage not in STAGES:
        raise UsageError(f"extend: --stage {quote(stage)} is not one of {', '.join(STAGES)}")
    if not re.fullmatch(r"[0-9]+", by) or int(by) < 1:
        raise UsageError(f"extend: --by {quote(by)} is not an integer of 1 or more")
    amount = int(by)
    reason_text = trim(reason) if reason is not None else ""
    if stage != "code":
        # G31: given at all, blank or not, --cause/--reason is a usage error here
        if cause is not None:
            raise UsageError(f"extend: --cause is only for a code extension, not {stage}")
        if reason is not None:
            raise UsageError(f"extend: --reason is only for a code extension, not {stage}")
        return {"stage": stage, "by": amount}
    if cause is None:
        raise UsageError(f"extend: a code extension needs --cause ({', '.join(CAUSES)})")
    if cause not in CAUSES:
        raise UsageError(f"extend: --cause {quote(cause)} is not one of {', '.join(CAUSES)}")
    if not reason_text and (amount >= 2 or cause == "other"):
        why = "--cause other" if cause == "other" else f"--by {amount}"
        raise Refused(f"extend: a code extension with {why} needs --reason (a reason that is not blank)")
    line = {"stage": stage, "by": amount, "cause": cause}
    if reason_text:
        line["reason"] = reason_text
    return line


def _parser() -> Parser:
    p = command_parser("extend", SUMMARY, EPILOG)
    p.add_argument("series", metavar="SERIES", help="the series folder (the folder holding the rounds)")
    p.add_argument("--stage", required=True, metavar="STAGE", help="plan, plan-delta or code")
    p.add_argument("--by", required=True, metavar="N", help="how many more rounds (1 or more)")
    p.add_argument("--cause", metavar="C", help="code only: " + ", ".join(CAUSES))
    p.add_argument("--reason", metavar="R", help="why (required for code with --by 2+ or --cause other)")
    return p


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    line = extension_line(args.stage, args.by, args.cause, args.reason)
    series = series_folder(args.series, may_be_new=True)
    paths.check_record_path(series, kind="series", directory=True)
    readers.read_extensions(series)  # refuse before locking when it is already unreadable
    with lock.series_lock(series):
        readers.read_extensions(series)  # G33: read again under the lock
        line["at"] = clock.now()
        jsonl.append(series / readers.EXTENSIONS_FILE, line)
    extra = f" ({line['cause']})" if "cause" in line else ""
    print(f"extended {args.stage} of {args.series} by {line['by']}{extra}", file=sys.stdout)
    return EXIT_OK
