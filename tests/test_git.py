"""spar.git against real temporary repositories."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from spar import git
from spar.errors import Refused, quote
from tests.gitrepo import commit, git_env, make_repo
from tests.gitrepo import git as run_git
from tests.proctools import LIMITS, wait_for

DATA = Path(__file__).parent / "data"


# --- the shared helper itself -------------------------------------------------

def test_gitrepo_is_reproducible(tmp_path):
    a = make_repo(tmp_path, {"x.txt": "hello\n"}, name="a")
    b = make_repo(tmp_path, {"x.txt": "hello\n"}, name="b")
    assert run_git(a, "rev-parse", "HEAD") == run_git(b, "rev-parse", "HEAD")
    sha = commit(a, {"y.txt": b"\x00bin"}, message="second", remove=["x.txt"])
    assert len(sha) == 40 and sha == run_git(a, "rev-parse", "HEAD").strip()
    assert run_git(a, "ls-files").split() == ["y.txt"]
    assert run_git(a, "log", "-1", "--format=%an <%ae> %s") == "Spar Test <spar-test@example.invalid> second\n"


# --- G27 ----------------------------------------------------------------------

@pytest.fixture
def two_commits(tmp_path):
    repo = make_repo(tmp_path, {"a.txt": "one\n", "dir/b.txt": "b\n"})
    base = run_git(repo, "rev-parse", "HEAD").strip()
    run_git(repo, "tag", "-a", "v1", "-m", "tag")
    head = commit(repo, {"a.txt": "two\n"}, message="second")
    return repo, base, head


G27_ROWS = json.loads((DATA / "g27_revisions.json").read_text())["rows"]


@pytest.fixture(scope="module")
def g27_revisions(tmp_path_factory):
    """One repository for every row (resolving a revision changes nothing, and each row
    checks that), with its revisions by placeholder."""
    repo = make_repo(tmp_path_factory.mktemp("g27"), {"a.txt": "one\n", "dir/b.txt": "b\n"})
    base = run_git(repo, "rev-parse", "HEAD").strip()
    run_git(repo, "tag", "-a", "v1", "-m", "tag")
    head = commit(repo, {"a.txt": "two\n"}, message="second")
    return repo, {"{head}": head, "{head_short}": head[:7], "{base}": base,
                  "{blob}": run_git(repo, "rev-parse", "HEAD:a.txt").strip(),
                  "{tree}": run_git(repo, "rev-parse", "HEAD^{tree}").strip()}


@pytest.mark.parametrize("row", G27_ROWS, ids=[repr(r["rev"]) for r in G27_ROWS])
def test_resolve_commit_g27(g27_revisions, row, monkeypatch, tmp_path):
    repo, fill = g27_revisions
    head, base = fill["{head}"], fill["{base}"]
    rev = fill.get(row["rev"], row["rev"])
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    before = sorted(p.name for p in repo.iterdir())
    if row["expect"] is None:
        with pytest.raises(Refused) as err:
            git.resolve_commit(repo, rev, what="--base")
        assert str(err.value) == f"--base {quote(rev)} is not a commit"
    else:
        assert git.resolve_commit(repo, rev) == {"head": head, "base": base}[row["expect"]]
    # an option-looking value is never acted on: no file appears anywhere
    assert sorted(p.name for p in repo.iterdir()) == before
    assert list(cwd.iterdir()) == []


def test_head_commit(tmp_path):
    empty = make_repo(tmp_path, name="empty")
    with pytest.raises(Refused):
        git.head_commit(empty)
    repo = make_repo(tmp_path, {"a": "a"})
    assert git.head_commit(repo) == run_git(repo, "rev-parse", "HEAD").strip()


def test_git_dir_in_environment_is_ignored(two_commits, tmp_path, monkeypatch):
    repo, _, head = two_commits
    other = make_repo(tmp_path, {"z": "z"}, name="other")
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    monkeypatch.setenv("GIT_WORK_TREE", str(other))
    assert git.resolve_commit(repo, "HEAD") == head
    assert git.repo_root(repo / "dir") == repo.resolve()


# --- default base --------------------------------------------------------------

def test_default_base_merge_base_with_main(tmp_path):
    repo = make_repo(tmp_path, {"a": "1"})
    c1 = commit(repo, {"a": "2"})
    run_git(repo, "checkout", "-q", "-b", "feature")
    commit(repo, {"b": "1"})
    head = commit(repo, {"b": "2"})
    run_git(repo, "checkout", "-q", "main")
    commit(repo, {"c": "main moved on"})
    run_git(repo, "checkout", "-q", "feature")
    assert git.default_base(repo, head) == c1


def test_default_base_on_main_is_parent(tmp_path):
    repo = make_repo(tmp_path, {"a": "1"})
    parent = commit(repo, {"a": "2"})
    head = commit(repo, {"a": "3"})
    assert git.default_base(repo, head) == parent


def test_default_base_master_fallback(tmp_path):
    repo = make_repo(tmp_path, {"a": "1"}, branch="master")
    fork = commit(repo, {"a": "2"})
    run_git(repo, "checkout", "-q", "-b", "topic")
    commit(repo, {"t": "1"})
    head = commit(repo, {"t": "2"})
    assert git.default_base(repo, head) == fork


def test_default_base_prefers_origin_head(tmp_path):
    repo = make_repo(tmp_path, {"a": "1"})
    fork = commit(repo, {"a": "dev"})
    run_git(repo, "update-ref", "refs/remotes/origin/develop", fork)
    run_git(repo, "symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/develop")
    head = commit(repo, {"a": "more"})
    head = commit(repo, {"a": "even more"})
    # main is at head; origin/HEAD names develop, which diverges at `fork`
    assert git.default_base(repo, head) == fork


def test_a_root_commit_is_reviewed_against_the_empty_tree(tmp_path):
    """A repository's first commit has no parent: its base is the empty tree, so its change
    is every file it adds (diffs, the file list and tree listings all take it)."""
    repo = make_repo(tmp_path, {"a": "1\n", "b/c.py": "x = 1\n"}, branch="trunk")
    head = git.head_commit(repo)
    base = git.default_base(repo, head)
    assert base == "4b825dc642cb6eb9a060e54bf8d69288fbee4904" == git.empty_tree(repo)
    assert [(f.path, f.added, f.removed) for f in git.changed_files(repo, base, head)] == [("a", 1, 0), ("b/c.py", 1, 0)]
    assert git.ls_tree(repo, base) == []
    assert b"+x = 1" in git.diff(repo, base, head)


# --- tree listing and blobs -----------------------------------------------------

def test_ls_tree_kinds_and_gitlinks(tmp_path):
    odd = os.fsdecode(b"caf\xe9.txt")
    repo = make_repo(tmp_path, {"plain.txt": "p\n", "sub dir/ü.md": "u\n", odd: b"latin1\n"},
                     symlinks={"link": "plain.txt"})
    script = repo / "run.sh"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    run_git(repo, "add", "run.sh")
    sub = make_repo(tmp_path, {"s": "s"}, name="sub")
    sub_head = run_git(sub, "rev-parse", "HEAD").strip()
    run_git(repo, "update-index", "--add", "--cacheinfo", f"160000,{sub_head},vendor/sub")
    run_git(repo, "commit", "-q", "-m", "more")
    entries = {e.path: e for e in git.ls_tree(repo, git.head_commit(repo))}
    assert set(entries) == {"plain.txt", "sub dir/ü.md", odd, "link", "run.sh"}
    assert (entries["plain.txt"].mode, entries["plain.txt"].kind) == ("100644", "file")
    assert (entries["run.sh"].mode, entries["run.sh"].kind) == ("100755", "executable")
    assert (entries["link"].mode, entries["link"].kind) == ("120000", "symlink")
    blobs = git.read_blobs(repo, [e.sha for e in entries.values()])
    assert blobs[entries["link"].sha] == b"plain.txt"
    assert blobs[entries[odd].sha] == b"latin1\n"
    assert blobs[entries["sub dir/ü.md"].sha] == b"u\n"


def test_read_blobs_binary_empty_duplicates(tmp_path):
    contents = {"empty": b"", "bin": bytes(range(256)) * 3, "nl": b"\n\n", "noeol": b"x"}
    repo = make_repo(tmp_path, contents)
    entries = {e.path: e.sha for e in git.ls_tree(repo, "HEAD")}
    shas = [entries[n] for n in contents] + [entries["bin"]]
    got = git.read_blobs(repo, shas)
    assert {n: got[entries[n]] for n in contents} == contents
    assert git.read_blobs(repo, []) == {}
    with pytest.raises(git.GitError):
        git.read_blobs(repo, ["0" * 40])
    tree = run_git(repo, "rev-parse", "HEAD^{tree}").strip()
    with pytest.raises(git.GitError):
        git.read_blobs(repo, [tree])


def test_stream_blobs_in_order_and_stops_cleanly(tmp_path):
    contents = {"empty": b"", "bin": bytes(range(256)) * 300, "nl": b"\n\n", "noeol": b"x"}
    repo = make_repo(tmp_path, contents)
    entries = {e.path: e.sha for e in git.ls_tree(repo, "HEAD")}
    shas = [entries[n] for n in contents] + [entries["bin"]]  # a duplicate is asked once
    got = list(git.stream_blobs(repo, shas))
    assert [sha for sha, _ in got] == [entries[n] for n in contents]
    assert dict(got) == {entries[n]: c for n, c in contents.items()}
    assert list(git.stream_blobs(repo, [])) == []
    with pytest.raises(git.GitError):
        list(git.stream_blobs(repo, [entries["nl"], "0" * 40]))
    tree = run_git(repo, "rev-parse", "HEAD^{tree}").strip()
    with pytest.raises(git.GitError):
        list(git.stream_blobs(repo, [tree]))
    # a reader that stops early (test_workspace covers more IDs than a pipe buffer holds)
    stream = git.stream_blobs(repo, [entries["bin"], entries["nl"]])
    assert next(stream)[0] == entries["bin"]
    stream.close()  # kills git; nothing hangs


def test_ls_tree_remembers_full_commit_ids_only(tmp_path, monkeypatch):
    repo = make_repo(tmp_path, {"a": "1\n"})
    head = run_git(repo, "rev-parse", "HEAD").strip()
    calls = []
    real = git._ls_tree
    monkeypatch.setattr(git, "_ls_tree", lambda r, c: calls.append(c) or real(r, c))
    monkeypatch.setattr(git, "_TREE_CACHE", {})
    first = git.ls_tree(repo, head)
    first.clear()  # callers get their own list
    assert [e.path for e in git.ls_tree(repo, head)] == ["a"]
    git.ls_tree(repo, "HEAD")
    assert calls == [head]  # a name is resolved each time, the listing is remembered by the commit's ID
    moved = commit(repo, {"b": "2\n"}, message="moved")
    assert [e.path for e in git.ls_tree(repo, "HEAD")] == ["a", "b"]  # a symbolic name can move
    assert calls == [head, moved]


# --- ignore, tracking, roots ----------------------------------------------------

def test_is_ignored_and_tracked_under(tmp_path):
    repo = make_repo(tmp_path, {
        ".gitignore": "reviews/\n*.log\nsolo/\n!keep.log\n",
        "src/a.py": "a\n",
        "ab/x": "x\n",
        "reviews/tracked.md": "forced\n",
    })
    assert git.is_ignored(repo, "reviews/series/r1")  # inside an ignored folder, not existing
    assert git.is_ignored(repo, repo / "x.log")
    assert not git.is_ignored(repo, "keep.log")
    assert not git.is_ignored(repo, "src/new")
    # a "name/" pattern applies only to folders: say so for a folder not made yet
    assert not git.is_ignored(repo, "solo", directory=False)
    assert git.is_ignored(repo, "solo", directory=True)
    (repo / "solo").mkdir()
    assert git.is_ignored(repo, "solo")
    assert not git.is_ignored(repo, repo)
    with pytest.raises(git.GitError):
        git.is_ignored(repo, tmp_path / "elsewhere")

    assert git.tracked_under(repo, "reviews")  # added with -f despite the ignore rule
    assert git.tracked_under(repo, repo / "src")
    assert git.tracked_under(repo, "src/a.py")
    assert not git.tracked_under(repo, "reviews/series")
    assert not git.tracked_under(repo, "a*")  # literal, not a glob
    assert not git.tracked_under(repo, "sr")
    assert git.tracked_under(repo, repo)


def test_repo_root(tmp_path):
    outer = make_repo(tmp_path, {".gitignore": "nested/\n", "f": "f"}, name="outer")
    inner = make_repo(outer / "nested", {"g": "g"}, name="inner")
    assert git.repo_root(outer / "not" / "yet") == outer.resolve()
    assert git.repo_root(outer / "f") == outer.resolve()
    assert git.repo_root(inner / "deep" / "x") == inner.resolve()
    assert git.repo_root(inner.parent) == outer.resolve()
    assert git.repo_root(outer / ".git" / "objects") == outer.resolve()
    lonely = tmp_path / "lonely" / "x"
    assert git.repo_root(lonely) is None


def test_repo_root_broken_git_file_is_an_error(tmp_path):
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / ".git").write_text("gitdir: /nonexistent/place\n")
    with pytest.raises(git.GitError):
        git.repo_root(bad / "records")


# --- diffs -----------------------------------------------------------------------

def test_diff_ignores_user_diff_settings(two_commits):
    repo, base, head = two_commits
    commit(repo, {"naïve.txt": "new\n"}, message="unicode name")
    head2 = git.head_commit(repo)
    run_git(repo, "config", "diff.noprefix", "true")
    run_git(repo, "config", "diff.external", "/bin/false")
    run_git(repo, "config", "color.ui", "always")
    patch = git.diff(repo, base, head2)
    assert b"diff --git a/a.txt b/a.txt\n" in patch
    assert "+++ b/naïve.txt\n".encode() in patch  # not octal-quoted
    assert b"\x1b[" not in patch
    assert b"-one\n+two\n" in patch
    stat = git.diff_stat(repo, base, head2)
    assert "a.txt" in stat and "naïve.txt" in stat and "2 files changed" in stat
    assert git.diff(repo, head, head) == b""


@pytest.mark.parametrize("keep", [0, 10, 1 << 20])
def test_diff_with_stat_stops_git_once_the_patch_is_longer_than_kept(two_commits, keep):
    """The stat as `diff_stat` gives it, and the patch as `diff` gives it, or (when longer
    than `keep`) its first keep + 1 bytes with complete=False."""
    repo, base, _head = two_commits
    commit(repo, {"new\nline.txt": "x\n\n\ny\n", "blank.txt": "\n\n\n", "bin.dat": "\0\1\2"}, message="more")
    head = git.head_commit(repo)
    change = git.diff_with_stat(repo, base, head, keep)
    whole = git.diff(repo, base, head)
    assert change.stat == git.diff_stat(repo, base, head) and "files changed" in change.stat
    assert change.complete == (len(whole) <= keep)
    assert change.patch == (whole if change.complete else whole[: keep + 1])
    same = git.diff_with_stat(repo, head, head, keep)
    assert (same.stat, same.patch, same.complete) == ("", b"", True)
    with pytest.raises(git.GitError):
        git.diff_with_stat(repo, base, "0" * 40, keep)


def _ended(pid: int) -> bool:
    """Gone, or a zombie waiting for init to reap it: either way it runs no more."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (FileNotFoundError, ProcessLookupError):
        return True


