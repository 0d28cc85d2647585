"""`spar init`: user and project configuration, the series folder ignored (G28),
never rewriting a byte of an existing file, and the first-round path of a new user."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from spar.cli import main
from spar.config.load import load_config
from spar.config.scaffold import NATIVE_MARK, fit, ignore_pattern, user_template
from tests.gitrepo import commit, git, make_repo
from tests.runsetup import FAKE_ENV, result

ROOT = Path(__file__).resolve().parent.parent
FAKES = ROOT / "tests" / "fakes"


@pytest.fixture
def world(tmp_path, monkeypatch):
    """A fresh repository as the current folder, an empty HOME, no Spar variables,
    and a PATH holding only python and the given fake CLIs."""
    repo = make_repo(tmp_path, {"AGENTS.md": "# rules\n", "tests/test_x.py": "def test(): pass\n", "app.py": "x = 1\n"})
    home = tmp_path / "home"
    home.mkdir()
    for var in ("SPAR_CONFIG", "XDG_CONFIG_HOME"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(repo)

    def with_clis(*names: str) -> Path:
        folder = tmp_path / "bin"
        folder.mkdir(exist_ok=True)
        for name in names:
            (folder / name).symlink_to(FAKES / name)
        monkeypatch.setenv("PATH", os.pathsep.join([str(folder), str(Path(sys.executable).parent), "/usr/bin", "/bin"]))
        return folder

    with_clis()
    return repo, home, with_clis


def user_file(home: Path) -> Path:
    return home / ".config" / "jaekit" / "spar.toml"


def run(*argv: str) -> int:
    return main(["init", *argv])


def reviewers_of(path: Path) -> list[str]:
    return [r["preset"] for r in tomllib.loads(path.read_text())["reviewers"]]


# ---------------------------------------------------------------- user configuration


def test_new_user_gets_the_clis_found_on_path(world, capsys):
    repo, home, with_clis = world
    with_clis("claude", "agy")
    assert run() == 0
    assert reviewers_of(user_file(home)) == ["claude", "agy"]
    cfg = load_config(repo)  # what spar run would read: the file init wrote, valid
    assert [r.name for r in cfg.reviewers] == ["claude", "agy"]
    assert cfg.files[0]["path"] == str(user_file(home))
    text = user_file(home).read_text()
    assert "timeout_seconds = 900" in text and text.count("\n# ") > 5  # commented like the example


def test_no_cli_on_path_means_the_native_reviewer(world):
    _repo, home, _ = world
    assert run() == 0
    assert reviewers_of(user_file(home)) == ["native"]


def test_xdg_config_home_and_spar_config_are_where_the_loader_looks(world, tmp_path, monkeypatch):
    repo, home, _ = world
    monkeypatch.setenv("SPAR_CONFIG", str(tmp_path / "mine.toml"))
    assert run() == 0
    assert (tmp_path / "mine.toml").is_file() and not user_file(home).exists()
    assert load_config(repo).files[0]["path"] == str(tmp_path / "mine.toml")
    monkeypatch.delenv("SPAR_CONFIG")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert run() == 0
    assert (tmp_path / "xdg" / "jaekit" / "spar.toml").is_file() and not user_file(home).exists()
    # SPAR_CONFIG naming a missing file: the loader reads the XDG file, so init edits that one
    monkeypatch.setenv("SPAR_CONFIG", str(tmp_path / "missing.toml"))
    assert run() == 0
    assert not (tmp_path / "missing.toml").exists()


def test_existing_user_file_with_reviewers_is_left_byte_for_byte(world, capsys):
    _repo, home, with_clis = world
    with_clis("codex")  # nothing on PATH that the file does not name already
    user_file(home).parent.mkdir(parents=True)
    original = b"# mine\n[[reviewers]]\npreset = 'codex'   # keep me\n"
    user_file(home).write_bytes(original)
    assert run() == 0
    assert user_file(home).read_bytes() == original
    assert "already has reviewers" in capsys.readouterr().out


def test_run_again_adds_a_cli_installed_since_and_keeps_the_comments(world, capsys):
    """issue 22 point 7: `spar init` said "already has reviewers; left as it is" when a
    CLI was installed after the file was written."""
    repo, home, with_clis = world
    with_clis("claude")
    assert run() == 0
    edited = user_file(home).read_text() + "# my own note, keep it\n"
    user_file(home).write_text(edited)
    with_clis("codex", "agy")
    capsys.readouterr()
    assert run() == 0
    text = user_file(home).read_text()
    assert text.startswith(edited)  # every byte the user had stays where it was
    assert reviewers_of(user_file(home)) == ["claude", "codex", "agy"]
    assert [r.name for r in load_config(repo).reviewers] == ["claude", "codex", "agy"]
    assert "added reviewers codex, agy" in capsys.readouterr().out
    assert run() == 0  # nothing new on PATH: the file stays as it is
    assert user_file(home).read_text() == text
    assert "left as it is" in capsys.readouterr().out


def test_run_again_dry_run_shows_the_reviewers_it_would_add(world, capsys):
    """issue 22 point 7: --dry-run shows the entries and writes nothing."""
    _repo, home, with_clis = world
    user_file(home).parent.mkdir(parents=True)
    original = '# mine\n[[reviewers]]\npreset = "native"  # the host agent\n'
    user_file(home).write_text(original)
    with_clis("codex")
    assert run("--dry-run") == 0
    out = capsys.readouterr().out
    assert f"would add to {user_file(home)}" in out and "added reviewers codex" in out
    assert '[[reviewers]]\n    preset = "codex"' in out
    assert user_file(home).read_text() == original
    assert run() == 0
    assert reviewers_of(user_file(home)) == ["native", "codex"]


def test_cli_found_later_replaces_the_native_stand_in_init_wrote(world, capsys):
    """With no CLI on PATH init writes a marked native entry; once claude and codex are there,
    init replaces it with them and says so, so a round no longer waits for `spar record`."""
    repo, home, with_clis = world
    assert run() == 0
    assert NATIVE_MARK in user_file(home).read_text()
    with_clis("claude", "codex")
    written = user_file(home).read_text()
    capsys.readouterr()
    assert run("--dry-run") == 0
    out = capsys.readouterr().out
    assert 'preset = "claude"' in out and "remove the [[reviewers]] entry of the native reviewer" in out
    assert user_file(home).read_text() == written
    assert run() == 0
    text = user_file(home).read_text()
    assert reviewers_of(user_file(home)) == ["claude", "codex"]
    assert [r.name for r in load_config(repo).reviewers] == ["claude", "codex"]
    assert "None of claude" not in text and NATIVE_MARK not in text  # its comments went with it
    assert text.startswith(user_template([]).split("[[reviewers]]")[0].rsplit("# None of", 1)[0])
    out = capsys.readouterr().out
    assert "added reviewers claude, codex" in out and "removed the native reviewer `spar init` wrote" in out
    assert "note:" not in out


def test_native_entry_written_before_the_mark_is_replaced_too(world):
    """A user file written by a Spar whose native entry had no mark yet: the same entry,
    byte for byte, is still init's own."""
    repo, home, with_clis = world
    user_file(home).parent.mkdir(parents=True)
    unmarked = user_template([]).replace(NATIVE_MARK + "\n", "").replace(
        "it replaces this entry\n# with one for each CLI found (every key of an entry: spar/configs/user.example.toml).",
        "it adds an entry for it\n# (every key of an entry: spar/configs/user.example.toml).")
    user_file(home).write_text(unmarked)
    with_clis("codex")
    assert run() == 0
    assert reviewers_of(user_file(home)) == ["codex"]


