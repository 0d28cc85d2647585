"""`spar config` through `spar.cli.main`: exit codes, stderr messages, JSON and
text output, -C, the config digest, and the example configuration files."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from spar.cli import main
from spar.config.model import sha256_canonical
from tests.gitrepo import make_repo

ROOT = Path(__file__).resolve().parents[1]
ROWS = json.loads((Path(__file__).parent / "data" / "config_command.json").read_text(encoding="utf-8"))["rows"]


def git_repo(path: Path) -> Path:
    return make_repo(path.parent, name=path.name)  # an empty repository: no commit


@pytest.fixture
def world(tmp_path, monkeypatch):
    """A temp git repository as the current folder, a private HOME, no other sources."""
    home = tmp_path / "home"
    home.mkdir()
    repo = git_repo(tmp_path / "repo").resolve()
    monkeypatch.setenv("HOME", str(home))
    for var in ("SPAR_CONFIG", "XDG_CONFIG_HOME"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(repo)
    return {"home": home, "repo": repo, "user": tmp_path / "user.toml", "tmp": tmp_path, "mp": monkeypatch}


def run(capsys, *args) -> tuple[int, str, str]:
    code = main(["config", *args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r["id"])
def test_exit_codes(row, world, capsys):
    def fill(s):
        return s.replace("{repo}", str(world["repo"])).replace("{user}", str(world["user"]))

    if "user" in row:
        world["user"].write_text(row["user"])
        world["mp"].setenv("SPAR_CONFIG", str(world["user"]))
    if row.get("user_dir"):
        world["user"].mkdir()
        world["mp"].setenv("SPAR_CONFIG", str(world["user"]))
    if "project" in row:
        (world["repo"] / ".jaekit").mkdir()
        (world["repo"] / ".jaekit" / "spar.toml").write_text(row["project"])
    code, out, err = run(capsys, *[fill(a) for a in row["args"]])
    assert code == row["exit"], err
    if "stdout" in row:
        assert row["stdout"] in out
    if "stderr" in row:
        assert fill(row["stderr"]) in err
        assert err.count("\n") == 1 and out == ""


USER = """\
timeout_seconds = 300
[[reviewers]]
name = "opus"
preset = "claude"
model = "opus"
[[reviewers]]
preset = "codex"
allowed_models = ["gpt-5", "o3"]
"""
PROJECT = """\
rules = ["AGENTS.md"]
check_paths = ["tests/**"]
angles = ["risk", "criteria"]
"""


def _write_both(world):
    world["user"].write_text(USER)
    world["mp"].setenv("SPAR_CONFIG", str(world["user"]))
    (world["repo"] / "AGENTS.md").write_text("rules\n")
    (world["repo"] / ".jaekit").mkdir()
    (world["repo"] / ".jaekit" / "spar.toml").write_text(PROJECT)


def test_json_output(world, capsys):
    _write_both(world)
    code, out, err = run(capsys, "--format", "json", "--reviewers", "codex, agy", "--model", "codex=o3",
                         "--check-path", "checks/")
    assert code == 0, err
    doc = json.loads(out)
    assert set(doc) == {"repository", "config", "digest", "files", "skipped"}
    assert doc["repository"] == str(world["repo"])
    config = doc["config"]
    assert [(r["name"], r["preset"], r["timeout_seconds"]) for r in config["reviewers"]] == [
        ("codex", "codex", 300), ("agy", "agy", 300)]
    assert config["reviewers"][0]["model"] == "o3"
    assert config["reviewers"][0]["allowed_models"] == ["gpt-5", "o3"]
    assert config["rules"] == ["AGENTS.md"]
    assert config["check_paths"] == ["tests/**", "checks"]
    assert config["angles"] == ["criteria", "risk"]
    assert config["caps"] == {"plan": 2, "plan_delta": 2, "code": 3}
    assert doc["digest"] == sha256_canonical(config)
    project = world["repo"] / ".jaekit" / "spar.toml"
    assert doc["files"] == [
        {"path": str(world["user"]), "sha256": hashlib.sha256(world["user"].read_bytes()).hexdigest(), "role": "user"},
        {"path": str(project), "sha256": hashlib.sha256(project.read_bytes()).hexdigest(), "role": "project"},
    ]
    assert doc["skipped"] == []


def test_text_output(world, capsys):
    _write_both(world)
    code, out, err = run(capsys, "--check-path", "more/**")
    assert code == 0, err
    lines = out.splitlines()
    assert any(line.split()[:2] == ["opus", "claude"] and "model=opus" in line for line in lines)
    assert any(line.split()[:2] == ["codex", "codex"] and "timeout_seconds=300" in line for line in lines)
    assert "check_paths      tests/**, more/**" in lines
    assert "angles           criteria, risk" in lines
    _, json_out, _ = run(capsys, "--check-path", "more/**", "--format", "json")
    assert f"digest           {json.loads(json_out)['digest']}" in lines
    assert any(str(world["user"]) in line and line.split()[0] == "user" for line in lines)


def test_skipped_sources_listed(world, capsys):
    code, out, _ = run(capsys, "--format", "json")
    assert code == 0
    home = world["home"]
    assert json.loads(out)["skipped"] == [
        {"path": f"{home}/.config/jaekit/spar.toml", "why": "does not exist"},
        {"path": f"{home}/.config/clean-review/config.json", "why": "does not exist"},
    ]


def test_directory_option_and_no_repository(world, capsys, monkeypatch):
    _write_both(world)
    outside = world["tmp"] / "outside"
    outside.mkdir()
    monkeypatch.chdir(outside)
    code, out, _ = run(capsys, "--format", "json")
    assert code == 0
    doc = json.loads(out)
    assert doc["repository"] is None and doc["config"]["rules"] == []
    assert [f["role"] for f in doc["files"]] == ["user"]
    sub = world["repo"] / "deep" / "er"
    sub.mkdir(parents=True)
    code, out, _ = run(capsys, "--format", "json", "-C", str(sub))
    assert code == 0
    doc = json.loads(out)
    assert doc["repository"] == str(world["repo"]) and doc["config"]["rules"] == ["AGENTS.md"]


def test_digest_covers_applied_values_only(world, capsys):
    """Same values written in another key order and style: same digest, other file hash;
    a changed value changes the digest."""
    other = """\
