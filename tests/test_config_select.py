"""G25 `--reviewers`, `--model`, `--effort` and G24 `--check-path` applied to a
loaded configuration."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spar.config.load import load_config
from spar.config.model import AppliedConfig
from spar.config.select import add_check_paths, parse_reviewers_list, select_reviewers
from spar.errors import ConfigError, Refused, SparError, UsageError

DATA = json.loads((Path(__file__).parent / "data" / "config_select.json").read_text(encoding="utf-8"))


@pytest.fixture
def cfg(tmp_path) -> AppliedConfig:
    path = tmp_path / "user.toml"
    path.write_text(DATA["user"], encoding="utf-8")
    return load_config(None, env={"SPAR_CONFIG": str(path)}, home=tmp_path)


@pytest.mark.parametrize("row", DATA["rows"], ids=lambda r: r["id"])
def test_select(row, cfg):
    args = row["args"]
    expect = row["expect"]
    def call():
        return select_reviewers(cfg, args.get("reviewers"), args.get("models", []), args.get("efforts", []))

    if expect["exit"] == 0:
        out = call()
        assert [r.name for r in out.reviewers] == [e["name"] for e in expect["reviewers"]]
        for r, e in zip(out.reviewers, expect["reviewers"]):
            for key, value in e.items():
                assert getattr(r, key) == value, (r.name, key)
        # the input configuration is left as it was
        assert [r.name for r in cfg.reviewers] == ["opus", "codex", "quick", "house", "native"]
        assert all(r.model in ("", "opus") for r in cfg.reviewers)
        return
    with pytest.raises(SparError) as info:
        call()
    err = info.value
    assert err.exit_code == expect["exit"]
    assert isinstance(err, UsageError if expect["exit"] == 64 else Refused)
    if "--reviewers" in expect["message"]:
        assert isinstance(err, ConfigError) and err.file == "--reviewers"
    assert expect["message"] in err.message, err.message


@pytest.mark.parametrize("row", DATA["check_paths"], ids=lambda r: r["id"])
def test_add_check_paths(row, cfg):
    base = AppliedConfig(reviewers=cfg.reviewers, check_paths=list(row["config"]))
    expect = row["expect"]
    if expect["exit"] == 0:
        out = add_check_paths(base, row["args"])
        assert out.check_paths == expect["check_paths"]
        assert out.digest() != base.digest()  # --check-path is part of the applied values
        assert base.check_paths == row["config"]
    else:
        with pytest.raises(Refused) as info:
            add_check_paths(base, row["args"])
        assert info.value.exit_code == 65
        assert expect["message"] in info.value.message


def test_selected_preset_uses_top_level_timeout_and_changes_digest(cfg):
    out = select_reviewers(cfg, "agy", [], [])
    assert out.reviewers[0].timeout_seconds == cfg.timeout_seconds == 600
    assert out.digest() != cfg.digest()
    again = select_reviewers(cfg, " agy ,", [], [])
    assert again.digest() == out.digest()


def test_parse_reviewers_list():
    assert parse_reviewers_list(" a, ,b ,") == ["a", "b"]
    assert parse_reviewers_list("") == ["native"]
    assert parse_reviewers_list(",,") == ["native"]