def test_native_entry_the_user_wrote_stays_with_one_line_saying_what_it_means(world, capsys):
    repo, home, with_clis = world
    user_file(home).parent.mkdir(parents=True)
    user_file(home).write_text('[[reviewers]]\nname = "host"\npreset = "native"\n')
    with_clis("claude")
    assert run() == 0
    assert reviewers_of(user_file(home)) == ["native", "claude"]
    [note] = [line for line in capsys.readouterr().out.splitlines() if line.startswith("note: ")]
    assert "keeps a native reviewer" in note and "waits for `spar record`" in note
    assert "delete its [[reviewers]] entry" in note
    assert run() == 0  # nothing new: the file stays, the note is said again
    assert "keeps a native reviewer" in capsys.readouterr().out


def test_reviewers_as_an_inline_array_are_refused_with_the_lines_to_add(world, capsys):
    """An edit that cannot be appended safely writes nothing and prints the entries."""
    _repo, home, with_clis = world
    user_file(home).parent.mkdir(parents=True)
    original = 'reviewers = [{preset = "claude"}]\n'
    user_file(home).write_text(original)
    with_clis("claude", "codex")
    assert run() == 65
    err = capsys.readouterr().err
    assert "nothing was written" in err and 'preset = "codex"' in err
    assert user_file(home).read_text() == original


