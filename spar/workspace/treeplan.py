"""Which entries of a commit's tree become files in the workspace, and how.

Pure logic over tree entries (no I/O); `spar.workspace.build` does the copying.

- **No `.git`.** A path with a component git itself refuses to check out is
  not copied (git's `verify_path` with `core.protectHFS` and
  `core.protectNTFS` both on): `.git` in any case; HFS+ spellings with
  ignorable code points inside (`.g\\u200cit`); NTFS spellings (`.git` followed
  by dots or spaces, `.git:stream`, the short name `git~1`, and each
  backslash-separated part of a name); and a symbolic link named
  `.gitmodules` in any of those spellings. Spar also refuses symbolic links
  named `.gitattributes`, `.gitignore` or `.mailmap` (git opens those from
  the work tree without following links). A `git` run inside the copy could
  otherwise read a `.git` folder or gitfile from the change and run what its
  configuration names (`core.fsmonitor`).
- **Symlinks do not lead out.** A symbolic link is kept only when its target,
  read inside the copy (other links of the copy followed, `..` never going
  above the copy's root), stays inside the copy. An absolute target, one that
  climbs above the root, a chain through such a link, a loop (more than 40
  links), an empty target or one holding NUL is written as a small regular
  file that says what the link pointed to.
- **One entry per path.** A tree git itself never writes (fsck's
  `duplicateEntries`: two entries of one name, such as a link `a` beside a
  folder `a`) cannot be copied as it is: `clashes` names the paths, and the
  round is refused before it is counted.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from spar.pathtext import needs_escape, path_text

MODE_LINK = "120000"
MAX_LINKS = 40  # Linux's limit on links followed for one path (ELOOP)

# Code points HFS+ ignores when comparing names (git's utf8.c next_hfs_char)
_HFS_IGNORABLE = frozenset(
    [0x200C, 0x200D, 0x200E, 0x200F, 0xFEFF]
    + list(range(0x202A, 0x202F))
    + list(range(0x206A, 0x2070))
)
# Names git reads from the work tree itself: (name, NTFS short-name hash prefix)
_DOTFILES = {"gitmodules": "gi7eba", "gitattributes": "gi7d29", "gitignore": "gi250a",
             "mailmap": "maba30"}


def _ntfs_pattern(dot_name: str, shortname: str, hashed: str | None) -> re.Pattern[str]:
    # NTFS drops trailing dots and spaces, and ":" starts an alternate data stream
    names = [re.escape(dot_name), re.escape(shortname) + "~[1-4]"]
    if hashed:
        names.append(re.escape(hashed) + "~[1-9]")
    return re.compile(f"(?:{'|'.join(names)})[. ]*(?::.*)?", re.IGNORECASE | re.DOTALL)


_NTFS_DOTGIT = re.compile(r"(?:\.git|git~1)[. ]*(?::.*)?", re.IGNORECASE | re.DOTALL)
_NTFS_DOTFILES = [_ntfs_pattern("." + name, name[:6], hashed) for name, hashed in _DOTFILES.items()]


def _hfs_fold(name: str) -> str:
    if name.isascii():  # every ignorable code point is outside ASCII
        return name.lower()
    return "".join(ch for ch in name if ord(ch) not in _HFS_IGNORABLE).lower()


def component_refused(name: str, *, symlink: bool = False) -> bool:
    """Whether git refuses `name` as one path component (`symlink`: the entry is a link
    and this is its last component)."""
    if name in ("", ".", ".."):
        return True
    folded = _hfs_fold(name)
    if folded == ".git":  # plain `.git` in any case, and the HFS+ spellings
        return True
    parts = name.split("\\")  # NTFS reads a backslash as a folder separator
    if any(_NTFS_DOTGIT.fullmatch(p) for p in parts):
        return True
    if symlink:
        if folded in {"." + n for n in _DOTFILES}:
            return True
        if any(pattern.fullmatch(p) for pattern in _NTFS_DOTFILES for p in parts):
            return True
    return False


def path_refused(path: str, *, symlink: bool = False) -> bool:
    """Whether git refuses the repository path `path` (any component, or an absolute path)."""
    parts = path.split("/")
    return any(component_refused(p, symlink=symlink and i == len(parts) - 1) for i, p in enumerate(parts))


def _refused_in(path: str, symlink: bool, folders: dict[str, bool]) -> bool:
    """path_refused, each folder's verdict looked up in `folders` (filled as it goes):
    a tree's paths share their folders, so each folder is checked once, not once per file."""
    folder, sep, name = path.rpartition("/")
    if component_refused(name, symlink=symlink):
        return True
    if not sep:
        return False
    verdict = folders.get(folder)
    if verdict is None:
        verdict = folders[folder] = path_refused(folder)
    return verdict


def _target_text(target: bytes) -> str:
    return target.decode("utf-8", "surrogateescape")


def link_stays_inside(path: str, links: dict[str, str]) -> bool:
    """Whether the link at `path` resolves inside the copy: `links` maps every link
    of the copy to its target; other paths are read lexically (a missing folder's `..`
    is taken by its text, which can only keep fewer links)."""
    current = path.split("/")[:-1]
    pending = list(reversed(links[path].split("/")))
    if links[path].startswith("/"):
        return False
    followed = 1
    while pending:
        comp = pending.pop()
        if comp in ("", "."):
            continue
        if comp == "..":
            if not current:
                return False  # above the copy's root
            current.pop()
            continue
        candidate = "/".join([*current, comp])
        target = links.get(candidate)
        if target is None:
            current.append(comp)
            continue
        followed += 1
        if followed > MAX_LINKS or target.startswith("/") or not target or "\0" in target:
            return False
        pending.extend(reversed(target.split("/")))
    return True


