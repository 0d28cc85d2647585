"""`spar triage ROUND FINDING --to DISPOSITION [...]`, `spar triage ROUND --repeats` and
`spar triage ROUND --refuted [--apply]` (design §7, G27, G30, G32, G33; repeats:
docs/records.md "Series memory"; refuted: "verifications.json").

Under the series lock: read the round again, check the finding and the
disposition's needs, resolve `--commit` in the round's repository, check a
`--of` target (same round or an earlier round of the series, no
self-reference, no cycle), then append one ledger.jsonl line. A refused triage
writes nothing.
"""

from __future__ import annotations

import argparse
import re
import shlex
import sys
from pathlib import Path
from typing import Any, cast

from spar import git
from spar.argparsing import Parser, command_parser
from spar.errors import EXIT_OK, RecordError, Refused, UsageError, quote
from spar.judge.dispositions import (
    DISPOSITIONS,
    Key,
    LookupResult,
    Trace,
    check_request,
    parse_of,
    standing,
    trace,
    would_cycle,
)
from spar.judge.repeat_plan import check_problem
from spar.judge.repeats import group_members
from spar.judge.settle import claim_problem, verdict_problem
from spar.judge.verdicts import Refuted, Verdict, refuted, rejection_evidence, verdicts
from spar.records import atomic, clock, jsonl, lock, readers
from spar.records.model import Finding, LedgerLine, RoundRecord
from spar.records.record_rules import link_problem
from spar.records.repeat_checks import RepeatCheck, Unchecked, read_repeat_checks
from spar.round.summary_file import summary_text
from spar.series import position, repository_of, round_folder
from spar.textsafe import terminal_safe

EPILOG = """\
dispositions and what each needs (a text blank after trimming counts as not given):
  fixed      defect only; --commit REV (resolved in the round's repository),
             --failed-before TEXT and --passed-after TEXT (the check that
             failed before the fix and passes after it)
  duplicate  any class; --of ROUND/ID or ID: a finding of this round or of an
             earlier round of the series; not itself, no cycle
  rejected   any class; --evidence TEXT (why the finding is wrong)
  deferred   defect or requirement-question; --user-quote TEXT (the user's words)
  answered   requirement-question only; --user-quote TEXT (the user's answer)
An option the chosen disposition does not take is refused (65), so a ledger
line never carries a claim nobody asked for. --to is read literally: a value
that is not one of the five (other case or spaces included) is a disposition
the rules do not have, refused (65) like any other breach of them;
usage errors (64) are only a missing --to or an unknown option. FINDING and
--of are finding IDs compared literally (no trimming); a --of blank after
trimming counts as not given. Each triage appends one line to
ROUND/ledger.jsonl; the latest line per finding stands.

spar triage ROUND GROUP --to DISPOSITION [...]: a corroborated group at once,
named by its id in findings.json `group` (the letter G and its number): its
first member gets the disposition, every other member `duplicate --of` that
first member, one ledger line each, all checked before any is written.

spar triage ROUND --repeats: every finding of ROUND with a `repeat_of` and no
disposition of its own, whose earlier finding's standing disposition (traced
through duplicates) is rejected, fixed, answered or deferred, gets
`duplicate --of` that earlier finding: one ledger line each, as by hand. It
prints each line it wrote and each repeat it left alone, with why. Settling
takes more than the match that recorded `repeat_of`: a repeat whose proposed
class is more severe than the earlier finding's, whose claim names code (a code
span or an identifier) the earlier claim does not, whose claim does not restate
the earlier claim's failure (only their subject is shared, e.g. "the divide
function"), or that a verifier of another vendor confirmed while the decision it
would join is a rejection or a refutation, is only listed as a possible repeat;
--force marks it too. In a verified round (with [verify]), a repeat is settled
only when a verifier of another vendor called it the same problem
(ROUND/repeat-checks.json, written by spar run and spar verify).

spar triage ROUND --refuted [--apply]: after a verification (verifications.json),
prints for every finding a verifier refuted that has no disposition yet the
command that rejects it: spar triage ROUND FINDING --to rejected --evidence
'refuted by VERIFIER (CALL): its evidence', shell-quoted, the evidence shown
escaped (no control character; its first 1000 characters when longer, the call
keeping it whole) and recorded exactly so when the line is run. A verdict covers
the finding it names alone: another finding of its group keeps standing.
--apply records them instead, one ledger line each as that command would, and
prints what it wrote. Lines starting with # say what was left alone. A round
never verified is refused (65); nothing refuted exits 0.
A verdict is advice: nothing is disposed unless you run the lines or --apply."""


