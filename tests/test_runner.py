"""The parallel runner with real subprocesses (the fake CLIs), on both anyio backends."""

from __future__ import annotations

import io
import json
import os
import stat
import tempfile
from pathlib import Path

import pytest

from spar.proc.executable import find_executable
from spar.progress import Progress
from tests.proctools import LIMITS, gone, written
from tests.reviewerround import PACKET, Round, bwrap_or_skip

ROWS = json.loads((Path(__file__).parent / "data" / "runner_scenarios.json").read_text(encoding="utf-8"))


def _subst(value, tmp: Path):
    return value.replace("{tmp}", str(tmp)) if isinstance(value, str) else value


@pytest.mark.slow
@pytest.mark.anyio
async def test_scenario_matrix_all_at_once(tmp_path):
    rnd = Round(tmp_path)
    noexec = tmp_path / "noexec"
    noexec.write_text("#!/bin/sh\necho hi\n")
    noexec.chmod(0o644)
    jobs = [rnd.job(r["name"], r["preset"], r["scenario"], **{k: _subst(v, tmp_path) for k, v in r["config"].items()})
            for r in ROWS]
    outcomes = await rnd.run(jobs)  # violations stop their 30 s reviewers early: tool_violation, not completed
    assert [o.name for o in outcomes] == [r["name"] for r in ROWS]
    failures = []
    for r, o in zip(ROWS, outcomes):
        try:
            _check(r["expect"], o, rnd.dir / r["name"])
        except AssertionError as exc:
            failures.append(f"{r['name']}: {exc} -- {o}")
    assert not failures, "\n".join(failures)


def _check(expect: dict, o, reviewer_dir: Path) -> None:
    assert o.status == expect["status"], o.status
    if o.status == "completed":
        assert o.reason == ""
    else:
        assert o.reason
    for text in expect.get("reason_contains", []):
        assert text in o.reason, text
    if "reason_prefix" in expect:
        assert o.reason.startswith(expect["reason_prefix"])
    if "result" in expect:
        assert o.result == expect["result"]
    if "output_error_contains" in expect:
        assert o.output_error and expect["output_error_contains"] in o.output_error
    elif o.status == "completed":
        assert o.output_error is None and isinstance(o.result, dict)
    if "observed_model" in expect:
        assert o.observed_model == expect["observed_model"]
    if "model" in expect:
        assert o.model == expect["model"]
    if "resets" in expect:
        assert o.resets == expect["resets"]
    assert len(o.attempts) == expect.get("attempts", len(o.attempts))
    if expect.get("attempts", 1):
        assert len(o.attempts) >= 1
    for a in o.attempts:
        assert set(a) - {"observed_model", "cli_version"} == {"model", "started_at", "finished_at", "exit_code",
                                                              "status", "reason", "resets", "not_run", "argv",
                                                              "usage"}
        assert a.get("cli_version", "x") != ""  # every fake's version check prints its version
        assert set(a["usage"]) == {"duration_seconds", "input_tokens", "cached_input_tokens", "output_tokens",
                                   "cost_usd"}
        assert a["usage"]["duration_seconds"] >= 0
        assert a["started_at"] <= a["finished_at"]
        assert a["started_at"].endswith("Z")
    last = o.attempts[-1] if o.attempts else None
    # why a reviewer never got to review, from where the runner recorded it, never from its words
    assert o.not_run == expect["not_run"]
    if last is not None:
        assert (last["status"], last["reason"], last["resets"], last["not_run"]) == (o.status, o.reason, o.resets,
                                                                                    o.not_run)
        assert last.get("observed_model") == o.observed_model
    for key, field in (("attempt_statuses", "status"), ("attempt_models", "model"), ("attempt_resets", "resets"),
                       ("attempt_exit_codes", "exit_code")):
        if key in expect:
            assert [a[field] for a in o.attempts] == expect[key], key
    for a, prefix in zip(o.attempts, expect.get("attempt_reason_prefixes", [])):
        assert a["reason"].startswith(prefix)
    for a, has in zip(o.attempts, expect.get("attempt_has_observed", [])):
        assert ("observed_model" in a) is has
    for name in expect.get("logs", []):
        assert (reviewer_dir / name).is_file(), name
    for name in expect.get("no_logs", []):
        assert not (reviewer_dir / name).exists(), name


