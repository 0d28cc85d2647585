"""G17–G24 through `load_config`: user TOML (via SPAR_CONFIG), clean-review
config.json and the project file of a real temporary git repository."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from spar.config.load import load_config
from spar.errors import ConfigError
from tests.gitrepo import make_repo

DATA = Path(__file__).parent / "data"
USER = json.loads((DATA / "config_user.json").read_text(encoding="utf-8"))
CLEAN = json.loads((DATA / "config_clean_review.json").read_text(encoding="utf-8"))
PROJECT = json.loads((DATA / "config_project.json").read_text(encoding="utf-8"))


def git_repo(path: Path) -> Path:
    return make_repo(path.parent, name=path.name)  # an empty repository: no commit


def check_reviewers(cfg, expected: list[dict]):
    assert [r.name for r in cfg.reviewers] == [e["name"] for e in expected]
    for r, e in zip(cfg.reviewers, expected):
        for key, value in e.items():
            assert getattr(r, key) == value, (r.name, key)


@pytest.mark.parametrize("row", USER["rows"], ids=lambda r: f"{r['row']}: {r['id']}")
def test_user_toml(row, tmp_path):
    path = tmp_path / "user.toml"
    path.write_text(row["text"], encoding="utf-8")
    env = {"SPAR_CONFIG": str(path)}
    expect = row["expect"]
    if expect["exit"] == 0:
        cfg = load_config(None, env=env, home=tmp_path / "home")
        assert cfg.timeout_seconds == expect["timeout_seconds"]
        check_reviewers(cfg, expect["reviewers"])
        assert cfg.files == [{"path": str(path), "sha256": _sha(path), "role": "user"}]
        for r in cfg.reviewers:  # a reviewer the file wrote records where; the default list says so
            if "reviewers" in row["text"]:
                assert r.source.startswith(str(path) + ":")
            else:
                assert r.source == "default"
    else:
        with pytest.raises(ConfigError) as info:
            load_config(None, env=env, home=tmp_path / "home")
        err = info.value
        assert err.exit_code == expect["exit"]
        assert (err.file, err.line) == (str(path), expect["line"]), err.message
        assert expect["message"] in err.detail
        assert err.message.startswith(f"{path}:{expect['line']}: ")


@pytest.mark.parametrize("row", CLEAN["rows"], ids=lambda r: f"G18: {r['id']}")
def test_clean_review_json(row, tmp_path):
    xdg = tmp_path / "xdg"
    path = xdg / "clean-review" / "config.json"
    path.parent.mkdir(parents=True)
    path.write_text(row["text"], encoding="utf-8")
    env = {"XDG_CONFIG_HOME": str(xdg)}
    expect = row["expect"]
    if expect["exit"] == 0:
        cfg = load_config(None, env=env, home=tmp_path / "home")
        assert [(r.name, r.preset) for r in cfg.reviewers] == [(n, n) for n in expect["reviewers"]]
        assert all(r.timeout_seconds == 900 for r in cfg.reviewers)
        assert cfg.files == [{"path": str(path), "sha256": _sha(path), "role": "user"}]
    else:
        with pytest.raises(ConfigError) as info:
            load_config(None, env=env, home=tmp_path / "home")
        assert info.value.exit_code == 65
        assert (info.value.file, info.value.line) == (str(path), expect["line"]), info.value.message
        assert expect["message"] in info.value.detail


def _setup_repo(tmp_path: Path, setup: dict) -> Path:
    repo = git_repo(tmp_path / "repo")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "rules.md").write_text("outside\n")
    for rel, text in PROJECT["files"].items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    for link, target in setup.get("symlinks", {}).items():
        os.symlink(target.replace("{repo}", str(repo)).replace("{outside}", str(outside)), repo / link)
    for fifo in setup.get("fifos", []):
        os.mkfifo(repo / fifo)
    return repo


@pytest.mark.parametrize("row", PROJECT["rows"], ids=lambda r: f"{r['row']}: {r['id']}")
def test_project_toml(row, tmp_path):
    repo = _setup_repo(tmp_path, row["setup"])
    path = repo / ".jaekit" / "spar.toml"
    path.parent.mkdir()
    path.write_text(row["text"], encoding="utf-8")
    expect = row["expect"]
    env = {"HOME": str(tmp_path / "home")}
    if expect["exit"] == 0:
        cfg = load_config(repo, env=env)
        for key in ("rules", "check_paths", "angles", "caps"):
            if key in expect:
                assert getattr(cfg, key) == expect[key], key
        assert cfg.files == [{"path": str(path), "sha256": _sha(path), "role": "project"}]
        # the project file never changes reviewers or timeouts
        assert [r.name for r in cfg.reviewers] == ["claude", "codex"]
    else:
        with pytest.raises(ConfigError) as info:
            load_config(repo, env=env)
        assert info.value.exit_code == 65
        assert (info.value.file, info.value.line) == (str(path), expect["line"]), info.value.message
        assert expect["message"] in info.value.detail


def _unreadable_rule_check(repo: str) -> str:
    """Runs in a child process (as an unprivileged user when the tests run as root)."""
    code = (
        "import sys\nfrom pathlib import Path\nfrom spar.config.load import load_config\nfrom spar.errors import ConfigError\n"
        "try:\n    load_config(Path(sys.argv[1]), env={'HOME': sys.argv[1]})\n    print('accepted')\n"
        "except ConfigError as e:\n    print(e.message)\n"
    )
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(Path(__file__).parents[1])}
    python, kwargs = sys.executable, {}
    if os.geteuid() == 0:  # root reads any file: check as nobody, who cannot
        kwargs = {"user": "nobody", "group": "nogroup" if _has_group("nogroup") else "nobody"}
        python = _python_for(kwargs, env)
    proc = subprocess.run([python, "-c", code, repo], capture_output=True, text=True, cwd="/", env=env,
                          check=True, **kwargs)
    return proc.stdout.strip()


def _python_for(kwargs: dict, env: dict) -> str:
    """A Python 3.11+ interpreter the unprivileged user can run (a venv under
    /root is out of its reach); spar.config needs only the standard library."""
    candidates = [sys.executable, os.path.realpath(sys.executable), shutil.which("python3") or "",
                  "/usr/bin/python3", "/usr/local/bin/python3"]
    for python in filter(None, candidates):
        try:
            probe = subprocess.run([python, "-c", "import spar.config"], capture_output=True, cwd="/",
                                   env=env, **kwargs)
        except OSError:
            continue
        if probe.returncode == 0:
            return python
    raise AssertionError(f"no Python interpreter usable by {kwargs['user']} among {candidates}")


def _has_group(name: str) -> bool:
    import grp

    try:
        grp.getgrnam(name)
        return True
    except KeyError:
        return False


def test_project_rule_unreadable(tmp_path_factory):
    import tempfile

    # a folder every user can enter (pytest's tmp folders are private to their owner)
    base = Path(tempfile.mkdtemp(prefix="spar-unreadable-"))
    try:
        base.chmod(0o755)
        repo = git_repo(base / "repo")
        repo.chmod(0o755)
        (repo / ".jaekit").mkdir(mode=0o755)
        (repo / ".jaekit" / "spar.toml").write_text('rules = ["secret.md"]\n')
        (repo / ".jaekit" / "spar.toml").chmod(0o644)
        (repo / "secret.md").write_text("x\n")
        (repo / "secret.md").chmod(0o000)
        out = _unreadable_rule_check(str(repo))
        assert out.startswith(f"{repo}/.jaekit/spar.toml:1: rules item 1 \"secret.md\" cannot be read"), out
        (repo / "secret.md").chmod(0o644)
        assert _unreadable_rule_check(str(repo)) == "accepted"
    finally:
        subprocess.run(["rm", "-rf", str(base)], check=True)


def _sha(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()