def test_a_git_command_past_its_time_limit_is_ended_with_its_process_group(two_commits, tmp_path):
    """Every git call has a time limit (issue 22 point 2's `every git call with a time limit`):
    past it, git and what it started are killed and the caller gets a GitError."""
    repo, _, _ = two_commits
    pids = tmp_path / "pids"
    # an alias that starts a shell which starts a child of its own, then waits on it
    hang = f"alias.hang=!sleep 300 & echo $$ $! > {pids}; wait"
    # the limit grows only when a loaded machine killed git before its shell wrote the pids
    for limit in (0.5, *LIMITS):
        with pytest.raises(git.GitError, match=rf"did not finish within {limit:g}s"):
            git.run(repo, "-c", hang, "hang", timeout=limit)
        if pids.exists() and len(pids.read_text().split()) == 2:
            break
    shell, sleeper = (int(p) for p in pids.read_text().split())
    # SIGKILL went to the whole group; the kernel ends each member soon after
    assert wait_for(lambda: _ended(shell) and _ended(sleeper))


def test_snapshot_worktree_leaves_index_and_refs(two_commits):
    """Issue 22 point 2: the working tree as a commit on HEAD, untracked files that are not
    ignored included, ignored ones left out; the same working tree gives the same commit."""
    repo, _, head = two_commits
    (repo / ".gitignore").write_text("*.log\n")
    (repo / "new.txt").write_text("new\n")
    (repo / "debug.log").write_text("ignored\n")
    index = (repo / ".git" / "index").read_bytes()
    made = git.snapshot_worktree(repo, head)
    assert (repo / ".git" / "index").read_bytes() == index
    assert run_git(repo, "rev-parse", "HEAD").strip() == head
    names = run_git(repo, "ls-tree", "-r", "--name-only", made.commit).split()
    assert "new.txt" in names and ".gitignore" in names and "debug.log" not in names
    assert run_git(repo, "rev-parse", f"{made.commit}^").strip() == head
    assert git.tree_of(repo, made.commit) == made.tree
    assert git.snapshot_worktree(repo, head) == made
    assert git.uncommitted(repo) == git.Uncommitted(modified=0, untracked=2)


