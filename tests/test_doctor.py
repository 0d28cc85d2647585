"""`spar doctor`: the Core capability query against every case of the
core-capabilities contract (tests/data/core_capabilities.json, through the
fake `ha` in tests/fakes), and the round checks (config, reviewers, login,
git, series) with the exit code saying whether a round can run."""

from __future__ import annotations

import copy
import json
import os
import sys
from pathlib import Path

import anyio
import pytest

from spar.cli import main
from spar.config import agent_hooks
from spar.core_query import query_core
from spar.judge.core_caps import interpret
from spar.round.sandboxing import HOME_INSIDE, choose_sandbox
from tests.gitrepo import make_repo

ROOT = Path(__file__).resolve().parent.parent
FAKES = ROOT / "tests" / "fakes"
DATA = json.loads((ROOT / "tests" / "data" / "core_capabilities.json").read_text())
CASES = DATA["cases"]


def _set(obj: dict, dotted: str, value) -> None:
    *parents, last = dotted.split(".")
    for key in parents:
        obj = obj[key]
    obj[last] = value


def _delete(obj: dict, dotted: str) -> None:
    *parents, last = dotted.split(".")
    for key in parents:
        obj = obj[key]
    del obj[last]


def case_output(case: dict) -> bytes:
    """The bytes the fake ha prints for one case."""
    if "hex" in case:
        return bytes.fromhex(case["hex"])
    if "raw" in case:
        return case["raw"].encode()
    value = copy.deepcopy(DATA["base"])
    for dotted, v in case.get("set", {}).items():
        _set(value, dotted, v)
    for dotted in case.get("delete", []):
        _delete(value, dotted)
    if "remove_item" in case:
        key, item = case["remove_item"]
        value[key].remove(item)
    if case.get("raw_compact"):
        return json.dumps(value, separators=(",", ":")).encode()
    return (json.dumps(value, indent=1) + "\n" + case.get("append", "")).encode()


def check_expectation(caps, expect: dict) -> None:
    assert caps.state == expect["state"], caps.reason
    if "reason_has" in expect:
        assert expect["reason_has"] in caps.reason
    if "reads_review_gate" in expect:
        assert caps.reads_review_gate is expect["reads_review_gate"]
    if "missing" in expect:
        assert caps.missing_for_gate == expect["missing"]
    if expect["state"] != "ok":
        assert not caps.reads_review_gate  # nothing but an interpreted answer ever passes


def test_the_data_covers_every_field_of_the_contract_table():
    rows = {c["row"] for c in CASES}
    for field in ("schema", "ha_version", "supported_rules", "default_rules", "formats.criteria",
                  "formats.check_declaration", "formats.check_result", "formats.check_evidence", "formats.timing",
                  "formats.assurance_tier", "formats.core_requirements", "formats.review_gate", "features",
                  "duplicate keys", "trailing data", "corrupt JSON", "§1 exit 64", "§1 version print", "§1 timeouts"):
        assert field in rows


@pytest.mark.parametrize("case", [c for c in CASES if "sleep" not in c], ids=lambda c: c["name"])
def test_interpretation(case):
    caps = interpret(case.get("exit_code", 0), case_output(case))
    check_expectation(caps, case["expect"])


@pytest.fixture
def fake_ha(tmp_path):
    """The fake ha, copied so each test has its own (its sha256 is taken around the query)."""
    exe = tmp_path / "core" / "ha"
    exe.parent.mkdir()
    exe.write_bytes((FAKES / "ha").read_bytes())
    exe.chmod(0o755)
    return exe


def _env(tmp_path: Path, case: dict, bin_dir: Path) -> dict:
    spec = tmp_path / "case.json"
    spec.write_text(json.dumps({"stdout_hex": case_output(case).hex(), "exit_code": case.get("exit_code", 0),
                                "sleep": case.get("sleep", 0), "argv_log": str(tmp_path / "argv.jsonl")}))
    env = dict(os.environ)
    env["SPAR_FAKE_HA"] = str(spec)
    env["PATH"] = os.pathsep.join([str(bin_dir), str(Path(sys.executable).parent), "/usr/bin", "/bin"])
    return env


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=lambda c: c["name"])
def test_fake_ha_executable_for_every_case(case, tmp_path, fake_ha):
    env = _env(tmp_path, case, fake_ha.parent)
    timeout = 1.0 if "sleep" in case else 30.0  # 30 s only bounds a hang; the fake answers at once

    async def go():
        return await query_core("ha", env["PATH"], env, timeout=timeout)

    result = anyio.run(go)
    check_expectation(result.capabilities, case["expect"])
    assert result.executable == str(fake_ha) and result.sha256
    # the query asked exactly `ha capabilities --format json`, once, never a version print
    calls = [json.loads(x) for x in (tmp_path / "argv.jsonl").read_text().splitlines()]
    assert calls == [["capabilities", "--format", "json"]]