@pytest.mark.slow
@pytest.mark.anyio
async def test_three_reviewers_overlap(tmp_path):
    rnd = Round(tmp_path)
    meet = tmp_path / "meet"  # none answers before all three run: run one after another, they would not meet
    meet.mkdir()
    jobs = [rnd.job(p, p, {"meet": {"dir": str(meet), "count": 3}}) for p in ("claude", "codex", "agy")]
    outcomes = await rnd.run(jobs)
    assert [o.status for o in outcomes] == ["completed"] * 3
    runs = [r for r in rnd.records() if "--version" not in r["argv"]]
    assert sorted(r["prog"] for r in runs) == ["agy", "claude", "codex"]
    # every run's interval overlaps every other's: all started before any ended (one after another, none would)
    assert max(r["start"] for r in runs) < min(r["end"] for r in runs)
    # every reviewer ran in the workspace; codex got it through -C
    assert {os.path.realpath(r["cwd"]) for r in runs} == {os.path.realpath(rnd.dir / "workspace")}


@pytest.mark.slow
@pytest.mark.anyio
async def test_inputs_arrive_exactly(tmp_path):
    import hashlib

    rnd = Round(tmp_path)
    jobs = [rnd.job("claude", "claude", standpoint="Attack the parser.", active=True),
            rnd.job("codex", "codex", active=True),
            rnd.job("agy", "agy", standpoint="Check error paths.", active=True)]
    outcomes = await rnd.run(jobs)
    assert [o.status for o in outcomes] == ["completed"] * 3
    runs = {r["prog"]: r for r in rnd.records() if "--version" not in r["argv"]}
    for job in jobs:
        on_disk = (job.reviewer_dir / "input.md").read_bytes()  # what the reviewer receives, exactly
        digest = hashlib.sha256(on_disk).hexdigest()
        run = runs[job.config.preset]
        assert (run["prompt_sha256"] if job.config.preset == "agy" else run["stdin_sha256"]) == digest


@pytest.mark.slow
@pytest.mark.anyio
async def test_timeouts_kill_reviewer_and_grandchild(tmp_path):
    # the limit covers the version check and the fake's start-up too: until the grandchild is up before it
    for k in LIMITS:
        rnd = Round(tmp_path / f"limit-{k}")
        pid_file = rnd.tmp / "grandchild.pid"
        jobs = [rnd.job("slow", "claude", {"spawn_child": str(pid_file), "delay": 60}, timeout_seconds=k),
                # answered, but never exits: with stdout open, and with stdout closed
                rnd.job("hang-open", "claude", {"never_close_stdout": True}, timeout_seconds=k),
                rnd.job("hang-closed", "codex", {"close_stdout_and_hang": True}, timeout_seconds=k),
                rnd.job("fast", "agy", {})]
        slow, hang_open, hang_closed, fast = await rnd.run(jobs, kill_grace=0.5)
        assert slow.status == hang_open.status == hang_closed.status == "timeout"
        assert fast.status == "completed"  # one reviewer's timeout never stops another
        if written(pid_file):
            break
    assert f"no answer within {k}s" in slow.reason
    assert slow.attempts[0]["exit_code"] is None
    assert gone(int(pid_file.read_text()))


@pytest.mark.slow
@pytest.mark.anyio
async def test_version_check_limits(tmp_path):
    rnd = Round(tmp_path)
    jobs = [rnd.job("own-limit", "codex", {"version_delay": 5}),
            rnd.job("attempt-limit", "agy", {"version_delay": 5}, timeout_seconds=1)]
    (own,) = await rnd.run(jobs[:1], version_timeout=0.7, kill_grace=0.3)
    assert own.status == "failed" and own.reason.startswith("version check failed:")
    assert "no answer within 0.7s" in own.reason
    # the 30 s version limit is longer than timeout_seconds: the attempt's limit (G19) ends it
    (attempt,) = await rnd.run(jobs[1:], kill_grace=0.3)
    assert attempt.status == "timeout" and "version check" in attempt.reason
    assert attempt.attempts[0]["exit_code"] is None


@pytest.mark.slow
@pytest.mark.anyio
async def test_output_above_the_cap(tmp_path):
    rnd = Round(tmp_path)
    (o,) = await rnd.run([rnd.job("big", "claude", {"lines": 400, "line_size": 1000})], output_cap=10_000)
    assert o.status == "completed" and isinstance(o.result, dict)  # the final event still counts
    assert (rnd.dir / "big" / "stdout.log").stat().st_size == 10_000