@dataclass
class TreePlan:
    """What to do with each blob entry of one commit (paths as git gives them)."""

    copied: list[Any] = field(default_factory=list)  # entries copied as they are
    refused: list[str] = field(default_factory=list)  # paths git refuses: not copied
    outward: dict[str, bytes] = field(default_factory=dict)  # link path -> target: written as a file
    clashes: list[str] = field(default_factory=list)  # paths held twice, or a file where a folder must be
    too_large: dict[str, int] = field(default_factory=dict)  # path -> size: over the cap, a note instead
    max_bytes: int | None = None  # the cap per file (`max_copy_bytes`) `too_large` was sorted by

    def leave_out(self, sizes: Iterable[tuple[str, int]]) -> None:
        """Files known to be over the cap from elsewhere (--worktree's untracked ones, which
        the commit holds as a note): a note in the copy too, and said as `too_large`."""
        known = dict(sizes)
        if known:
            self.copied = [e for e in self.copied if e.path not in known]
            self.too_large.update(known)

    def notes(self, copy: str) -> list[str]:
        """One line per path left out or changed, in `path_text` form, prefixed by the copy."""
        out = [f"`{copy}/{path_text(p)}`: not copied (a path git refuses to check out)" for p in self.refused]
        out += [f"`{copy}/{path_text(p)}`: a symbolic link to `{path_text(t)}`, outside the copy; "
                "written as a small file saying so" for p, t in self.outward.items()]
        out += [f"`{copy}/{path_text(p)}`: {size} bytes, over the {self.max_bytes}-byte cap per file "
                "(`max_copy_bytes`): not copied; the copy holds a small file saying so"
                for p, size in self.too_large.items()]
        return out


def escaped_names(plans: Iterable[TreePlan]) -> list[str]:
    """Every path of the copies whose text form is escaped (not UTF-8, controls, backslashes)."""
    names: dict[str, None] = {}
    for plan in plans:
        for path in [*(e.path for e in plan.copied), *plan.refused, *plan.outward, *plan.too_large]:
            if needs_escape(path):
                names[path_text(path)] = None
    return sorted(names)


def workspace_warnings(plans: dict[str, TreePlan], *, shown: int = 10) -> list[str]:
    """Round warnings naming the paths left out or replaced in the copies (none when none)."""
    refused = [f"{copy}/{path_text(p)}" for copy, plan in plans.items() for p in plan.refused]
    outward = [f"{copy}/{path_text(p)} -> {path_text(t)}" for copy, plan in plans.items()
               for p, t in plan.outward.items()]
    out = []
    if refused:
        out.append(f"workspace: {len(refused)} path(s) git refuses to check out were not copied: "
                   f"{listed(refused, shown)}; findings about them are judged against the commits")
    if outward:
        out.append(f"workspace: {len(outward)} symbolic link(s) pointing outside their copy were "
                   f"written as small files saying where they pointed: {listed(outward, shown)}")
    large = [f"{copy}/{path_text(p)} ({size} bytes)" for copy, plan in plans.items()
             for p, size in plan.too_large.items()]
    if large:
        cap = next(plan.max_bytes for plan in plans.values() if plan.too_large)
        out.append(f"workspace: {len(large)} file(s) over the {cap}-byte cap per file (max_copy_bytes) were not "
                   f"copied, each replaced by a small file saying so: {listed(large, shown)}")
    return out


def listed(items: list[str], shown: int) -> str:
    """`a, b, c and 4 more`: the first `shown` items of a warning's list."""
    return ", ".join(items[:shown]) + (f" and {len(items) - shown} more" if len(items) > shown else "")


def clashes(paths: Iterable[str]) -> list[str]:
    """Paths that cannot all be in one copy: a path given twice, or a file (or link)
    where another path needs a folder. Each folder is looked at once."""
    files: set[str] = set()
    found: set[str] = set()
    ordered = []
    for path in paths:
        if path in files:
            found.add(path)
        files.add(path)
        ordered.append(path)
    folders: set[str] = set()
    for path in ordered:
        folder = path.rpartition("/")[0]
        while folder and folder not in folders:
            folders.add(folder)
            if folder in files:
                found.add(folder)
            folder = folder.rpartition("/")[0]
    return sorted(found)


def plan_tree(entries: Iterable[Any], link_targets: dict[str, bytes], sizes: dict[str, int] | None = None,
              max_bytes: int | None = None) -> TreePlan:
    """Sort `entries` (blob entries with .path, .mode, .sha) into a TreePlan;
    `link_targets` maps each symlink blob's sha to its bytes, `sizes` each file blob's sha
    to its size: a file over `max_bytes` is `too_large`."""
    plan = TreePlan(max_bytes=max_bytes)
    links: dict[str, str] = {}
    kept = []
    folders: dict[str, bool] = {}
    for entry in entries:
        if _refused_in(entry.path, entry.mode == MODE_LINK, folders):
            plan.refused.append(entry.path)
            continue
        kept.append(entry)
        if entry.mode == MODE_LINK:
            links[entry.path] = _target_text(link_targets[entry.sha])
    for entry in kept:
        if entry.mode == MODE_LINK:
            target = links[entry.path]
            if not target or "\0" in target or not link_stays_inside(entry.path, links):
                plan.outward[entry.path] = link_targets[entry.sha]
                continue
        elif max_bytes is not None and sizes is not None and sizes[entry.sha] > max_bytes:
            plan.too_large[entry.path] = sizes[entry.sha]
            continue
        plan.copied.append(entry)
    plan.clashes = clashes(entry.path for entry in kept)
    return plan


__all__ = ["TreePlan", "clashes", "component_refused", "escaped_names", "link_stays_inside", "path_refused",
           "plan_tree", "workspace_warnings"]