def test_a_binary_changed_during_the_query_is_not_a_pass(tmp_path, fake_ha):
    good = dict(next(c for c in CASES if c["name"] == "the v0.1.8 example"))
    env = _env(tmp_path, good, fake_ha.parent)
    spec = json.loads(Path(env["SPAR_FAKE_HA"]).read_text())
    Path(env["SPAR_FAKE_HA"]).write_text(json.dumps({**spec, "change_self": True}))
    result = anyio.run(lambda: query_core(str(fake_ha), env["PATH"], env, timeout=30))
    assert result.capabilities.state == "failed" and "changed" in result.capabilities.reason
    assert not result.capabilities.reads_review_gate


def test_a_symlink_is_queried_at_its_resolved_path(tmp_path, fake_ha):
    link = tmp_path / "ha-link"
    link.symlink_to(fake_ha)
    good = next(c for c in CASES if c["name"] == "the v0.1.8 example")
    env = _env(tmp_path, good, fake_ha.parent)
    result = anyio.run(lambda: query_core(str(link), env["PATH"], env, timeout=30))
    assert result.executable == str(fake_ha) and result.capabilities.reads_review_gate


def test_missing_core_is_reported_not_guessed(tmp_path):
    result = anyio.run(lambda: query_core("ha", str(tmp_path), {"PATH": str(tmp_path)}))
    assert result.capabilities.state == "missing" and result.executable is None


# ---------------------------------------------------------------- the command


@pytest.fixture
def here(tmp_path, monkeypatch):
    """A repository with reviews/ ignored as the current folder; SPAR_CONFIG names
    the user configuration the test writes; PATH has python, git and test programs."""
    repo = make_repo(tmp_path, {".gitignore": "/reviews/\n", "a.py": "x = 1\n"})
    monkeypatch.chdir(repo)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    monkeypatch.setenv("PATH", os.pathsep.join([str(bin_dir), str(Path(sys.executable).parent), "/usr/bin", "/bin"]))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    config = tmp_path / "spar.toml"
    monkeypatch.setenv("SPAR_CONFIG", str(config))
    return repo, bin_dir, config


def program(bin_dir: Path, name: str, body: str) -> Path:
    """A small Python program standing in for a CLI (version and login answers)."""
    path = bin_dir / name
    path.write_text(f"#!{sys.executable}\nimport sys, json\nargs = sys.argv[1:]\n{body}\n")
    path.chmod(0o755)
    return path


CLAUDE = """
if args == ["--version"]: print("2.1.59 (Claude Code)")
elif args == ["auth", "status"]: print(json.dumps({"loggedIn": LOGGED}))
else: sys.exit(2)
"""
CODEX = """
if args == ["--version"]: print("codex-cli 0.101.0")
elif args == ["login", "status"]:
    print("Logged in using ChatGPT" if LOGGED else "Not logged in"); sys.exit(0 if LOGGED else 1)
else: sys.exit(2)
"""


def doctor_json(capsys, *args: str) -> tuple[int, dict]:
    code = main(["doctor", "--format", "json", *args])
    return code, json.loads(capsys.readouterr().out)


def by_check(report: dict, check: str) -> list[dict]:
    return [c for c in report["checks"] if c["check"] == check]


def test_everything_in_place_exits_0(here, capsys):
    _repo, bin_dir, config = here
    program(bin_dir, "claude", CLAUDE.replace("LOGGED", "True"))
    program(bin_dir, "codex", CODEX.replace("LOGGED", "True"))
    config.write_text('[[reviewers]]\npreset = "claude"\n[[reviewers]]\npreset = "codex"\n')
    code, report = doctor_json(capsys)
    assert code == 0 and report["ready"] is True and report["schema"] == "spar-doctor/v1"
    assert [c["detail"].split()[-1] for c in by_check(report, "reviewer")] == ["Code)", "0.101.0"]
    assert [c["status"] for c in by_check(report, "login")] == ["ok", "ok"]
    assert by_check(report, "series")[0]["status"] == "ok"
    assert by_check(report, "git")[0]["detail"].startswith("git version")
    assert report["core"]["state"] == "missing" and by_check(report, "core")[0]["status"] == "info"


