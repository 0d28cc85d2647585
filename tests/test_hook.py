"""`spar hook stop`: the review gate as an agent's stop hook, decided from the records alone
(no reviewer started), in each agent's dialect, bounded, never silent on its own failure."""

from __future__ import annotations

import io
import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from spar.cli import main
from spar.judge import stop
from tests.roundfactory import finding, make_round, reviewer, series_repo
from tests.runsetup import make_setup
from tests.test_runner import unstartable
from tests.test_sandboxing import FAILING_BWRAP


def _hook(monkeypatch, capsys, payload: dict | str, *args: str) -> tuple[dict, str]:
    raw = payload if isinstance(payload, str) else json.dumps(payload)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(raw.encode())))
    code = main(["hook", "stop", *args])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out), err


def _claude(repo: Path) -> dict:
    return {"session_id": "s", "cwd": str(repo), "hook_event_name": "Stop", "stop_hook_active": False,
            "last_assistant_message": "done"}


@pytest.fixture
def repo(tmp_path):
    repo, series = series_repo(tmp_path)
    series.mkdir()
    return repo


def test_no_round_sends_the_agent_back_with_the_commands(repo, monkeypatch, capsys):
    answer, _ = _hook(monkeypatch, capsys, _claude(repo))
    assert answer["decision"] == "block"
    assert "spar run --stage code --worktree --out reviews/code-1" in answer["reason"]
    assert "spar gate --series reviews --out reviews/gate.json" in answer["reason"]


def test_the_next_round_reviews_the_whole_change_from_the_series_base(repo, monkeypatch, capsys):
    """Once the agent commits its fix, the working tree equals HEAD: the next round names the
    base the series' rounds reviewed from, so the committed change is still the change."""
    folder = make_round(repo / "reviews", "code-1", repo=repo,
                        findings=[finding("claude", 3, claim="logs the whole signed token")])
    base = json.loads((folder / "round.json").read_text())["base"]
    answer, _ = _hook(monkeypatch, capsys, _claude(repo))
    assert f"spar run --stage code --worktree --base {base} --out reviews/code-2" in answer["reason"]


def test_each_agent_gets_its_dialect(repo, monkeypatch, capsys):
    cursor, _ = _hook(monkeypatch, capsys, {"cwd": str(repo), "hook_event_name": "stop", "cursor_version": "3.7",
                                            "status": "completed", "loop_count": 0})
    assert list(cursor) == ["followup_message"] and "spar run" in cursor["followup_message"]
    codex, _ = _hook(monkeypatch, capsys, {"cwd": str(repo), "hook_event_name": "Stop", "turn_id": "t1"})
    assert codex["decision"] == "block"
    told, _ = _hook(monkeypatch, capsys, {"cwd": str(repo)}, "--agent", "cursor")
    assert "followup_message" in told


