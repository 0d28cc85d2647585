"""`spar run`'s step 5, with a [verify] table: the recorded round's findings put to verifiers
of other vendors, then its repeats (`verify_findings` -> `VerifiedRound`)."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from spar.records.repeat_checks import RepeatChecksRecord
from spar.round.interface import Preset
from spar.round.reviewing import RecordedRound
from spar.verify.repeat_check import check_repeats, result_line
from spar.verify.verification import VerifyResult, result_lines, verifiable_problem, verify_round


@dataclass(frozen=True)
class VerifiedRound:
    """Step 5's result: the verification written, and the repeats put to verifiers."""

    verification: VerifyResult
    repeat_checks: RepeatChecksRecord

    def lines(self, out: Path) -> list[str]:
        """What stderr says of them."""
        lines = result_lines(self.verification, out)
        if self.repeat_checks["calls"] or self.repeat_checks["unchecked"]:
            lines.append(result_line(self.repeat_checks, out))
        return lines


def verify_findings(recorded: RecordedRound, preset_of: Callable[[str], Preset]) -> VerifiedRound | str | None:
    """Step 5, with a [verify] table: the round's findings put to verifiers of other vendors,
    then its repeats (None without one; why not, when the round cannot be verified now);
    `Interrupted` when SIGINT or SIGTERM stopped them (the round stays recorded)."""
    p = recorded.prepared.planned
    cfg = p.config.verify
    if cfg is None:
        return None
    problem = verifiable_problem(recorded.record)
    if problem:
        return problem
    presets = {c.preset: preset_of(c.preset) for c in cfg.reviewers}
    verification = verify_round(p.out, cfg, presets, env=os.environ, passthrough=p.config.env_passthrough,
                                backend=p.backend, sandbox=p.sandbox.bwrap, egress=p.sandbox.egress,
                                left=f"every verifier was stopped; round {p.out} is recorded, its verification "
                                     "is not (run `spar verify` on it)")
    checks = check_repeats(p.out, cfg, presets, env=os.environ, passthrough=p.config.env_passthrough,
                           backend=p.backend, sandbox=p.sandbox.bwrap, egress=p.sandbox.egress,
                           spend=verification.spend,
                           left=f"every verifier of the repeats was stopped; round {p.out} is recorded and "
                                "verified, its repeats are not (run `spar verify` on it)")
    return VerifiedRound(verification, checks)