def test_missing_cli_not_logged_in_and_failing_version_each_make_it_1(here, capsys):
    _repo, bin_dir, config = here
    program(bin_dir, "claude", CLAUDE.replace("LOGGED", "False"))
    program(bin_dir, "broken", "sys.stderr.write('boom\\n'); sys.exit(3)")
    config.write_text('[[reviewers]]\npreset = "claude"\n[[reviewers]]\npreset = "codex"\n'
                      '[[reviewers]]\nname = "b"\npreset = "agy"\nbinary = "broken"\n')
    code, report = doctor_json(capsys)
    assert code == 1 and report["ready"] is False
    reviewer = {c["subject"]: c for c in by_check(report, "reviewer")}
    assert reviewer["claude (claude)"]["status"] == "ok"
    assert reviewer["codex (codex)"]["status"] == "problem" and "not found on PATH" in reviewer["codex (codex)"]["detail"]
    assert reviewer["b (agy)"]["status"] == "problem" and "exit 3" in reviewer["b (agy)"]["detail"]
    assert "boom" in reviewer["b (agy)"]["detail"]
    login = by_check(report, "login")
    assert [(c["subject"], c["status"]) for c in login] == [("claude (claude)", "problem")]


def test_a_command_whose_script_cannot_start_is_a_problem(here, capsys):
    """A `command` reviewer has no version check, but a script whose #! interpreter is missing
    would fail every round: doctor says so before one."""
    _repo, bin_dir, config = here
    (bin_dir / "house").write_text("#!/nonexistent/python3\nprint('review')\n")
    (bin_dir / "house").chmod(0o755)
    config.write_text('[[reviewers]]\nname = "house"\npreset = "command"\nargv = ["house", "{prompt}"]\n')
    code, report = doctor_json(capsys)
    (check,) = by_check(report, "reviewer")
    assert code == 1 and check["status"] == "problem"
    assert '#! line names "/nonexistent/python3"' in check["detail"] and "fix argv of house" in check["fix"]


def test_agy_login_is_not_checked_and_an_unreadable_answer_is_unknown(here, capsys):
    _repo, bin_dir, config = here
    program(bin_dir, "agy", "print('1.1.27')")
    program(bin_dir, "codex", "print('codex-cli 0.1') if args == ['--version'] else sys.exit(2)")
    config.write_text('[[reviewers]]\npreset = "agy"\n[[reviewers]]\npreset = "codex"\n')
    code, report = doctor_json(capsys)
    assert code == 0
    assert [c["status"] for c in by_check(report, "login")] == ["info", "warning"]


def test_configuration_error_names_file_and_line(here, capsys):
    _repo, _bin_dir, config = here
    config.write_text('timeout_seconds = 5\n[[reviewers]]\npreset = "nope"\n')
    code, report = doctor_json(capsys)
    assert code == 1
    assert f"{config}:3" in by_check(report, "config")[0]["detail"]


def test_series_not_ignored_points_to_init(here, capsys):
    _repo, _bin_dir, config = here
    config.write_text('[[reviewers]]\npreset = "native"\n')
    code, report = doctor_json(capsys, "--series", "other")
    assert code == 1
    series = by_check(report, "series")[0]
    assert series["status"] == "problem" and "spar init --series other" in series["fix"]