def _parser() -> Parser:
    p = command_parser("triage", "Give a finding a disposition; the history stays in ledger.jsonl.", EPILOG)
    p.add_argument("round", metavar="ROUND", help="the round folder")
    p.add_argument("finding", metavar="FINDING", nargs="?",
                   help="a finding id of that round's findings.json, or a group id (findings.json `group`)")
    p.add_argument("--to", metavar="DISPOSITION",
                   help=", ".join(DISPOSITIONS) + " (literal; any other value is refused, exit 65)")
    p.add_argument("--repeats", action="store_true",
                   help="mark every repeat of a decided earlier finding a duplicate of it (no FINDING, no --to)")
    p.add_argument("--force", action="store_true",
                   help="with --repeats: mark also the possible repeats (more severe, naming other code, not "
                        "restating the failure, or confirmed against a rejection)")
    p.add_argument("--refuted", action="store_true",
                   help="print the rejection of every refuted finding without a disposition (no FINDING, no --to)")
    p.add_argument("--apply", action="store_true", help="with --refuted: record those rejections")
    p.add_argument("--commit", metavar="REV")
    p.add_argument("--of", metavar="FINDING")
    p.add_argument("--evidence", metavar="TEXT")
    p.add_argument("--user-quote", metavar="TEXT")
    p.add_argument("--failed-before", metavar="TEXT")
    p.add_argument("--passed-after", metavar="TEXT")
    return p


class _RoundCache:
    """Rounds of one series read on demand (round.json, findings, standing ledger)."""

    def __init__(self, series: Path):
        self.series = series
        self.rounds: dict[str, tuple[RoundRecord, dict[str, Finding], dict[str, LedgerLine]]] = {}
        self.verdicts: dict[str, dict[str, Verdict]] = {}

    def get(self, name: str) -> tuple[RoundRecord, dict[str, Finding], dict[str, LedgerLine]]:
        """(round.json, findings by id, standing ledger line by finding id)."""
        if name not in self.rounds:
            folder = self.series / name
            if not (folder.is_dir() and (folder / readers.ROUND_FILE).exists()):
                raise Refused(f"--of: {quote(name)} is not a round of the series {self.series}")
            round_json = readers.read_round(folder)
            findings = _recorded_findings(folder, round_json)
            ledger = standing(readers.read_ledger(folder, findings))
            self.rounds[name] = (round_json, {f["id"]: f for f in findings}, ledger)
        return self.rounds[name]

    def verdicts_of(self, name: str) -> dict[str, Verdict]:
        """Finding id -> its verdict in round `name` (verifications.json; empty when never verified)."""
        if name not in self.verdicts:
            findings = list(self.get(name)[1].values())
            self.verdicts[name] = verdicts(readers.read_verifications(self.series / name, findings), findings)
        return self.verdicts[name]

    def position(self, name: str) -> tuple[str, str] | None:
        """A readable round's place in series order, for the link rule; None otherwise."""
        try:
            return position(self.get(name)[0], name)
        except (RecordError, Refused):
            return None

    def lookup(self, key: Key) -> LookupResult:
        """For following a chain already in the ledgers: a link to a round that is
        gone (or never had findings) ends the chain; it is not this triage's --of,
        so it is not refused as one. An unreadable round still refuses (G32)."""
        try:
            _, ids, ledger = self.get(key[0])
        except RecordError:
            raise
        except Refused as err:
            return "missing", str(err)
        if key[1] not in ids:
            return "missing", f"{key[0]}/{key[1]} does not exist"
        return "ok", ledger.get(key[1])


def _recorded_findings(folder: Path, round_json: RoundRecord) -> list[Finding]:
    if round_json.get("dry_run") is True:
        raise Refused(f"round {folder.name} is a dry run; it has no findings")
    if not round_json.get("recorded_at") and not round_json.get("finished_at"):
        # a findings.json without the final round.json is a run killed part-way (unfinished)
        raise Refused(f"round {folder.name} has not recorded findings yet (it was not finished)")
    return readers.read_findings(folder, round_json=round_json)


def _resolve_commit(round_json: RoundRecord, rev: str) -> str:
    repo = repository_of(round_json)
    if not isinstance(repo, str) or not repo:
        raise RecordError(f"round {round_json.get('name')}: round.json names no repository")
    try:
        return git.resolve_commit(repo, rev, what="--commit")
    except git.GitError as exc:
        raise Refused(f"--commit {quote(rev)}: {exc}") from None