def _tree_read_whole(repo: Path, parent: str, tmp: Path) -> str:
    """The working tree's tree as git gives it from the parent's tree alone (every file read)."""
    env = {**git_env(), "GIT_INDEX_FILE": str(tmp / "whole-index")}
    for args in (["read-tree", parent], ["add", "--all"]):
        subprocess.run(["git", "-C", str(repo), *args], env=env, check=True, capture_output=True)
    return subprocess.run(["git", "-C", str(repo), "write-tree"], env=env, check=True,
                          capture_output=True, text=True).stdout.strip()


def test_the_snapshot_starts_from_the_users_index_yet_reads_every_change(two_commits, tmp_path):
    """The snapshot's index starts from the user's (its stat data: `git add` reads only the
    files changed since), and its tree is the one every file read gives: staged changes,
    deletions, untracked files, and files marked assume-unchanged or skip-worktree that were
    changed on disk all count."""
    repo, _, head = two_commits
    (repo / "c.txt").write_text("c\n")
    (repo / "d.txt").write_text("d\n")
    run_git(repo, "add", "c.txt", "d.txt")
    head = commit(repo, {"e.txt": "e\n"}, message="more")
    (repo / "a.txt").write_text("staged\n")
    run_git(repo, "add", "a.txt")
    (repo / "a.txt").write_text("on disk, after staging\n")
    (repo / "dir" / "b.txt").unlink()
    (repo / "new.txt").write_text("untracked\n")
    run_git(repo, "update-index", "--assume-unchanged", "c.txt")
    (repo / "c.txt").write_text("changed behind an assume-unchanged mark\n")
    run_git(repo, "update-index", "--skip-worktree", "d.txt")
    (repo / "d.txt").write_text("changed behind a skip-worktree mark\n")
    made = git.snapshot_worktree(repo, head)
    assert made.tree == _tree_read_whole(repo, head, tmp_path)
    shown = run_git(repo, "show", f"{made.commit}:c.txt") + run_git(repo, "show", f"{made.commit}:d.txt")
    assert "assume-unchanged" in shown and "skip-worktree" in shown
    # the seeded index holds the user's stat data for a file unchanged since git last looked
    index = {"GIT_INDEX_FILE": str(tmp_path / "seeded")}
    git._parent_index(repo, head, index, seed=True)
    debug = git.run(repo, "ls-files", "--debug", "e.txt", env=index).stdout.decode()
    assert "mtime: 0:0" not in debug and "size: 2" in debug
    git._parent_index(repo, head, index, seed=False)
    assert "mtime: 0:0" in git.run(repo, "ls-files", "--debug", "e.txt", env=index).stdout.decode()
    # a sparse checkout's index is not a seed (its marks say which files are meant to be away)
    run_git(repo, "config", "core.sparseCheckout", "true")
    git._parent_index(repo, head, index, seed=True)
    assert "mtime: 0:0" in git.run(repo, "ls-files", "--debug", "e.txt", env=index).stdout.decode()