def test_cursor_is_never_sent_back_after_the_person_aborted_or_an_error(repo, monkeypatch, capsys, tmp_path):
    """Cursor runs its stop hook when the loop was aborted or ended on an error too; its
    input names the workspace (workspace_roots), not a cwd."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # a user-level hook does not run in the project
    cursor = {"hook_event_name": "stop", "cursor_version": "3.7", "workspace_roots": [str(repo)], "loop_count": 0}
    sent, _ = _hook(monkeypatch, capsys, {**cursor, "status": "completed"})
    assert "spar run" in sent["followup_message"]
    assert _hook(monkeypatch, capsys, {**cursor, "status": "aborted"}) == ({}, "")
    answer, err = _hook(monkeypatch, capsys, {**cursor, "status": "error"})
    assert answer == {} and "ended on an error" in err and "spar gate --series" in err
    # neither counted as a send-back
    assert json.loads((repo / "reviews" / ".spar-hook.json").read_text())["sends"] == 1
    # a project hook of the second root of a multi-root workspace runs in that root: judged there
    monkeypatch.chdir(repo)
    answer, _ = _hook(monkeypatch, capsys, {**cursor, "workspace_roots": [str(elsewhere), str(repo)],
                                            "status": "completed"})
    assert "spar run" in answer["followup_message"]


def test_open_defects_are_listed_with_place_claim_and_what_settles_them(repo, monkeypatch, capsys):
    make_round(repo / "reviews", "code-1", repo=repo,
               findings=[finding("claude", 3, claim="logs the whole signed token")])
    answer, _ = _hook(monkeypatch, capsys, _claude(repo))
    assert answer["decision"] == "block"
    assert "- code-1/claude-F3 at head/app/main.py:3: logs the whole signed token" in answer["reason"]
    assert "spar triage" in answer["reason"] and "spar run --stage code" in answer["reason"]


def test_a_passing_gate_for_this_change_lets_the_stop_through(repo, monkeypatch, capsys):
    make_round(repo / "reviews", "code-1", repo=repo)
    answer, _ = _hook(monkeypatch, capsys, _claude(repo))
    assert answer == {}
    # a file changed since it passed: no round covers the change any more
    (repo / "app" / "main.py").write_text("print(3)\n")
    answer, _ = _hook(monkeypatch, capsys, _claude(repo))
    assert answer["decision"] == "block" and "no finished review round covers this change" in answer["reason"]


def test_reviewers_that_could_not_run_stop_and_tell_the_person(repo, monkeypatch, capsys):
    make_round(repo / "reviews", "code-1", repo=repo,
               reviewers=[reviewer("claude", status="unavailable", reason="quota: usage limit reached"),
                          reviewer("codex", status="unavailable", reason="authentication: not logged in")])
    answer, err = _hook(monkeypatch, capsys, _claude(repo))
    assert answer["continue"] is False and "decision" not in answer
    assert "claude: unavailable: quota: usage limit reached" in answer["stopReason"]
    assert "codex: unavailable: authentication" in answer["stopReason"] and "could not run" in err


def _round_with(tmp_path: Path, argv: list[str]):
    """A real `spar run` of one `command` reviewer, `house`, running `argv`: the setup and its entry."""
    s = make_setup(tmp_path)
    s.configure([{"name": "house", "preset": "command", "argv": argv}])
    proc = s.run()
    assert proc.returncode == 1, proc.stderr.decode()  # recorded, with a reviewer that did not complete
    (entry,) = json.loads((s.repo / "reviews" / "r1" / "round.json").read_text())["reviewers"]
    return s, entry


@pytest.mark.slow
def test_the_change_is_snapshot_with_the_users_cap_per_file_as_spar_run_makes_it(tmp_path, monkeypatch, capsys):
    """An untracked file over the user's max_copy_bytes is a note in the round's commit; the
    hook makes the working tree's commit with the same cap, so the round covers the change."""
    s = make_setup(tmp_path)
    s.configure([s.example_reviewer()])
    s.config.write_text("max_copy_bytes = 100\n" + s.config.read_text(), encoding="utf-8")
    (s.repo / "notes.txt").write_text("a line of notes\n" * 20)  # 320 bytes, untracked
    proc = s.run("--worktree")
    assert proc.returncode in (0, 1), proc.stderr.decode()
    monkeypatch.setenv("SPAR_CONFIG", str(s.config))
    answer, _ = _hook(monkeypatch, capsys, _claude(s.repo))
    assert "no finished review round covers this change" not in json.dumps(answer), answer


@pytest.mark.slow
def test_a_reviewer_spar_could_not_start_stops_and_tells_the_person(tmp_path, monkeypatch, capsys):
    """The runner records why the reviewer never got to review (the guard could not start its
    program), and the hook reads that, not the words of the reason: the person is told at once."""
    s, entry = _round_with(tmp_path, [str(unstartable(tmp_path)), "{prompt}"])
    assert (entry["status"], entry["not_run"], entry["attempts"][0]["exit_code"]) == ("failed", "not_started", 127)
    answer, err = _hook(monkeypatch, capsys, _claude(s.repo))
    assert answer["continue"] is False, answer
    assert "the reviewers could not run" in answer["stopReason"] and "- house: failed: exit code 127" in err


@pytest.mark.slow
def test_a_reviewer_whose_own_error_names_a_sandbox_sends_the_agent_back(tmp_path, monkeypatch, capsys):
    """A reviewer that ran and failed in its own words ("sandbox", "could not start") is not one
    that could not run: the agent is sent back to run the round again."""
    own_error = "import sys; sys.stderr.write('sandbox: could not start the frobnicator\\n'); sys.exit(3)"
    s, entry = _round_with(tmp_path, ["python3", "-c", own_error])
    assert entry["status"] == "failed" and entry.get("not_run") is None
    assert "sandbox: could not start the frobnicator" in entry["reason"]
    answer, _ = _hook(monkeypatch, capsys, _claude(s.repo))
    assert answer["decision"] == "block", answer
    assert "spar run --stage code --worktree" in answer["reason"]


