"""`spar init` in a hostile clone: committed symbolic links, a FIFO where an ignore
file is expected, and a --series name that would become several ignore rules
(issue 25 holes 2, 13 and 14)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from spar import git as spar_git
from spar.cli import main
from tests.gitrepo import git, git_env, make_repo

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def home(tmp_path, monkeypatch):
    """An empty HOME, no Spar variables, no reviewer CLI on PATH."""
    folder = tmp_path / "home"
    folder.mkdir()
    for var in ("SPAR_CONFIG", "XDG_CONFIG_HOME"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(folder))
    monkeypatch.setenv("PATH", os.pathsep.join([str(Path(sys.executable).parent), "/usr/bin", "/bin"]))
    return folder


def clone(tmp_path: Path, symlinks: dict[str, str], name: str = "clone") -> Path:
    """What a user gets from `git clone` of an attacker's repository holding `symlinks`."""
    origin = make_repo(tmp_path / "origin", {"AGENTS.md": "# rules\n"}, symlinks=symlinks)
    target = tmp_path / name
    subprocess.run(["git", "clone", "-q", str(origin), str(target)], check=True, env=git_env())
    return target


def user_file(home: Path) -> Path:
    return home / ".config" / "jaekit" / "spar.toml"


def test_committed_project_file_link_to_a_dotfile_is_refused(tmp_path, home, monkeypatch, capsys):
    """issue 25 hole 2: `.jaekit/spar.toml -> ../../../.bashrc` in a fresh clone made
    `spar init --project` edit ~/.bashrc in place; the link is refused, nothing is written."""
    bashrc = home / ".bashrc"
    bashrc.write_text("# my shell settings, comments only\n")
    # the clone lands in tmp_path/clone: from clone/.jaekit, ../../home/.bashrc is the victim
    repo = clone(tmp_path, {".jaekit/spar.toml": "../../home/.bashrc"})
    assert (repo / ".jaekit" / "spar.toml").resolve() == bashrc.resolve()
    monkeypatch.chdir(repo)
    assert main(["init", "--project"]) == 65
    err = capsys.readouterr().err
    assert "symbolic link" in err and ".jaekit/spar.toml" in err and "nothing was written" in err
    assert bashrc.read_text() == "# my shell settings, comments only\n"
    assert not user_file(home).exists() and not (repo / ".gitignore").exists()


def test_committed_config_folder_link_is_refused(tmp_path, home, monkeypatch, capsys):
    """issue 25 hole 2: `.jaekit -> ../home/.config/autostart` made init create spar.toml
    in the autostart folder while printing the repository path."""
    autostart = home / ".config" / "autostart"
    autostart.mkdir(parents=True)
    repo = clone(tmp_path, {".jaekit": "../home/.config/autostart"})
    monkeypatch.chdir(repo)
    assert main(["init", "--project"]) == 65
    err = capsys.readouterr().err
    assert f"{repo}/.jaekit" in err and "symbolic link" in err
    assert list(autostart.iterdir()) == []
    assert not user_file(home).exists()


def test_series_through_a_committed_link_is_refused(tmp_path, home, monkeypatch, capsys):
    """issue 25 hole 2 (the series part): a committed `work -> ../elsewhere` would get the
    .gitignore line written in the link's target."""
    elsewhere = make_repo(tmp_path, {"x.txt": "x\n"}, name="elsewhere")
    repo = clone(tmp_path, {"work": "../elsewhere"})
    monkeypatch.chdir(repo)
    assert main(["init", "--series", "work/reviews"]) == 65
    assert "symbolic link" in capsys.readouterr().err
    assert not (elsewhere / ".gitignore").exists() and not user_file(home).exists()


async def _init(repo: Path, env: dict[str, str], *argv: str) -> subprocess.CompletedProcess[bytes]:
    with anyio.fail_after(120):  # bounds the hang this test exists to catch
        return await anyio.run_process([sys.executable, "-m", "spar", "init", *argv], cwd=repo, env=env,
                                       check=False)


def test_fifo_gitignore_is_refused_instead_of_hanging(tmp_path, home):
    """issue 25 hole 13: a FIFO `.gitignore` made `git check-ignore` (and so `spar init`)
    block forever; init now refuses it, writes nothing and leaves no git behind."""
    repo = make_repo(tmp_path, {"AGENTS.md": "# rules\n"})
    os.mkfifo(repo / ".gitignore")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = anyio.run(_init, repo, env)
    assert proc.returncode == 65
    assert b".gitignore" in proc.stderr and b"not a regular file" in proc.stderr
    assert not user_file(home).exists()
    assert _processes_reading(repo) == []


def _processes_reading(repo: Path) -> list[int]:
    """Processes of ours whose working folder is inside `repo` (a git left running)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            cwd = os.readlink(f"/proc/{entry}/cwd")
        except OSError:
            continue
        if cwd == str(repo) or cwd.startswith(f"{repo}/"):
            found.append(int(entry))
    return found


def test_git_blocked_on_a_fifo_is_ended_at_its_time_limit(tmp_path, home, monkeypatch, capsys):
    """issue 25 hole 13: every git command init runs has a time limit and is ended with
    its process group. A FIFO as `.git/info/exclude` (read by check-ignore, and no file
    init could look at first) blocks git; init refuses once the limit is reached."""
    repo = make_repo(tmp_path, {"AGENTS.md": "# rules\n"})
    exclude = repo / ".git" / "info" / "exclude"
    exclude.parent.mkdir(exist_ok=True)
    if exclude.exists():
        exclude.unlink()
    os.mkfifo(exclude)
    monkeypatch.setattr(spar_git, "QUICK_LIMIT", 1.0)  # check-ignore is a quick query
    monkeypatch.chdir(repo)
    assert main(["init"]) == 65
    err = capsys.readouterr().err
    assert "did not finish within 1s" in err
    assert not user_file(home).exists() and not (repo / ".gitignore").exists()
    assert _processes_reading(repo) == []


def test_series_with_a_newline_is_refused_before_anything_is_written(tmp_path, home, monkeypatch, capsys):
    """issue 25 hole 14: `--series` holding newlines became three ignore rules (one of
    them `!/AGENTS.md`) and the user configuration was written before init refused."""
    repo = make_repo(tmp_path, {"AGENTS.md": "# rules\n"})
    monkeypatch.chdir(repo)
    assert main(["init", "--series", "x\n!/AGENTS.md\ny"]) == 65
    assert "U+000A" in capsys.readouterr().err
    assert not user_file(home).exists()
    assert not (repo / ".gitignore").exists()
    assert git(repo, "status", "--porcelain", "--ignored") == ""