# the same configuration, differently written
timeout_seconds = 300   # seconds

[[reviewers]]
model = 'opus'
preset = 'claude'
"name" = 'opus'

[[reviewers]]
allowed_models = [
  'gpt-5',
  'o3',
]
preset = "codex"
"""
    world["user"].write_text(USER)
    world["mp"].setenv("SPAR_CONFIG", str(world["user"]))
    _, first, _ = run(capsys, "--format", "json")
    alt = world["tmp"] / "alt.toml"
    alt.write_text(other)
    world["mp"].setenv("SPAR_CONFIG", str(alt))
    _, second, _ = run(capsys, "--format", "json")
    a, b = json.loads(first), json.loads(second)
    assert a["config"] == b["config"] and a["digest"] == b["digest"]
    assert a["files"][0]["sha256"] != b["files"][0]["sha256"]
    alt.write_text(other.replace("'o3'", "'o4'"))
    _, third, _ = run(capsys, "--format", "json")
    assert json.loads(third)["digest"] != a["digest"]


def test_example_files(world, capsys):
    """spar/configs/*.example.toml load and mean what their comments say."""
    world["mp"].setenv("SPAR_CONFIG", str(ROOT / "spar" / "configs" / "user.example.toml"))
    (world["repo"] / ".jaekit").mkdir()
    shutil.copy(ROOT / "spar" / "configs" / "project.example.toml", world["repo"] / ".jaekit" / "spar.toml")
    (world["repo"] / "AGENTS.md").write_text("rules\n")
    (world["repo"] / "docs" / "rules").mkdir(parents=True)
    (world["repo"] / "docs" / "rules" / "api.md").write_text("api\n")
    (world["repo"] / ".jaekit" / "rules").mkdir()
    shutil.copy(ROOT / "spar" / "configs" / "baseline.md", world["repo"] / ".jaekit" / "rules" / "baseline.md")
    code, out, err = run(capsys, "--format", "json")
    assert code == 0, err
    config = json.loads(out)["config"]
    assert config["timeout_seconds"] == 900
    assert config["reviewers"] == [
        {"name": "opus", "preset": "claude", "timeout_seconds": 1200, "model": "opus", "fallback_model": "sonnet",
         "binary": "", "effort": "high", "max_budget_usd": 5.0},
        {"name": "codex", "preset": "codex", "timeout_seconds": 900, "model": "", "fallback_model": "", "binary": "",
         "effort": "", "allowed_models": ["gpt-5.1-codex", "gpt-5.1-codex-mini"], "allowed_efforts": ["medium", "high"]},
        {"name": "house", "preset": "command", "timeout_seconds": 600,
         "argv": ["house-review", "--prompt", "{prompt}", "--schema", "{schema}", "--cwd", "{workspace}"]},
    ]
    assert config["rules"] == ["AGENTS.md", "docs/rules/api.md", ".jaekit/rules/baseline.md"]
    assert config["check_paths"] == ["tests/**", "checks/**", "**/*_test.go"]
    assert config["angles"] == ["criteria", "correctness", "checks", "contracts", "risk"]
    assert config["caps"] == {"plan": 2, "plan_delta": 2, "code": 4}
    # the allowed list in the example works with --model / --effort
    code, out, err = run(capsys, "--format", "json", "--model", "codex=gpt-5.1-codex-mini", "--effort", "codex=high")
    assert code == 0, err
    codex = json.loads(out)["config"]["reviewers"][1]
    assert (codex["model"], codex["effort"]) == ("gpt-5.1-codex-mini", "high")
    code, _, err = run(capsys, "--model", "opus=sonnet")
    assert code == 65 and "already sets model" in err


