"""Workspace copies: `workspace/head` + `workspace/base` as `spar run` builds them
(spar/workspace/build.py build_workspace, with the series' blob cache), against `git archive <commit> | tar -x`
of the same two commits (the practical floor). As `spar run` reviewing the
checked-out head, spar takes a file's bytes from the work tree where they hash
to its blob id (spar/workspace/reuse.py); the "every byte from git" column is the
copy without that source (a head not checked out), "one thread" the spar side
with its files made on one thread instead of two.

Both sides run in a child process per repetition, in alternating order, into
fresh folders; the first repetition of each is a warm-up and is not counted
(it fills the page cache with the pack; --quick skips it and runs once). Time
is wall time of the copies alone (the spar side is timed inside the child,
without interpreter start-up; the archive side includes starting sh and git).

A later round of a series (the large repository's head with one file changed,
after a round of base..head built its copy and left the series' caches) is
measured the same way: spar as `spar run` makes it (the series' blob cache,
cloned where the file system of --dir clones files, then round 1's copy as a
source: `build_workspace(..., reuse=, cache=)`), spar with round 1's copy
alone, spar building the same commits from git, and the archive floor of the
same two commits. Each run first probes once whether --dir clones files (FICLONE) and
says so under each table.
CPU is user + system of the child and everything it started (git included).

With --previous it also measures the copy as it was before commit 8f1906f
(bench/previous/workspace_v0.py: whole commits read into memory, no hard
links) as a third side of the same alternating runs.

    python bench/workspace_copies.py [--quick] [--repeat N] [--dir FOLDER] [--previous]
"""

from __future__ import annotations

import argparse
import errno
import fcntl
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from harness import (
    BENCH,
    PYTHON,
    Series,
    clean_env,
    fmt_mb,
    fmt_s,
    git,
    machine_line,
    remove_tree,
    run_measured,
    table,
    work_dir,
)
from repos import RepoInfo, large_repo, small_repo

from spar.workspace.blobcache import FICLONE
from spar.workspace.build import build_workspace

_CHILD = """
import importlib, json, resource, sys, time
from pathlib import Path
repo, base, head, dest, module = sys.argv[1:6]
kwargs = json.loads(sys.argv[6]) if len(sys.argv) > 6 else {}  # reuse ("head"/"base" -> folders), cache
if "workers" in kwargs:  # threads making the files (spar.workspace.build.WORKERS)
    importlib.import_module("spar.workspace.build").WORKERS = kwargs.pop("workers")
build_workspace = importlib.import_module(module).build_workspace
t = time.perf_counter()
build_workspace(repo, base, head, Path(dest), **kwargs)
elapsed = time.perf_counter() - t
print(json.dumps({"seconds": elapsed, "maxrss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
"""

_ARCHIVE = ("set -e; mkdir -p \"$3/head\" \"$3/base\"; "
            "git -C \"$1\" archive \"$2\" | tar -x -C \"$3/head\"; "
            "git -C \"$1\" archive \"$4\" | tar -x -C \"$3/base\"")


def _copy_with(module: str, reuse: dict[str, list[str]] | None = None, cache: Callable[[Path], Path] | None = None,
               workers: int | None = None):
    """A side running `module`'s build_workspace; `reuse` as spar.workspace.reuse.sources gives it
    ("WORKTREE" standing for the repository's work tree); `cache(dest)`: the series' blob cache
    folder for the copy at `dest` (spar.workspace.blobcache), made ready (untimed) by the function
    and removed after the copy; `workers`: threads making the files (spar.workspace.build.WORKERS)."""
    def copy(info: RepoInfo, dest: Path) -> tuple[float, float]:
        argv = [PYTHON, "-c", _CHILD, info.path, info.base, info.head, str(dest), module]
        kwargs: dict = {"workers": workers} if workers else {}
        if reuse is not None:
            kwargs["reuse"] = {k: [v.replace("WORKTREE", info.path) for v in vs] for k, vs in reuse.items()}
        folder = cache(dest) if cache is not None else None
        if folder is not None:
            kwargs["cache"] = str(folder)
        if kwargs:
            argv.append(json.dumps(kwargs))
        try:
            s = run_measured(argv, env=clean_env(PYTHONPATH=str(BENCH)), cwd=BENCH)
        finally:
            if folder is not None:
                remove_tree(folder)
        data = json.loads(s.stdout)
        CPU[id(copy)] = s.user + s.sys
        return data["seconds"], data["maxrss_kb"] / 1024
    return copy


