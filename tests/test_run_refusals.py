"""`spar run` refusals and usage errors: exact exit code, the message, and nothing written or started."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from spar import cli
from tests.runsetup import make_setup, result

pytestmark = pytest.mark.slow

ROWS = json.loads((Path(__file__).parent / "data" / "run_refusals.json").read_text(encoding="utf-8"))["rows"]


def snapshot(root: Path) -> set[str]:
    """Every path under the repository except .git: a refusal must add none."""
    out = set()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != ".git"]
        for name in dirnames + filenames:
            out.add(os.path.relpath(os.path.join(dirpath, name), root))
    return out


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    s = make_setup(tmp_path_factory.mktemp("refusals"))
    s.configure([{"name": "claude", "preset": "claude"}, {"name": "codex", "preset": "codex"}])
    s.scenario({"claude": {"result": result(head=s.head)}, "codex": {"result": result(head=s.head)}})
    return s


@pytest.fixture
def spar_here(setup, monkeypatch, capsysbinary):
    """`spar` run by `cli.main` in this process, with the set-up's environment and folder: a
    refusal comes before any reviewer, lock or write, so a process of its own would add
    only Python's start-up. (The dry run and the FIFO cases below keep a real process: a
    hang there is bounded by its timeout.) Same shape as `setup.spar`'s answer."""
    def run(*args: str, cwd: Path | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
        for key in list(os.environ):
            monkeypatch.delenv(key)
        for key, value in (env or setup.env).items():
            monkeypatch.setenv(key, value)
        monkeypatch.chdir(cwd or setup.repo)
        code = cli.main(list(args))
        out, err = capsysbinary.readouterr()
        return subprocess.CompletedProcess(list(args), code, out, err)
    return run


def check_refused(s, proc, code: int, says: str, before: set[str]):
    err = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == code, err
    assert proc.stdout == b""
    line = err.strip().splitlines()[-1]
    assert line.startswith("spar: ") and says in line, line
    assert snapshot(s.repo) == before
    assert s.fake_calls() == []


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r["why"])
def test_refused_before_anything_is_written(setup, spar_here, row):
    before = snapshot(setup.repo)
    proc = spar_here("run", *row["argv"])
    check_refused(setup, proc, row["exit"], row["says"], before)


def test_existing_round_folder_is_refused(setup, spar_here):
    (setup.repo / "reviews" / "r9").mkdir(parents=True)
    try:
        before = snapshot(setup.repo)
        proc = spar_here("run", "--stage", "code", "--out", "reviews/r9")
        check_refused(setup, proc, 65, "already exists", before)
    finally:
        (setup.repo / "reviews" / "r9").rmdir()
        (setup.repo / "reviews").rmdir()


def test_round_folder_inside_a_round_folder_is_refused(setup):
    # a round's folder is not a series (extend and cap-report refuse it as one)
    proc = setup.run("--dry-run", out="reviews/r1")
    assert proc.returncode == 0, proc.stderr
    try:
        before = snapshot(setup.repo)
        proc = setup.run(out="reviews/r1/r2")
        check_refused(setup, proc, 65, "is inside the round folder", before)
    finally:
        for dirpath, _, _ in os.walk(setup.repo / "reviews"):
            os.chmod(dirpath, 0o755)
        shutil.rmtree(setup.repo / "reviews")


def test_configuration_error_names_file_and_line(setup, spar_here):
    bad = setup.tmp / "bad.toml"
    bad.write_text('[[reviewers]]\npreset = "claude"\nbogus = 1\n')
    before = snapshot(setup.repo)
    proc = spar_here("run", "--stage", "code", "--out", "reviews/r1", env={**setup.env, "SPAR_CONFIG": str(bad)})
    check_refused(setup, proc, 65, f"{bad}:3", before)


def test_unknown_async_backend_is_refused(setup, spar_here):
    before = snapshot(setup.repo)
    proc = spar_here("run", "--stage", "code", "--out", "reviews/r1",
                      env={**setup.env, "SPAR_ASYNC_BACKEND": "curio"})
    check_refused(setup, proc, 65, "SPAR_ASYNC_BACKEND \"curio\"", before)


def test_outside_a_repository_is_refused(setup, spar_here):
    proc = spar_here("run", "--stage", "code", "--out", "reviews/r1", cwd=setup.tmp / "home")
    assert proc.returncode == 65
    assert "is not inside a git repository" in proc.stderr.decode()
    assert not (setup.tmp / "home" / "reviews").exists()


def test_unreadable_series_record_is_refused(setup, spar_here):
    bad = setup.repo / "reviews" / "r0"
    bad.mkdir(parents=True)
    (bad / "round.json").write_text("{not json")
    try:
        before = snapshot(setup.repo)
        proc = spar_here("run", "--stage", "code", "--out", "reviews/r1")
        check_refused(setup, proc, 65, "round.json: not JSON", before)
    finally:
        (bad / "round.json").unlink()
        bad.rmdir()
        (setup.repo / "reviews").rmdir()


