"""The review gate in the real Claude Code 2.1.197's loop: `spar init --agent claude` installs
`spar hook`, and a scripted model (tests/modelserver.py) plays the agent. The hook sends it
back to review, then to fix the open defect, then lets it stop; reviewers that cannot run end
with the person told after one stop; an agent that keeps saying "done" is handed over at the
bound."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.modelserver import ModelServer, Request, Step, text, tool_call
from tests.runsetup import Setup, make_setup
from tests.test_real_cli_npm import real_clis  # noqa: F401 (the fixture: the pinned npm CLIs)

pytestmark = [pytest.mark.realcli, pytest.mark.slow]

# a `command` reviewer: one defect while calc.divide has no zero check in what it reviews
REVIEWER = r'''
import json, re, sys
packet = open(sys.argv[1], encoding="utf-8").read()
head = re.search(r"^- Head commit: `([0-9a-f]+)`", packet, re.M).group(1)
fixed = "if b == 0" in packet
defect = {"id": "f1", "proposed_class": "defect", "angle": "correctness", "location": "head/calc.py:6",
          "claim": "divide(1, 0) raises ZeroDivisionError", "failure_scenario": "a caller divides by 0",
          "evidence": "no check of b", "link_kind": "none", "link": "", "introduced_by_change": "yes",
          "regression": "yes", "check_impact": "none", "confidence": "high", "smallest_fix": "refuse b == 0"}
print(json.dumps({"reviewed_head": head, "verdict": "no_blocking_findings" if fixed else "blocking_findings",
                  "angles_checked": [{"angle": a, "result": "ok"} for a in
                                     ("criteria", "correctness", "checks", "contracts", "risk")],
                  "angles_unchecked": [], "findings": [] if fixed else [defect], "limits": ""}))
'''
CHANGE = "printf 'def mul(a, b):\\n    return a * b\\n' >> calc.py"
COMMIT_AND_TRIAGE = ("git -c user.name=agent -c user.email=agent@example.com commit -qam 'mul; divide refuses 0' && "
                     "spar triage reviews/code-1 alpha-F1 --to fixed --commit HEAD "
                     "--failed-before 'divide(1, 0) raised ZeroDivisionError' "
                     "--passed-after 'divide(1, 0) raises ValueError'")
FIX = ("python3 -c \"import pathlib; p = pathlib.Path('calc.py'); "
       "p.write_text(p.read_text().replace('    return a / b', '    if b == 0:\\n        raise ValueError(b)\\n"
       "    return a / b'))\"")


def _agent(tmp_path: Path, prefix: Path, reviewers: list[dict]) -> Setup:
    s = make_setup(tmp_path)
    script = s.answers / "reviewer.py"
    script.write_text(REVIEWER, encoding="utf-8")
    s.configure(reviewers or [{"name": "alpha", "preset": "command", "argv": [sys.executable, str(script), "{prompt}"]}])
    # no reviewer CLI on PATH for init to add: the configured reviewers are the test's
    s.env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), "/usr/bin", "/bin"])
    # the project's own files committed, so that the change under review is the agent's alone
    init = s.spar("init", "--agent", "claude")
    assert init.returncode == 0, init.stderr.decode()
    subprocess.run(["git", "add", "-A"], cwd=s.repo, check=True, env=s.env)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "agent settings"],
                   cwd=s.repo, check=True, env=s.env)
    s.env["PATH"] = os.pathsep.join([str(prefix / "node_modules" / ".bin"), s.env["PATH"]])
    return s


def _claude(s: Setup, server: ModelServer) -> tuple[dict, str]:
    env = {k: v for k, v in s.env.items() if "proxy" not in k.lower()}  # claude would send loopback via a proxy
    env.update(ANTHROPIC_BASE_URL=server.base_url, ANTHROPIC_API_KEY="test", DISABLE_TELEMETRY="1",
               CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1", DISABLE_AUTOUPDATER="1")
    proc = subprocess.run(["claude", "-p", "Add mul to calc.py.", "--output-format", "json",
                           "--allowedTools", "Bash"], cwd=s.repo, env=env, capture_output=True, timeout=300)
    assert proc.stdout, proc.stderr.decode()
    return json.loads(proc.stdout), proc.stderr.decode()


def _main(request: Request) -> bool:
    """A request of the agent's own conversation (all its tools), not one of Claude Code's side
    queries (a Bash command's description, a title: a few tools or none)."""
    return len(request.tool_names()) >= 10


def _script(steps: list[Step]) -> Callable[[Request], Step]:
    turns = iter(steps)

    def answer(request: Request) -> Step:
        return next(turns, text("(the script ran out)")) if _main(request) else text("ok")
    return answer


def _said_to_model(server: ModelServer) -> list[str]:
    """The text of each agent request's last user turn (a hook's reason arrives as one)."""
    out = []
    for request in filter(_main, server.model_requests()):
        last = request.body["messages"][-1]
        content = last["content"]
        out.append(content if isinstance(content, str) else
                   "".join(part.get("text", "") for part in content if isinstance(part, dict)))
    return out


def _told_the_person(s: Setup) -> list[str]:
    """The stopReason of each Stop hook answer that ended the session, as Claude Code recorded
    it in the session transcript (`claude -p` prints it nowhere; a terminal shows it)."""
    told = []
    for transcript in (Path(s.env["HOME"]) / ".claude" / "projects").glob("*/*.jsonl"):
        for line in transcript.read_text(encoding="utf-8").splitlines():
            attachment = json.loads(line).get("attachment") or {}
            if attachment.get("hookEvent") == "Stop" and attachment.get("stdout"):
                answer = json.loads(attachment["stdout"])
                if answer.get("continue") is False:
                    told.append(answer["stopReason"])
    return told


def bash(command: str):
    return tool_call("Bash", {"command": command, "description": "run"})


def test_the_hook_sends_the_agent_to_review_then_to_fix_then_lets_it_stop(tmp_path, real_clis):  # noqa: F811
    s = _agent(tmp_path, real_clis, [])
    base = subprocess.run(["git", "rev-parse", "HEAD"], cwd=s.repo, env=s.env, capture_output=True,
                          text=True, check=True).stdout.strip()
    # the fix is committed: the next round names the series' base, as the hook's send-back says
    second = f"spar run --stage code --worktree --base {base} --out reviews/code-2"
    with ModelServer(_script([bash(CHANGE), text("Done."),
                              bash("spar run --stage code --worktree --out reviews/code-1"), text("Done."),
                              bash(FIX), bash(COMMIT_AND_TRIAGE), bash(second),
                              text("Done.")])) as server:
        result, stderr = _claude(s, server)
    said = _said_to_model(server)
    assert len(said) == 8, said
    assert "no finished review round covers this change" in said[2] and "spar run --stage code" in said[2]
    assert "code-1/alpha-F1 at head/calc.py:6: divide(1, 0) raises ZeroDivisionError" in said[4]
    assert result["is_error"] is False and result.get("terminal_reason") != "stop_hook_prevented", result
    assert "spar triage reviews/code-1 alpha-F1 --to fixed --commit HEAD" in said[4]
    assert second in said[4]
    gate = subprocess.run([sys.executable, "-m", "spar", "gate", "--series", "reviews", "--out", "reviews/gate.json"],
                          cwd=s.repo, env=s.env, capture_output=True)
    assert gate.returncode == 0, gate.stdout.decode()  # one verdict: the hook let it stop, the gate passes


def test_reviewers_that_cannot_run_end_with_the_person_told_after_one_stop(tmp_path, real_clis):  # noqa: F811
    gone = {"name": "gone", "preset": "command", "argv": [str(tmp_path / "no-such-reviewer"), "{prompt}"]}
    s = _agent(tmp_path, real_clis, [gone])
    with ModelServer(_script([bash(CHANGE), bash("spar run --stage code --worktree --out reviews/code-1"),
                              text("Done."), text("never asked")])) as server:
        result, stderr = _claude(s, server)
    assert len(_said_to_model(server)) == 3
    assert result["terminal_reason"] == "stop_hook_prevented", result
    [told] = _told_the_person(s)
    assert "the reviewers could not run" in told and "- gone: unavailable: executable" in told


def test_an_agent_that_keeps_saying_done_is_handed_to_the_person_at_the_bound(tmp_path, real_clis):  # noqa: F811
    s = _agent(tmp_path, real_clis, [])
    with ModelServer(_script([bash(CHANGE)] + [text("Done.")] * 5)) as server:
        result, stderr = _claude(s, server)
    said = _said_to_model(server)
    assert len(said) == 5, said  # the change, then "done" four times: three sends-back and the fourth ends it
    assert all("no finished review round" in line for line in said[2:5])
    assert result["terminal_reason"] == "stop_hook_prevented", result
    [told] = _told_the_person(s)
    assert "sent back 3 times for this change with no new review round; handing over to you" in told


def test_a_native_reviewers_subagent_is_sent_back_until_its_answer_is_one_json_object(tmp_path, real_clis):  # noqa: F811
    """The SubagentStop entry: the subagent given a native reviewer's prompt answers with text
    around its JSON; the hook sends it back with the reason; its next answer reaches the host."""
    s = _agent(tmp_path, real_clis, [])
    prompt = "# Spar review prompt for reviewer native\n\nReview read-only; answer with one JSON object."
    answer = '{"verdict": "no_blocking_findings"}'
    steps = [tool_call("Task", {"description": "review", "prompt": prompt, "subagent_type": "general-purpose"}),
             text(f"Here is my review:\n{answer}"), text(answer)]
    with ModelServer(_script(steps)) as server:
        _claude(s, server)
    said = _said_to_model(server)
    assert "breaks the one answer rule: the answer is not one JSON object" in said[2], said
    # the host got the second answer as the subagent's result, and only it
    results = [r for request in server.model_requests() for r in request.tool_results()]
    quoted = json.dumps(answer)[1:-1]  # as it stands inside the result's JSON text
    assert any(quoted in r for r in results) and not any("Here is my review" in r for r in results)
