"""Issue 4's "done when", shown through `spar run` as a real subprocess.

What the two async backends do differently (timeouts and kills, signals, the
live progress) is run on trio and on asyncio; the rest on spar's default.

Each test builds a real temporary git repository, a user configuration and the
fake `claude`/`codex`/`agy` programs (tests/fakes) or `command` reviewers, runs
`python -m spar run`, and reads what it left on disk. The runner-level tests
(test_runner.py) show the same behaviours without the command line around them.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
import pty
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from spar.judge.gate import remove_advice
from tests.proctools import HANG, LIMITS, gone, sigint_as_from_a_terminal, signal_ignored, wait_for, written
from tests.runsetup import BACKENDS, FAKES, finding, make_setup, result

pytestmark = pytest.mark.slow

QUOTA = "You've hit your limit · resets 12pm (America/Chicago)"
AUTH = "unexpected status 401 Unauthorized: Missing bearer or basic authentication in header"


@pytest.fixture(params=BACKENDS)
def backend(request):
    return request.param


def load(path: Path):
    return json.loads(path.read_text(encoding="utf-8"))


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def fake(s, name: str, program: str) -> str:
    """A binary named after the reviewer: the fake reads its scenario under that name."""
    folder = s.tmp / "bin"
    folder.mkdir(exist_ok=True)
    link = folder / name
    link.symlink_to(FAKES / program)
    return str(link)


def runs(s, name: str) -> list[dict]:
    """The fake's records of one reviewer's runs (version checks left out)."""
    return [c for c in s.fake_calls() if c["name"] == name and "--version" not in c["argv"]]


# ---------------------------------------------------------------- one round, every outcome


def _every_outcome_round(tmp_path: Path, backend: str, hang_limit: int):
    s = make_setup(tmp_path, backend)
    missing_limits = result()
    del missing_limits["limits"]
    grandchild = tmp_path / "grandchild.pid"
    s.configure([
        {"name": "slow-claude", "preset": "claude", "binary": fake(s, "slow-claude", "claude")},
        {"name": "slow-codex", "preset": "codex", "binary": fake(s, "slow-codex", "codex")},
        {"name": "slow-agy", "preset": "agy", "binary": fake(s, "slow-agy", "agy")},
        {"name": "hang", "preset": "claude", "binary": fake(s, "hang", "claude"), "timeout_seconds": hang_limit},
        {"name": "fallback", "preset": "claude", "binary": fake(s, "fallback", "claude"), "model": "opus",
         "fallback_model": "sonnet"},
        {"name": "noauth", "preset": "codex", "binary": fake(s, "noauth", "codex"), "model": "gpt-5",
         "fallback_model": "gpt-5-mini"},
        {"name": "agy-cd", "preset": "agy", "binary": fake(s, "agy-cd", "agy")},
        {"name": "claude-bash", "preset": "claude", "binary": fake(s, "claude-bash", "claude")},
        s.answer_reviewer("invalid", missing_limits),
    ], timeout=60)
    answer = result(head=s.head, findings=[])
    meet = tmp_path / "meet"  # the three "slow" reviewers answer only once all three run
    meet.mkdir()
    slow = {"meet": {"dir": str(meet), "count": 3}, "result": answer}
    s.scenario({
        "slow-claude": slow,
        "slow-codex": slow,
        "slow-agy": slow,
        "hang": {"delay": 600, "spawn_child": str(grandchild)},
        "fallback": {"result": answer, "by_model": {"opus": {"refusal": QUOTA}}},
        "noauth": {"refusal": AUTH},
        "agy-cd": {"tools": ["view_file", {"name": "run_command", "command": "cd head && go test ./..."}],
                   "delay": 600},
        "claude-bash": {"tools": ["Read", {"name": "Bash", "input": {"command": "rm -rf head"}}], "delay": 600},
    })
    return s, s.run(), grandchild


def test_every_reviewer_outcome_in_one_round(tmp_path, backend):
    # "hang" must start its grandchild before its short limit, which covers its version check too:
    # until it did, the round is run again with a longer limit (proctools.LIMITS)
    for k in LIMITS:
        s, proc, grandchild = _every_outcome_round(tmp_path / f"limit-{k}", backend, hang_limit=k)
        if written(grandchild):
            break
    err = proc.stderr.decode()
    assert proc.returncode == 1, err
    # the 600 s reviewers were stopped, not waited for: timeout or tool_violation below, never completed
    rd = s.repo / "reviews" / "r1"
    assert proc.stdout.decode() == f"{rd}\n"
    rj = load(rd / "round.json")
    by = {r["name"]: r for r in rj["reviewers"]}

    # all at once: every interval of the three meeting reviewers overlaps the others
    slow = [runs(s, n)[0] for n in ("slow-claude", "slow-codex", "slow-agy")]
    assert max(r["start"] for r in slow) < min(r["end"] for r in slow)  # one after another, none would
    for n in ("slow-claude", "slow-codex", "slow-agy"):
        assert by[n]["status"] == "completed", by[n]["reason"]
    assert by["slow-codex"]["observed_model"] is None  # codex never names its model (G12)
    assert "observed_model" not in by["slow-codex"]["attempts"][0]
    assert by["slow-claude"]["observed_model"] == "claude-sonnet-4-5-20250929"

    # a timeout kills the reviewer and what it started
    assert by["hang"]["status"] == "timeout" and f"no answer within {k}s" in by["hang"]["reason"]
    assert by["hang"]["attempts"][0]["exit_code"] is None
    assert gone(int(grandchild.read_text()))
    assert runs(s, "hang") == []  # killed: it never got to write its exit record

    # quota refusal, then the fallback model: two attempts recorded, the second log pair too
    fb = by["fallback"]
    assert fb["status"] == "completed" and fb["model"] == "sonnet"
    assert [(a["model"], a["status"], a["resets"]) for a in fb["attempts"]] == [
        ("opus", "unavailable", "12pm (America/Chicago)"), ("sonnet", "completed", None)]
    assert fb["attempts"][0]["reason"].startswith("quota or rate limit: ")
    assert fb["attempts"][0]["exit_code"] == 1 and fb["attempts"][1]["exit_code"] == 0
    assert fb["observed_model"] == "claude-sonnet-4-5-20250929"
    assert [c["model"] for c in runs(s, "fallback")] == ["opus", "sonnet"]
    for log in ("stdout.log", "stderr.log", "stdout.2.log", "stderr.2.log"):
        assert (rd / "fallback" / log).is_file(), log

    # an authentication refusal is never retried with the fallback model
    na = by["noauth"]
    assert na["status"] == "unavailable" and na["reason"] == f"authentication: {AUTH}"
    assert len(na["attempts"]) == 1 and [c["model"] for c in runs(s, "noauth")] == ["gpt-5"]
    assert not (rd / "noauth" / "stdout.2.log").exists()

    # a forbidden agy command and a forbidden claude tool stop the reviewer at once
    assert by["agy-cd"]["status"] == "tool_violation"
    assert by["agy-cd"]["reason"] == ('agy command "cd head && go test ./..." is not a read-only command line: '
                                      'first problem "cd"')
    assert by["claude-bash"]["status"] == "tool_violation"
    assert by["claude-bash"]["reason"].startswith("tool Bash is not allowed")
    for n in ("agy-cd", "claude-bash"):
        assert by[n]["attempts"][0]["exit_code"] is None and runs(s, n) == []

    # invalid output names the key at fault
    assert by["invalid"]["status"] == "invalid_output" and "limits" in by["invalid"]["reason"]

    assert rj["finished_at"] == rj["recorded_at"]
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"spar: round {rd} recorded: 0 defect, 0 requirement-question, 0 hardening, 0 note; "
                           "not completed: ")
    for n in ("hang (timeout)", "noauth (unavailable)", "agy-cd (tool_violation)", "claude-bash (tool_violation)",
              "invalid (invalid_output)"):
        assert n in last, n
    summary = (rd / "summary.md").read_text()
    assert "| fallback | claude | completed | sonnet | claude-sonnet-4-5-20250929 | 2 |" in summary


# ---------------------------------------------------------------- interruption


SLEEPER = "import os, sys, time\nopen(sys.argv[1], 'w').write(str(os.getpid()))\ntime.sleep(600)\n"


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_interrupt_kills_every_reviewer_and_leaves_the_round_unrecorded(tmp_path, backend, signum):
    s = make_setup(tmp_path, backend)
    sleeper = tmp_path / "sleeper.py"
    sleeper.write_text(SLEEPER)
    grandchild, sleeper_pid = tmp_path / "grandchild.pid", tmp_path / "sleeper.pid"
    s.configure([
        {"name": "claude", "preset": "claude"},
        {"name": "sleeper", "preset": "command", "argv": [sys.executable, str(sleeper), str(sleeper_pid)]},
        s.answer_reviewer("quick", result()),
    ])
    s.scenario({"claude": {"delay": 600, "spawn_child": str(grandchild)}})
    # its own session, like a shell job: Ctrl-C reaches spar's group, never the reviewers' own;
    # SIGINT handled as from a terminal even when the suite itself runs as a background job
    # (which starts with SIGINT ignored, and spar keeps it so: the test below)
    proc = subprocess.Popen([sys.executable, "-m", "spar", "run", "--stage", "code", "--out", "reviews/r1"],
                            cwd=s.repo, env=s.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True,
                            preexec_fn=sigint_as_from_a_terminal)  # noqa: PLW1509
    try:
        assert wait_for(lambda: (written(grandchild) and written(sleeper_pid)) or proc.poll() is not None)
        assert proc.poll() is None, proc.stderr.read().decode()
        os.killpg(proc.pid, signum) if signum == signal.SIGINT else proc.send_signal(signum)
        out, err = proc.communicate(timeout=HANG)  # not the reviewers' 600 s
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + signum, err.decode()
    rd = s.repo / "reviews" / "r1"
    assert out.decode() == f"{rd}\n"
    assert err.decode().strip().splitlines()[-1] == (
        f"spar: interrupted by {signal.Signals(signum).name}: every reviewer was stopped; "
        f"round {rd} was not recorded (its round.json has no finished_at): spar gate --series, spar report and "
        f"spar hook leave it out; {remove_advice(str(rd))}")
    assert gone(int(grandchild.read_text())) and gone(int(sleeper_pid.read_text()))

    rj = load(rd / "round.json")  # still the valid review-round/v1 written before the reviewers
    assert rj["schema"] == "review-round/v1" and "finished_at" not in rj and "recorded_at" not in rj
    assert [r["status"] for r in rj["reviewers"]] == ["pending"] * 3
    assert not (rd / "findings.json").exists() and not (rd / "summary.md").exists()
    assert not list(rd.rglob("*.tmp"))

    # the series lock is free again, and a rerun of the same input is not counted
    fd = os.open(rd.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
    rerun = s.run("--reviewers", "quick", out="reviews/r2")
    assert rerun.returncode == 0, rerun.stderr.decode()
    assert load(s.repo / "reviews" / "r2" / "round.json")["counted"] is False


# ---------------------------------------------------------------- progress


ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _read_all(fd: int, proc: subprocess.Popen, limit: float = HANG) -> bytes:
    buf = b""
    end = time.monotonic() + limit
    while time.monotonic() < end:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                data = os.read(fd, 65536)
            except OSError as exc:  # EIO: every writer of the terminal is gone
                if exc.errno == errno.EIO:
                    break
                raise
            if not data:
                break
            buf += data
        elif proc.poll() is not None:
            break
    return buf


def test_progress_is_a_live_table_on_a_terminal_and_plain_lines_otherwise(tmp_path, backend):
    s = make_setup(tmp_path, backend)
    s.configure([{"name": "claude", "preset": "claude", "model": "opus"},
                 s.answer_reviewer("quick", result(findings=[]))])
    s.scenario({"claude": {"delay": 1, "result": result(head=s.head)}})  # one finding: a defect of AC-2

    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "spar", "run", "--stage", "code", "--out", "reviews/tty",
                             "--criteria", "docs/criteria.md"], cwd=s.repo, env={**s.env, "COLUMNS": "120"}, stdout=subprocess.PIPE, stderr=slave)
    os.close(slave)
    try:
        shown = _read_all(master, proc).decode("utf-8", "replace")
        proc.wait(timeout=60)
    finally:
        os.close(master)
    assert proc.returncode == 0, shown
    assert "\x1b[" in shown and "spar reviewers" in shown  # rich redraws in place
    for column in ("reviewer", "status", "attempt", "model", "elapsed"):
        assert column in shown, column
    assert "claude" in shown and "opus" in shown and "completed" in shown
    assert "started attempt" not in shown  # no plain event lines on a terminal
    rd = s.repo / "reviews" / "tty"
    final = ANSI.sub("", shown).replace("\r", "").strip().splitlines()[-1]
    assert final == f"spar: round {rd} recorded: 1 defect, 0 requirement-question, 0 hardening, 0 note"

    s.scenario({"claude": {"result": result(head=s.head)}})  # no redraw to wait for in plain lines
    plain = s.run("--criteria", "docs/criteria.md", out="reviews/pipe")
    assert plain.returncode == 0
    err = plain.stderr.decode()
    assert "\x1b[" not in err
    lines = err.strip().splitlines()
    assert "spar: claude: started attempt 1 (model opus)" in lines
    assert "spar: quick: started attempt 1 (model set by the command)" in lines  # a command has no model of Spar's
    assert any(line.startswith("spar: claude: completed in ") for line in lines)
    assert lines[-1] == (f"spar: round {s.repo / 'reviews' / 'pipe'} recorded: "
                         "1 defect, 0 requirement-question, 0 hardening, 0 note")


# ---------------------------------------------------------------- the read-only workspace


WRITER = r'''
import json, os, sys
outcome = {}
for what, action in (
    ("create", lambda: open("head/pwned.txt", "w").write("x")),
    ("append", lambda: open("head/calc.py", "a").write("# changed\n")),
):
    try:
        action()
        outcome[what] = "written"
    except OSError as exc:
        outcome[what] = exc.__class__.__name__
open(sys.argv[2], "w").write(json.dumps(outcome))
sys.stdout.write(open(sys.argv[1]).read().replace("HEAD_COMMIT", __import__("re").search(
    r"^- Head commit: `([0-9a-f]+)`", open(sys.argv[3]).read(), __import__("re").M).group(1)))
'''


def test_a_reviewer_writing_into_the_workspace(tmp_path):
    """Non-root: the copies' modes stop the write. Root ignores modes: the write happens,
    and spar records and shows a round warning naming what changed."""
    s = make_setup(tmp_path)
    script, answer, outcome = tmp_path / "writer.py", tmp_path / "answer.json", tmp_path / "outcome.json"
    script.write_text(WRITER)
    answer.write_text(json.dumps(result(findings=[])))
    s.configure([{"name": "writer", "preset": "command",
                  "argv": [sys.executable, str(script), str(answer), str(outcome), "{prompt}"]}])
    proc = s.run()
    err = proc.stderr.decode()
    assert proc.returncode == 0, err
    rd = s.repo / "reviews" / "r1"
    rj = load(rd / "round.json")
    tried = load(outcome)
    if os.geteuid() != 0:
        assert tried == {"create": "PermissionError", "append": "PermissionError"}
        assert rj["warnings"] == []
        assert not (rd / "workspace" / "head" / "pwned.txt").exists()
        return
    assert tried == {"create": "written", "append": "written"}
    [warning] = rj["warnings"]
    assert warning.startswith("workspace changed while the reviewers ran: 2 path(s): "
                              "head/calc.py (changed), head/pwned.txt (added); ")
    assert "running as root" in warning
    assert f"spar: warning: {warning}" in err.splitlines()
    assert f"- Warning: {warning}" in (rd / "summary.md").read_text()


# ---------------------------------------------------------------- agy with a large packet


def test_agy_large_packet_goes_to_packet_md_and_input_md_holds_the_p_text(tmp_path):
    s = make_setup(tmp_path)
    big = tmp_path / "BIG.md"
    big.write_text("".join(f"line {i}: the plan in great detail\n" for i in range(4000)))  # ~140 KiB
    s.configure([{"name": "agy", "preset": "agy"}, {"name": "claude", "preset": "claude"}])
    s.scenario({"agy": {"result": result(head=s.head, findings=[])},
                "claude": {"result": result(head=s.head, findings=[],
                                            standpoint_report={"checked": True, "detail": "d"})}})
    proc = s.run("--subject", str(big), "--standpoint", "claude=look at the parser")
    assert proc.returncode == 0, proc.stderr.decode()
    rd = s.repo / "reviews" / "r1"
    packet = (rd / "packet.md").read_bytes()
    assert len(packet) > 128 * 1024  # more than Linux allows in one argument
    assert (rd / "agy" / "PACKET.md").read_bytes().endswith(packet)  # after the instruction
    subject = packet.decode().split("\n## Subject\n", 1)[1]
    assert subject.index("### BIG.md") < subject.index("### Diff")  # --subject documents, then the change
    p_text = (rd / "agy" / "input.md").read_bytes()
    assert len(p_text) < 100 * 1024 and str(rd / "agy" / "PACKET.md").encode() in p_text
    [agy_run] = runs(s, "agy")
    assert agy_run["prompt_sha256"] == sha(p_text)  # input.md is exactly the -p text
    given = (rd / "agy" / "PACKET.md").read_bytes()
    assert agy_run["packet_file_sha256"] == sha(given)  # the fake read the file its prompt names
    assert "you have none" in given.decode() and "you have none" not in p_text.decode()
    [claude_run] = runs(s, "claude")
    assert claude_run["stdin_sha256"] == sha((rd / "claude" / "input.md").read_bytes())


# ---------------------------------------------------------------- a write failing after the folder exists


BLOCKER = r'''
import os, sys
os.mkdir("../findings.json")  # the reviewer runs in ROUND/workspace: findings.json can no longer be written
sys.stdout.write(open(sys.argv[1]).read())
'''


def test_a_write_failing_after_the_round_folder_exists_is_exit_70(tmp_path):
    s = make_setup(tmp_path)
    script, answer = tmp_path / "blocker.py", tmp_path / "answer.json"
    script.write_text(BLOCKER)
    answer.write_text(json.dumps(result(head=s.head, findings=[])))
    s.configure([{"name": "blocker", "preset": "command", "argv": [sys.executable, str(script), str(answer)]}])
    proc = s.run()
    rd = s.repo / "reviews" / "r1"
    err = proc.stderr.decode()
    assert proc.returncode == 70, err
    assert proc.stdout.decode() == f"{rd}\n"
    assert err.strip().splitlines()[-1].startswith(f"spar: cannot write {rd / 'findings.json'}: ")
    rj = load(rd / "round.json")
    assert "recorded_at" not in rj and "finished_at" not in rj  # never claims a recording that failed


# ---------------------------------------------------------------- the series flow


def test_series_flow_standpoints_decisions_dry_run_cap_and_free_rerun(tmp_path):
    s = make_setup(tmp_path)
    s.configure([{"name": "claude", "preset": "claude"},
                 s.answer_reviewer("house", result(findings=[]), exit_code=3)])
    report = {"checked": True, "detail": "looked at division"}
    s.scenario({"claude": {"result": result(head=s.head, findings=[finding()], standpoint_report=report)}})
    pair = ["--decision", "-keep floats", "--decision-quote", "  yes, floats  "]
    standpoint = ["--standpoint", "claude=Attack division by zero."]

    dry = s.run(*pair, *standpoint, "--dry-run", out="reviews/dry")
    assert dry.returncode == 0 and s.fake_calls() == []
    first = s.run(*pair, *standpoint, out="reviews/r1")
    assert first.returncode == 1, first.stderr.decode()
    series = s.repo / "reviews"
    r1 = load(series / "r1" / "round.json")
    by = {r["name"]: r for r in r1["reviewers"]}
    assert by["claude"]["status"] == "completed" and by["claude"]["standpoint_report"] == report
    assert by["house"]["status"] == "failed" and by["house"]["reason"].startswith("exit code 3")
    assert r1["decisions"] == [{"decision": "-keep floats", "quote": "  yes, floats  "}]
    # the dry run and the real round hold the same input, byte for byte
    for name in ("claude", "house"):
        assert (series / "dry" / name / "input.md").read_bytes() == (series / "r1" / name / "input.md").read_bytes()
    [claude_run] = runs(s, "claude")
    assert claude_run["stdin_sha256"] == sha((series / "r1" / "claude" / "input.md").read_bytes())
    assert (s.answers / "house.received").read_bytes() == (series / "r1" / "house" / "input.md").read_bytes()
    claude_input = (series / "r1" / "claude" / "input.md").read_text()
    assert claude_input.index("Attack division by zero.") < claude_input.index("# Review packet")
    assert "```\n-keep floats\n```" in claude_input and "```\n  yes, floats  \n```" in claude_input

    second = s.run("--rules", "docs/criteria.md", out="reviews/r2")  # another input: counted; code cap is 2
    assert second.returncode == 1
    # rule documents: the configuration's first, then --rules, in the record and in the packet
    r2 = load(series / "r2" / "round.json")
    assert [d["name"] for d in r2["documents"]["rules"]] == ["AGENTS.md", "docs/criteria.md"]
    assert [r["names"][0] for r in r2["links"]["rules"]] == ["AGENTS.md", "docs/criteria.md"]
    rules = (series / "r2" / "packet.md").read_text().split("\n## Rules\n", 1)[1].split("\n## Subject\n", 1)[0]
    assert rules.index("### AGENTS.md") < rules.index("### docs/criteria.md")
    third = s.run("--criteria", "docs/criteria.md", out="reviews/r3")
    assert third.returncode == 65 and not (series / "r3").exists()
    assert "2 counted rounds (r1, r2)" in third.stderr.decode()
    # the same input as r1 again, for its unfinished reviewer only: free, even at the cap
    s.configure([{"name": "claude", "preset": "claude"}, s.answer_reviewer("house", result(findings=[]))])
    rerun = s.run(*pair, *standpoint, "--reviewers", "house", out="reviews/r1-again")
    assert rerun.returncode == 0, rerun.stderr.decode()
    again = load(series / "r1-again" / "round.json")
    assert again["counted"] is False and again["packet_sha256"] == r1["packet_sha256"]
    assert [load(series / n / "round.json")["counted"] for n in ("dry", "r1", "r2")] == [False, True, True]


@pytest.mark.parametrize("backend", BACKENDS)
def test_sigint_ignored_at_start_stays_ignored(tmp_path, backend):
    # a background job in a script starts with SIGINT ignored; spar must not take it back
    s = make_setup(tmp_path, backend)
    marker = tmp_path / "started"
    go = tmp_path / "go"
    slow = tmp_path / "slow.py"  # marks its start, waits for the test's go, then becomes the answering reviewer
    slow.write_text("import os, pathlib, sys, time\npathlib.Path(sys.argv[1]).write_text('x')\n"
                    "while not os.path.exists(sys.argv[2]): time.sleep(0.02)\n"
                    "os.execv(sys.executable, [sys.executable, *sys.argv[3:]])\n")
    answer = s.answer_reviewer("quick", result())
    s.configure([{"name": "slow", "preset": "command", "argv": [sys.executable, str(slow), str(marker), str(go),
                                                                 *answer["argv"][1:]]}])
    proc = subprocess.Popen([sys.executable, "-m", "spar", "run", "--stage", "code", "--out", "reviews/r1"],
                            cwd=s.repo, env=s.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))  # noqa: PLW1509
    try:
        assert wait_for(lambda: marker.exists() or proc.poll() is not None)
        assert proc.poll() is None, proc.stderr.read().decode()
        # while its reviewer runs, spar still ignores SIGINT, so the kernel drops the Ctrl-C at once
        assert signal_ignored(proc.pid, signal.SIGINT)
        os.killpg(proc.pid, signal.SIGINT)
        go.touch()
        _out, err = proc.communicate(timeout=HANG)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err.decode()  # the Ctrl-C changed nothing: the round was recorded
    rj = load(s.repo / "reviews" / "r1" / "round.json")
    assert "finished_at" in rj and rj["reviewers"][0]["status"] == "completed"
