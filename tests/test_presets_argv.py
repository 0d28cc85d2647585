"""Preset argv exactly as reviewer-clis.md, and the fake CLIs agreeing with the real programs."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path

import pytest

from spar.config.model import ReviewerConfig
from spar.presets import get_preset, prepare_input
from spar.presets.command import substitute
from spar.round.interface import InputSpec, RunPaths
from tests.innerloop import kept_in_inner_loop

FAKES = Path(__file__).parent / "fakes"
# with the dialect key, as Spar writes schema.json: claude must get the schema without it
SCHEMA = {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"],
          "additionalProperties": False}


@pytest.fixture
def paths(tmp_path):
    round_dir = tmp_path / "ROUND"
    (round_dir / "workspace").mkdir(parents=True)
    (round_dir / "r").mkdir()
    schema = round_dir / "schema.json"
    schema.write_text(json.dumps(SCHEMA, indent=2) + "\n", encoding="utf-8")
    return RunPaths(reviewer_dir=round_dir / "r", round_dir=round_dir, workspace=round_dir / "workspace",
                    schema_path=schema)


def test_claude_argv(paths):
    cfg = ReviewerConfig(name="r", preset="claude", effort="high")
    spec = InputSpec(text="packet")
    argv = get_preset("claude").argv("/bin/claude", cfg, "opus", paths, spec)
    sent = {k: v for k, v in SCHEMA.items() if k != "$schema"}
    assert argv == ["/bin/claude", "-p", "--output-format", "stream-json", "--verbose", "--json-schema",
                    json.dumps(sent), "--tools", "Read,Grep,Glob", "--permission-mode", "dontAsk",
                    "--no-session-persistence", "--model", "opus", "--effort", "high"]
    bare = get_preset("claude").argv("claude", ReviewerConfig(name="r", preset="claude"), "", paths, spec)
    assert "--model" not in bare and "--effort" not in bare and "--max-budget-usd" not in bare
    budget = get_preset("claude").argv("claude", ReviewerConfig(name="r", preset="claude", max_budget_usd=0.5),
                                       "", paths, spec)
    assert budget[-2:] == ["--max-budget-usd", "0.5"]
    assert get_preset("claude").stdin_text(spec) == "packet"
    assert get_preset("claude").version_args == ("--version",)


def test_codex_argv(paths):
    cfg = ReviewerConfig(name="r", preset="codex", effort="xhigh")
    argv = get_preset("codex").argv("codex", cfg, "gpt-5", paths, InputSpec(text="p"))
    assert argv == ["codex", "exec", "--json", "--sandbox", "read-only", "--skip-git-repo-check", "--ephemeral",
                    "--output-schema", str(paths.schema_path), "-m", "gpt-5",
                    "-c", 'model_reasoning_effort="xhigh"', "-C", str(paths.workspace), "-"]
    bare = get_preset("codex").argv("codex", ReviewerConfig(name="r", preset="codex"), "", paths, InputSpec(text="p"))
    assert bare[-3:] == ["-C", str(paths.workspace), "-"] and "-m" not in bare and "-c" not in bare
    assert get_preset("codex").stdin_text(InputSpec(text="p")) == "p"


def test_agy_argv(paths):
    spec = InputSpec(text="note + packet")
    cfg = ReviewerConfig(name="r", preset="agy", timeout_seconds=900)
    argv = get_preset("agy").argv("agy", cfg, "gemini-3-pro", paths, spec)
    # --print-timeout past timeout_seconds: Spar's limit ends a long review, not agy's 5 minutes
    assert argv == ["agy", "-p", "note + packet", "--output-format", "stream-json", "--mode", "plan",
                    "--model", "gemini-3-pro", "--json-schema", str(paths.schema_path), "--print-timeout", "960s"]
    assert get_preset("agy").stdin_text(spec) is None


def test_command_argv_replaces_placeholders_anywhere(paths):
    cfg = ReviewerConfig(name="r", preset="command",
                         argv=["my-reviewer", "{prompt}", "--ws={workspace}", "x{schema}y", "{other}", "{prompt"])
    spec = InputSpec(text="p", prompt_path=paths.round_dir / "packet.md")
    argv = get_preset("command").argv("/usr/bin/my-reviewer", cfg, "", paths, spec)
    assert argv == ["/usr/bin/my-reviewer", str(paths.round_dir / "packet.md"), f"--ws={paths.workspace}",
                    f"x{paths.schema_path}y", "{other}", "{prompt"]
    assert get_preset("command").version_args is None
    assert get_preset("command").stdin_text(spec) is None


def test_substitute_is_one_pass():
    assert substitute("{prompt}:{schema}", prompt="/a/{schema}", workspace="/w", schema="/s") == "/a/{schema}:/s"


def test_executable_names(paths):
    spec = InputSpec(text="p", prompt_path=Path("/x/packet.md"))
    assert get_preset("claude").executable_name(ReviewerConfig(name="r", preset="claude"), paths, spec) == "claude"
    assert get_preset("codex").executable_name(
        ReviewerConfig(name="r", preset="codex", binary="/opt/codex"), paths, spec) == "/opt/codex"
    cfg = ReviewerConfig(name="r", preset="command", argv=["{workspace}/../bin/rev", "{prompt}"])
    assert get_preset("command").executable_name(cfg, paths, spec) == f"{paths.workspace}/../bin/rev"


# ---------------------------------------------------------------- the fakes accept what the presets build


def _run_fake(argv, *, cwd, stdin=None, scenario=None, tmp_path):
    env = dict(os.environ)
    rec = tmp_path / "rec.jsonl"
    sc = dict(scenario or {})
    sc["record"] = str(rec)
    sc_path = tmp_path / "sc.json"
    sc_path.write_text(json.dumps(sc), encoding="utf-8")
    env["SPAR_FAKE_SCENARIO"] = str(sc_path)
    proc = subprocess.run(argv, cwd=cwd, input=stdin.encode() if stdin is not None else None,
                          capture_output=True, env=env, timeout=20,
                          stdin=None if stdin is not None else subprocess.DEVNULL)
    records = [json.loads(line) for line in rec.read_text().splitlines()] if rec.exists() else []
    return proc, records


@pytest.mark.parametrize("preset", ["claude", "codex", "agy"])
def test_fake_accepts_preset_argv_and_reads_the_input(preset, paths, tmp_path):
    cfg = ReviewerConfig(name="r", preset=preset, effort="" if preset == "agy" else "high")
    text = "# packet\nünïcode\n"
    spec = InputSpec(text=text)
    p = get_preset(preset)
    argv = p.argv(str(FAKES / preset), cfg, "some-model", paths, spec)
    proc, records = _run_fake(argv, cwd=paths.workspace, stdin=p.stdin_text(spec), tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr
    monitor = p.monitor()
    for line in proc.stdout.decode().splitlines():
        assert monitor.feed(line) is None
    (tmp_path / "out.log").write_bytes(proc.stdout)
    from spar.round.interface import StreamInfo

    answer = monitor.finish(0, StreamInfo(tmp_path / "out.log"))
    assert answer.completed and isinstance(answer.result, dict)
    digest = hashlib.sha256(text.encode()).hexdigest()
    (rec,) = records
    if preset == "agy":
        assert rec["prompt_sha256"] == digest and rec["stdin_sha256"] is None
    else:
        assert rec["stdin_sha256"] == digest
    assert rec["model"] == "some-model"


# these run the fakes alone (no Spar code): the inner loop runs one row per program, the
# full suite every row
REJECTED = [
    ("claude", ["-p", "--output-format", "stream-json"], 1, "requires --verbose"),
    ("claude", ["-p", "--output-format", "stream-json", "--verbose", "--effort", "huge"], 1, "--effort"),
    ("claude", ["-p", "--output-format", "stream-json", "--verbose", "--json-schema", "/path/schema.json"], 1,
     "--json-schema"),
    ("claude", ["-p", "--output-format", "stream-json", "--verbose", "--tools", "Read,Nope"], 1, "Unknown tool"),
    ("claude", ["-p", "--bogus"], 1, "unknown option"),
    ("codex", ["exec", "--json", "--sandbox", "read-only", "-C", "{ws}", "-"], 1, "--skip-git-repo-check"),
    ("codex", ["exec", "--json", "--skip-git-repo-check", "-c", "model_reasoning_effort=\"max\"", "-"], 1,
     "unknown variant"),
    ("codex", ["exec", "--json", "--skip-git-repo-check", "--sandbox", "read_only", "-"], 2, "invalid value"),
    ("codex", ["review", "-"], 2, "only `codex exec`"),
    ("agy", ["--output-format", "stream-json", "--mode", "plan"], 2, "-p"),
    ("agy", ["-p", "x", "--mode", "plan", "--json-schema", "/no/such/schema.json"], 2, "--json-schema"),
    ("agy", ["-p", "x", "--yolo"], 2, "unknown flag"),
]


@pytest.mark.parametrize("prog,argv,code,message", kept_in_inner_loop(
    REJECTED, lambda index, row: row[0] not in {earlier[0] for earlier in REJECTED[:index]}))
def test_fake_rejects_what_the_real_program_rejects(prog, argv, code, message, paths, tmp_path):
    argv = [a.replace("{ws}", str(paths.workspace)) for a in argv]
    proc, _ = _run_fake([str(FAKES / prog), *argv], cwd=paths.workspace, stdin="packet", tmp_path=tmp_path)
    assert proc.returncode == code
    assert message in proc.stderr.decode()


def test_fake_codex_refuses_a_non_strict_schema(paths, tmp_path):
    loose = paths.round_dir / "loose.json"
    loose.write_text(json.dumps({"type": "object", "properties": {"x": {"type": "string"}}}), encoding="utf-8")
    argv = [str(FAKES / "codex"), "exec", "--json", "--skip-git-repo-check", "--output-schema", str(loose), "-"]
    proc, _ = _run_fake(argv, cwd=paths.workspace, stdin="packet", tmp_path=tmp_path)
    assert proc.returncode == 1
    events = [json.loads(line) for line in proc.stdout.decode().splitlines()]
    assert events[-1]["type"] == "turn.failed" and "Invalid schema" in events[-1]["error"]["message"]


@pytest.mark.parametrize("prog,expected", [("claude", "2.1.197 (Claude Code)"), ("codex", "codex-cli 0.171.0"),
                                           ("agy", "1.2.11")])
def test_fake_versions(prog, expected, tmp_path):
    proc, _ = _run_fake([str(FAKES / prog), "--version"], cwd=tmp_path, tmp_path=tmp_path)
    assert proc.returncode == 0 and proc.stdout.decode().strip() == expected


SECRET_PACKET = ("# Review packet\n\n- Head commit: `0123abcd`\n\n```diff\n+PRIVATE_CHANGE_7f3a = 1\n```\n"
                 "Your standpoint: PRIVATE_STANDPOINT_7f3a\n")


@pytest.mark.parametrize("preset", ["claude", "codex", "agy", "command", "openai-compatible"])
@pytest.mark.parametrize("standpoint", [None, "PRIVATE_STANDPOINT_7f3a"])
def test_no_preset_puts_the_packet_on_its_command_line(paths, preset, standpoint):
    """A command line is readable by every user of the machine (/proc/PID/cmdline): the packet
    and the instruction go on stdin or in a file for every preset that runs a process."""
    cfg = ReviewerConfig(name="r", preset=preset, argv=["review", "{prompt}"] if preset == "command" else [],
                         base_url="http://127.0.0.1:1/v1", model="m")
    spec = prepare_input(cfg, reviewer_dir=paths.reviewer_dir, packet_text=SECRET_PACKET,
                         packet_path=paths.round_dir / "packet.md", standpoint=standpoint,
                         standpoints_active=standpoint is not None, dry_run=False)
    argv = get_preset(preset).argv("/usr/bin/" + preset, cfg, "m", paths, spec)
    assert not [a for a in argv if "PRIVATE_" in a or "0123abcd" in a], argv
    stdin = get_preset(preset).stdin_text(spec) or ""
    files = "".join(spec.files.values())
    if preset == "command":  # {prompt} names the file holding it (packet.md, or input.md with a standpoint)
        named = [a for a in argv if a.endswith(".md")]
        assert named and (standpoint is not None or named == [str(paths.round_dir / "packet.md")])
    else:
        assert "PRIVATE_CHANGE_7f3a" in stdin + files
