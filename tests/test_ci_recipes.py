"""examples/ci: the GitHub Actions and GitLab CI recipes parse and wire the
report they upload to what the script writes; the script they run works on a
local repository: exit 0 when the gate passes, 1 exactly when it is blocked,
and a tool failure (70) said as such, never as a verdict."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.gitrepo import commit, git, make_repo
from tests.runsetup import FAKE_ENV, finding, result

ROOT = Path(__file__).resolve().parent.parent
CI = ROOT / "examples" / "ci"
SCRIPT = CI / "spar-ci.sh"
FAKES = ROOT / "tests" / "fakes"


def load(name: str) -> dict:
    return yaml.safe_load((CI / name).read_text(encoding="utf-8"))


def test_github_workflow_parses_and_uploads_what_the_script_writes():
    wf = load("github-actions.yml")
    assert "pull_request" in wf[True]  # YAML 1.1 reads the key `on` as True
    assert wf["permissions"]["security-events"] == "write"
    assert wf["permissions"]["actions"] == "read"  # upload-sarif reads the run; a private repository's 403s without
    steps = wf["jobs"]["review"]["steps"]
    review = next(s for s in steps if s.get("name") == "Review round")
    words = review["run"].split()
    assert words[:2] == ["bash", ".github/spar-ci.sh"] and words[-2:] == ["sarif", "spar.sarif"]
    upload = next(s for s in steps if str(s.get("uses", "")).startswith("github/codeql-action/upload-sarif"))
    assert upload["with"]["sarif_file"] == "spar.sarif" and "always()" in upload["if"]
    checkout = next(s for s in steps if str(s.get("uses", "")).startswith("actions/checkout"))
    assert checkout["with"]["fetch-depth"] == 0


def test_gitlab_job_parses_and_publishes_the_code_quality_report():
    job = load("gitlab-ci.yml")["spar-review"]
    assert job["rules"][0]["if"] == '$CI_PIPELINE_SOURCE == "merge_request_event"'
    line = next(s for s in job["script"] if "spar-ci.sh" in s)
    words = line.split()
    assert words[-2:] == ["codeclimate", "gl-code-quality-report.json"]
    assert job["artifacts"]["reports"]["codequality"] == "gl-code-quality-report.json"
    assert job["artifacts"]["when"] == "always" and job["variables"]["GIT_DEPTH"] == "0"


# ---------------------------------------------------------------- the script on a local repository


@pytest.fixture
def ci(tmp_path):
    """A repository with a change (base..head) checked out at head, a CI-like
    environment (empty HOME, the fake claude and codex on PATH, `spar` a wrapper
    around this checkout's spar)."""
    repo = make_repo(tmp_path, {"app.py": "def f(x):\n    return x\n"})
    base = git(repo, "rev-parse", "HEAD").strip()
    head = commit(repo, {"app.py": "def f(x):\n    return 1 / x\n"})
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("claude", "codex"):
        (bin_dir / name).symlink_to(FAKES / name)
    spar = bin_dir / "spar"
    spar.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m spar "$@"\n')
    spar.chmod(0o755)
    home = tmp_path / "home"
    (home / ".config" / "jaekit").mkdir(parents=True)
    # the one line a user would add for the fakes, which `spar init` keeps: they read their scenario
    # from the environment (given inline: where bwrap works, they run in Spar's sandbox)
    (home / ".config" / "jaekit" / "spar.toml").write_text(f"env_passthrough = {json.dumps(FAKE_ENV)}\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPAR_", "XDG_", "GIT_"))}
    env.update(HOME=str(home), GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1",
               PYTHONPATH=str(ROOT), SPAR_ROUND="ci-1",
               PATH=os.pathsep.join([str(bin_dir), str(Path(sys.executable).parent), "/usr/bin", "/bin"]))

    def answer(findings: list[dict]) -> None:
        verdict = "blocking_findings" if findings else "no_blocking_findings"
        env["SPAR_FAKE_SCENARIO"] = json.dumps({"result": result(head, findings=findings, verdict=verdict)})

    def run(fmt: str = "sarif", report: str = "spar.sarif") -> subprocess.CompletedProcess:
        return subprocess.run(["bash", str(SCRIPT), base, head, fmt, report], cwd=repo, env=env,
                              capture_output=True, text=True, timeout=300)

    return repo, env, answer, run, bin_dir