@pytest.mark.parametrize(("not_run", "reason"), [
    ("sandbox", "cannot prepare the sandbox: No space left on device"),
    ("egress", "blocked by Spar's egress allowlist: it tried to reach api.example.com:443, which its sandbox "
               "refused (add a host it needs to allow_hosts)"),
    ("version_check", "version check failed: `claude --version` exited with code 1"),
])
def test_each_way_a_reviewer_never_got_to_review_stops_and_tells_the_person(repo, monkeypatch, capsys, not_run,
                                                                            reason):
    make_round(repo / "reviews", "code-1", repo=repo,
               reviewers=[{**reviewer("claude", status="failed", reason=reason), "not_run": not_run},
                          reviewer("codex")])
    answer, _ = _hook(monkeypatch, capsys, _claude(repo))
    assert answer["continue"] is False and f"- claude: failed: {reason}" in answer["stopReason"]
    # judged again from the rounds the hook kept (the judgment itself forgotten): the same answer
    (repo / "reviews" / ".spar-hook.json").unlink()
    assert _hook(monkeypatch, capsys, _claude(repo))[0] == answer


def test_an_old_round_without_not_run_goes_by_its_status_alone(repo, monkeypatch, capsys):
    """Rounds written before `not_run`: `unavailable` tells the person (the test above), a
    failure is sent back whatever its words say."""
    make_round(repo / "reviews", "code-1", repo=repo,
               reviewers=[reviewer("claude", status="failed", reason="cannot prepare the sandbox: gone"),
                          reviewer("codex")])
    answer, _ = _hook(monkeypatch, capsys, _claude(repo))
    assert answer["decision"] == "block", answer


def _sandbox_mode(tmp_path: Path, monkeypatch, mode: str) -> None:
    """The user configuration sets `[sandbox] mode`; the only bwrap on PATH makes no sandbox."""
    config = tmp_path / "user.toml"
    config.write_text(f'[sandbox]\nmode = "{mode}"\n', encoding="utf-8")
    shim = tmp_path / "shim"
    shim.mkdir()
    (shim / "bwrap").write_text(FAILING_BWRAP)
    (shim / "bwrap").chmod(0o755)
    monkeypatch.setenv("SPAR_CONFIG", str(config))
    monkeypatch.setenv("PATH", os.pathsep.join([str(shim), os.environ["PATH"]]))


def test_a_required_sandbox_missing_stops_and_tells_the_person_at_the_first_stop(repo, monkeypatch, capsys,
                                                                                tmp_path):
    """`spar run` would refuse before writing any round: sending the agent back to run it
    would loop until the bound. The person is told why, and what to do, at once."""
    _sandbox_mode(tmp_path, monkeypatch, "required")
    answer, err = _hook(monkeypatch, capsys, _claude(repo))
    assert answer["continue"] is False, answer
    told = answer["stopReason"]
    assert "no kernel sandbox for the reviewers" in told and "No permissions to create a new namespace" in told
    assert 'mode = "auto"' in told and "spar run --stage code --worktree --out reviews/code-1" in told
    assert told in err
    assert json.loads((repo / "reviews" / ".spar-hook.json").read_text())["sends"] == 0


def test_without_a_required_sandbox_no_round_still_sends_the_agent_back(repo, monkeypatch, capsys, tmp_path):
    """`auto` runs the round without a sandbox, and a configuration that does not load is the
    agent's to see when it runs the round: both are sent back with the commands."""
    _sandbox_mode(tmp_path, monkeypatch, "auto")
    answer, _ = _hook(monkeypatch, capsys, _claude(repo))
    assert answer["decision"] == "block" and "spar run --stage code --worktree" in answer["reason"]
    (tmp_path / "user.toml").write_text('[sandbox]\nmode = "required"\nkind = "bwrap"\n', encoding="utf-8")
    answer, _ = _hook(monkeypatch, capsys, _claude(repo))
    assert answer["decision"] == "block" and "spar run --stage code --worktree" in answer["reason"]


def test_the_series_at_its_cap_stops_and_tells_the_person(repo, monkeypatch, capsys):
    series = repo / "reviews"
    make_round(series, "code-1", repo=repo, caps={"plan": 2, "plan_delta": 1, "code": 1},
               findings=[finding("claude", 1)])
    answer, _ = _hook(monkeypatch, capsys, _claude(repo))
    assert answer["continue"] is False and "at its cap: 1 of 1 code rounds used" in answer["stopReason"]


