"""Deterministic benchmark repositories, generated once into bench/out/ and reused.

`small_repo()`: 10 files, two commits. `large_repo()`: 20,000 files in the
head commit and about 200 MB of packed history, written through one
`git fast-import` stream (the fastest way to make many commits on 2 cores).
File contents are pseudo-random text from a seeded generator (about 6 bits per
byte, so zlib keeps ~3/4 of it and the pack size is predictable); each history
commit rewrites whole files, so history grows by what it writes. The last
commit is a small, typical change (edits, additions, a deletion).

Run `python bench/repos.py` to generate (or reuse) both and print their sizes.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from harness import OUT, clean_env, du_bytes, git, remove_tree

GENERATOR_VERSION = 1
EPOCH = 1_700_000_000
# 256 byte values -> 64 letters plus spaces and newlines: text lines, generated in C
_ALPHABET = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_."
_TABLE = bytes((_ALPHABET[i % 64] if i < 240 else (b"\n"[0] if i >= 250 else b" "[0])) for i in range(256))


@dataclass
class RepoInfo:
    path: str
    base: str
    head: str
    files: int  # blob entries in the head commit
    head_bytes: int  # bytes of the head commit's files
    git_bytes: int  # disk size of .git
    commits: int
    generated_seconds: float  # 0 when reused from the cache

    @property
    def label(self) -> str:
        return f"{self.files:,} files, {self.git_bytes / 1e6:.0f} MB history"


def text(rng: random.Random, size: int) -> bytes:
    data = rng.randbytes(size).translate(_TABLE)
    return data[:-1] + b"\n" if size else data


class _Stream:
    """Writes a fast-import stream to git's stdin."""

    def __init__(self, repo: Path):
        self.proc = subprocess.Popen(["git", "-C", str(repo), "fast-import", "--quiet", "--done"],
                                     stdin=subprocess.PIPE, env=clean_env())
        self.w = self.proc.stdin
        self.commits = 0

    def commit(self, message: str, changes: list[tuple[str, str, bytes | None]]) -> None:
        """changes: (path, mode, content) with content None = delete."""
        when = EPOCH + self.commits * 3600
        msg = message.encode()
        head = (f"commit refs/heads/main\nmark :{self.commits + 1}\n"
                f"author Spar Bench <bench@example.invalid> {when} +0000\n"
                f"committer Spar Bench <bench@example.invalid> {when} +0000\n"
                f"data {len(msg)}\n").encode() + msg + b"\n"
        if self.commits:
            head += f"from :{self.commits}\n".encode()
        self.w.write(head)
        for path, mode, content in changes:
            if content is None:
                self.w.write(f"D {path}\n".encode())
            else:
                self.w.write(f"M {mode} inline {path}\ndata {len(content)}\n".encode() + content + b"\n")
        self.w.write(b"\n")
        self.commits += 1

    def close(self) -> None:
        self.w.write(b"done\n")
        self.w.close()
        if self.proc.wait() != 0:
            raise RuntimeError("git fast-import failed")


def _cached(folder: Path) -> RepoInfo | None:
    info = folder / "info.json"
    if info.exists() and (folder / "repo" / ".git").is_dir():
        data = json.loads(info.read_text())
        data["generated_seconds"] = 0.0
        return RepoInfo(**data)
    return None


def _finish(folder: Path, repo: Path, commits: int, started: float) -> RepoInfo:
    git(repo, "reset", "-q", "--hard")  # a work tree and index, as a user's clone has
    head = git(repo, "rev-parse", "HEAD").strip()
    base = git(repo, "rev-parse", "HEAD~1").strip()
    sizes = git(repo, "ls-tree", "-r", "-l", "HEAD").splitlines()
    head_bytes = sum(int(line.split()[3]) for line in sizes if line.split()[1] == "blob")
    info = RepoInfo(path=str(repo), base=base, head=head, files=len(sizes), head_bytes=head_bytes,
                    git_bytes=du_bytes(repo / ".git"), commits=commits,
                    generated_seconds=time.perf_counter() - started)
    data = asdict(info)
    data.pop("generated_seconds")
    (folder / "info.json").write_text(json.dumps(data, indent=2) + "\n")
    return info