def test_the_seeded_index_checks_files_as_git_does_by_default_and_writes_nothing_into_git(two_commits, tmp_path):
    """The repository's own configuration cannot weaken the look at each file (core.checkStat,
    core.trustctime: a rewrite of the same size with its time put back), nor make the
    snapshot's index write into .git (core.splitIndex)."""
    repo, _, head = two_commits
    for key, value in (("core.checkStat", "minimal"), ("core.trustctime", "false"), ("core.splitIndex", "true")):
        run_git(repo, "config", key, value)
    run_git(repo, "update-index", "--refresh")
    target = repo / "a.txt"
    before = target.stat()
    target.write_text("TWO\n")  # the same size
    os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))
    git_files = sorted(p.name for p in (repo / ".git").iterdir())
    made = git.snapshot_worktree(repo, head)
    assert run_git(repo, "show", f"{made.commit}:a.txt") == "TWO\n"
    assert sorted(p.name for p in (repo / ".git").iterdir()) == git_files


def test_a_conflicted_index_or_a_filter_of_the_repository_reads_every_file(two_commits, tmp_path):
    repo, base, head = two_commits
    branch = run_git(repo, "rev-parse", "--abbrev-ref", "HEAD").strip()
    run_git(repo, "checkout", "-q", "-b", "other", base)
    commit(repo, {"a.txt": "other\n"}, message="other")
    merged = subprocess.run(["git", "-C", str(repo), "merge", "-q", branch], env=git_env(), capture_output=True)
    assert merged.returncode == 1 and run_git(repo, "status", "--porcelain").startswith("UU")  # a conflict
    parent = run_git(repo, "rev-parse", "HEAD").strip()
    assert git.snapshot_worktree(repo, parent).tree == _tree_read_whole(repo, parent, tmp_path)
    # a clean filter of the repository's own: its entries are not trusted, every file is read raw
    run_git(repo, "merge", "--abort")
    (repo / ".gitattributes").write_text("*.txt filter=lie\n")
    run_git(repo, "config", "filter.lie.clean", "sed s/other/LIE/")
    made = git.snapshot_worktree(repo, parent)
    assert run_git(repo, "show", f"{made.commit}:a.txt") == "other\n"


def test_uncommitted_names_the_paths_the_caller_marks(two_commits):
    """The counts stay whole; `mark` picks paths out of them (sorted), ignored files never."""
    repo, _, _ = two_commits
    (repo / ".gitignore").write_text("*.log\n")
    (repo / "keep").mkdir()
    (repo / "keep" / "a.txt").write_text("a\n")
    (repo / "keep" / "b.log").write_text("ignored\n")
    found = git.uncommitted(repo, lambda path: path.endswith((".gitignore", ".txt", ".log")))
    assert found == git.Uncommitted(modified=0, untracked=2, marked=(".gitignore", "keep/a.txt"))
    assert git.uncommitted(repo).marked == ()
