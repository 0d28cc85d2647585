"""PROPOSAL, measured by `bench/workspace_copies.py --proposal`; not used by spar.

`spar.round.workspace.copy_commit` reads every blob of a commit into memory
(`git.read_blobs` keeps git's whole output, then a dict of slices of it), so
peak memory is about twice the size of the commit's files (211 MiB for the
92 MB benchmark tree; a 2 GB repository would need 4 GB). This version reads
`git cat-file --batch` as a stream and writes each blob as it arrives: memory
is bounded by the largest single file, and git's decompression overlaps with
the writes. Same rules as the original: blob entries only, unsafe paths
refused, O_EXCL|O_NOFOLLOW files with exact modes, symlinks last, folders
read-only at the end.

The change the lead would make: add `git.stream_blobs(repo, shas)` (a
generator of (sha, bytes) over one `cat-file --batch` process fed by a thread)
and use it in `copy_commit` in place of `read_blobs` + `materialize`; and let
`git.ls_tree` remember its answer for a full commit ID (`remember_trees` below).
"""

from __future__ import annotations

import os
import re
import subprocess
import threading
from pathlib import Path

from spar import git
from spar.errors import WriteFailed
from spar.round import workspace as ws


def stream_blobs(repo, shas: list[str]):
    """(sha, content) for each sha in order, through one `git cat-file --batch`."""
    proc = subprocess.Popen(git._argv(repo, ["cat-file", "--batch"]), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=git._env())

    def feed() -> None:
        try:
            for i in range(0, len(shas), 1024):  # a thread: the request may exceed the pipe buffer
                proc.stdin.write("".join(s + "\n" for s in shas[i:i + 1024]).encode())
            proc.stdin.close()
        except BrokenPipeError:
            pass

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    try:
        out = proc.stdout
        for sha in shas:
            header = out.readline().decode("ascii", "replace").split()
            if len(header) != 3 or header[1] != "blob":
                raise git.GitError(f"git cat-file: {sha} is not a blob ({' '.join(header[1:]) or 'no answer'})")
            size = int(header[2])
            data = out.read(size)
            out.read(1)  # the newline after the content
            yield sha, data
    finally:
        proc.stdout.close()
        writer.join()
        proc.wait()


def copy_commit(repo, commit: str, dest: Path) -> int:
    dest = Path(dest)
    dest.mkdir(parents=False, exist_ok=False)
    entries = [e for e in git.ls_tree(repo, commit) if e.mode in (ws.MODE_FILE, ws.MODE_EXEC, ws.MODE_LINK)]
    by_sha: dict[str, list] = {}
    made = {dest}
    for e in entries:
        parts = e.path.split("/")
        if e.path.startswith("/") or any(p in ("", ".", "..") for p in parts):
            raise WriteFailed(f"unsafe path {e.path!r} in the tree; the copy {dest} is incomplete")
        parent = (dest / e.path).parent
        if parent not in made:
            parent.mkdir(parents=True, exist_ok=True)
            made.add(parent)
        by_sha.setdefault(e.sha, []).append(e)
    links = []
    for sha, data in stream_blobs(repo, list(by_sha)):
        for e in by_sha[sha]:
            target = dest / e.path
            if e.mode == ws.MODE_LINK:
                links.append((target, data))
            else:
                ws._write_new(target, data, ws._READ_ONLY_EXEC if e.mode == ws.MODE_EXEC else ws._READ_ONLY_FILE)
    for target, link_to in links:
        os.symlink(os.fsdecode(link_to), target)
    return len(entries)


def build_workspace(repo, base: str, head: str, workspace: Path) -> None:
    workspace = Path(workspace)
    try:
        workspace.mkdir(parents=False, exist_ok=False)
        copy_commit(repo, head, workspace / "head")
        copy_commit(repo, base, workspace / "base")
        ws.make_read_only(workspace)
    except OSError as exc:
        raise WriteFailed(f"cannot build {workspace}: {exc.strerror or exc}") from exc


# ---------------------------------------------------------------- second proposal

_TREES: dict[tuple[str, str], list] = {}


def remember_trees() -> None:
    """PROPOSAL: `spar run` lists both commits' trees twice (the workspace copy, then
    `context_from_git` when recording), 0.1 s each on 20,000 files. A commit's tree
    never changes, so `git.ls_tree` may keep its answer for a full commit ID
    (what `spar run` passes) within one process. Patched in for measuring only."""
    original = git.ls_tree

    def ls_tree(repo, commit):
        if not re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", commit):
            return original(repo, commit)
        key = (os.path.realpath(repo), commit)
        if key not in _TREES:
            _TREES[key] = original(repo, commit)
        return list(_TREES[key])

    git.ls_tree = ls_tree