def test_outside_a_repository_is_a_problem(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SPAR_CONFIG", str(tmp_path / "none.toml"))
    code, report = doctor_json(capsys)
    assert code == 1 and by_check(report, "repository")[0]["status"] == "problem"


def test_core_counts_only_when_asked_for(here, capsys, tmp_path, fake_ha, monkeypatch):
    _repo, _bin_dir, config = here
    config.write_text('[[reviewers]]\npreset = "native"\n')
    no_gate = next(c for c in CASES if c["name"] == "features without review-gate/v1")
    monkeypatch.setenv("SPAR_FAKE_HA", _env(tmp_path, no_gate, fake_ha.parent)["SPAR_FAKE_HA"])
    code, report = doctor_json(capsys)  # ha not on PATH here
    assert code == 0 and report["core"]["state"] == "missing"
    code, report = doctor_json(capsys, "--core", str(fake_ha))
    assert code == 1
    core = by_check(report, "core")[0]
    assert core["status"] == "problem" and "features review-gate/v1" in core["detail"]
    assert report["core"]["reads_review_gate"] is False and report["core"]["ha_version"] == "0.1.8"
    monkeypatch.setenv("PATH", os.pathsep.join([str(fake_ha.parent), os.environ["PATH"]]))
    code, report = doctor_json(capsys)  # found on PATH but not asked for: a warning only
    assert code == 0 and by_check(report, "core")[0]["status"] == "warning"
    good = next(c for c in CASES if c["name"] == "the v0.1.8 example")
    monkeypatch.setenv("SPAR_FAKE_HA", _env(tmp_path, good, fake_ha.parent)["SPAR_FAKE_HA"])
    code, report = doctor_json(capsys, "--core", str(fake_ha))
    assert code == 0 and report["core"]["reads_review_gate"] is True


def test_text_form_is_one_screen(here, capsys):
    _repo, _bin_dir, config = here
    config.write_text('[[reviewers]]\npreset = "native"\n')
    assert main(["doctor"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("spar doctor (") and "a round can run here" in out
    assert len(out.splitlines()) < 24


def test_help_lists_exit_codes(capsys):
    assert main(["doctor", "--help"]) == 0
    assert "Exit codes: 0 a round can run" in capsys.readouterr().out


def test_login_is_checked_with_the_environment_the_reviewer_gets(here, capsys, monkeypatch):
    """Under env_passthrough, doctor runs each CLI with what its reviewer would inherit:
    codex logged in through OPENAI_API_KEY (its vendor's, always passed) is logged in;
    a login that depends on a variable the list withholds is not."""
    _repo, bin_dir, config = here
    monkeypatch.setenv("OPENAI_API_KEY", "sk-oai")
    monkeypatch.setenv("CORP_TOKEN", "t")
    program(bin_dir, "codex", CODEX.replace("LOGGED", "'OPENAI_API_KEY' in __import__('os').environ"))
    program(bin_dir, "claude", CLAUDE.replace("LOGGED", "'CORP_TOKEN' in __import__('os').environ"))
    config.write_text('env_passthrough = []\n[[reviewers]]\npreset = "codex"\n[[reviewers]]\npreset = "claude"\n')
    code, report = doctor_json(capsys)
    assert [(c["subject"], c["status"]) for c in by_check(report, "login")] == [
        ("codex (codex)", "ok"), ("claude (claude)", "problem")]
    assert code == 1
    config.write_text('env_passthrough = ["CORP_TOKEN"]\n[[reviewers]]\npreset = "claude"\n')
    code, report = doctor_json(capsys)
    assert code == 0 and by_check(report, "login")[0]["status"] == "ok"


# codex 0.171.0 as installed from npm: `codex login status` writes its answer to stderr
# ("Not logged in", exit 1; "API key configured - ***", exit 0), nothing to stdout.
CODEX_REAL = """
import os
if args == ["--version"]: print("codex-cli 0.171.0")
elif args == ["login", "status"]:
    if LOGGED: sys.stderr.write("API key configured - ***\\nAuthentication is checked when you send a request.\\n")
    else: sys.stderr.write("Not logged in\\n"); sys.exit(1)
else: sys.exit(2)
"""


def test_codex_login_answer_on_stderr_is_read(here, capsys, monkeypatch):
    _repo, bin_dir, config = here
    monkeypatch.delenv("CODEX_API_KEY", raising=False)
    config.write_text('[[reviewers]]\npreset = "codex"\n')
    program(bin_dir, "codex", CODEX_REAL.replace("LOGGED", "False"))
    code, report = doctor_json(capsys)
    (login,) = by_check(report, "login")
    assert (code, login["status"], login["fix"]) == (1, "problem", "log in with `codex login`")
    program(bin_dir, "codex", CODEX_REAL.replace("LOGGED", "True"))
    code, report = doctor_json(capsys)
    assert code == 0 and by_check(report, "login")[0]["status"] == "ok"


def test_codex_api_key_in_the_environment_counts_as_logged_in(here, capsys, monkeypatch):
    """`codex exec` takes CODEX_API_KEY (the CI recipes set it) though `codex login status`
    does not see it: doctor says so instead of sending the user to `codex login`."""
    _repo, bin_dir, config = here
    monkeypatch.setenv("CODEX_API_KEY", "sk-ci")
    config.write_text('[[reviewers]]\npreset = "codex"\n')
    program(bin_dir, "codex", CODEX_REAL.replace("LOGGED", "False"))
    code, report = doctor_json(capsys)
    (login,) = by_check(report, "login")
    assert code == 0 and login["status"] == "ok" and "CODEX_API_KEY" in login["detail"]
    config.write_text('env_passthrough = []\n[[reviewers]]\npreset = "codex"\n')  # still passed: codex's own
    assert doctor_json(capsys)[0] == 0


def test_only_native_reviewers_is_a_warning_saying_how_to_add_one(here, capsys):
    """issue 22 point 7: doctor said "a round can run here" with `native` alone, which
    needs a host agent to run `spar record`."""
    _repo, _bin_dir, config = here
    config.write_text('[[reviewers]]\npreset = "native"\n')
    code, report = doctor_json(capsys)
    assert code == 0 and report["ready"] is True
    (warning,) = [c for c in by_check(report, "reviewer") if c["subject"] == "unattended"]
    assert warning["status"] == "warning" and "spar record" in warning["detail"]
    assert "spar init" in warning["fix"] and "claude, codex or agy" in warning["fix"]
    assert main(["doctor"]) == 0
    out = capsys.readouterr().out
    assert "no reviewer runs unattended" in out.splitlines()[0] and "-> install claude, codex or agy" in out


def test_a_cli_reviewer_beside_native_lifts_the_all_native_warning(here, capsys):
    _repo, bin_dir, config = here
    program(bin_dir, "claude", CLAUDE.replace("LOGGED", "True"))
    config.write_text('[[reviewers]]\npreset = "native"\n[[reviewers]]\npreset = "claude"\n')
    code, report = doctor_json(capsys)
    assert code == 0
    assert [c for c in report["checks"] if c["subject"] == "unattended"] == []


def test_native_beside_a_reviewer_that_runs_unattended_is_flagged(here, capsys):
    """Every configured reviewer is required: with native among CLIs, each round waits for
    `spar record` and the gate stays blocked without it; doctor says so and how to fix it."""
    _repo, bin_dir, config = here
    program(bin_dir, "claude", CLAUDE.replace("LOGGED", "True"))
    config.write_text('[[reviewers]]\nname = "host"\npreset = "native"\n[[reviewers]]\npreset = "claude"\n')
    code, report = doctor_json(capsys)
    assert code == 0 and report["ready"] is True  # a round can run; it just will not finish alone
    [flag] = [c for c in report["checks"] if c["subject"] == "waits for spar record"]
    assert flag["status"] == "warning" and "`spar record` of host" in flag["detail"]
    assert "delete the [[reviewers]] entry of host" in flag["fix"]
    config.write_text('[[reviewers]]\npreset = "claude"\n')
    assert [c for c in doctor_json(capsys)[1]["checks"] if c["subject"] == "waits for spar record"] == []
    config.write_text('[[reviewers]]\npreset = "native"\n')  # native alone: the other warning says it
    assert [c for c in doctor_json(capsys)[1]["checks"] if c["subject"] == "waits for spar record"] == []


def test_a_repository_without_commits_is_a_problem(tmp_path, monkeypatch, capsys):
    """Issue 22 point 8: doctor does not call a repository before its first commit fine."""
    repo = make_repo(tmp_path, name="fresh")
    monkeypatch.chdir(repo)
    monkeypatch.setenv("SPAR_CONFIG", str(tmp_path / "none.toml"))
    code, report = doctor_json(capsys)
    check = by_check(report, "repository")[0]
    assert code == 1 and check["status"] == "problem"
    assert check["detail"] == "the repository has no commits yet" and "commit" in check["fix"]


def test_agent_hooks_installed_and_running_or_missing(here, capsys):
    repo, _bin_dir, config = here
    config.write_text('[[reviewers]]\npreset = "native"\n')
    (repo / ".claude").mkdir()
    (repo / ".claude" / "settings.json").write_text(agent_hooks.merged("claude", None, "reviews")[0])
    (repo / ".cursor").mkdir()
    (repo / ".cursor" / "hooks.json").write_text('{"version": 1, "hooks": {}}')
    _code, report = doctor_json(capsys)
    hooks = {c["subject"]: c for c in by_check(report, "hook")}
    assert hooks["claude"]["status"] == "ok", hooks
    assert "spar hook stop runs; now it says: spar: no finished review round covers" in hooks["claude"]["detail"]
    assert hooks["cursor"]["status"] == "warning" and "spar init --agent cursor" in hooks["cursor"]["fix"]
    assert "codex" not in hooks
    assert not (repo / "reviews" / ".spar-hook.json").exists()  # the check keeps no state


# a CLI that reads the user's private key and says what it found, and where its HOME is
PRYING = """
import os
try:
    found = open(KEY).read().strip()
except OSError as exc:
    found = "nothing (" + type(exc).__name__ + ")"
if args == ["--version"]: print("2.1.59 (Claude Code) home=" + os.environ["HOME"] + " key=" + found)
elif args == ["auth", "status"]: print(json.dumps({"loggedIn": True, "key": found}))
else: sys.exit(2)
"""


def test_doctor_runs_each_cli_in_the_jail_and_scratch_home_a_round_gives_it(here, capsys, tmp_path):
    """Under the sandbox, `claude --version` and `claude auth status` run as a round runs
    claude: in its jail, with a scratch HOME; a planted ~/.ssh/id_rsa is out of its reach."""
    if choose_sandbox("auto", "/usr/bin:/bin").bwrap is None:
        pytest.skip("bwrap cannot make a sandbox here (.ci/run installs bubblewrap)")
    _repo, bin_dir, config = here
    key = tmp_path / "home" / ".ssh" / "id_rsa"
    key.parent.mkdir(parents=True)
    key.write_text("PLANTED-PRIVATE-KEY")
    program(bin_dir, "claude", PRYING.replace("KEY", repr(str(key))))
    config.write_text('[[reviewers]]\npreset = "claude"\n')
    code, report = doctor_json(capsys)
    assert by_check(report, "sandbox")[0]["status"] == "ok"
    assert "PLANTED-PRIVATE-KEY" not in json.dumps(report)
    (reviewer,) = by_check(report, "reviewer")
    assert reviewer["detail"].endswith(f"home={HOME_INSIDE} key=nothing (FileNotFoundError)"), reviewer
    assert [c["status"] for c in by_check(report, "login")] == ["ok"] and code == 0


@pytest.mark.parametrize("relative", [False, True], ids=["absolute", "relative"])
def test_a_spar_config_naming_no_file_is_a_problem(here, capsys, monkeypatch, tmp_path, relative):
    """A mistyped SPAR_CONFIG is passed over for the next source (G16), which a round would
    read too: doctor says so as a problem and exits 1, never "ok config"."""
    repo, bin_dir, _config = here
    program(bin_dir, "claude", CLAUDE.replace("LOGGED", "True"))
    xdg = tmp_path / "xdg"
    (xdg / "jaekit").mkdir(parents=True)
    (xdg / "jaekit" / "spar.toml").write_text('[[reviewers]]\npreset = "claude"\n')
    monkeypatch.setenv("XDG_CONFIG_HOME", str(xdg))
    monkeypatch.setenv("SPAR_CONFIG", "spar.tmol" if relative else str(tmp_path / "spar.tmol"))
    monkeypatch.chdir(repo)
    code, report = doctor_json(capsys)
    [config] = by_check(report, "config")
    assert code == 1 and report["ready"] is False
    assert config["status"] == "problem", config
    assert "SPAR_CONFIG spar.tmol names no configuration file (does not exist)" in config["detail"] if relative else \
        f"SPAR_CONFIG {tmp_path / 'spar.tmol'} names no configuration file (does not exist)" in config["detail"]
    assert str(xdg / "jaekit" / "spar.toml") in config["detail"] and "correct SPAR_CONFIG" in config["fix"]
    # the same configuration through SPAR_CONFIG itself is ok
    monkeypatch.setenv("SPAR_CONFIG", str(xdg / "jaekit" / "spar.toml"))
    code, report = doctor_json(capsys)
    assert code == 0 and by_check(report, "config")[0]["status"] == "ok"
