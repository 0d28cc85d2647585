"""`spar verify ROUND`: cross-vendor verification of a recorded round, run or run again.

Each finding proposed or classed defect or hardening (each member of a corroborated
group on its own) is put to a `[verify]` reviewer of another vendor; verdicts go to ROUND/verifications.json, listed in
round.json. A verdict never changes a finding's class, its disposition or the gate.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from spar.argparsing import Parser, command_parser
from spar.backend import async_backend
from spar.config.load import load_config
from spar.config.model import AppliedConfig, VerifyConfig
from spar.errors import EXIT_NOT_CLEAN, EXIT_OK, Refused
from spar.presets import get_preset
from spar.proc.process import reviewer_guard
from spar.records import lock, readers
from spar.records.model import ReviewerStatus
from spar.records.readers import REPEAT_CHECKS_FILE
from spar.round.sandboxing import round_sandbox
from spar.series import round_folder
from spar.textsafe import terminal_safe
from spar.verify.repeat_check import check_repeats, result_line
from spar.verify.verification import result_lines, verifiable_problem, verify_round

SUMMARY = "Verify a recorded round's findings with reviewers of other vendors."

EPILOG = """\
The reviewers that verify come from the [verify] table of the user
configuration (reviewers = [NAME, ...], optional max_findings, default 20
calls, and max_cost_usd). Each finding its reviewer proposed, or Spar
classed, defect or hardening goes on its own (each member of a corroborated
group too: a verdict covers only the claim read) to one of them whose preset
(vendor) is not the author's; most vendors first, then defects before
hardening. A verifier answers with one JSON object: {"verdict": "confirmed" |
"refuted" | "unsure", "evidence": TEXT of at most 8000 characters,
"location": LOCATION or null}; anything else (a key given twice included) is
recorded as unsure with the reason. Calls run in parallel, one at a time per
verifier, each under that reviewer's timeout_seconds; once the finished calls
cost max_cost_usd, or one that ran reported no cost (codex), no further call
starts (running calls finish).

Running it again replaces ROUND/verify/ (the calls' inputs and logs), then
ROUND/verifications.json, round.json's "verification" and summary.md, under
the series lock. Then each repeat (findings.json repeat_of) that spar triage
--repeats could settle goes to a [verify] reviewer of another vendor than its
author ("the same problem as the earlier finding?"; an answer {"verdict":
"same" | "different" | "unsure", "evidence": TEXT}): ROUND/verify/repeats/ and
ROUND/repeat-checks.json; --repeats then settles only a repeat a verifier
called the same problem. A verdict never changes a finding's class, disposition or
the gate.

Exit codes: 0 written, every call answered; 1 written, a call did not
complete or gave no valid answer (its verdict is unsure); 65 refused (no
[verify] table, a dry run, a round not finished, unreadable records);
70 internal error or a write that may have been applied; 130 or 143
interrupted (nothing but the calls' logs written)."""


def _parser() -> Parser:
    p = command_parser("verify", SUMMARY, EPILOG)
    p.add_argument("round", metavar="ROUND", help="the round folder")
    return p


def verify_config(cfg: AppliedConfig) -> VerifyConfig:
    if cfg.verify is None:
        where = ", ".join(f["path"] for f in cfg.files if f.get("role") == "user") or "none found"
        raise Refused(f"the user configuration ({where}) has no [verify] table: it names no reviewers that verify "
                      '(add [verify] with reviewers = ["NAME", ...])')
    return cfg.verify


def _check(round_dir: Path) -> None:
    problem = verifiable_problem(readers.read_round(round_dir))
    if problem:
        raise Refused(problem)


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    cfg = load_config(None)  # [verify] and its reviewers are the user configuration's alone
    config = verify_config(cfg)
    backend = async_backend(os.environ)
    round_dir, series = round_folder(args.round)
    _check(round_dir)  # before the lock: a refusal waits for nothing
    presets = {r.preset: get_preset(r.preset) for r in config.reviewers}
    sandbox = round_sandbox(cfg.sandbox, os.environ.get("PATH"))  # the verifiers run in it too
    # the guard is forked before a progress display starts its thread
    with reviewer_guard(), lock.series_lock(series):
        _check(round_dir)  # read again under the lock
        result = verify_round(round_dir, config, presets, env=os.environ, passthrough=cfg.env_passthrough,
                              backend=backend, sandbox=sandbox.bwrap, egress=sandbox.egress,
                              left="every verifier was stopped; verifications.json was not written")
        for line in result_lines(result, round_dir):
            print(f"spar: {terminal_safe(line)}", file=sys.stderr)
        checks = check_repeats(round_dir, config, presets, env=os.environ, passthrough=cfg.env_passthrough,
                               backend=backend, sandbox=sandbox.bwrap, egress=sandbox.egress, spend=result.spend,
                               left=f"every verifier of the repeats was stopped; {REPEAT_CHECKS_FILE} was not written")
    if checks["calls"] or checks["unchecked"]:
        print(f"spar: {terminal_safe(result_line(checks, round_dir))}", file=sys.stderr)
    calls = [*result.record["calls"], *checks["calls"]]
    completed = all(c["status"] == ReviewerStatus.COMPLETED for c in calls)
    return EXIT_OK if completed else EXIT_NOT_CLEAN
