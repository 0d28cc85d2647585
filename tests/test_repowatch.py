"""The user's repository watched while reviewers run (spar/round/repowatch.py): a change to
HEAD, the index, a tracked or an untracked file is found; the series folder, which Spar
itself writes, and ignored files are not."""

from __future__ import annotations

import json

import pytest

from spar.round.repowatch import repository_change, repository_state
from tests.gitrepo import commit, git, make_repo
from tests.runsetup import make_setup, result

HOSTILE_WRITER = r'''
import pathlib, sys
repo = pathlib.Path(sys.argv[1])
(repo / "calc.py").write_text("owned\n")
(repo / "planted.txt").write_text("owned\n")
print(open(sys.argv[2]).read())
'''


def test_each_kind_of_change_is_found(tmp_path):
    repo = make_repo(tmp_path, {".gitignore": "reviews/\nbuild/\n", "a.txt": "a\n", "b.txt": "b\n"})
    series = repo / "reviews"
    before = repository_state(repo, series)
    (series / "r1").mkdir(parents=True)
    (series / "r1" / "x").write_text("spar's own")
    (repo / "build").mkdir()
    (repo / "build" / "out").write_text("ignored")
    assert repository_change(before, repository_state(repo, series)) is None
    (repo / "a.txt").write_text("changed\n")
    (repo / "new.txt").write_text("new\n")
    change = repository_change(before, repository_state(repo, series))
    assert change is not None and change.paths == ["a.txt", "new.txt"] and not change.head and not change.index
    mid = repository_state(repo, series)
    (repo / "a.txt").write_text("changed again, same status\n")
    change = repository_change(mid, repository_state(repo, series))
    assert change is not None and change.paths == ["a.txt"]
    git(repo, "add", "new.txt")
    change = repository_change(mid, repository_state(repo, series))
    assert change is not None and change.index
    commit(repo, {"b.txt": "b2\n"}, message="more")
    change = repository_change(mid, repository_state(repo, series))
    assert change is not None and change.head


def test_a_series_outside_the_repository_is_fine(tmp_path):
    repo = make_repo(tmp_path, {"a.txt": "a\n"})
    state = repository_state(repo, tmp_path / "elsewhere")
    assert repository_change(state, repository_state(repo, tmp_path / "elsewhere")) is None


@pytest.mark.slow
def test_a_reviewer_writing_into_the_repository_is_caught_without_a_sandbox(tmp_path):
    s = make_setup(tmp_path)
    script = s.answers / "writer.py"
    script.write_text(HOSTILE_WRITER, encoding="utf-8")
    answer = s.answers / "answer.json"
    answer.write_text(json.dumps(result(head=s.head, findings=[])), encoding="utf-8")
    s.configure([{"name": "writer", "preset": "command", "argv": ["python3", str(script), str(s.repo),
                                                                   str(answer)]}])
    proc = s.run()
    stderr = proc.stderr.decode()
    assert proc.returncode == 0, stderr  # a warning, never a refusal
    assert "the repository changed while the reviewers ran" in stderr and "calc.py, planted.txt" in stderr
    assert "no sandbox was in place" in stderr
    rj = json.loads((s.repo / "reviews" / "r1" / "round.json").read_text())
    assert rj["repository_changed"] == {"head": False, "index": False, "paths": ["calc.py", "planted.txt"],
                                        "path_count": 2, "sandboxed": False}


def test_a_repository_git_cannot_read_goes_unwatched(tmp_path):
    """A watch never blocks a round: where git fails, there is no state and no change."""
    state = repository_state(tmp_path / "not-a-repository", tmp_path / "series")
    assert state is None and repository_change(state, state) is None
