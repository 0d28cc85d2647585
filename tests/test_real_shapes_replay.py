"""The real CLIs' output for every failure shape of a model server (tests/realshapes.py;
captured by tests/test_real_failures.py into tests/data/real-cli/server/, with the CLIs'
versions in its README) replayed through the fake CLIs: Spar records the same outcome as
with the real CLI, without npm or the real programs."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.realshapes import FALLBACK, LIMIT, SHAPES
from tests.reviewerround import Round

CAPTURES = Path(__file__).parent / "data" / "real-cli" / "server"


def test_every_shape_has_its_capture_and_every_capture_its_shape():
    names = sorted({p.name.split(".")[0] for p in CAPTURES.glob("*.log")})
    assert names == sorted(s.name for s in SHAPES)


@pytest.mark.slow
@pytest.mark.anyio
async def test_each_captured_shape_is_recorded_as_with_the_real_cli(tmp_path):
    rnd = Round(tmp_path)
    jobs = []
    for shape in SHAPES:
        replay = {"stdout": str(CAPTURES / f"{shape.name}.stdout.log"),
                  "stderr": str(CAPTURES / f"{shape.name}.stderr.log"),
                  # what Spar ended goes on after its output, as the real CLI did
                  "exit_code": shape.exit_code, "hang": shape.ended_by_spar}
        jobs.append(rnd.job(shape.name, shape.cli, {"replay": replay}, fallback_model=FALLBACK,
                            timeout_seconds=LIMIT if shape.status == "timeout" else 60))
    outcomes = await rnd.run(jobs)
    for shape, outcome in zip(SHAPES, outcomes, strict=True):
        # an answer that is no review is judged when the round is recorded (invalid_output)
        invalid = shape.status == "invalid_output"
        assert outcome.status == ("completed" if invalid else shape.status), (shape.name, outcome.reason)
        reason = outcome.output_error if invalid else outcome.reason
        for words in shape.words:
            assert words in reason, (shape.name, reason)
        assert len(outcome.attempts) == shape.attempts, (shape.name, [a["reason"] for a in outcome.attempts])