@pytest.mark.slow
@pytest.mark.anyio
async def test_command_preset(tmp_path):
    rnd = Round(tmp_path)
    echo = ("import json, sys; text = open(sys.argv[1]).read(); "
            "print(json.dumps({'prompt': text, 'ws': sys.argv[2], 'schema': sys.argv[3]}))")
    jobs = [
        rnd.job("cmd-packet", "command", argv=["python3", "-c", echo, "{prompt}", "{workspace}", "{schema}"]),
        rnd.job("cmd-standpoint", "command", argv=["python3", "-c", echo, "{prompt}", "{workspace}", "{schema}"],
                standpoint="Look at locking.", active=True),
        rnd.job("cmd-array", "command", argv=["python3", "-c", "print('[1, 2]')"]),
        rnd.job("cmd-fails", "command", argv=["python3", "-c", "import sys; sys.stderr.write('boom\\n'); sys.exit(4)"]),
        rnd.job("cmd-missing", "command", argv=["{workspace}/no-such-tool", "{prompt}"]),
    ]
    packet, standpoint, array, fails, missing = await rnd.run(jobs)
    assert packet.status == "completed"
    assert packet.result == {"prompt": PACKET, "ws": str(rnd.dir / "workspace"), "schema": str(rnd.dir / "schema.json")}
    assert packet.attempts[0]["exit_code"] == 0 and "observed_model" not in packet.attempts[0]
    assert standpoint.result["prompt"] == (rnd.dir / "cmd-standpoint" / "input.md").read_text()
    assert "Look at locking." in standpoint.result["prompt"]
    assert array.status == "completed" and array.result is None and "not a JSON object" in array.output_error
    assert fails.status == "failed" and fails.reason.startswith("exit code 4") and "stderr: boom" in fails.reason
    assert missing.status == "unavailable" and "does not exist" in missing.reason


@pytest.mark.slow
@pytest.mark.anyio
async def test_progress_events(tmp_path):
    rnd = Round(tmp_path)
    stream = io.StringIO()
    progress = Progress(stream)
    jobs = [rnd.job("a", "claude", {}), rnd.job("n", "native")]
    await rnd.run(jobs, progress=progress)
    progress.close()
    lines = stream.getvalue().splitlines()
    assert "spar: a: started attempt 1 (model CLI default)" in lines
    # the runner has not judged the answer yet: "answered", never "completed"
    assert any(line.startswith("spar: a: answered in ") for line in lines)
    assert not any(": completed" in line for line in lines)
    assert any(line.startswith("spar: n: awaiting_record in ") and "awaiting spar record" in line for line in lines)


# ---------------------------------------------------------------- G14 lookup, directly


def test_find_executable(tmp_path):
    exe = tmp_path / "tool"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    plain = tmp_path / "plain"
    plain.write_text("x")
    plain.chmod(0o644)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "tool").mkdir()  # a folder with the name is skipped on PATH
    link = tmp_path / "link"
    link.symlink_to(exe)
    broken = tmp_path / "broken"
    broken.symlink_to(tmp_path / "nothing")

    assert find_executable(str(exe), None).path == str(exe)
    assert find_executable(str(link), None).status == "ok"
    assert find_executable(str(broken), None).status == "unavailable"
    assert find_executable(str(tmp_path / "missing"), None).status == "unavailable"
    assert find_executable(str(tmp_path / "sub"), None).status == "failed"
    assert find_executable(str(plain), None).status == "failed"
    assert find_executable(str(plain / "x"), None).status == "unavailable"
    path = os.pathsep.join([str(tmp_path / "sub"), str(tmp_path)])
    assert find_executable("tool", path).path == str(exe)
    only_plain = find_executable("plain", path)
    assert only_plain.status == "unavailable" and "execute permission" in only_plain.reason
    assert find_executable("absent", path).status == "unavailable"
    assert find_executable("tool", "").status == "unavailable"


def test_relative_path_is_made_absolute(tmp_path, monkeypatch):
    (tmp_path / "bin").mkdir()
    exe = tmp_path / "bin" / "rev"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(stat.S_IRWXU)
    monkeypatch.chdir(tmp_path)
    found = find_executable("./bin/rev", None)
    assert found.status == "ok" and found.path == str(exe)


@pytest.mark.slow
@pytest.mark.anyio
async def test_attempts_record_the_cli_version(tmp_path):
    """The version check's answer is kept on the attempt (`cli_version`): SARIF's run names it."""
    rnd = Round(tmp_path)
    outs = await rnd.run([rnd.job("c", "claude"), rnd.job("x", "codex"), rnd.job("a", "agy")])
    assert [o.attempts[0].get("cli_version") for o in outs] == [
        "2.1.197 (Claude Code)", "codex-cli 0.171.0", "1.2.11"]


