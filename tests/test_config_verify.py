"""`[verify]` of the user configuration through `load_config`: which reviewers verify
other vendors' findings, its bounds, its errors at file:line, and the digest it leaves alone."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from spar.config.load import load_config
from spar.errors import ConfigError

REVIEWERS = '[[reviewers]]\npreset = "claude"\n\n[[reviewers]]\npreset = "codex"\n\n' \
            '[[reviewers]]\nname = "host"\npreset = "native"\n'


def _load(tmp_path: Path, text: str):
    path = tmp_path / "user.toml"
    path.write_text(text, encoding="utf-8")
    return path, load_config(None, env={"SPAR_CONFIG": str(path)}, home=tmp_path / "home")


def test_verify_names_configured_reviewers_and_its_bounds(tmp_path):
    _, cfg = _load(tmp_path, REVIEWERS + '\n[verify]\nreviewers = ["codex", "claude"]\nmax_findings = 8\n'
                                         'max_cost_usd = 2.5\n')
    assert cfg.verify is not None
    assert [(r.name, r.preset) for r in cfg.verify.reviewers] == [("codex", "codex"), ("claude", "claude")]
    assert (cfg.verify.max_findings, cfg.verify.max_cost_usd) == (8, 2.5)
    assert cfg.applied_values()["verify"] == {"reviewers": ["codex", "claude"], "max_findings": 8,
                                              "max_cost_usd": 2.5}


def test_default_reviewers_can_verify_and_bounds_are_optional(tmp_path):
    _, cfg = _load(tmp_path, '[verify]\nreviewers = ["codex"]\nmax_cost_usd = 0\n')
    assert cfg.verify is not None and [r.name for r in cfg.verify.reviewers] == ["codex"]
    assert cfg.verify.max_findings == 20 and cfg.verify.max_cost_usd == 0  # max_findings: its default
    assert cfg.applied_values()["verify"] == {"reviewers": ["codex"], "max_findings": 20, "max_cost_usd": 0}


def test_a_configuration_without_verify_keeps_its_digest(tmp_path):
    _, plain = _load(tmp_path, REVIEWERS)
    assert plain.verify is None and "verify" not in plain.applied_values()
    _, verified = _load(tmp_path, REVIEWERS + '\n[verify]\nreviewers = ["codex"]\n')
    assert verified.digest() != plain.digest()
    values = verified.applied_values()
    del values["verify"]
    assert values == plain.applied_values()


@pytest.mark.parametrize(("tail", "line", "message"), [
    ('[verify]\nreviewers = ["nobody"]\n', 12, 'verify.reviewers item 1 "nobody" is not a configured reviewer'),
    ('[verify]\nreviewers = ["host"]\n', 12, 'item 1 "host" has preset "native", which runs no program'),
    ('[verify]\nreviewers = ["codex", "codex"]\n', 12, 'item 2 "codex" is given twice'),
    ('[verify]\nreviewers = []\n', 12, "must name at least one reviewer"),
    ('[verify]\nreviewers = "codex"\n', 12, "verify.reviewers must be an array of strings"),
    ('[verify]\nmax_findings = 3\n', 11, "verify.reviewers is required"),
    ('[verify]\nreviewers = ["codex"]\nmax_findings = 0\n', 13, "verify.max_findings must be a positive integer"),
    ('[verify]\nreviewers = ["codex"]\nmax_cost_usd = -1\n', 13, "verify.max_cost_usd must be a number"),
    ('[verify]\nreviewers = ["codex"]\nmax_cost_usd = "1"\n', 13, "verify.max_cost_usd must be a number"),
    ('[verify]\nreviewers = ["codex"]\ntimeout_seconds = 5\n', 13, 'unknown key "verify.timeout_seconds"'),
])
def test_verify_errors_name_file_and_line(tmp_path, tail, line, message):
    path = tmp_path / "user.toml"
    path.write_text(REVIEWERS + "\n" + tail, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(None, env={"SPAR_CONFIG": str(path)}, home=tmp_path / "home")
    assert (info.value.file, info.value.line) == (str(path), line), info.value.message
    assert message in info.value.detail
    assert info.value.exit_code == 65


def test_verify_must_be_a_table(tmp_path):
    with pytest.raises(ConfigError) as info:
        _load(tmp_path, 'verify = 1\n' + REVIEWERS)
    assert info.value.line == 1 and "verify must be a table ([verify]), got 1" in info.value.detail


def test_verify_in_the_project_configuration_is_refused(tmp_path):
    repo = tmp_path / "repo"
    (repo / ".jaekit").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / ".jaekit" / "spar.toml").write_text('[verify]\nmax_cost_usd = 1\n', encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(repo, env={"SPAR_CONFIG": str(tmp_path / "none.toml")}, home=tmp_path / "home")
    assert "it belongs in the user configuration" in info.value.detail


def test_a_reviewer_cannot_be_named_after_the_verify_folder(tmp_path):
    with pytest.raises(ConfigError, match="is reserved"):
        _load(tmp_path, '[[reviewers]]\nname = "verify"\npreset = "codex"\n')


def test_spar_config_shows_verify(tmp_path):
    path = tmp_path / "user.toml"
    path.write_text(REVIEWERS + '\n[verify]\nreviewers = ["codex"]\nmax_findings = 4\n', encoding="utf-8")
    env = {"SPAR_CONFIG": str(path), "HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    run = [sys.executable, "-m", "spar", "config", "-C", str(tmp_path)]
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    text = subprocess.run(run, env=env, capture_output=True, text=True, check=True).stdout
    assert "verify           reviewers=codex  max_findings=4" in text
    data = json.loads(subprocess.run(run + ["--format", "json"], env=env, capture_output=True, text=True,
                                     check=True).stdout)
    assert data["config"]["verify"] == {"reviewers": ["codex"], "max_findings": 4}
    path.write_text(REVIEWERS + '\n[verify]\nreviewers = ["codex"]\nmax_cost_usd = 2.5\n', encoding="utf-8")
    text = subprocess.run(run, env=env, capture_output=True, text=True, check=True).stdout
    # the default bound of calls, and what the cost bound does with a verifier that reports no cost
    assert ("verify           reviewers=codex  max_findings=20  max_cost_usd=2.5 (checked before each call; "
            "a call that reports no cost counts as over it)") in text
