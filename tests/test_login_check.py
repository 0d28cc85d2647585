"""A CLI that can say cheaply that it is not logged in is asked before its run (codex:
`codex login status`, 0.3 s; `codex exec` itself retries for a minute before giving up)."""

from __future__ import annotations

import pytest

from spar.presets import get_preset
from spar.presets.codex import own_provider
from tests.reviewerround import Round

ANSWER = {"reviewed_head": "abc1234", "verdict": "no_blocking_findings", "angles_checked": [],
          "angles_unchecked": [], "findings": [], "limits": ""}


@pytest.mark.anyio
async def test_codex_not_logged_in_is_unavailable_before_its_run(tmp_path):
    rnd = Round(tmp_path)
    rnd.env.update(HOME=str(tmp_path / "home"))
    for key in ("CODEX_API_KEY", "CODEX_HOME"):
        rnd.env.pop(key, None)
    (outcome,) = await rnd.run([rnd.job("codex", "codex", {"logged_out": True, "result": ANSWER},
                                        fallback_model="gpt-5-mini")])
    assert outcome.status == "unavailable"
    assert outcome.reason == 'authentication: not logged in: `codex login status` says "Not logged in"'
    assert len(outcome.attempts) == 1  # a fallback model cannot fix a login
    assert outcome.not_run == "authentication"
    assert [r["argv"] for r in rnd.records()] == [["--version"]]  # `codex exec` never ran


@pytest.mark.anyio
@pytest.mark.parametrize("why", ["key", "provider"])
async def test_codex_with_a_key_or_its_own_provider_runs_whatever_login_status_says(tmp_path, why):
    rnd = Round(tmp_path)
    home = tmp_path / "home"
    rnd.env.update(HOME=str(home))
    rnd.env.pop("CODEX_HOME", None)
    rnd.env.pop("CODEX_API_KEY", None)
    if why == "key":
        rnd.env["CODEX_API_KEY"] = "sk-test"
    else:
        (home / ".codex").mkdir(parents=True)
        (home / ".codex" / "config.toml").write_text('model_provider = "local"\n[model_providers.local]\n'
                                                     'base_url = "http://127.0.0.1:1/v1"\n')
    (outcome,) = await rnd.run([rnd.job("codex", "codex", {"logged_out": True, "result": ANSWER})])
    assert outcome.status == "completed", outcome.reason


def test_own_provider_reads_the_model_provider_of_the_configuration(tmp_path):
    config = tmp_path / "config.toml"
    for text, own in (('model_provider = "ollama"\n', True), ('model_provider = "openai"\n', False),
                      ('model = "gpt-5"\n', False), ("not toml = = =\n", False)):
        config.write_text(text)
        assert own_provider(str(config)) is own, text
    assert own_provider(str(tmp_path / "missing.toml")) is False
    preset = get_preset("codex")
    assert preset.logged_in(1, "", "WARNING: …\nNot logged in\n") is False
    assert preset.logged_in(0, "Logged in using an API key - sk-***", "") is True
    assert preset.logged_in(2, "", "boom") is None
