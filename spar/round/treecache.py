"""A later round's workspace as a snapshot of the last round's, where the series
folder is on btrfs: constant time for the unchanged files, whatever their number.

How it holds (`spar.round.subvolume` for the calls):

- **A private copy, taken before any reviewer ran.** Right after a round's
  workspace is built (a subvolume of its own), and before its reviewers start,
  Spar snapshots it into the series folder's `.spar-tree-cache/tree` and writes
  `manifest.json` beside it: which commits and extra files it holds, the
  `workspace_state` it was built with, and the snapshot's `(uuid, ctransid)`.
  No reviewer is pointed at the cache, and a reviewer writing into its own
  round's copy changes that copy only (copy-on-write).
- **Checked before use.** A later round snapshots `tree` into its round folder
  as `workspace`, then asks btrfs about the new snapshot: its parent must be the
  cache (`parent_uuid`) and its last change the one recorded (`ctransid`, which
  any change to data, modes, times, names or extended attributes moves). A
  cache changed by anyone, root included, is caught and not used: the round
  builds its copy file by file as on any other file system. What this does not
  catch is a process that rewrites both the cache and its manifest; such a
  process can as well rewrite the repository's objects, which every copy (and
  the blob-id checks of `spar.round.reuse`) trusts.
- **Then brought to this round's commits.** Paths whose entry differs between
  the cached commits and this round's (mode, blob, a link's target, a link
  written as a note) are removed and written anew from git, folders left empty
  are removed, the extra files (`change.diff`) are replaced, and every folder
  touched is made read-only again; the state is the manifest's, with the
  touched paths read anew.
- **Only where the cache can be removed.** Replacing the cache each round means
  destroying the last one, which btrfs allows root, or any user on a file system
  mounted with `user_subvol_rm_allowed`. Spar probes that once per round (an
  empty subvolume made and destroyed); where it is refused, or the file system
  is not btrfs, no tree cache is made and nothing here costs more than the probe.

Everything here is best effort: any failure falls back to the file-by-file copy
(`spar.round.workspace.build_workspace`), and the cache is not a record.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from spar.git import GitError
from spar.round import subvolume
from spar.round.treeplan import TreePlan
from spar.round.workspace import (
    MODE_LINK,
    READ_ONLY_FILE,
    Copy,
    Entry,
    Pending,
    Writer,
    build_workspace,
    fill_copies,
    link_note,
    make_read_only,
    plan_commit,
)

TREE_FOLDER = ".spar-tree-cache"  # in the series folder, beside the blob cache and the rounds
_TREE = "tree"
_NEW = "tree.new"
_MANIFEST = "manifest.json"
_PROBE = "probe"
_OWN_NAMES = frozenset({_TREE, _NEW, _MANIFEST, _MANIFEST + ".tmp", _PROBE})
_VERSION = 1
_COPIES = ("head", "base")
_WRITABLE_DIR = 0o755


@dataclass
class Manifest:
    """What the cached tree holds and how to recognise it unchanged."""

    repository: str
    base: str
    head: str
    extra: list[str]
    uuid: str
    ctransid: int
    state: dict[str, Entry]


def _read_manifest(path: str) -> Manifest | None:
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        if data.get("version") != _VERSION:
            return None
        state = {k: (int(v[0]), int(v[1]), int(v[2]), int(v[3])) for k, v in data["state"].items()}
        return Manifest(repository=str(data["repository"]), base=str(data["base"]), head=str(data["head"]),
                        extra=[str(n) for n in data["extra"]], uuid=str(data["uuid"]),
                        ctransid=int(data["ctransid"]), state=state)
    except (OSError, ValueError, KeyError, TypeError, IndexError, AttributeError):
        return None


def _write_manifest(path: str, manifest: Manifest) -> None:
    data = {"version": _VERSION, "repository": manifest.repository, "base": manifest.base,
            "head": manifest.head, "extra": manifest.extra, "uuid": manifest.uuid,
            "ctransid": manifest.ctransid, "state": manifest.state}
    tmp = path + ".tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(json.dumps(data).encode("utf-8", "surrogatepass"))  # dumps, not dump: C-encoded in one go
    os.replace(tmp, path)


def _may_destroy(folder: str) -> bool:
    """Whether this process may make and destroy subvolumes in `folder` (one empty
    subvolume made and destroyed; an empty one refused destruction is removed with rmdir)."""
    if os.path.isdir(os.path.join(folder, _PROBE)):  # a killed round's leftover
        with contextlib.suppress(OSError):
            subvolume.destroy(folder, _PROBE)
    try:
        subvolume.create(folder, _PROBE)
    except OSError:
        return False
    try:
        subvolume.destroy(folder, _PROBE)
    except OSError:
        with contextlib.suppress(OSError):
            os.rmdir(os.path.join(folder, _PROBE))
        return False
    return True


class TreeCache:
    """The tree cache of one series, for one round."""

    def __init__(self, folder: str) -> None:
        self.folder = folder
        self.tree = os.path.join(folder, _TREE)
        self.manifest_path = os.path.join(folder, _MANIFEST)

    @classmethod
    def open(cls, series: str | Path) -> TreeCache | None:
        """The series' tree cache, made if need be; None where it cannot work (not btrfs,
        subvolumes may not be destroyed here, or a folder of that name Spar did not make)."""
        folder = os.path.join(os.fspath(series), TREE_FOLDER)
        made = False
        try:
            os.mkdir(folder, 0o700)
            made = True
        except FileExistsError:
            pass
        except OSError:
            return None
        try:
            st = os.lstat(folder)
            if not stat.S_ISDIR(st.st_mode) or set(os.listdir(folder)) - _OWN_NAMES:
                return None  # not a folder this module made: nothing in it is touched
            if _may_destroy(folder):
                os.chmod(folder, 0o700)
                return cls(folder)
        except OSError:
            pass
        if made:
            with contextlib.suppress(OSError):
                os.rmdir(folder)
        return None

    def usable(self, repo: str | Path) -> Manifest | None:
        """The manifest of a cached tree of `repo` that btrfs says is unchanged, else None."""
        manifest = _read_manifest(self.manifest_path)
        if manifest is None or manifest.repository != os.path.realpath(repo):
            return None
        try:
            now = subvolume.info(self.tree)
        except OSError:
            return None
        return manifest if (now.uuid, now.ctransid) == (manifest.uuid, manifest.ctransid) else None

    def keep(self, workspace: str, repo: str | Path, base: str, head: str, extra: list[str],
             state: Mapping[str, Entry]) -> None:
        """Make the cache a snapshot of the round's finished `workspace` (a subvolume, no
        reviewer started yet), replacing the last one. Best effort."""
        try:
            self._discard(_NEW)
            subvolume.snapshot(workspace, self.folder, _NEW)
            taken = subvolume.info(os.path.join(self.folder, _NEW))
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.manifest_path)  # no manifest names a tree that is going
            self._discard(_TREE)
            os.rename(os.path.join(self.folder, _NEW), self.tree)
            _write_manifest(self.manifest_path, Manifest(
                repository=os.path.realpath(repo), base=base, head=head, extra=sorted(extra),
                uuid=taken.uuid, ctransid=taken.ctransid, state=dict(state)))
        except OSError:
            with contextlib.suppress(OSError):
                self._discard(_NEW)

    def _discard(self, name: str) -> None:
        path = os.path.join(self.folder, name)
        if not os.path.lexists(path):
            return
        try:
            subvolume.destroy(self.folder, name)
        except OSError as exc:
            if exc.errno not in subvolume.UNSUPPORTED and exc.errno != errno.EPERM:
                raise
            shutil.rmtree(path)  # not a subvolume (a leftover folder): removed as one


def snapshot_workspace(cache: TreeCache, manifest: Manifest, workspace: str) -> bool:
    """`workspace` as a snapshot of the cached tree, proven to be it unchanged; False
    (nothing left at `workspace`) when it is not."""
    parent, name = os.path.split(workspace)
    try:
        subvolume.snapshot(cache.tree, parent, name)
        taken = subvolume.info(workspace)
    except OSError:
        remove_workspace(workspace)
        return False
    if taken.parent_uuid != manifest.uuid or taken.ctransid != manifest.ctransid:
        remove_workspace(workspace)
        return False
    return True


def remove_workspace(workspace: str) -> None:
    """Remove a workspace this module made (a subvolume) before any reviewer saw it."""
    parent, name = os.path.split(workspace)
    if not os.path.lexists(workspace):
        return
    try:
        subvolume.destroy(parent, name)
    except OSError:
        for folder, _dirs, _files in os.walk(workspace):
            with contextlib.suppress(OSError):
                os.chmod(folder, _WRITABLE_DIR)
        shutil.rmtree(workspace, ignore_errors=True)
        with contextlib.suppress(OSError):
            os.rmdir(workspace)


def _wanted(plan: TreePlan) -> dict[str, tuple[str, ...]]:
    """path -> what the copy holds there: (mode, blob) for a file or a kept link, or
    ("note", target) for a link written as a note."""
    out: dict[str, tuple[str, ...]] = {e.path: (e.mode, e.sha) for e in plan.copied}
    out.update({p: ("note", t.hex()) for p, t in plan.outward.items()})
    return out


@dataclass
class _Delta:
    removed: list[str]  # workspace-relative paths, files and links
    added: dict[str, list[str]]  # copy -> paths of that copy to write


def _delta(old: Mapping[str, TreePlan], new: Mapping[str, TreePlan]) -> _Delta:
    delta = _Delta(removed=[], added={})
    for copy in _COPIES:
        before, after = _wanted(old[copy]), _wanted(new[copy])
        delta.removed += [f"{copy}/{p}" for p, what in before.items() if after.get(p) != what]
        delta.added[copy] = [p for p, what in after.items() if before.get(p) != what]
    return delta


def update_workspace(repo: str | Path, workspace: str, manifest: Manifest, plans: Mapping[str, TreePlan],
                     extra: Mapping[str, bytes]) -> dict[str, Entry]:
    """Bring a snapshot of the cached tree (`manifest`) to this round's `plans` and
    `extra`, everything read-only after; returns its `workspace_state`. OSError or
    git.GitError when it cannot (the caller builds the copy anew)."""
    old = {"head": plan_commit(repo, manifest.head), "base": plan_commit(repo, manifest.base)}
    delta = _delta(old, plans)
    state = dict(manifest.state)
    opened: dict[str, None] = {}  # folders made writable, in the order opened
    for rel in [*delta.removed, *manifest.extra]:
        _remove(workspace, rel, state, opened)
    _prune(workspace, delta.removed, state, opened)
    writer = Writer()
    copies = []
    known = None
    for copy in _COPIES:
        plan = plans[copy]
        entries = {e.path: e for e in plan.copied}
        this = Copy(known, state, f"{copy}/")
        pending: Pending = {}
        for path in delta.added[copy]:
            target = _folder_for(workspace, f"{copy}/{path}", opened)
            if path in plan.outward:
                state[f"{copy}/{path}"] = writer.write(target, link_note(plan.outward[path]), READ_ONLY_FILE)
                continue
            entry = entries[path]
            key = (entry.sha, entry.mode)
            if entry.mode == MODE_LINK or not this.linked(key, target, path):
                pending.setdefault(entry.sha, []).append((entry, target))
        copies.append((this, pending))
        known = this.written
    fill_copies(repo, writer, copies)
    for name, data in extra.items():
        state[name] = writer.write(_folder_for(workspace, name, opened), data, READ_ONLY_FILE)
    make_read_only(opened, workspace, state)  # innermost first: each opened after its parent
    return state


def _open_folder(folder: str, opened: dict[str, None]) -> None:
    if folder not in opened:
        os.chmod(folder, _WRITABLE_DIR)
        opened[folder] = None


def _remove(workspace: str, rel: str, state: dict[str, Entry], opened: dict[str, None]) -> None:
    """Unlink the file or link `rel` of the workspace (never a folder, never followed)."""
    path = os.path.join(workspace, rel)
    st = os.lstat(path)
    if stat.S_ISDIR(st.st_mode):
        raise OSError(errno.EISDIR, f"a folder where the cached tree holds a file: {rel!r}")
    _open_folder(os.path.dirname(path), opened)
    os.unlink(path)
    state.pop(rel, None)


def _prune(workspace: str, removed: list[str], state: dict[str, Entry], opened: dict[str, None]) -> None:
    """Remove the folders the removals left empty, innermost first (never a copy's root)."""
    candidates: set[str] = set()
    for rel in removed:
        parts = rel.split("/")[:-1]
        for i in range(2, len(parts) + 1):  # "head/a", "head/a/b", ...: never "head" itself
            candidates.add("/".join(parts[:i]))
    for rel in sorted(candidates, key=lambda r: r.count("/"), reverse=True):
        path = os.path.join(workspace, rel)
        try:
            os.rmdir(path)
        except OSError as exc:
            if exc.errno in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOENT):
                continue
            raise
        opened.pop(path, None)
        state.pop(rel, None)


