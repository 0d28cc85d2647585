"""G28 record paths against real (nested) git repositories."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from spar.errors import Refused, quote
from spar.records import paths
from tests.gitrepo import git as run_git
from tests.gitrepo import make_repo

DATA = Path(__file__).parent / "data"
ROWS = json.loads((DATA / "g28_record_paths.json").read_text())["rows"]


def _tree(root: Path) -> list[str]:
    out = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in dirs + files:
            out.append(os.path.relpath(os.path.join(folder, name), root))
    return sorted(out)


def _build(tmp_path: Path, row: dict) -> None:
    for spec in row["repos"]:
        at = tmp_path / spec["at"]
        make_repo(at.parent, spec["files"], name=at.name)
    for rel in row.get("dirs", []):
        (tmp_path / rel).mkdir(parents=True, exist_ok=True)
    for rel in row.get("broken_git", []):
        (tmp_path / rel).mkdir(parents=True, exist_ok=True)
        (tmp_path / rel / ".git").write_text("gitdir: /nonexistent/spar-test\n")
    for rel in row.get("empty_git", []):
        (tmp_path / rel / ".git").mkdir(parents=True)


def _check(kind: str, path: Path):
    if kind == "run_out":
        return paths.check_run_out(path)
    if kind == "series":
        return paths.check_record_path(path, kind="series")
    return paths.check_gate_out(path, [], [])


@pytest.mark.parametrize("row", ROWS, ids=[r["name"] for r in ROWS])
def test_g28_table(tmp_path, row):
    _build(tmp_path, row)
    path = tmp_path / row["path"]
    before = _tree(tmp_path)
    if row["expect"] == "ok":
        _check(row["check"], path)
    else:
        with pytest.raises(Refused) as err:
            _check(row["check"], path)
        message = str(err.value)
        assert row["message"] in message
        assert quote(str(path)) in message
        if "names" in row:
            assert quote(os.path.realpath(tmp_path / row["names"])) in message
    assert _tree(tmp_path) == before  # nothing written either way


def test_symlink_into_a_repository_is_judged_where_it_lands(tmp_path):
    repo = make_repo(tmp_path, {".gitignore": "ignored/\n"})
    (tmp_path / "via").symlink_to(repo / "src", target_is_directory=True)
    (repo / "src").mkdir()
    with pytest.raises(Refused, match="does not ignore"):
        paths.check_run_out(tmp_path / "via" / "r1")
    (tmp_path / "ok").symlink_to(repo / "ignored", target_is_directory=True)
    (repo / "ignored").mkdir()
    paths.check_run_out(tmp_path / "ok" / "r1")


def test_dubious_ownership_is_git_failing_to_decide(tmp_path):
    repo = make_repo(tmp_path, {".gitignore": "reviews/\n"})
    paths.check_run_out(repo / "reviews" / "r1")
    # git refuses a repository owned by someone else: it cannot decide, so we refuse
    os.chown(repo, 54321, 54321)
    os.chown(repo / ".git", 54321, 54321)
    try:
        with pytest.raises(Refused, match="git cannot decide"):
            paths.check_run_out(repo / "reviews" / "r1")
    finally:
        os.chown(repo, os.getuid(), os.getgid())
        os.chown(repo / ".git", os.getuid(), os.getgid())


def test_run_out_in_a_round_folder_is_refused(tmp_path):
    # a round's folder is not a series: extend and cap-report refuse it, so a round
    # created there could never be extended, and it would sit among the round's records
    repo = make_repo(tmp_path, {".gitignore": "reviews/\n"})
    round_dir = repo / "reviews" / "code-1"
    round_dir.mkdir(parents=True)
    paths.check_run_out(round_dir / "code-2")  # no round.json yet: a plain folder
    (round_dir / "round.json").write_text("{}")
    with pytest.raises(Refused) as err:
        paths.check_run_out(round_dir / "code-2")
    message = str(err.value)
    assert "is inside the round folder" in message and quote(str(round_dir)) in message
    assert not (round_dir / "code-2").exists()


def test_containing_repos_order(tmp_path):
    outer = make_repo(tmp_path, {".gitignore": "in/\n"}, name="outer")
    inner = make_repo(outer / "in", {"x": "x"}, name="inner")
    assert paths.containing_repos(inner / "a" / "b") == [inner.resolve(), outer.resolve()]
    assert paths.containing_repos(tmp_path / "elsewhere") == []


# --- gate --out ----------------------------------------------------------------------

def test_gate_out_rules(tmp_path):
    series = tmp_path / "series"
    r1 = series / "r1"
    r1.mkdir(parents=True)
    (series / "extensions.jsonl").write_text("")
    before = _tree(tmp_path)

    with pytest.raises(Refused, match="inside the round folder"):
        paths.check_gate_out(r1 / "gate.json", [r1], [series])
    with pytest.raises(Refused, match="inside the round folder"):
        paths.check_gate_out(r1, [r1], [series])
    with pytest.raises(Refused, match=r"extensions\.jsonl"):
        paths.check_gate_out(series / "extensions.jsonl", [r1], [series])
    with pytest.raises(Refused, match=r"extensions\.jsonl"):
        paths.check_gate_out(r1 / ".." / "extensions.jsonl", [], [series])

    assert paths.check_gate_out(series / "gate.json", [r1], [series]) is None

    for content in (b"", b"not json", b"[]", b'{"schema": "review-round/v1"}', b"\xff\xfe"):
        (tmp_path / "old.json").write_bytes(content)
        with pytest.raises(Refused, match="is not a review-gate/v1 file"):
            paths.check_gate_out(tmp_path / "old.json", [r1], [series])
    (tmp_path / "old.json").unlink()

    (tmp_path / "dir.json").mkdir()
    with pytest.raises(Refused, match="is not a review-gate/v1 file"):
        paths.check_gate_out(tmp_path / "dir.json", [r1], [series])
    (tmp_path / "dir.json").rmdir()
    assert _tree(tmp_path) == before

    gate = tmp_path / "gate.json"
    data = json.dumps({"schema": "review-gate/v1", "state": "passed"}).encode()
    gate.write_bytes(data)
    assert paths.check_gate_out(gate, [r1], [series]) == hashlib.sha256(data).hexdigest()


def test_gate_out_in_repository_must_be_ignored(tmp_path):
    repo = make_repo(tmp_path, {".gitignore": "gates/\n"})
    with pytest.raises(Refused, match="does not ignore"):
        paths.check_gate_out(repo / "gate.json", [], [])
    assert paths.check_gate_out(repo / "gates" / "gate.json", [], []) is None
    run_git(repo, "rm", "-q", "--cached", ".gitignore")
    (repo / ".gitignore").unlink()
    with pytest.raises(Refused, match="does not ignore"):
        paths.check_gate_out(repo / "gates" / "gate.json", [], [])


def test_run_out_name_only_check_skips_the_repository(tmp_path):
    # `spar run` checks --out again under the series lock for the name alone: G28's
    # repository checks were made before the lock, and cost git processes
    repo = make_repo(tmp_path, {"a.txt": "a\n"})  # nothing ignored
    with pytest.raises(Refused, match="does not ignore it"):
        paths.check_run_out(repo / "reviews" / "r1")
    paths.check_run_out(repo / "reviews" / "r1", repository=False)
    (repo / "reviews" / "r1").mkdir(parents=True)
    with pytest.raises(Refused, match="already exists"):
        paths.check_run_out(repo / "reviews" / "r1", repository=False)