def _new_cache(dest: Path) -> Path:
    """An empty place for the blob cache beside `dest`: a first round fills it."""
    return dest.with_name(dest.name + ".cache")


def _cache_from(pristine: Path) -> Callable[[Path], Path]:
    """Each copy gets its own copy of `pristine` (round 1's cache), made untimed with
    `cp --reflink=always` (instant where files clone); no cache when round 1 kept none."""
    def make(dest: Path) -> Path:
        folder = dest.with_name(dest.name + ".cache")
        if pristine.exists():
            subprocess.run(["cp", "-a", "--reflink=always", str(pristine), str(folder)], check=True, timeout=600)
        return folder
    return make


def clone_probe(where: str | None) -> str:
    """Whether the file system of `where` clones files copy-on-write: one FICLONE, answered."""
    folder = work_dir("probe", where)
    try:
        with open(folder / "a", "w+b") as a, open(folder / "b", "wb") as b:  # FICLONE reads its source
            a.write(b"x" * 4096)
            a.flush()
            try:
                fcntl.ioctl(b.fileno(), FICLONE, a.fileno())
            except OSError as exc:
                return f"no (FICLONE: {errno.errorcode.get(exc.errno or 0, exc.errno)})"
        return "yes (FICLONE works)"
    finally:
        remove_tree(folder)


CPU: dict[int, float] = {}  # id(side function) -> CPU of its last run (child and all it started)


# as `spar run` at the checked-out head: the work tree as a source, the series' blob cache filled where files clone
_AT_HEAD = {"head": ["WORKTREE"]}
spar_copy = _copy_with("spar.workspace.build", _AT_HEAD, _new_cache)
one_thread_copy = _copy_with("spar.workspace.build", _AT_HEAD, _new_cache, workers=1)  # the same on one thread
git_only_copy = _copy_with("spar.workspace.build", cache=_new_cache)  # every byte from git (another head)
bare_copy = _copy_with("spar.workspace.build")  # no source, no cache: git alone
previous_copy = _copy_with("previous.workspace_v0")  # the code before 8f1906f, kept for before/after only


def _cp_reflink(earlier: Path):
    """`cp -a --reflink=auto` of round 1's copy (head and base): what compiled code takes
    to make every file anew as a clone where the file system clones (a copy where not),
    with no check at all; a lower bound for any copy made file by file."""
    def copy(info: RepoInfo, dest: Path) -> tuple[float, float]:
        s = run_measured(["cp", "-a", "--reflink=auto", str(earlier), str(dest)], env=clean_env())
        CPU[id(copy)] = s.user + s.sys
        return s.wall, s.maxrss_mb
    return copy


def archive_copy(info: RepoInfo, dest: Path) -> tuple[float, float]:
    s = run_measured(["sh", "-c", _ARCHIVE, "sh", info.path, info.head, str(dest), info.base], env=clean_env())
    CPU[id(archive_copy)] = s.user + s.sys
    return s.wall, s.maxrss_mb


def later_head(info: RepoInfo) -> str:
    """The head with one file changed (a line added to its first regular file): a commit
    made with plumbing, so no ref and no work tree change; the same commit every time."""
    path = next(line.split("\t", 1)[1] for line in git(info.path, "ls-tree", "-r", info.head).splitlines()
                if line.startswith("100644 "))
    content = git(info.path, "cat-file", "blob", f"{info.head}:{path}").encode("utf-8", "surrogateescape")
    blob = git(info.path, "hash-object", "-w", "--stdin", input=content + b"one more line\n").strip()
    with tempfile.TemporaryDirectory() as tmp:
        env = clean_env(GIT_INDEX_FILE=str(Path(tmp) / "index"))
        for args in (["read-tree", info.head], ["update-index", "--cacheinfo", f"100644,{blob},{path}"]):
            subprocess.run(["git", "-C", info.path, *args], env=env, check=True)
        tree = subprocess.run(["git", "-C", info.path, "write-tree"], env=env, check=True,
                              capture_output=True, text=True).stdout.strip()
    return git(info.path, "commit-tree", tree, "-p", info.head, "-m", "one file changed").strip()