def triage_line(round_dir: Path, series: Path, finding_id: str, disposition: str,
                options: dict[str, Any]) -> dict[str, Any]:
    """Everything a triage checks, reading the records; returns the ledger line (without `at`)."""
    cache = _RoundCache(series)
    here = round_dir.name
    round_json, findings, _ = cache.get(here)
    if finding_id not in findings:  # literal (G30)
        raise Refused(f"round {here} has no finding {quote(finding_id)}")
    cls = findings[finding_id].get("class")
    if not isinstance(cls, str):
        raise RecordError(f"{round_dir / readers.FINDINGS_FILE}: finding {finding_id} has no class")
    given_options = check_request(finding_id, cls, disposition, options)
    if "commit" in given_options:
        given_options["commit"] = _resolve_commit(round_json, given_options["commit"])
    if "of" in given_options:
        target_round, target_id = parse_of(given_options["of"], here)
        target: Key = (target_round, target_id)
        if target == (here, finding_id):
            raise Refused(f"--of {quote(given_options['of'])}: a finding cannot be a duplicate of itself")
        target_json, target_ids, _ = cache.get(target_round)
        places = {here: position(round_json, here), target_round: position(target_json, target_round)}
        problem = link_problem(here, target_round, places.get)
        if problem:
            raise Refused(f"--of {quote(given_options['of'])}: {problem}")
        if target_id not in target_ids:
            raise Refused(f"--of {quote(given_options['of'])}: round {target_round} has no finding {quote(target_id)}")
        if would_cycle((here, finding_id), target, cache.lookup):
            raise Refused(f"--of {quote(given_options['of'])}: {target_round}/{target_id} already traces back to "
                          f"{here}/{finding_id} (a duplicate cycle)")
        given_options["of"] = f"{target_round}/{target_id}"
    line = {"finding": finding_id, "disposition": disposition, "auto": False}
    line.update(given_options)
    return line


GROUP = re.compile(r"G[1-9][0-9]*")


def group_lines(round_dir: Path, series: Path, group_id: str, disposition: str,
                options: dict[str, Any]) -> list[dict[str, Any]]:
    """The ledger lines (without `at`) that dispose every member of a group: the first
    member the disposition, the others `duplicate --of` it; reading only."""
    _, findings, _ = _RoundCache(series).get(round_dir.name)
    members = group_members(list(findings.values()), group_id)
    if not members:
        raise Refused(f"round {round_dir.name} has no finding or group {quote(group_id)}")
    first = members[0]["id"]
    lines = [triage_line(round_dir, series, first, disposition, options)]
    for m in members[1:]:
        lines.append(triage_line(round_dir, series, m["id"], "duplicate", {"of": first}))
    return lines


def summary_after(round_dir: Path, ledger: list[LedgerLine]) -> str:
    """summary.md as it reads once `ledger` is on disk. Triage does not read
    waivers.jsonl for itself (G32: only waive and gate do), so an unreadable one
    never refuses a triage; the summary then names no waiver, as the gate would."""
    return summary_text(round_dir, ledger)


# what an earlier decision must be for its repeats to be settled by --repeats
SETTLED_BY_REPEAT = ("rejected", "fixed", "answered", "deferred")
_Asked = tuple[list[RepeatCheck], list[Unchecked]]  # what repeat-checks.json says: calls, unchecked


def _settle_problem(f: Finding, traced: Trace, decided: str, cache: _RoundCache, here: str,
                    checks: _Asked | None) -> str | None:
    """Why the earlier decision may not settle `f` without a person: its claim against the
    earlier finding's (spar.judge.settle.claim_problem), then what verifiers said of it and
    of the chain it would join (verdict_problem), then, when the round's repeats were put
    to verifiers (`checks`), whether one called it the same problem; None when nothing
    holds it back."""
    target = traced.chain[0]
    earlier = cache.get(target[0])[1].get(target[1])
    if earlier is None:
        return None  # traced already: a missing target never settles anything
    why = claim_problem(str(f.get("proposed_class")), str(f.get("claim") or ""),
                        str(earlier.get("proposed_class")), str(earlier.get("claim") or ""))
    if why is not None:
        return why
    round_json = cache.get(here)[0]
    authors = {str(r.get("name")): str(r.get("preset") or r.get("name")) for r in round_json.get("reviewers", [])}
    mine = cache.verdicts_of(here).get(f["id"])
    refuted_in_chain = []
    if mine is not None and mine.verdict == "confirmed":  # the chain's rounds are read only when it matters
        refuted_in_chain = ["/".join(key) for key in traced.chain
                            if (v := cache.verdicts_of(key[0]).get(key[1])) is not None and v.verdict == "refuted"]
    why = verdict_problem(mine, authors.get(str(f.get("reviewer")), ""), decided, refuted_in_chain)
    if why is None and checks is not None:
        return check_problem(f["id"], *checks)
    return why