def test_sends_back_are_bounded_and_a_new_round_starts_the_count_again(repo, monkeypatch, capsys):
    series = repo / "reviews"
    make_round(series, "code-1", repo=repo, findings=[finding("claude", 1)])
    kinds = [next(iter(_hook(monkeypatch, capsys, _claude(repo), "--bound", "2")[0])) for _ in range(3)]
    assert kinds == ["decision", "decision", "continue"]
    make_round(series, "code-2", repo=repo, findings=[finding("claude", 1)], packet_text="again\n")
    answer, _ = _hook(monkeypatch, capsys, _claude(repo), "--bound", "2")
    assert answer["decision"] == "block"
    state = json.loads((series / ".spar-hook.json").read_text())
    assert state["sends"] == 1


def test_its_own_failure_tells_the_person_never_lets_the_stop_through_silently(tmp_path, monkeypatch, capsys):
    answer, _ = _hook(monkeypatch, capsys, {"cwd": str(tmp_path), "hook_event_name": "Stop"})
    assert answer["continue"] is False and "could not be checked" in answer["stopReason"]
    answer, _ = _hook(monkeypatch, capsys, "not json")
    assert answer["continue"] is False and "could not be checked" in answer["stopReason"]


def test_a_stopped_round_is_left_out_as_spar_gate_series_leaves_it(repo, monkeypatch, capsys):
    series = repo / "reviews"
    make_round(series, "code-1", repo=repo)
    killed = series / "code-2"
    killed.mkdir()
    (killed / "packet.md").write_text("# Review packet\n")
    answer, _ = _hook(monkeypatch, capsys, _claude(repo))
    assert answer == {}
    assert main(["gate", "--series", str(series), "--out", str(repo / "gates" / "g.json")]) == 0


def test_demoted_defects_are_named_in_the_answer():
    facts = stop.StopFacts("reviews", ["spar run"], round_for_change=True, state="blocked", reasons=["x"],
                           demoted=["code-1/claude-F2 (link \"baseline.md#BASE-SECRETS\")"])
    assert "baseline.md#BASE-SECRETS" in stop.verdict_for(facts).text


# ---------------------------------------------------------------- spar init --agent


def _init(repo: Path, monkeypatch, *args: str) -> int:
    monkeypatch.setenv("SPAR_CONFIG", str(repo.parent / "user.toml"))
    only_git = repo.parent / "only-git"  # no reviewer CLI found: the user file is the same every run
    only_git.mkdir(exist_ok=True)
    if not (only_git / "git").exists():
        (only_git / "git").symlink_to(shutil.which("git"))
    monkeypatch.setenv("PATH", str(only_git))
    return main(["init", "-C", str(repo), *args])


def test_init_adds_each_agents_hook_merged_and_idempotent(repo, monkeypatch, capsys):
    settings = repo / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"model": "x", "hooks": {"Stop": [{"hooks": [{"type": "command",
                                                                                "command": "make lint"}]}]}}))
    assert _init(repo, monkeypatch, "--agent", "claude", "--agent", "codex", "--agent", "cursor") == 0
    claude = json.loads(settings.read_text())
    assert claude["model"] == "x"
    assert [h["hooks"][0]["command"] for h in claude["hooks"]["Stop"]] == [
        "make lint", "spar hook stop --agent claude"]
    assert claude["hooks"]["SubagentStop"][0]["hooks"][0]["command"] == "spar hook subagent-stop --agent claude"
    codex = json.loads((repo / ".codex" / "hooks.json").read_text())
    assert codex["hooks"]["Stop"][0]["hooks"][0]["command"] == "spar hook stop --agent codex"
    cursor = json.loads((repo / ".cursor" / "hooks.json").read_text())
    assert cursor == {"version": 1, "hooks": {"stop": [{"command": "spar hook stop --agent cursor"}]}}
    before = {p: p.read_bytes() for p in (settings, repo / ".codex" / "hooks.json", repo / ".cursor" / "hooks.json")}
    capsys.readouterr()
    assert _init(repo, monkeypatch, "--agent", "claude", "--agent", "codex", "--agent", "cursor") == 0
    assert {p: p.read_bytes() for p in before} == before
    assert "already runs spar hook" in capsys.readouterr().out


