"""G16: which configuration file is read, what is skipped, and what is an error
(missing paths, broken symbolic links, loops, folders, FIFOs, empty variables)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import threading
from pathlib import Path

import pytest

from spar.config.load import load_config
from spar.config.sources import Source, read_source
from spar.errors import ConfigError
from tests.gitrepo import make_repo

ROWS = json.loads((Path(__file__).parent / "data" / "config_sources.json").read_text(encoding="utf-8"))["rows"]


def _raw(text: str) -> bytes:
    """Row text with `\\xNN` marking a raw byte (to write files that are not UTF-8)."""
    return re.sub(rb"\\x([0-9a-f]{2})", lambda m: bytes([int(m.group(1), 16)]), text.encode("utf-8"))


@pytest.fixture
def places(tmp_path, monkeypatch):
    p = {name: tmp_path / name for name in ("home", "xdg", "other", "cwd")}
    for path in p.values():
        path.mkdir()
    p["repo"] = make_repo(tmp_path, name="repo")  # an empty repository: no commit
    monkeypatch.chdir(p["cwd"])
    return {k: str(v) for k, v in p.items()}


def _fill(template: str, places: dict) -> str:
    for name, path in places.items():
        template = template.replace("{" + name + "}", path)
    return template


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r["id"])
def test_sources(row, places):
    for d in row["dirs"]:
        Path(_fill(d, places)).mkdir(parents=True, exist_ok=True)
    for path, text in row["files"].items():
        p = Path(_fill(path, places))
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(_raw(text))
    for link, target in row["symlinks"].items():
        p = Path(_fill(link, places))
        p.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(_fill(target, places), p)
    for fifo in row["fifos"]:
        p = Path(_fill(fifo, places))
        p.parent.mkdir(parents=True, exist_ok=True)
        os.mkfifo(p)
    env = {k: _fill(v, places) for k, v in row["env"].items()}
    env["HOME"] = places["home"]
    expect = row["expect"]
    if expect["exit"] != 0:
        with pytest.raises(ConfigError) as info:
            load_config(Path(places["repo"]), env=env)
        assert info.value.exit_code == 65
        assert info.value.file == _fill(expect["file"], places)
        assert info.value.line == expect.get("line")
        assert expect["message"] in info.value.detail
        return
    cfg = load_config(Path(places["repo"]), env=env)
    user = [f for f in cfg.files if f["role"] == "user"]
    if expect["used"] is None:
        assert user == []
    else:
        used = _fill(expect["used"], places)
        assert user == [{"path": used, "sha256": hashlib.sha256(Path(used).read_bytes()).hexdigest(), "role": "user"}]
    assert cfg.skipped == [{"path": _fill(p, places), "why": why} for p, why in expect["skipped"]]
    assert cfg.timeout_seconds == expect["timeout_seconds"]
    if "reviewers" in expect:
        assert [r.name for r in cfg.reviewers] == expect["reviewers"]
    if "project" in expect:
        project = [f for f in cfg.files if f["role"] == "project"]
        assert len(project) == (1 if expect["project"] else 0)
        if expect["project"]:
            assert project[0]["path"] == f"{places['repo']}/.jaekit/spar.toml"
            assert cfg.caps["code"] == expect["caps_code"]


def test_defaults_without_repository(tmp_path):
    cfg = load_config(None, env={"HOME": str(tmp_path)})
    assert [r.name for r in cfg.reviewers] == ["claude", "codex"]
    assert cfg.files == []
    assert (cfg.rules, cfg.check_paths, cfg.caps) == ([], [], {"plan": 2, "plan_delta": 2, "code": 3})


def test_project_file_from_working_tree_not_commit(places):
    repo = Path(places["repo"])
    (repo / ".jaekit").mkdir()
    conf = repo / ".jaekit" / "spar.toml"
    conf.write_text("caps.code = 1\n")
    subprocess.run(["git", "-C", str(repo), "add", "."], check=True)
    subprocess.run(["git", "-C", str(repo), "commit", "-qm", "config"], check=True)
    conf.write_text("caps.code = 9\n")  # uncommitted change wins
    cfg = load_config(repo, env={"HOME": places["home"]})
    assert cfg.caps["code"] == 9
    assert cfg.files[0]["sha256"] == hashlib.sha256(b"caps.code = 9\n").hexdigest()


def test_reading_a_path_that_became_a_fifo_does_not_block(tmp_path):
    """G16 is checked on the file actually opened: a path swapped for a FIFO after
    the existence check is a configuration error, not a read that waits forever."""
    fifo = tmp_path / "spar.toml"
    os.mkfifo(fifo)
    outcome: list[BaseException | None] = []

    def read() -> None:
        try:
            read_source(Source(str(fifo), "toml", "user"))
            outcome.append(None)
        except BaseException as exc:  # handed to the test thread
            outcome.append(exc)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(5)
    if reader.is_alive():
        with open(fifo, "wb"):  # release the blocked reader before failing
            pass
        reader.join(5)
        pytest.fail("reading the FIFO blocked")
    assert isinstance(outcome[0], ConfigError)
    assert (outcome[0].file, outcome[0].line) == (str(fifo), None)
    assert "it is a FIFO" in outcome[0].detail


def test_a_configuration_file_over_the_bound_is_refused_unread(tmp_path):
    """A sparse 4 GiB file named as the configuration is refused after its first MiB: every
    command reads the configuration, the stop hook at every stop."""
    huge = tmp_path / "spar.toml"
    with open(huge, "wb") as fh:
        fh.truncate(4 * 1024**3)
    with pytest.raises(ConfigError, match="configuration is over 1048576 bytes"):
        read_source(Source(str(huge), "toml", "user"))


def test_the_skipped_spar_config_is_found_however_it_was_spelled(tmp_path, monkeypatch):
    """`spar run` warns and `spar doctor` reports a problem when the file SPAR_CONFIG names
    was skipped; G16 records the skipped path absolute, so a relative SPAR_CONFIG must
    be found too (it went unnoticed before)."""
    from spar.config.sources import find_user_source, named_skipped

    monkeypatch.chdir(tmp_path)
    for named in ("typo.toml", str(tmp_path / "typo.toml"), "./sub/../typo.toml"):
        env = {"SPAR_CONFIG": named}
        _found, skipped = find_user_source(env, tmp_path / "home")
        assert named_skipped(env, skipped) == {"path": str(tmp_path / "typo.toml"), "why": "does not exist"}
    assert named_skipped({}, skipped) is None
    (tmp_path / "typo.toml").write_text("")
    _found, skipped = find_user_source({"SPAR_CONFIG": "typo.toml"}, tmp_path / "home")
    assert named_skipped({"SPAR_CONFIG": "typo.toml"}, skipped) is None