def test_existing_user_file_gets_only_the_missing_keys(world):
    _repo, home, with_clis = world
    with_clis("codex")
    user_file(home).parent.mkdir(parents=True)
    original = "# my header\n# second line\n"  # comments only: no reviewers, no timeout
    user_file(home).write_text(original)
    user_file(home).chmod(0o600)
    assert run() == 0
    text = user_file(home).read_text()
    assert text.startswith(original)
    assert tomllib.loads(text)["timeout_seconds"] == 900
    assert reviewers_of(user_file(home)) == ["codex"]
    assert stat.S_IMODE(user_file(home).stat().st_mode) == 0o600  # a private file stays private


def test_fit_keeps_every_existing_byte_and_adds_in_the_right_places():
    old = "# c1\n\ntimeout_seconds = 30 # t\n\n[[reviewers]]\npreset = \"agy\"\n"
    edit = fit(old, [("timeout_seconds", "timeout_seconds = 900\n"), ("x", "x = 1\n")],
               [("reviewers", "[[reviewers]]\npreset = \"native\"\n"), ("caps", "[caps]\ncode = 1\n")])
    assert edit.added == ["x", "caps"]
    assert edit.text == "# c1\n\nx = 1\n\ntimeout_seconds = 30 # t\n\n[[reviewers]]\npreset = \"agy\"\n\n[caps]\ncode = 1\n"


def test_unparseable_user_file_is_refused_with_the_lines_to_add_and_nothing_written(world, capsys):
    repo, home, _ = world
    user_file(home).parent.mkdir(parents=True)
    user_file(home).write_text("reviewers = [\n")
    assert run("--project") == 65
    err = capsys.readouterr().err
    assert "nothing was written" in err and 'preset = "native"' in err and "timeout_seconds = 900" in err
    assert user_file(home).read_text() == "reviewers = [\n"
    assert not (repo / ".jaekit").exists() and not (repo / ".gitignore").exists()


def test_clean_review_config_is_not_edited(world, capsys):
    _repo, home, _ = world
    clean = home / ".config" / "clean-review" / "config.json"
    clean.parent.mkdir(parents=True)
    clean.write_text('{"reviewers": ["codex"]}')
    assert run() == 65
    err = capsys.readouterr().err
    assert "clean-review" in err and str(user_file(home)) in err
    assert not user_file(home).exists()


def test_invalid_existing_user_config_is_a_configuration_error_with_its_line(world, capsys):
    _repo, home, _ = world
    user_file(home).parent.mkdir(parents=True)
    user_file(home).write_text("# x\ntimeout_seconds = 0\n")
    assert run() == 65
    assert f"{user_file(home)}:" in capsys.readouterr().err
    assert user_file(home).read_text() == "# x\ntimeout_seconds = 0\n"


def test_symlinked_user_config_is_edited_at_its_target(world, tmp_path):
    _repo, home, _ = world
    dotfiles = tmp_path / "dotfiles.toml"
    dotfiles.write_text("# dotfiles\n")
    user_file(home).parent.mkdir(parents=True)
    user_file(home).symlink_to(dotfiles)
    assert run() == 0
    assert user_file(home).is_symlink()
    assert reviewers_of(dotfiles) == ["native"]


def test_dry_run_writes_nothing_and_prints_the_text(world, capsys):
    repo, home, _ = world
    assert run("--project", "--dry-run") == 0
    out = capsys.readouterr().out
    assert f"would create {user_file(home)}" in out and 'preset = "native"' in out
    assert "would create" in out and "/reviews/" in out and "[caps]" in out
    assert not user_file(home).exists() and not (repo / ".jaekit").exists() and not (repo / ".gitignore").exists()


# ---------------------------------------------------------------- project configuration


def test_project_file_from_what_the_repository_holds(world):
    repo, _home, _ = world
    assert run("--project") == 0
    data = tomllib.loads((repo / ".jaekit" / "spar.toml").read_text())
    assert data["rules"] == ["AGENTS.md", ".jaekit/rules/baseline.md"] and data["check_paths"] == ["tests/**"]
    cfg = load_config(repo)
    assert cfg.rules == ["AGENTS.md", ".jaekit/rules/baseline.md"] and cfg.caps == data["caps"]


