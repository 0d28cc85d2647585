"""The openai-compatible preset's configuration keys (G21 extended), the README's two
examples, and what its reviewers pass through env_passthrough."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from spar.config.checks import check_user
from spar.config.load import load_config
from spar.config.model import ReviewerConfig
from spar.config.select import select_reviewers
from spar.config.toml_positions import locate_toml
from spar.errors import ConfigError, Refused
from spar.presets import get_preset
from spar.proc.environment import reviewer_env

README = Path(__file__).resolve().parent.parent / "README.md"
ENTRY = '[[reviewers]]\nname = "ep"\npreset = "openai-compatible"\n'


def _user(text: str):
    return check_user(locate_toml("user.toml", text))


def test_the_readme_examples_are_valid_configurations():
    blocks = [b for b in re.findall(r"```toml\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
              if "openai-compatible" in b]
    assert len(blocks) == 2
    hosted, local = (_user(b).reviewers[0] for b in blocks)
    assert hosted.base_url == "https://api.openai.com/v1" and hosted.api_key_env == "OPENAI_API_KEY"
    assert (hosted.input_usd_per_million, hosted.output_usd_per_million) == (1.25, 10.0)
    assert local.model == "qwen3-coder:30b" and not local.model_written and local.api_key_env == ""
    assert local.vendor == "local"


@pytest.mark.parametrize(("lines", "message"), [
    ('model = "m"\n', "needs base_url"),
    ('base_url = "http://127.0.0.1:1/v1"\n', 'needs model: add model = "NAME" with the name of a model'),
    ('base_url = "http://127.0.0.1:1/v1"\nmodel = ""\n', 'model must not be empty: add model = "NAME"'),
    ('base_url = "ftp://x/v1"\nmodel = "m"\n', "must be an http:// or https:// URL"),
    ('base_url = "https://user:sk-secret@x/v1"\nmodel = "m"\n', "holds a user or password"),
    ('base_url = "https://x/v1?key=1"\nmodel = "m"\n', "query or fragment"),
    ('base_url = "https://x/v1"\nmodel = "m"\napi_key_env = "sk-abc-123"\n', "is not a variable name"),
    ('base_url = "https://x/v1"\nmodel = "m"\ninput_usd_per_million = -1\n', "0 or more"),
    ('base_url = "https://x/v1"\nmodel = "m"\nbinary = "x"\n', 'not used by preset "openai-compatible"'),
])
def test_wrong_keys_are_configuration_errors_at_their_line(lines, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        _user(ENTRY + lines)


def test_other_presets_refuse_the_endpoint_keys():
    with pytest.raises(ConfigError, match="not used by preset"):
        _user('[[reviewers]]\npreset = "claude"\nbase_url = "https://x/v1"\n')


def test_model_and_effort_arguments_apply_and_the_digest_covers_the_endpoint(tmp_path):
    cfg_path = tmp_path / "spar.toml"
    cfg_path.write_text(ENTRY + 'base_url = "https://x/v1"\nallowed_models = ["a", "b"]\n', encoding="utf-8")
    cfg = load_config(None, {"SPAR_CONFIG": str(cfg_path), "HOME": str(tmp_path)})
    picked = select_reviewers(cfg, None, ["ep=b"], ["ep=high"])
    assert (picked.reviewers[0].model, picked.reviewers[0].effort) == ("b", "high")
    with pytest.raises(Refused, match="not in allowed_models"):
        select_reviewers(cfg, None, ["ep=c"], [])
    applied = cfg.reviewers[0].applied()
    assert applied["base_url"] == "https://x/v1" and applied["model"] == "a"


def test_the_key_variable_passes_env_passthrough_and_nothing_else_of_the_vendor():
    cfg = ReviewerConfig(name="ep", preset="openai-compatible", base_url="https://x/v1", model="m",
                         api_key_env="GATEWAY_KEY")
    env = {"PATH": "/bin", "GATEWAY_KEY": "k", "OPENAI_API_KEY": "o", "ANTHROPIC_API_KEY": "a"}
    assert reviewer_env(env, [], get_preset("openai-compatible").env_names(cfg)) == {"PATH": "/bin",
                                                                                  "GATEWAY_KEY": "k"}


def test_the_example_configurations_commented_entry_is_valid_once_uncommented():
    text = (README.parent / "spar" / "configs" / "user.example.toml").read_text(encoding="utf-8")
    block = text[text.index('# [[reviewers]]\n# name = "gpt"'):text.index("# Cross-vendor")]
    [r] = _user("\n".join(line[2:] for line in block.splitlines() if line.startswith("# "))).reviewers
    assert (r.preset, r.base_url, r.api_key_env, r.vendor) == ("openai-compatible", "https://api.openai.com/v1",
                                                                "OPENAI_API_KEY", "openai")


@pytest.mark.parametrize("url", ["http://gateway.example/v1", "http://10.0.0.5:8000/v1", "HTTP://[fd00::1]/v1",
                                 "http://127.0.0.1.example/v1", "http://localhostx/v1"])
def test_a_key_bound_for_plain_http_off_this_machine_is_refused_unless_allowed(url):
    """The decision only: no request is made to any of these hosts."""
    entry = ENTRY + f'base_url = "{url}"\nmodel = "m"\napi_key_env = "K"\n'
    with pytest.raises(ConfigError) as err:
        _user(entry)
    assert err.value.line == 4 and "unencrypted (http://)" in err.value.message
    assert "allow_plain_http = true" in err.value.message
    allowed = _user(entry + "allow_plain_http = true\n").reviewers[0]
    assert allowed.allow_plain_http and allowed.key_in_clear()
    assert allowed.applied()["allow_plain_http"] is True
    with pytest.raises(ConfigError, match="allow_plain_http must be true or false"):
        _user(entry + 'allow_plain_http = "yes"\n')
    no_key = _user(ENTRY + f'base_url = "{url}"\nmodel = "m"\n').reviewers[0]
    assert not no_key.key_in_clear() and "allow_plain_http" not in no_key.applied()


@pytest.mark.parametrize("url", ["http://127.0.0.1:11434/v1", "http://127.9.8.7/v1", "http://[::1]:8000/v1",
                                 "http://localhost:1234/v1", "https://gateway.example/v1", "https://10.0.0.5/v1"])
def test_a_key_for_loopback_or_https_needs_no_permission(url):
    reviewer = _user(ENTRY + f'base_url = "{url}"\nmodel = "m"\napi_key_env = "K"\n').reviewers[0]
    assert not reviewer.key_in_clear()


def test_doctor_and_run_refuse_the_configuration_and_warn_once_it_is_allowed(tmp_path):
    from tests.runsetup import make_setup
    s = make_setup(tmp_path)
    entry = ('[[reviewers]]\nname = "ep"\npreset = "openai-compatible"\nbase_url = "http://gateway.example/v1"\n'
             'model = "m"\napi_key_env = "EP_KEY"\n')
    s.config.write_text(entry, encoding="utf-8")
    s.env["EP_KEY"] = "sk-plain-0123456789"
    for proc, code in ((s.spar("doctor"), 1), (s.run(), 65), (s.spar("config"), 65)):
        assert proc.returncode == code, proc.stderr.decode()
        said = (proc.stdout + proc.stderr).decode()
        assert 'spar.toml:4: reviewer "ep": base_url "http://gateway.example/v1" would send the key' in said
        assert "unencrypted (http://)" in said
    assert not (s.repo / "reviews").exists()
    s.config.write_text(entry + "allow_plain_http = true\n", encoding="utf-8")
    dry = s.run("--dry-run")  # starts no reviewer: nothing is sent anywhere
    assert dry.returncode == 0, dry.stderr.decode()
    assert ("spar: warning: ep sends the key in EP_KEY unencrypted to http://gateway.example/v1"
            in dry.stderr.decode())