def test_unreadable_extensions_are_refused(setup, spar_here):
    series = setup.repo / "reviews"
    series.mkdir()
    (series / "extensions.jsonl").write_text('{"stage": "code", "by": 0}\n')
    try:
        before = snapshot(setup.repo)
        proc = spar_here("run", "--stage", "code", "--out", "reviews/r1")
        check_refused(setup, proc, 65, "extensions.jsonl:1", before)
    finally:
        (series / "extensions.jsonl").unlink()
        series.rmdir()


@pytest.mark.parametrize("option", ["--criteria", "--rules", "--subject"])
@pytest.mark.parametrize("kind", ["fifo", "socket", "device"])
def test_document_that_is_not_a_regular_file_is_refused_without_opening(setup, tmp_path, option, kind):
    """G26: a FIFO would block the open forever (no writer comes), a device may act when
    opened; both are refused before anything is opened. `setup.spar` bounds a hang."""
    import socket
    import stat

    path = tmp_path / f"doc-{kind}"
    sock = None
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "socket":
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.bind(str(path))
    else:
        path = Path(os.devnull)
        assert stat.S_ISCHR(os.stat(path).st_mode)
    try:
        before = snapshot(setup.repo)
        proc = setup.run(option, str(path))
        what = {"fifo": "a FIFO", "socket": "a socket", "device": "a character device"}[kind]
        check_refused(setup, proc, 65, f"{option} {json.dumps(str(path))}: is {what}, not a readable regular file",
                      before)
    finally:
        if sock is not None:
            sock.close()


def test_a_repository_without_commits_says_so(setup, spar_here, tmp_path):
    """Issue 22 point 8: with no --head, a repository before its first commit is named as
    such, not as a --head the user never gave."""
    from tests.gitrepo import make_repo

    repo = make_repo(tmp_path, name="fresh")
    (repo / ".gitignore").write_text("reviews/\n")
    proc = spar_here("run", "--stage", "code", "--out", "reviews/r1", cwd=repo)
    err = proc.stderr.decode()
    assert proc.returncode == 65, err
    assert "the repository has no commits yet; commit the change to review" in err
    assert "--head" not in err
    assert not (repo / "reviews").exists()
    # a --head the user named is still judged as one
    proc = spar_here("run", "--stage", "code", "--out", "reviews/r1", "--head", "HEAD", cwd=repo)
    assert proc.returncode == 65 and '--head "HEAD" is not a commit' in proc.stderr.decode()


def test_a_series_outside_the_repository_must_exist(setup, spar_here):
    """A mistyped --out outside the repository creates no folder and starts no series (its
    caps, memory and repeats would start over silently); a series folder the user made is
    taken, and inside the repository its first round creates it (`reviews/r1`)."""
    typo = setup.tmp / "typo"
    before = snapshot(setup.repo)
    proc = spar_here("run", "--stage", "code", "--out", str(typo / "deep" / "r1"))
    check_refused(setup, proc, 65, f'the series folder "{typo / "deep"}" does not exist', before)
    assert f'(mkdir "{typo / "deep"}")' in proc.stderr.decode()
    assert not typo.exists()
    (typo / "deep").mkdir(parents=True)
    try:
        proc = spar_here("run", "--stage", "code", "--out", str(typo / "deep" / "r1"), "--dry-run")
        assert proc.returncode == 0, proc.stderr.decode()
        assert (typo / "deep" / "r1" / "round.json").is_file()
    finally:
        shutil.rmtree(typo)


def test_a_repositorys_first_commit_is_reviewed_against_the_empty_tree(setup, spar_here, tmp_path):
    """A root commit has no parent to take as its base (and G27 takes no tree for --base):
    without --base its base is the empty tree, so every file it adds is its change."""
    from tests.gitrepo import make_repo

    repo = make_repo(tmp_path, {".gitignore": "reviews/\n", "calc.py": "def add(a, b):\n    return a + b\n"},
                     name="first")
    proc = spar_here("run", "--stage", "code", "--out", "reviews/r1", "--dry-run", cwd=repo)
    assert proc.returncode == 0, proc.stderr.decode()
    record = json.loads((repo / "reviews" / "r1" / "round.json").read_text())
    assert record["base"] == "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
    assert "calc.py" in (repo / "reviews" / "r1" / "packet.md").read_text()
    assert sorted(p.name for p in (repo / "reviews" / "r1" / "workspace" / "head").iterdir()) == [".gitignore", "calc.py"]
    assert list((repo / "reviews" / "r1" / "workspace" / "base").iterdir()) == []