UNSTARTABLE = "#!/nonexistent/interpreter\n"  # a regular executable file no exec(2) can start


def unstartable(folder: Path) -> Path:
    """A script whose interpreter is a script whose interpreter is missing: the lookup looks
    one #! line deep and passes it, and only exec(2) finds it cannot start."""
    inner = folder / "inner-interpreter"
    inner.write_text(UNSTARTABLE)
    inner.chmod(0o755)
    program = folder / "unstartable"
    program.write_text(f"#!{inner}\n")
    program.chmod(0o755)
    return program


def test_a_script_whose_interpreter_cannot_start_is_found_before_a_round(tmp_path):
    """The lookup reads a script's #! line: an interpreter that is no executable file, or a
    program `env` cannot find on the reviewer's PATH, is `failed` with why (doctor says so too)."""
    (tmp_path / "bin").mkdir()
    missing = tmp_path / "missing"
    missing.write_text(UNSTARTABLE)
    missing.chmod(0o755)
    found = find_executable(str(missing), None)
    assert found.status == "failed" and '#! line names "/nonexistent/interpreter"' in found.reason
    through_env = tmp_path / "through-env"
    through_env.write_text("#!/usr/bin/env -S spar-no-such-tool --flag\n")
    through_env.chmod(0o755)
    found = find_executable(str(through_env), str(tmp_path / "bin"))
    assert found.status == "failed" and '"spar-no-such-tool" through env' in found.reason
    (tmp_path / "bin" / "spar-no-such-tool").write_text("#!/bin/sh\n")
    (tmp_path / "bin" / "spar-no-such-tool").chmod(0o755)
    assert find_executable(str(through_env), str(tmp_path / "bin")).status == "ok"
    # a script that names itself through env is looked at one level deep, never in a loop
    (tmp_path / "bin" / "loop").write_text("#!/usr/bin/env loop\n")
    (tmp_path / "bin" / "loop").chmod(0o755)
    assert find_executable("loop", str(tmp_path / "bin")).status == "ok"
    for fine in ("#!/bin/sh -e\n", "#!/usr/bin/env VAR=1 sh\n", "no line at all\n", "#!\n"):
        (tmp_path / "fine").write_text(fine)
        (tmp_path / "fine").chmod(0o755)
        assert find_executable(str(tmp_path / "fine"), None).status == "ok", fine


@pytest.mark.slow
@pytest.mark.anyio
async def test_a_reviewer_spar_could_not_start_says_so_in_not_run_never_in_words(tmp_path):
    """The guard's own word that it could not start the program (not the exit code 127, not
    the text of stderr) makes `not_run`, for the run and for the version check; a reviewer
    that exits 127 by itself saying the same words got to run."""
    rnd = Round(tmp_path)
    program = unstartable(tmp_path)
    own_words = "import sys; sys.stderr.write('spar: cannot start the sandbox\\n'); sys.exit(127)"
    jobs = [rnd.job("cmd", "command", argv=[str(program), "{prompt}"]),
            rnd.job("cli", "claude", binary=str(program)),
            rnd.job("own-127", "command", argv=["python3", "-c", own_words])]
    cmd, cli, own = await rnd.run(jobs)
    assert (cmd.status, cmd.attempts[0]["exit_code"], cmd.not_run) == ("failed", 127, "not_started"), cmd
    assert cmd.attempts[0]["not_run"] == "not_started"
    assert cli.status == "failed" and cli.reason.startswith("version check failed"), cli.reason
    assert cli.not_run == "not_started"
    assert (own.status, own.attempts[0]["exit_code"], own.not_run) == ("failed", 127, None), own
    assert "spar: cannot start the sandbox" in own.reason


@pytest.mark.anyio
async def test_a_jail_that_cannot_be_prepared_is_not_run_for_the_sandbox(tmp_path, monkeypatch):
    rnd = Round(tmp_path)
    job = rnd.job("cmd", "command", argv=["python3", "-c", "print('{}')"])
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "gone"))  # no folder for its scratch HOME
    (outcome,) = await rnd.run([job], sandbox=bwrap_or_skip())
    assert outcome.status == "failed" and outcome.reason.startswith("cannot prepare the sandbox: "), outcome.reason
    assert outcome.not_run == outcome.attempts[0]["not_run"] == "sandbox"