def _fresh(folder: Path) -> Path:
    remove_tree(folder)
    repo = folder / "repo"
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "--initial-branch=main")
    git(repo, "config", "user.name", "Spar Bench")
    git(repo, "config", "user.email", "bench@example.invalid")
    return repo


def small_repo(root: Path = OUT) -> RepoInfo:
    folder = root / f"small-v{GENERATOR_VERSION}"
    cached = _cached(folder)
    if cached:
        return cached
    started = time.perf_counter()
    repo = _fresh(folder)
    rng = random.Random(10)
    stream = _Stream(repo)
    files = {f"src/mod{i}.py": text(rng, 1500) for i in range(8)}
    files["README.md"] = b"# Bench repository\n"
    files["tests/test_mod.py"] = text(rng, 800)
    stream.commit("initial", [(p, "100644", c) for p, c in files.items()])
    stream.commit("a change", [("src/mod1.py", "100644", files["src/mod1.py"] + b"def added():\n    return 1\n"),
                               ("tests/test_mod.py", "100644", files["tests/test_mod.py"] + b"# more\n")])
    stream.close()
    return _finish(folder, repo, stream.commits, started)


def _layout(count: int) -> list[str]:
    # 40 packages x 10 modules x N files: paths shaped like a real source tree
    per = max(1, count // 400)
    paths = [f"src/pkg{p:02d}/mod{m}/file_{f:03d}.txt" for p in range(40) for m in range(10) for f in range(per)]
    return paths[:count]


def large_repo(root: Path = OUT, files: int = 20_000, history_mb: int = 200) -> RepoInfo:
    folder = root / f"large-v{GENERATOR_VERSION}-{files}f-{history_mb}mb"
    cached = _cached(folder)
    if cached:
        return cached
    started = time.perf_counter()
    repo = _fresh(folder)
    rng = random.Random(20_000)
    paths = _layout(files)
    sizes = {p: rng.randint(256, 7936) for p in paths}  # mean ~4 KB
    for p in rng.sample(paths, 10):
        sizes[p] = 1_000_000  # a few large files, as real repositories have
    execs = set(rng.sample(paths, max(1, files // 100)))
    modes = {p: ("100755" if p in execs else "100644") for p in paths}
    stream = _Stream(repo)
    packed_ratio = 0.76  # zlib on this text
    target = history_mb * 1_000_000 / packed_ratio
    written = 0
    first = []
    for p in paths:
        first.append((p, modes[p], text(rng, sizes[p])))
        written += sizes[p]
    first.append(("README.md", "100644", b"# Large bench repository\n"))
    first.append(("docs/link-to-readme", "120000", b"../README.md"))
    stream.commit("initial import", first)
    del first
    number = 0
    while written < target:
        number += 1
        changed = rng.sample(paths, 800)
        changes = []
        for p in changed:
            sizes[p] = rng.randint(256, 7936) if sizes[p] < 1_000_000 else sizes[p]
            changes.append((p, modes[p], text(rng, sizes[p])))
            written += sizes[p]
        stream.commit(f"history commit {number}", changes)
    # the change under review: a few edits, two new files, one deletion
    last = [(p, modes[p], text(rng, sizes[p])) for p in rng.sample(paths, 20)]
    last += [("src/new_feature.txt", "100644", text(rng, 3000)),
             ("tests/test_new_feature.txt", "100644", text(rng, 1200))]
    gone = rng.choice(paths)
    last.append((gone, "", None))
    stream.commit("the change under review", last)
    stream.close()
    return _finish(folder, repo, stream.commits, started)


def main(argv: list[str]) -> int:
    for make in (small_repo, large_repo):
        t = time.perf_counter()
        info = make()
        print(f"{make.__name__}: {info.label}, head tree {info.head_bytes / 1e6:.0f} MB, {info.commits} commits, "
              f"{'generated' if info.generated_seconds else 'reused'} in {time.perf_counter() - t:.1f} s: {info.path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