def _folder_for(workspace: str, rel: str, opened: dict[str, None]) -> str:
    """The path to write `rel` at, its folders made or opened for writing (each added to
    `opened`); refuses a folder that is a link or a file."""
    parts = rel.split("/")
    current = workspace
    for part in parts[:-1]:
        if part in ("", ".", ".."):
            raise OSError(errno.EINVAL, f"unsafe path in the tree: {rel!r}")
        nxt = os.path.join(current, part)
        try:
            st = os.lstat(nxt)
        except FileNotFoundError:
            _open_folder(current, opened)
            os.mkdir(nxt)
            opened[nxt] = None
        else:
            if not stat.S_ISDIR(st.st_mode):
                raise OSError(errno.ENOTDIR, f"not a folder in the cached tree: {rel!r}")
        current = nxt
    _open_folder(current, opened)
    return os.path.join(current, parts[-1])


def prepare_workspace(repo: str | Path, base: str, head: str, workspace: str | Path,
                      plans: Mapping[str, TreePlan] | None, reuse: Mapping[str, Sequence[str | Path]],
                      extra: Mapping[str, bytes], blob_cache: str | Path | None) -> dict[str, Entry]:
    """The round's workspace as `spar run` makes it: from the series' tree cache where it
    works (see the module's text), else file by file (`build_workspace`, cloning from the
    blob cache where the file system clones); returns its `workspace_state`."""
    round_folder = os.path.dirname(os.path.abspath(os.fspath(workspace)))
    trees = TreeCache.open(os.path.dirname(round_folder))
    if trees is None:
        return build_workspace(repo, base, head, workspace, dict(plans or {}), reuse, extra=extra, cache=blob_cache)
    ws = os.path.abspath(os.fspath(workspace))
    full = dict(plans or {})
    for copy, commit in (("head", head), ("base", base)):
        if copy not in full:
            full[copy] = plan_commit(repo, commit)
    state = _from_cache(trees, repo, ws, full, extra)
    if state is None:
        parent, name = os.path.split(ws)
        try:
            subvolume.create(parent, name)
        except OSError:
            return build_workspace(repo, base, head, ws, full, reuse, extra=extra, cache=blob_cache)
        state = build_workspace(repo, base, head, ws, full, reuse, extra=extra, made=True)
    trees.keep(ws, repo, base, head, list(extra), state)
    return state


def _from_cache(trees: TreeCache, repo: str | Path, workspace: str, plans: Mapping[str, TreePlan],
                extra: Mapping[str, bytes]) -> dict[str, Entry] | None:
    manifest = trees.usable(repo)
    if manifest is None or not snapshot_workspace(trees, manifest, workspace):
        return None
    try:
        return update_workspace(repo, workspace, manifest, plans, extra)
    except (OSError, GitError):
        remove_workspace(workspace)
        return None
