"""Real CLI output (tests/data/real-cli/, byte for byte as captured; see its README) replayed
through the fake CLIs: Spar records what that README says it should."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from spar.progress import Progress
from spar.round.recording import apply_outcome
from tests.proctools import LIMITS
from tests.reviewerround import Round

CAPTURES = Path(__file__).parent / "data" / "real-cli"


def _replay(name: str, **kw) -> dict:
    return {"replay": {"stdout": str(CAPTURES / f"{name}.stdout.log"),
                       "stderr": str(CAPTURES / f"{name}.stderr.log"), **kw}}


def test_every_capture_is_replayed_here():
    names = sorted({p.name.split(".")[0] for p in CAPTURES.glob("*.log")})
    assert names == sorted(["noauth-1-claude", "effort-1-claude", "fakekey-300-claude", "noauth-1-codex",
                            "fakekey-300-codex", "offline-900-codex"])


@pytest.mark.anyio
async def test_claude_captures(tmp_path):
    rnd = Round(tmp_path)
    # Claude Code 2.1.197 exits 1 after a result with is_error true
    jobs = [rnd.job("noauth", "claude", _replay("noauth-1-claude", exit_code=1), model="opus",
                    fallback_model="sonnet"),
            rnd.job("effort", "claude", _replay("effort-1-claude", exit_code=1), effort="minimal"),
            rnd.job("fakekey", "claude", _replay("fakekey-300-claude", exit_code=1), fallback_model="sonnet")]
    stream = io.StringIO()
    noauth, effort, fakekey = await rnd.run(jobs, progress=Progress(stream))

    for outcome in (noauth, effort):
        assert outcome.status == "unavailable"
        assert outcome.reason.startswith("authentication: ")
        assert "Not logged in" in outcome.reason and "run /login" in outcome.reason
        assert outcome.observed_model is None  # init named a model, but only <synthetic> answered
        assert "observed_model" not in outcome.attempts[0]
    assert len(noauth.attempts) == 1  # no fallback model for a login problem
    assert noauth.warnings == []
    assert len(effort.warnings) == 1 and "ignored the --effort value" in effort.warnings[0]
    assert "Unknown --effort value 'minimal'" in effort.warnings[0]
    # ... and it becomes a round warning
    rj = {"name": "r", "head": "abc1234", "config": {"angles": []}, "warnings": [],
          "reviewers": [{"name": "effort", "attempts": []}]}
    apply_outcome(rj, effort, ctx=None)
    assert rj["warnings"] == [f"effort: {effort.warnings[0]}"]

    assert fakekey.status == "failed"  # not a refusal phrase: no fallback either
    assert len(fakekey.attempts) == 1
    assert "API Error: Unable to connect to API (FailedToOpenSocket)" in fakekey.reason
    assert "spar: fakekey: API retry 10/10" in stream.getvalue().splitlines()
    # what the result event reported
    assert fakekey.attempts[0]["usage"]["cost_usd"] == 0.0
    assert fakekey.attempts[0]["usage"]["input_tokens"] == 0


@pytest.mark.slow
@pytest.mark.anyio
async def test_codex_captures_end_as_timeouts(tmp_path):
    notices = ["spar: fakekey-300: reconnecting 5/5", "spar: fakekey-300: reconnecting: waiting for network"]
    for k in LIMITS:  # until the replay is out before the limit (a loaded machine may need longer)
        rnd = Round(tmp_path / f"limit-{k}")
        jobs = [rnd.job(name, "codex", _replay(f"{name}-codex", hang=True), timeout_seconds=k,
                        fallback_model="gpt-5-mini")
                for name in ("noauth-1", "fakekey-300")]
        stream = io.StringIO()
        outcomes = await rnd.run(jobs, progress=Progress(stream))
        for outcome in outcomes:
            # the notices are transient: only the time limit ends these runs
            assert outcome.status == "timeout", outcome.reason
            assert len(outcome.attempts) == 1
        lines = stream.getvalue().splitlines()
        if all(n in lines for n in notices):
            break
    for outcome in outcomes:
        assert "process group killed" in outcome.reason
    assert all(n in lines for n in notices), lines


def test_captures_are_byte_for_byte_the_shared_ones():
    readme = (CAPTURES / "README.md").read_text(encoding="utf-8")
    assert "Byte-for-byte standard output and standard error" in readme
    # a line the README names, exactly as captured
    assert b'"error":"authentication_failed"' in (CAPTURES / "noauth-1-claude.stdout.log").read_bytes()


@pytest.mark.slow
def test_spar_run_records_the_ignored_effort_as_a_round_warning(tmp_path):
    import json

    from tests.runsetup import make_setup

    s = make_setup(tmp_path)
    s.configure([{"name": "claude", "preset": "claude", "effort": "minimal"}])
    s.scenario({"claude": _replay("effort-1-claude", exit_code=1)})
    proc = s.run()
    assert proc.returncode == 1, proc.stderr.decode()
    rj = json.loads((s.repo / "reviews" / "r1" / "round.json").read_text(encoding="utf-8"))
    (entry,) = rj["reviewers"]
    assert entry["status"] == "unavailable" and entry["reason"].startswith("authentication: ")
    (warning,) = [w for w in rj["warnings"] if w.startswith("claude: ")]
    assert "claude ignored the --effort value Spar passed" in warning and "'minimal'" in warning
    assert f"spar: warning: {warning}" in proc.stderr.decode().splitlines()
