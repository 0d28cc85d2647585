"""Real temporary git repositories for tests (runs the `git` program).

A fixed author/committer identity and date make commit IDs reproducible for
the same content, and keep the user's own git configuration out of the way.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

NAME = "Spar Test"
EMAIL = "spar-test@example.invalid"
DATE = "2024-01-01T00:00:00Z"


def git_env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        {
            "GIT_AUTHOR_NAME": NAME,
            "GIT_AUTHOR_EMAIL": EMAIL,
            "GIT_AUTHOR_DATE": DATE,
            "GIT_COMMITTER_NAME": NAME,
            "GIT_COMMITTER_EMAIL": EMAIL,
            "GIT_COMMITTER_DATE": DATE,
            # keep the caller's ~/.gitconfig and /etc/gitconfig out of tests
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_TERMINAL_PROMPT": "0",
            "LC_ALL": "C",
        }
    )
    return env


def git(repo: Path, *args: str, input: bytes | None = None) -> str:
    """Run git in `repo`; return stdout as text (raises on failure)."""
    proc = subprocess.run(
        ["git", "-C", str(repo), *args],
        input=input,
        capture_output=True,
        env=git_env(),
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(
            f"git {' '.join(args)} failed ({proc.returncode}): {proc.stderr.decode(errors='replace')}"
        )
    return proc.stdout.decode("utf-8", "surrogateescape")


def write_tree(root: Path, files: dict[str, bytes | str], symlinks: dict[str, str] | None = None) -> Path:
    """`files` (and `symlinks`) written under `root`, folders made as needed; returns `root`."""
    _write_files(root, files, symlinks or {})
    return root


def _write_files(repo: Path, files: dict[str, bytes | str], symlinks: dict[str, str]) -> list[str]:
    paths = []
    for rel, content in files.items():
        target = repo / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.is_symlink() or target.exists():
            target.unlink()
        if isinstance(content, str):
            target.write_text(content, encoding="utf-8")
        else:
            target.write_bytes(content)
        paths.append(rel)
    for rel, dest in symlinks.items():
        link = repo / rel
        link.parent.mkdir(parents=True, exist_ok=True)
        if link.is_symlink() or link.exists():
            link.unlink()
        os.symlink(dest, link)
        paths.append(rel)
    return paths


def make_repo(
    tmp_path: Path,
    files: dict[str, bytes | str] | None = None,
    *,
    symlinks: dict[str, str] | None = None,
    commit_message: str = "initial",
    name: str = "repo",
    branch: str = "main",
) -> Path:
    """Create `tmp_path/name` as a git repository with one commit holding `files`
    (and `symlinks`: link path -> link target). With no files at all, no commit is made."""
    repo = Path(tmp_path) / name
    repo.mkdir(parents=True, exist_ok=True)
    git(repo, "init", "-q", f"--initial-branch={branch}")
    # what `git config user.name ...` (and user.email, commit.gpgsign) would write, in one
    # write instead of three git processes
    with open(repo / ".git" / "config", "a", encoding="utf-8") as config:
        config.write(f"[user]\n\tname = {NAME}\n\temail = {EMAIL}\n[commit]\n\tgpgsign = false\n")
    files = files or {}
    symlinks = symlinks or {}
    if files or symlinks:
        commit(repo, files, message=commit_message, symlinks=symlinks)
    return repo


def commit(
    repo: Path,
    files: dict[str, bytes | str] | None = None,
    message: str = "change",
    remove: list[str] | tuple[str, ...] = (),
    *,
    symlinks: dict[str, str] | None = None,
    allow_empty: bool = False,
) -> str:
    """Write `files`/`symlinks`, delete `remove`, commit everything; return the full commit ID."""
    repo = Path(repo)
    paths = _write_files(repo, files or {}, symlinks or {})
    if paths:
        git(repo, "add", "-f", "--", *paths)
    if remove:
        git(repo, "rm", "-q", "-r", "--", *remove)
    args = ["commit", "-q", "-m", message]
    if allow_empty or not (paths or remove):
        args.append("--allow-empty")
    git(repo, *args)
    return head_commit(repo) or git(repo, "rev-parse", "HEAD").strip()


def head_commit(repo: Path) -> str | None:
    """HEAD's commit id read from the files git keeps it in (a branch's loose ref, which a
    commit writes, or a detached HEAD), without starting git; None where it is elsewhere
    (packed refs, a linked work tree's `.git` file)."""
    try:
        head = (Path(repo) / ".git" / "HEAD").read_text(encoding="utf-8").strip()
        if head.startswith("ref: "):
            head = (Path(repo) / ".git" / head[5:]).read_text(encoding="utf-8").strip()
    except OSError:
        return None
    return head if len(head) == 40 and all(c in "0123456789abcdef" for c in head) else None