@pytest.mark.slow
def test_clean_review_passes_and_writes_the_sarif(ci):
    repo, env, answer, run, _ = ci
    answer([])
    proc = run()
    assert proc.returncode == 0, proc.stderr
    assert "gate passed" in proc.stderr
    report = json.loads((repo / "spar.sarif").read_text())
    assert report["version"] == "2.1.0" and [len(r["results"]) for r in report["runs"]] == [0, 0]
    gate = json.loads((repo / "reviews" / "gate.json").read_text())
    assert gate["schema"] == "review-gate/v1"


@pytest.mark.slow
def test_blocked_gate_fails_with_1_and_the_report_is_still_written(ci):
    repo, env, answer, run, _ = ci
    answer([finding(location="head/app.py:2", claim="f(0) divides by zero", link_kind="none", link="",
                    introduced_by_change="yes", regression="yes")])
    proc = run("codeclimate", "gl-code-quality-report.json")
    assert proc.returncode == 1, proc.stderr
    assert "GATE BLOCKED" in proc.stderr and "TOOL FAILURE" not in proc.stderr
    issues = json.loads((repo / "gl-code-quality-report.json").read_text())
    # claude and codex report the same defect: one corroborated group, one issue (issue 22 point 4)
    assert len(issues) == 1 and issues[0]["location"]["path"] == "app.py"
    assert issues[0]["other_locations"] == [{"path": "app.py", "lines": {"begin": 2}}]


def _wrap_spar_gate(bin_dir, gate_script: str) -> None:
    """The `spar` the recipe runs becomes a shell script that runs `gate_script` for
    `spar gate` and the real spar (moved to real-spar) for every other command."""
    real = bin_dir / "spar"
    (bin_dir / "real-spar").write_bytes(real.read_bytes())
    (bin_dir / "real-spar").chmod(0o755)
    real.write_text(f'#!/bin/sh\nif [ "$1" = gate ]; then {gate_script}; fi\nexec "{bin_dir / "real-spar"}" "$@"\n')


@pytest.mark.slow
def test_tool_failure_is_70_and_said_to_be_no_verdict(ci):
    repo, env, answer, run, bin_dir = ci
    answer([])
    _wrap_spar_gate(bin_dir, 'echo "spar: internal error" >&2; exit 70')
    proc = run()
    assert proc.returncode == 70
    assert "TOOL FAILURE in spar gate (exit 70)" in proc.stderr and "GATE BLOCKED" not in proc.stderr


@pytest.mark.slow
def test_gate_blocked_by_a_missing_round_is_not_said_to_be_findings(ci):
    """Issue 22 point 8: a round path the gate cannot find still blocks (exit 1, as the contract
    asks), but the script says the gate is blocked on a round it cannot read, not on findings."""
    repo, env, answer, run, bin_dir = ci
    answer([])
    _wrap_spar_gate(bin_dir, f'shift 3; exec "{bin_dir / "real-spar"}" gate reviews/nope "$@"')
    proc = run()
    assert proc.returncode == 1, proc.stderr
    assert "GATE BLOCKED ON A ROUND IT CANNOT READ" in proc.stderr
    assert "has findings or reviewers to deal with" not in proc.stderr
    assert "mistyped" in proc.stdout


def test_script_usage_error_is_64(tmp_path):
    proc = subprocess.run(["bash", str(SCRIPT), "a"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 64 and "usage" in proc.stderr


@pytest.mark.slow
def test_a_reviewer_that_failed_is_a_blocked_gate_and_a_sarif_that_says_so(ci, tmp_path):
    """issue 22 point 3: export exits 1 (written, not clean) when a reviewer did not
    complete; the script takes that as written and lets the gate judge, not as a tool failure."""
    repo, env, _answer, run, _ = ci
    head = git(repo, "rev-parse", "HEAD").strip()
    env["SPAR_FAKE_SCENARIO"] = json.dumps({
        "claude": {"result": result(head, findings=[], verdict="no_blocking_findings")},
        "codex": {"turn_failed": "stream disconnected before completion"}})
    proc = run()
    assert proc.returncode == 1, proc.stderr
    assert "GATE BLOCKED" in proc.stderr and "spar export failed" not in proc.stderr
    report = json.loads((repo / "spar.sarif").read_text())
    codex = next(r for r in report["runs"] if r["tool"]["driver"]["name"] == "Spar (codex)")
    assert codex["invocations"][0]["executionSuccessful"] is False