def test_project_gets_the_baseline_rules_as_installed_and_listed(world, capsys):
    """The baseline rules: the installed package's text, written beside the project file and
    listed in its rules; a second run leaves the user's edits to it alone."""
    repo, _home, _ = world
    assert run("--project") == 0
    written = repo / ".jaekit" / "rules" / "baseline.md"
    assert written.read_bytes() == (ROOT / "spar" / "configs" / "baseline.md").read_bytes()
    ids = re.findall(r"^## (BASE-[A-Z]+):", written.read_text(), re.M)
    assert ids == ["BASE-SECRETS", "BASE-PATHS", "BASE-INJECTION", "BASE-ERRORS", "BASE-TESTS"]
    assert "created " + str(written) in capsys.readouterr().out
    written.write_text("# our own baseline\n")
    assert run("--project") == 0
    assert written.read_text() == "# our own baseline\n"
    assert f"kept {written}: already there" in capsys.readouterr().out


def test_baseline_rules_taken_out_of_the_list_stay_out(world, capsys):
    """A user who removed the baseline from rules (and deleted the file) does not get it back;
    a rules list that names it while the file is gone gets it again."""
    repo, _home, _ = world
    assert run("--project") == 0
    project, written = repo / ".jaekit" / "spar.toml", repo / ".jaekit" / "rules" / "baseline.md"
    text = project.read_text()
    project.write_text(text.replace(', ".jaekit/rules/baseline.md"', ""))
    written.unlink()
    assert run("--project") == 0
    assert not written.exists() and "do not list .jaekit/rules/baseline.md" in capsys.readouterr().out
    project.write_text(text)
    assert run("--project") == 0
    assert written.is_file()


def test_existing_project_file_without_rules_gets_the_baseline(world):
    repo, _home, _ = world
    path = repo / ".jaekit" / "spar.toml"
    path.parent.mkdir()
    path.write_text("check_paths = []\n")
    assert run("--project") == 0
    assert tomllib.loads(path.read_text())["rules"] == ["AGENTS.md", ".jaekit/rules/baseline.md"]
    assert (repo / ".jaekit" / "rules" / "baseline.md").is_file()


def test_a_folder_where_the_baseline_rules_go_is_refused(world, capsys):
    repo, home, _ = world
    (repo / ".jaekit" / "rules" / "baseline.md").mkdir(parents=True)
    assert run("--project") == 65
    assert "is not a regular file" in capsys.readouterr().err
    assert not (repo / ".jaekit" / "spar.toml").exists() and not user_file(home).exists()


def test_a_link_on_the_way_to_the_baseline_rules_is_refused(world, tmp_path, capsys):
    repo, home, _ = world
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (repo / ".jaekit").mkdir()
    (repo / ".jaekit" / "rules").symlink_to(elsewhere)
    assert run("--project") == 65
    assert "is a symbolic link" in capsys.readouterr().err
    assert list(elsewhere.iterdir()) == [] and not (repo / ".jaekit" / "spar.toml").exists()
    assert not user_file(home).exists()  # nothing at all was written


def test_existing_project_file_gains_missing_keys_and_keeps_its_comments(world):
    repo, _home, _ = world
    path = repo / ".jaekit" / "spar.toml"
    path.parent.mkdir()
    original = "# our rules\nrules = []  # none yet\n"
    path.write_text(original)
    assert run("--project") == 0
    text = path.read_text()
    assert "rules = []  # none yet\n" in text and text.startswith("# our rules\n")
    assert set(tomllib.loads(text)) == {"rules", "check_paths", "angles", "caps"}
    assert tomllib.loads(text)["rules"] == []
    assert not (repo / ".jaekit" / "rules").exists()  # the user's rules do not list the baseline


def test_project_file_with_a_forbidden_key_is_refused(world, capsys):
    repo, _home, _ = world
    path = repo / ".jaekit" / "spar.toml"
    path.parent.mkdir()
    path.write_text("model = 'x'\n")
    assert run("--project") == 65
    assert f"{path}:1" in capsys.readouterr().err
    assert path.read_text() == "model = 'x'\n"


def test_project_outside_a_repository_is_refused(tmp_path, monkeypatch, world):
    outside = tmp_path / "plain"
    outside.mkdir()
    monkeypatch.chdir(outside)
    assert run("--project") == 65


# ---------------------------------------------------------------- ignore rules (G28)