def measure_later(info: RepoInfo, repeat: int, where: str | None = None, warmup: bool = True) -> dict:
    """A later round: base..later_head(), with round 1's copy (base..head) and the blob
    cache round 1 left (where files clone) to reuse."""
    tmp = work_dir("ws-later", where)
    later = replace(info, head=later_head(info))
    earlier = tmp / "r1" / "workspace"
    earlier.parent.mkdir()
    pristine = tmp / "r1-cache"
    build_workspace(info.path, info.base, info.head, earlier, cache=pristine)  # round 1, not timed
    # the later head is not checked out: the work tree is no source here, round 1's copy is
    reuse = {"head": [f"{earlier}/head"], "base": [f"{earlier}/base"]}
    # as spar run: the blob cache round 1 left (where files clone), then round 1's copy
    sides = [("spar run", _copy_with("spar.workspace.build", reuse, _cache_from(pristine))),
             ("bytes", _copy_with("spar.workspace.build", reuse)),
             ("fresh", bare_copy), ("cp", _cp_reflink(earlier)), ("archive", archive_copy)]
    res: dict[str, tuple[Series, Series]] = {name: (Series(), Series()) for name, _ in sides}
    try:
        for i in range(0 if warmup else 1, repeat + 1):
            for name, fn in (sides if i % 2 == 0 else list(reversed(sides))):
                dest = tmp / f"{name}-{i}"
                os.sync()
                seconds, _mb = fn(later, dest)
                remove_tree(dest)
                if i:
                    res[name][0].add(seconds)
                    res[name][1].add(CPU[id(fn)])
    finally:
        remove_tree(tmp)
    return res


def measure(info: RepoInfo, repeat: int, where: str | None = None, previous: bool = False,
            warmup: bool = True) -> dict:
    tmp = work_dir("ws", where)
    sides = [("spar", spar_copy), ("one thread", one_thread_copy), ("git only", git_only_copy),
             ("archive", archive_copy)]
    sides += [("previous", previous_copy)] if previous else []
    res = {name: (Series(), Series(), Series()) for name, _ in sides}
    try:
        for i in range(0 if warmup else 1, repeat + 1):
            order = sides if i % 2 == 0 else list(reversed(sides))
            for name, fn in order:
                dest = tmp / f"{name}-{i}"
                os.sync()  # start each copy with no dirty pages left by the one before
                seconds, mb = fn(info, dest)
                remove_tree(dest)
                if i == 0:
                    continue  # warm-up: fills the page cache with the pack
                res[name][0].add(seconds)
                res[name][1].add(mb)
                res[name][2].add(CPU.get(id(fn), 0.0))
    finally:
        remove_tree(tmp)
    return res


def run(quick: bool, repeat: int | None, where: str | None = None,
        previous: bool = False) -> tuple[str, dict]:
    repeat = repeat or (1 if quick else 5)
    rows = []
    cow = clone_probe(where)
    figures: dict = {"repeat": repeat, "where": where or tempfile.gettempdir(), "cow": cow}
    for info, size in ((small_repo(), "small"), (large_repo(), "large")):
        r = measure(info, repeat, where, previous, warmup=not quick)
        (st, sm, sc), (gt, _gm, gc), (at, am, ac) = r["spar"], r["git only"], r["archive"]
        ot, _om, oc = r["one thread"]
        figures[size] = {"files": info.files, "spar_seconds": st.median, "archive_floor_seconds": at.median,
                         "ratio": st.median / at.median, "spar_peak_rss_mib": sm.median,
                         "spar_range": st.spread(), "archive_range": at.spread(),
                         "spar_cpu": sc.median, "archive_cpu": ac.median, "ratio_cpu": sc.median / ac.median,
                         "git_only_seconds": gt.median, "git_only_ratio": gt.median / at.median,
                         "git_only_cpu": gc.median, "one_thread_seconds": ot.median,
                         "one_thread_ratio": ot.median / at.median, "one_thread_cpu": oc.median}
        row = [info.label, fmt_s(st.median), st.spread(), fmt_s(at.median), at.spread(),
               f"{st.median / at.median:.2f}x", f"{sc.median:.2f} / {ac.median:.2f} s ({sc.median / ac.median:.2f}x)",
               f"{gt.median:.3f} s = {gt.median / at.median:.2f}x, CPU {gc.median:.2f} s",
               f"{ot.median:.3f} s = {ot.median / at.median:.2f}x, CPU {oc.median:.2f} s",
               fmt_mb(sm.median), fmt_mb(am.median)]
        if previous:
            pt, pm, _pc = r["previous"]
            row += [fmt_s(pt.median), pt.spread(), f"{pt.median / at.median:.2f}x", fmt_mb(pm.median),
                    f"{pt.median / st.median:.1f}x"]
        rows.append(row)
    header = ["repository", "spar run's copy", "range", "git archive + tar -x", "range", "ratio",
              "CPU spar / archive", "spar, every byte from git", "spar on one thread", "spar peak RSS",
              "archive peak RSS"]
    notes = [machine_line(), f"copies written under {where or tempfile.gettempdir()}; its file system clones "
             f"files copy-on-write: {cow}",
             "ratio = spar / git archive floor (both commits, same run, alternating order)",
             "CPU = user + system of the child and everything it started (git, tar; spar's interpreter start)",
             "spar = as `spar run` at the checked-out head (spar/workspace/build.py build_workspace, the series "
             "folder fresh): files whose work-tree bytes hash to their blob id come from the work tree, the rest "
             "from git; the series' blob cache is filled where files clone (spar/workspace/blobcache.py)",
             "every byte from git = build_workspace for a head not checked out; one thread = "
             "spar with spar.workspace.build.WORKERS = 1"]
    if previous:
        header += ["previous (before 8f1906f)", "range", "ratio", "previous peak RSS", "previous / spar"]
        notes.append("previous = bench/previous/workspace_v0.py, the copy before 8f1906f: each commit's blobs "
                     "read whole into memory, every file written (no hard links)")
    first = table(f"Workspace copies (head + base), median of {repeat}", header, rows, notes)
    return first + "\n" + later_table(large_repo(), repeat, where, not quick, figures), figures


