"""The cap decision of `spar run` (design §8), as a pure function over records already read.

cap = project cap of the stage + the `by` of each extension of that stage.
A non-dry round is counted unless an earlier non-dry round of the series has
the same stage, base, head and packet_sha256 (a rerun of unfinished
reviewers). Dry runs never make a later round free: they ran no reviewer.
"""

from __future__ import annotations

from typing import NamedTuple

from spar.config.model import CAP_KEYS
from spar.errors import Refused
from spar.records.model import ExtensionLine, RoundRecord


class CapDecision(NamedTuple):
    """Whether a round may run under its stage's cap, and whether it counts."""

    stage: str
    cap: int
    project_cap: int
    extended_by: int
    counted_rounds: tuple[str, ...]  # names of the series' counted rounds of this stage
    counted: bool  # whether the new round is counted
    rerun_of: str | None  # the earlier round with the same input, when not counted


def stage_cap(stage: str, caps: dict[str, int], extensions: list[ExtensionLine]) -> tuple[int, int, int]:
    """(cap, project cap, sum of extensions) for one stage."""
    project = int(caps[CAP_KEYS[stage]])
    extra = sum(int(e.get("by", 0)) for e in extensions if e.get("stage") == stage)
    return project + extra, project, extra


def decide(
    *,
    series: str,
    stage: str,
    base: str,
    head: str,
    packet_sha256: str,
    dry_run: bool,
    caps: dict[str, int],
    extensions: list[ExtensionLine],
    rounds: list[RoundRecord],
) -> CapDecision:
    """`rounds` are the series' round.json objects (each with `name`); refused (65) at the cap."""
    cap, project, extra = stage_cap(stage, caps, extensions)
    counted_rounds = tuple(
        r["name"] for r in rounds if r.get("stage") == stage and r.get("counted") and not r.get("dry_run")
    )
    rerun_of = None
    for r in rounds:
        if r.get("dry_run"):
            continue
        if (r.get("stage"), r.get("base"), r.get("head"), r.get("packet_sha256")) == (stage, base, head, packet_sha256):
            rerun_of = r["name"]
            break
    counted = not dry_run and rerun_of is None
    if counted and len(counted_rounds) >= cap:
        names = ", ".join(counted_rounds) if counted_rounds else "none"
        # spar extend refuses a code extension without a cause: the hint must be runnable
        cause = (" --cause C (C: churn, recurring, unrelated, hardening or other)"
                 if stage == "code" else "")
        raise Refused(
            f"stage {stage} of series {series}: {len(counted_rounds)} counted rounds ({names}) "
            f"already reach the cap of {cap} (project cap {project}, extensions {extra}); "
            f"to allow more, run: spar extend {series} --stage {stage} --by N{cause}"
        )
    return CapDecision(stage, cap, project, extra, counted_rounds, counted, rerun_of)