def test_init_refuses_a_link_or_a_settings_file_it_cannot_read_and_writes_nothing(repo, monkeypatch, capsys, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (repo / ".codex").symlink_to(elsewhere)
    assert _init(repo, monkeypatch, "--agent", "codex") == 65
    assert "symbolic link" in capsys.readouterr().err and not any(elsewhere.iterdir())
    (repo / ".cursor").mkdir()
    (repo / ".cursor" / "hooks.json").write_text("[1, 2]")
    assert _init(repo, monkeypatch, "--agent", "cursor") == 65
    assert "not a JSON object" in capsys.readouterr().err
    assert (repo / ".cursor" / "hooks.json").read_text() == "[1, 2]"


# ---------------------------------------------------------------- subagent-stop (native reviewers)


def _subagent(tmp_path: Path, prompt: str, answer: str) -> dict:
    transcript = tmp_path / "agent.jsonl"
    lines = [{"type": "user", "message": {"role": "user", "content": prompt}},
             {"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": answer}]}}]
    transcript.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return {"hook_event_name": "SubagentStop", "agent_transcript_path": str(transcript), "cwd": str(tmp_path)}


def test_a_native_reviewer_that_breaks_the_one_answer_rule_is_sent_back(tmp_path, monkeypatch, capsys):
    prompt = "# Spar review prompt for reviewer native\n\nreview this"
    answer, _ = _hook_event(monkeypatch, capsys, _subagent(tmp_path, prompt, 'Here it is:\n{"verdict": "ok"}'))
    assert answer["decision"] == "block" and "one answer rule" in answer["reason"]
    answer, _ = _hook_event(monkeypatch, capsys, _subagent(tmp_path, prompt, '{"verdict": "ok"}'))
    assert answer == {}
    # any other subagent is none of Spar's business
    answer, _ = _hook_event(monkeypatch, capsys, _subagent(tmp_path, "write a poem", "a poem"))
    assert answer == {}


def _hook_event(monkeypatch, capsys, payload: dict) -> tuple[dict, str]:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(json.dumps(payload).encode())))
    assert main(["hook", "subagent-stop", "--agent", "claude"]) == 0
    out, err = capsys.readouterr()
    return json.loads(out), err


def test_a_passing_stop_names_the_defects_kept_as_notes_for_their_link(repo, monkeypatch, capsys):
    demoted = dict(finding("claude", 2, cls="note", proposed_class="defect", claim="logs the token"),
                   class_reason="rule 6: proposed defect without a confirmed link",
                   claimed_link_kind="rule", claimed_link="BASE-NOPE")
    make_round(repo / "reviews", "code-1", repo=repo, findings=[demoted])
    answer, _ = _hook(monkeypatch, capsys, _claude(repo))
    assert list(answer) == ["systemMessage"] and "claude-F2 was proposed as a defect" in answer["systemMessage"]
    assert 'its rule link "BASE-NOPE"' in answer["systemMessage"]


def test_a_hung_git_is_answered_at_the_deadline_not_by_the_agents_timeout(repo, monkeypatch, capsys):
    """git status blocks opening a FIFO .gitignore: the hook answers at its deadline, and the
    git it waited on is ended."""
    os.mkfifo(repo / "app" / ".gitignore")
    answer, _ = _hook(monkeypatch, capsys, _claude(repo), "--deadline", "1")
    assert answer["continue"] is False and "could not be checked within 1 s" in answer["stopReason"]


def test_an_unexpected_error_is_an_answer_too(repo, monkeypatch, capsys):
    def broken(facts):
        raise RuntimeError("a bug")
    monkeypatch.setattr(stop, "verdict_for", broken)
    answer, _ = _hook(monkeypatch, capsys, _claude(repo))
    assert answer == {"continue": False, "stopReason": "spar: the review gate could not be checked: RuntimeError: a bug"}


def test_a_kept_judgment_of_another_shape_is_judged_again(repo, monkeypatch, capsys):
    make_round(repo / "reviews", "code-1", repo=repo)
    assert _hook(monkeypatch, capsys, _claude(repo))[0] == {}
    state_file = repo / "reviews" / ".spar-hook.json"
    state = json.loads(state_file.read_text())
    state["series"] = {"head": state["series"]["head"]}  # an older or damaged state file
    state_file.write_text(json.dumps(state))
    assert _hook(monkeypatch, capsys, _claude(repo))[0] == {}