def later_table(info: RepoInfo, repeat: int, where: str | None, warmup: bool, figures: dict) -> str:
    r = measure_later(info, repeat, where, warmup)
    (rt, rc), (bt, bc), (ft, fc), (at, ac) = r["spar run"], r["bytes"], r["fresh"], r["archive"]
    ct, cc = r["cp"]
    figures["later"] = {"cp_reflink_seconds": ct.median, "cp_reflink_ratio": ct.median / at.median,
                        "reuse_seconds": rt.median, "fresh_seconds": ft.median, "archive_floor_seconds": at.median,
                        "ratio": rt.median / at.median, "fresh_ratio": ft.median / at.median,
                        "bytes_seconds": bt.median, "bytes_ratio": bt.median / at.median, "bytes_cpu": bc.median,
                        "reuse_cpu": rc.median, "fresh_cpu": fc.median, "archive_cpu": ac.median,
                        "ratio_cpu": rc.median / ac.median, "reuse_range": rt.spread(), "archive_range": at.spread()}
    rows = [[name, fmt_s(t.median), t.spread(), f"{t.median / at.median:.2f}x", f"{c.median:.2f} s",
             f"{c.median / ac.median:.2f}x"]
            for name, t, c in (("spar run: blob cache + round 1's copy", rt, rc),
                               ("spar, round 1's copy only (bytes)", bt, bc), ("spar, fresh copy", ft, fc),
                               ("cp -a --reflink=auto of round 1's copy (no check)", ct, cc),
                               ("git archive + tar -x (floor)", at, ac))]
    notes = [machine_line(), f"copies written under {where or tempfile.gettempdir()}; its file system clones "
             f"files copy-on-write: {figures.get('cow', '?')}",
             f"{info.label}: round 1 copied base..head (not timed) and left the series' caches; the later round is "
             "base..(head + one file changed); every side copies both commits, same run, alternating order",
             "blob cache = files cloned (FICLONE) from round 1's cache where the file system clones, each clone's "
             "bytes checked against its blob id (spar/workspace/blobcache.py); each repetition gets its own copy of "
             "round 1's cache (cp --reflink, untimed); where files do not clone there is no cache and this row "
             "pays one failed clone, then runs as the next row",
             "cp -a --reflink=auto = compiled code making every file of round 1's copy anew, as a clone where the "
             "file system clones, with no check: a lower bound for any copy made file by file",
             "round 1's copy (bytes) = unchanged files' bytes read from round 1's copy and checked against their "
             "blob ids (spar/workspace/reuse.py); every file is still a new inode"]
    return table(f"Workspace copies, a later round of a series (one file changed), median of {repeat}",
                 ["side", "wall", "range", "/ floor", "CPU", "/ floor CPU"], rows, notes)


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--repeat", type=int)
    p.add_argument("--dir", help="where to write the copies (default: the temp folder)")
    p.add_argument("--previous", action="store_true",
                   help="also measure the copy before 8f1906f (bench/previous/workspace_v0.py)")
    a = p.parse_args(argv)
    t = time.perf_counter()
    print(run(a.quick, a.repeat, a.dir, a.previous)[0])
    print(f"(took {time.perf_counter() - t:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