@pytest.mark.slow  # a real spar process
def test_real_subprocess(world):
    """The installed entry point, as a user runs it."""
    _write_both(world)
    spar = ROOT / ".venv" / "bin" / "spar"
    proc = subprocess.run([str(spar), "config", "--format", "json"], capture_output=True, text=True,
                          cwd=world["repo"], timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["config"]["rules"] == ["AGENTS.md"]
    (world["repo"] / ".jaekit" / "spar.toml").write_text("model = 'x'\n")
    proc = subprocess.run([str(spar), "config"], capture_output=True, text=True, cwd=world["repo"], timeout=60)
    assert proc.returncode == 65
    assert proc.stderr == f"spar: {world['repo']}/.jaekit/spar.toml:1: key \"model\" is not allowed in the project " \
                          f"configuration (only the user configuration chooses reviewers, programs, models and timeouts)\n"


@pytest.mark.parametrize("arg, shown", [
    # raw bytes in argv: invalid UTF-8 arrives as surrogateescape characters and is shown as Go's %q shows bytes
    (b"--model=claude=opus\xff\xfe", b'spar: --model "claude"="opus\\xff\\xfe": the value is not valid UTF-8\n'),
    (b"--model=claude=\xed\xa0\x80", b'spar: --model "claude"="\\xed\\xa0\\x80": the value is not valid UTF-8\n'),
    (b"--model=claude=a\x01b", b'spar: --model "claude"="a\\x01b": the value holds whitespace or a control character\n'),
    (b"--model=claude=a\x7f", b'spar: --model "claude"="a\\x7f": the value holds whitespace or a control character\n'),
    (b"--model=claude=a\xc2\xa0b", b'spar: --model "claude"="a\\u00a0b": the value holds whitespace or a control character\n'),
    (b"--model=claude=a\tb", b'spar: --model "claude"="a\\tb": the value holds whitespace or a control character\n'),
    (b"--model=\xff=x", b'spar: --model "\\xff"="x": reviewer "\\xff" is not in this run\n'),
    (b"--reviewers=\x1cclaude", b'spar: --reviewers: "\\x1cclaude" is not a valid reviewer name'),
])
@pytest.mark.slow  # a real spar process per row
def test_g25_values_as_argv_bytes(world, arg, shown):
    """G25 through a real process: argv bytes, exit 65, the name and value shown with %q."""
    spar = ROOT / ".venv" / "bin" / "spar"
    proc = subprocess.run([os.fsencode(str(spar)), b"config", arg], capture_output=True, cwd=world["repo"],
                          timeout=60, env={**os.environ, "LC_ALL": "C.UTF-8"})
    assert proc.returncode == 65, proc.stderr
    assert proc.stdout == b""
    assert proc.stderr.startswith(shown), proc.stderr
