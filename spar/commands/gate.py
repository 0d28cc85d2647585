"""`spar gate ROUND... --out FILE [--expect-head REV]` (design §10, G27–G29, G32, G33).

Never locks: it reads whatever is on disk, and anything it cannot interpret
(a corrupt record, a round being written) becomes a blocked reason, never a
crash. Only `--out` itself can be refused (G28); otherwise the gate file is
always written, atomically. Exit 0 passed, 1 blocked.
"""

from __future__ import annotations

import os
from pathlib import Path

from spar import __version__
from spar.argparsing import Parser, command_parser
from spar.errors import EXIT_NOT_CLEAN, EXIT_OK, Refused, UsageError, quote
from spar.gating import build_gate, real_paths, series_gate_list, series_round_folders
from spar.judge.next_steps import next_steps
from spar.records import atomic, clock, paths
from spar.series import series_folder
from spar.textsafe import terminal_safe

EPILOG = """\
Blocked reasons, all that apply, in this order: an unreadable, unfinished,
dry-run or unrecorded round in the list (or an unreadable waivers.jsonl).
Unreadable: a record Spar could not have written, named with its file and
line (torn, missing, another schema, or an impossible value such as a ledger
line against the disposition rules; spar/docs/records.md, installed with
Spar); a path with no folder behind it says "no such round folder" (a
mistyped path blocks the gate like any round it cannot read, and exits 1,
not 64). Unfinished ("was not
finished"): a folder without round.json, findings.json written but round.json
never marked recorded, or NAME.tmp files a killed write left (while the series
lock is held they are a write in progress instead). Then: a round of a
listed round's series missing from the list (a round with neither finished_at
nor findings.json is not required); the latest round's head differs
from --expect-head (for a round of the working tree, spar run --worktree:
its tree differs from that commit's tree) (default: HEAD of the repository named in its round.json;
when that folder is gone, of the repository holding the current folder if it
has the round's head commit); a required reviewer of the latest round of a
stage of a series neither completed nor waived (with the listed rounds of the
same input, reruns of unfinished reviewers: a reviewer of any of them is
required, and done when it completed or was waived in any of them); a
defect or requirement-question without a standing disposition (a duplicate
counts only when the finding it traces to is disposed), each listed once: when
it is a defect of the latest code round introduced by the last fix
(introduced_by_change: yes, at a place the fix changed, never a repeat; a fix
only when an earlier code round of the series reviewed another head) outside
the check paths, its reason says so; a repeat's reason names the finding and
round it repeats. Growth
inside the check paths is counted in "growth" but adds nothing to a reason.
"Latest" is by started_at, ties by list order. --out is refused (65, nothing
written) inside any round folder of a listed series, as the series'
extensions.jsonl, or when it exists and is not a review-gate/v1 file.
An unfinished or unrecorded round's reason ends with what to do (remove
its folder, after chmod -R u+w for an unprivileged user, and run the round
again). --series SERIES gates every round of the series but dry runs and
rounds a run stopped in before recording (never required, as for a listed
round's series; they are named in not_gated with the same advice): the list
spar report and spar hook gate.
Proposed defects kept as notes because their link was not confirmed are
listed (demoted), never a blocked reason.
The file has the review-gate/v1 keys (spar/docs/records.md) plus: expect_head, stages (required,
completed and waived reviewers of the latest round of each stage and series),
growth_findings, rounds[].base/dry_run/state, generated_at."""

# the design's key order first, then what Spar adds
KEY_ORDER = ("schema", "state", "reasons", "head", "base", "criteria_digest", "rounds", "required_reviewers",
             "completed", "waived", "findings", "open", "auto_deferred", "growth", "previous_gate_digest",
             "spar_version")

def _parser() -> Parser:
    p = command_parser("gate", "Judge a list of rounds and write the review-gate/v1 file.", EPILOG)
    p.add_argument("rounds", nargs="*", metavar="ROUND", help="round folders, every recorded round of their series")
    p.add_argument("--series", metavar="DIR",
                   help="instead of ROUND...: every round of the series but dry runs and rounds a run stopped "
                        "before recording (named, not gated), the list spar report and spar hook gate")
    p.add_argument("--out", required=True, metavar="FILE", help="the gate file to write (review-gate/v1)")
    p.add_argument("--expect-head", metavar="REV", help="the commit the latest round must have reviewed")
    return p


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    out = Path(args.out)
    not_gated: list[str] = []
    if args.series is not None:
        if args.rounds:
            raise UsageError("give round folders or --series, not both")
        listed = series_gate_list(series_folder(args.series, read="rounds"))
        args.rounds, not_gated = listed.rounds, listed.left_out
        if not args.rounds:
            raise Refused(f"series {quote(args.series)} holds no round to gate"
                          + "".join(f"; {note}" for note in not_gated))
    elif not args.rounds:
        raise UsageError("give the round folders to judge, or --series DIR")
    round_dirs = real_paths(args.rounds)
    series_dirs = sorted({os.path.dirname(r) for r in round_dirs})
    folders = series_round_folders(series_dirs)
    # every round folder of those series, listed or not: a gate file never goes into a round
    in_series = [os.path.join(series, name) for series, names in folders.items() if not isinstance(names, str)
                 for name in names]
    # a listed round is also in its series' listing: each folder compared once
    previous = paths.check_gate_out(out, dict.fromkeys(round_dirs + in_series), series_dirs)
    paths.check_out_folder(args.out)
    document = build_gate(args.rounds, args.expect_head, real_args=round_dirs, series_folders=folders)
    document["previous_gate_digest"] = previous
    document["spar_version"] = __version__
    document["generated_at"] = clock.now()
    ordered = {key: document.pop(key) for key in KEY_ORDER}
    ordered.update(document)
    if args.series is not None:
        ordered["not_gated"] = not_gated
    # the gate takes no lock: two gates may write the same --out at once
    atomic.write_text(out, atomic.dumps(ordered), unique_tmp=True)
    print(f"gate {ordered['state']}: {args.out}")
    for reason in ordered["reasons"]:
        print(f"  - {terminal_safe(reason)}")
    for note in not_gated + ordered["demoted"]:
        print(f"  note: {terminal_safe(note)}")
    for step in next_steps(ordered):
        print(f"  next: {terminal_safe(step)}")
    return EXIT_OK if ordered["state"] == "passed" else EXIT_NOT_CLEAN