def repeat_lines(round_dir: Path, series: Path, *, force: bool = False
                 ) -> tuple[list[tuple[dict[str, Any], str]], list[str]]:
    """([(ledger line without `at`, the earlier decision)] for --repeats, notes on repeats
    left alone), reading only. Without `force`, a repeat the repeat rule holds back is a note."""
    cache = _RoundCache(series)
    here = round_dir.name
    round_json, findings, own = cache.get(here)
    record = read_repeat_checks(round_dir, set(findings))
    checks: _Asked | None = (record["calls"], record["unchecked"]) if record is not None else None
    if checks is None and round_json.get("verification"):
        # verified, yet its repeats were never put to a verifier (stopped, or an older Spar):
        # no repeat is settled unasked
        checks = ([], [])
    lines, notes = [], []
    for fid, f in findings.items():
        rep = f.get("repeat_of")
        if not (isinstance(rep, dict) and isinstance(rep.get("round"), str) and isinstance(rep.get("finding"), str)):
            continue
        target = f"{rep['round']}/{rep['finding']}"
        if fid in own:
            notes.append(f"{fid}: left alone, it is {own[fid].get('disposition')} already (repeat of {target})")
            continue
        traced = trace((rep["round"], rep["finding"]), cache.lookup, position=cache.position)
        end = cache.lookup(traced.end)[1] if traced.state == "disposed" else None
        decided = end.get("disposition") if isinstance(end, dict) else None
        if decided not in SETTLED_BY_REPEAT:
            why = f"{target} has no standing decision" if traced.state in ("open", "disposed") else traced.detail
            notes.append(f"{fid}: left alone, {why}")
            continue
        why_not = None if force else _settle_problem(f, traced, str(decided), cache, here, checks)
        if why_not:
            notes.append(f"{fid}: possible repeat of {target} ({decided}), not marked: {why_not} "
                         "(triage it by hand, or --repeats --force)")
            continue
        lines.append((triage_line(round_dir, series, fid, "duplicate", {"of": target}), decided))
    return lines, notes


def _stamp(line: dict[str, Any], at: str) -> LedgerLine:
    line = dict(line)
    return cast(LedgerLine, {"finding": line.pop("finding"), "disposition": line.pop("disposition"),
                             "auto": line.pop("auto"), "at": at, **line})


def _main_repeats(args: argparse.Namespace) -> int:
    if args.finding is not None or args.to is not None or any(
            v is not None for v in (args.commit, args.of, args.evidence, args.user_quote,
                                    args.failed_before, args.passed_after)):
        raise UsageError("triage: --repeats takes the ROUND alone (no FINDING, --to or disposition options)")
    round_dir, series = round_folder(args.round)
    with lock.series_lock(series):
        lines, notes = repeat_lines(round_dir, series, force=args.force)
        ledger = readers.read_ledger(round_dir, readers.read_findings(round_dir))
        at = clock.now()
        stamped = [_stamp(line, at) for line, _ in lines]
        summary = summary_after(round_dir, ledger + stamped)
        for line in stamped:
            jsonl.append(round_dir / readers.LEDGER_FILE, line, create=False)
        if stamped:
            atomic.write_text(round_dir / "summary.md", summary)
    for line, (_, decided) in zip(stamped, lines, strict=False):
        print(f"round {round_dir.name}: {line['finding']} -> duplicate --of {line['of']} ({decided})")
    for note in notes:
        print(terminal_safe(f"round {round_dir.name}: {note}"))  # a note may quote a claim's code span
    if not stamped:
        print(f"round {round_dir.name}: no repeat to settle")
    return EXIT_OK