def test_series_line_is_appended_to_an_existing_gitignore(world):
    repo, _home, _ = world
    (repo / ".gitignore").write_text("*.pyc")  # no final newline
    assert run() == 0
    assert (repo / ".gitignore").read_text() == "*.pyc\n/reviews/\n"
    from spar.records.paths import check_run_out
    check_run_out(repo / "reviews" / "r1")  # G28 holds: no refusal


def test_already_ignored_series_changes_nothing(world, capsys):
    repo, _home, _ = world
    (repo / ".gitignore").write_text("reviews/\n")
    assert run() == 0
    assert (repo / ".gitignore").read_text() == "reviews/\n"
    assert "already ignored" in capsys.readouterr().out


def test_a_negation_elsewhere_cannot_undo_the_line(world):
    repo, _home, _ = world
    (repo / "work").mkdir()
    (repo / ".gitignore").write_text("work/*\n!work/reviews/\n")
    assert run("--series", "work/reviews") == 0
    assert (repo / "work" / ".gitignore").read_text() == "/reviews/\n"
    assert git(repo, "check-ignore", "--no-index", "work/reviews/").strip() == "work/reviews/"


def test_glob_characters_in_the_series_name_are_escaped(world):
    repo, _home, _ = world
    assert ignore_pattern("a*b [x] ") == "/a\\*b \\[x]\\ /"
    assert run("--series", "r*") == 0
    assert git(repo, "check-ignore", "-q", "--no-index", "r*/").strip() == ""
    with pytest.raises(RuntimeError):  # exit 1: "rx" is not ignored, the * was literal
        git(repo, "check-ignore", "-q", "--no-index", "rx/")


def test_series_holding_tracked_files_is_refused(world, capsys):
    repo, home, _ = world
    commit(repo, {"reviews/keep.txt": "x"})
    assert run() == 65
    assert "tracked" in capsys.readouterr().err
    assert not (repo / ".gitignore").exists() and not user_file(home).exists()


def test_outside_a_repository_nothing_is_ignored(tmp_path, monkeypatch, world, capsys):
    outside = tmp_path / "plain"
    outside.mkdir()
    monkeypatch.chdir(outside)
    assert run() == 0
    assert "not inside a git repository" in capsys.readouterr().out


def test_help_lists_exit_codes(capsys):
    assert main(["init", "--help"]) == 0
    out = capsys.readouterr().out
    assert "Exit codes: 0" in out and "65 refused" in out


# ---------------------------------------------------------------- a new user's first round


@pytest.mark.slow
def test_new_user_goes_from_nothing_to_a_recorded_round(tmp_path):
    """`spar init` then `spar run` in a fresh repository, as subprocesses, with
    the fake claude and codex on PATH: no G28 refusal, a recorded round."""
    repo = make_repo(tmp_path, {"app.py": "def f():\n    return 1\n"})
    base = git(repo, "rev-parse", "HEAD").strip()
    head = commit(repo, {"app.py": "def f():\n    return 2\n"})
    home = tmp_path / "home"
    home.mkdir()
    clis = tmp_path / "bin"
    clis.mkdir()
    for name in ("claude", "codex"):
        (clis / name).symlink_to(FAKES / name)
    # the scenario itself, not a file: where bwrap works the fakes run in Spar's sandbox
    scenario = json.dumps({"result": result(head, findings=[], verdict="no_blocking_findings")})
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPAR_", "XDG_", "GIT_"))}
    env.update(HOME=str(home), GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1",
               SPAR_FAKE_SCENARIO=scenario,
               PATH=os.pathsep.join([str(clis), str(Path(sys.executable).parent), "/usr/bin", "/bin"]))

    def spar(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "spar", *args], cwd=repo, env=env, capture_output=True,
                              text=True, timeout=120)

    init = spar("init")
    assert init.returncode == 0, init.stderr
    config = home / ".config" / "jaekit" / "spar.toml"
    config.write_text(f"env_passthrough = {json.dumps(FAKE_ENV)}\n" + config.read_text())  # the fakes' scenario
    doctor = spar("doctor")  # the README's next step: a round can run here
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    first = spar("run", "--stage", "code", "--base", base, "--out", "reviews/r1")
    assert first.returncode == 0, first.stderr
    round_json = json.loads((repo / "reviews" / "r1" / "round.json").read_text())
    assert round_json["recorded_at"] and [r["status"] for r in round_json["reviewers"]] == ["completed"] * 2
    assert [r["name"] for r in round_json["reviewers"]] == ["claude", "codex"]
    assert git(repo, "status", "--porcelain", "--untracked-files=all").splitlines() == ["?? .gitignore"]