def refuted_lines(round_dir: Path, series: Path) -> tuple[list[tuple[Refuted, list[dict[str, Any]]]], list[str]]:
    """([(a refuted finding or group, its ledger lines without `at`)], notes on refuted ones left
    alone), reading only; each line checked as `spar triage ROUND ID --to rejected` checks it."""
    _, findings, own = _RoundCache(series).get(round_dir.name)
    record = readers.read_verifications(round_dir, list(findings.values()))
    if record is None:
        raise Refused(f"round {round_dir.name} was never verified (it has no {readers.VERIFICATIONS_FILE}): "
                      "nothing is refuted until a verification ran (spar verify)")
    todo, notes = refuted(record, list(findings.values()), own)
    out = []
    for r in todo:
        # escaped (no control character, one line) in the ledger too: the line --refuted
        # prints then records, when run, exactly what --apply records
        options = {"evidence": terminal_safe(rejection_evidence(r.verdict))}
        out.append((r, [triage_line(round_dir, series, r.target, "rejected", options)]))
    return out, notes


def _main_refuted(args: argparse.Namespace) -> int:
    if args.finding is not None or args.to is not None or args.repeats or args.force or any(
            v is not None for v in (args.commit, args.of, args.evidence, args.user_quote,
                                    args.failed_before, args.passed_after)):
        raise UsageError("triage: --refuted takes the ROUND alone (no FINDING, --to, --repeats or disposition "
                         "options; --apply to record)")
    round_dir, series = round_folder(args.round)
    with lock.series_lock(series):
        todo, notes = refuted_lines(round_dir, series)
        stamped: list[LedgerLine] = []
        if args.apply and todo:
            ledger = readers.read_ledger(round_dir, readers.read_findings(round_dir))
            at = clock.now()
            stamped = [_stamp(line, at) for _, lines in todo for line in lines]
            summary = summary_after(round_dir, ledger + stamped)
            for line in stamped:
                jsonl.append(round_dir / readers.LEDGER_FILE, line, create=False)
            atomic.write_text(round_dir / "summary.md", summary)
    for r, lines in todo:
        if args.apply:
            for written in lines:
                of = f" --of {written['of']}" if written["disposition"] == "duplicate" else ""
                print(terminal_safe(f"round {round_dir.name}: {written['finding']} -> {written['disposition']}{of} "
                                    f"({r.verdict.words()})"))
        else:
            print(terminal_safe(shlex.join(["spar", "triage", args.round, r.target, "--to", "rejected",
                                            "--evidence", lines[0]["evidence"]])))
    for note in notes:
        print(terminal_safe(f"# round {round_dir.name}: {note}"))
    if not todo:
        print(f"# round {round_dir.name}: no refuted finding without a disposition")
    return EXIT_OK


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    if args.refuted:
        return _main_refuted(args)
    if args.apply:
        raise UsageError("triage: --apply goes with --refuted only")
    if args.repeats:
        return _main_repeats(args)
    if args.force:
        raise UsageError("triage: --force goes with --repeats only")
    if args.finding is None or args.to is None:
        raise UsageError("triage: give FINDING and --to DISPOSITION, or --repeats")
    options = {"commit": args.commit, "of": args.of, "evidence": args.evidence, "user_quote": args.user_quote,
               "failed_before": args.failed_before, "passed_after": args.passed_after}
    if args.to not in DISPOSITIONS:
        raise Refused(f"--to {quote(args.to)} is not a disposition (one of {', '.join(DISPOSITIONS)})")
    round_dir, series = round_folder(args.round)
    with lock.series_lock(series):
        if GROUP.fullmatch(args.finding):
            lines = group_lines(round_dir, series, args.finding, args.to, options)
        else:
            lines = [triage_line(round_dir, series, args.finding, args.to, options)]
        # an unreadable, missing or impossible ledger is refused, never appended to or started afresh
        ledger = readers.read_ledger(round_dir, readers.read_findings(round_dir))
        at = clock.now()
        stamped = [_stamp(line, at) for line in lines]
        # everything the summary needs is read before the append: a refusal after it
        # would say "nothing written" about a line that was written
        summary = summary_after(round_dir, ledger + stamped)
        for line in stamped:
            jsonl.append(round_dir / readers.LEDGER_FILE, line, create=False)
        atomic.write_text(round_dir / "summary.md", summary)  # the disposition column follows the ledger
    for line in stamped:
        of = f" --of {line['of']}" if len(stamped) > 1 and line["disposition"] == "duplicate" else ""
        print(f"round {round_dir.name}: {line['finding']} -> {line['disposition']}{of}", file=sys.stdout)
    return EXIT_OK
