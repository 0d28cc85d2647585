"""Thin wrapper around the `git` program (never a shell, never GitPython).

Every call runs with `LC_ALL=C` (stable messages), no terminal prompt, no pager,
fsmonitor off (it can name a program to run), `core.quotepath=off`, and neither
replace refs nor grafts: every object is read as it is stored, so a `refs/replace/`
entry or an `info/grafts` line cannot make Spar copy, list or choose other content
than the commit it names holds.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import stat
import subprocess
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, NamedTuple

from spar.errors import Refused, Terminated, quote
from spar.pathtext import path_text, text_bytes

# Variables that would point git at another repository than the one we name with -C.
_DROPPED_ENV = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_COMMON_DIR",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_NAMESPACE",
    "GIT_PREFIX",
    "GIT_CEILING_DIRECTORIES",
    "GIT_EXTERNAL_DIFF",
    "GIT_PAGER",
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_COUNT",
)

# how long one git command may take: far more than any read Spar asks for, so that a git
# stuck on a lock or a dead network file system ends the command instead of hanging it
TIME_LIMIT = 600.0
# the queries that read little (status, check-ignore, ls-files, rev-parse): git status of
# a 400,000-file work tree takes a few seconds; a FIFO among the ignore files (or a hung
# file system) blocks git forever, and 30 s is how long a user waits for the plain error
QUICK_LIMIT = 30.0

BLOB_MODES = {"100644": "file", "100755": "executable", "120000": "symlink"}


class GitError(Exception):
    """git failed in a way the caller did not expect (not a plain "no")."""


class TreeEntry(NamedTuple):
    """One blob entry of a commit's tree."""

    mode: str  # "100644", "100755" or "120000"
    kind: str  # "file", "executable" or "symlink" (from the mode)
    sha: str
    path: str  # repository-relative, "/"-separated; non-UTF-8 bytes as surrogateescape


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _DROPPED_ENV}
    env.update({"LC_ALL": "C", "GIT_TERMINAL_PROMPT": "0", "GIT_PAGER": "cat", "PAGER": "cat",
                "GIT_OPTIONAL_LOCKS": "0", "GIT_NO_REPLACE_OBJECTS": "1", "GIT_GRAFT_FILE": os.devnull})
    return env


def _argv(repo: Path | str, args: Iterable[str]) -> list[str]:
    # an empty graft file still earns a hint on stderr; the advice setting silences it
    return ["git", "--no-pager", "-c", "core.fsmonitor=false", "-c", "core.quotepath=off",
            "-c", "advice.graftFileDeprecated=false", "-C", os.fspath(repo), *args]


def run(repo: Path | str, *args: str, input: bytes | None = None, ok: tuple[int, ...] = (0,),
        env: Mapping[str, str] | None = None, timeout: float | None = None) -> subprocess.CompletedProcess[bytes]:
    """Run git in `repo`; raise GitError unless the exit status is in `ok`, or when it has not
    finished within `timeout` seconds (default TIME_LIMIT; its process group is ended).
    `env` adds variables."""
    timeout = TIME_LIMIT if timeout is None else timeout
    argv = _argv(repo, args)
    try:
        # a session of its own, so that ending it ends whatever it started too
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**_env(), **(env or {})},
                                start_new_session=True)
    except OSError as exc:
        raise GitError(f"cannot run git: {exc.strerror or exc}") from exc
    try:
        with _sigterm_raises():
            out, err = proc.communicate(input, timeout=timeout)
    except subprocess.TimeoutExpired:
        _end_group(proc)
        raise GitError(f"git {next(iter(args), '')} did not finish within {timeout:g}s (a FIFO or a hung "
                       "file system among the files it reads?)") from None
    except BaseException:  # Ctrl-C, SIGTERM or the like: git must not outlive it
        _end_group(proc)
        raise
    done = subprocess.CompletedProcess(argv, proc.returncode, out, err)
    if done.returncode not in ok:
        raise GitError(_failure(args, done))
    return done


def _raise_terminated(signum: int, frame: object) -> None:
    raise Terminated


@contextlib.contextmanager
def _sigterm_raises() -> Iterator[None]:
    """SIGTERM raises Terminated meanwhile, where it would end Python at once (its default)
    and leave git, in a session of its own, running; a handler someone set is left alone,
    and signal handlers are the main thread's only."""
    if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGTERM) != signal.SIG_DFL:
        yield
        return
    signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _end_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate()  # reaps git and closes its pipes


def _failure(args: Iterable[str], proc: subprocess.CompletedProcess[bytes]) -> str:
    err = proc.stderr.decode("utf-8", "replace").strip().splitlines()
    detail = err[-1] if err else f"exit status {proc.returncode}"
    return f"git {next(iter(args), '')} failed: {detail}"


def _decode(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape")


def _existing_dir(path: Path) -> Path | None:
    """Nearest existing folder at or above `path` (a file counts as its parent)."""
    p = Path(os.path.abspath(path))
    while True:
        if p.is_dir():
            return p
        if p.exists() or p.is_symlink():
            p = p.parent
            continue
        if p.parent == p:
            return None
        p = p.parent


def repo_root(path: Path | str) -> Path | None:
    """Innermost work tree containing `path` (which may not exist yet), or None.

    Raises GitError when git fails for another reason than "not a git repository"
    (e.g. dubious ownership, a broken `.git`), so callers can refuse instead of
    guessing."""
    start = _existing_dir(Path(path))
    if start is None:
        return None
    proc = run(start, "rev-parse", "--show-toplevel", ok=(0, 128), timeout=QUICK_LIMIT)
    if proc.returncode == 0:
        out = _decode(proc.stdout).rstrip("\n")
        return Path(out) if out else None
    stderr = proc.stderr.decode("utf-8", "replace")
    # only the discovery failure means "no repository"; "not a git repository: X"
    # (a .git file pointing nowhere) is git failing to decide
    if "not a git repository (or any" in stderr:
        return None
    if "must be run in a work tree" in stderr:
        # inside a .git folder or a bare repository: the work tree (if any) is above
        gitdir = _decode(run(start, "rev-parse", "--absolute-git-dir").stdout).rstrip("\n")
        inside = run(start, "rev-parse", "--is-bare-repository").stdout.strip() == b"false"
        if inside and gitdir:
            return Path(gitdir).parent
        raise GitError(f"git cannot find the work tree of {start}")
    raise GitError(_failure(["rev-parse"], proc))


def resolve_commit(repo: Path | str, rev: str, *, what: str = "revision") -> str:
    """Full commit ID of `rev` (G27). The value is never read as an option."""
    if not rev or "\0" in rev:
        raise Refused(f"{what} {quote(rev)} is not a commit")
    proc = run(repo, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}",
               ok=(0, 1, 128))
    out = proc.stdout.decode("ascii", "replace").strip()
    if proc.returncode != 0 or not out:
        raise Refused(f"{what} {quote(rev)} is not a commit")
    return out


def head_commit(repo: Path | str) -> str:
    proc = run(repo, "rev-parse", "--verify", "--quiet", "HEAD^{commit}", ok=(0, 1, 128))
    out = proc.stdout.decode("ascii", "replace").strip()
    if proc.returncode != 0 or not out:
        raise Refused(f"{repo}: HEAD is not a commit")
    return out


def unborn_head(repo: Path | str) -> bool:
    """Whether HEAD names a branch that has no commit yet (a repository before its first commit)."""
    if run(repo, "rev-parse", "--verify", "--quiet", "HEAD^{commit}", ok=(0, 1, 128)).returncode == 0:
        return False
    return run(repo, "symbolic-ref", "--quiet", "HEAD", ok=(0, 1, 128)).returncode == 0


NO_COMMITS = "the repository has no commits yet"


class Uncommitted(NamedTuple):
    """What the working tree holds beyond its HEAD commit."""

    modified: int  # tracked files changed (staged or not), deleted ones included
    untracked: int  # files git neither tracks nor ignores
    marked: tuple[str, ...] = ()  # the changed or untracked paths the caller's `mark` picked, sorted


MARKED_MAX = 20  # marked paths kept (a count of them would do beyond)


def uncommitted(repo: Path | str, mark: Callable[[str], bool] | None = None) -> Uncommitted:
    """Counts of the working tree's changes against HEAD (`git status`, which writes
    nothing with optional locks off), and the first MARKED_MAX of those paths `mark` picks."""
    out = run(repo, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames",
              timeout=QUICK_LIMIT).stdout
    entries = [entry for entry in out.split(b"\0") if entry]
    untracked = sum(1 for entry in entries if entry.startswith(b"?? "))
    marked = sorted(path for path in (_decode(entry[3:]) for entry in entries) if mark is not None and mark(path))
    return Uncommitted(modified=len(entries) - untracked, untracked=untracked, marked=tuple(marked[:MARKED_MAX]))


class Snapshot(NamedTuple):
    """A commit object made from the working tree (no ref names it)."""

    commit: str
    tree: str
    nested: tuple[str, ...] = ()  # untracked folders holding a repository: only its commit is recorded
    too_large: tuple[tuple[str, int], ...] = ()  # (path, size) of untracked files over the cap: a note each


# a fixed identity and date: the same working tree on the same HEAD gives the same commit,
# so a rerun is a rerun, and the user's identity (maybe not configured) is not needed
_SNAPSHOT_IDENTITY = {
    "GIT_AUTHOR_NAME": "spar", "GIT_AUTHOR_EMAIL": "spar@localhost", "GIT_AUTHOR_DATE": "@0 +0000",
    "GIT_COMMITTER_NAME": "spar", "GIT_COMMITTER_EMAIL": "spar@localhost", "GIT_COMMITTER_DATE": "@0 +0000",
}


def snapshot_worktree(repo: Path | str, parent: str, max_bytes: int | None = None) -> Snapshot:
    """The working tree as a commit on `parent`: tracked files as they are on disk and the
    untracked files the ignore rules do not ignore. Built in an index file of its own, so the
    user's index, files and refs stay as they are; only objects are added to the repository.
    With `max_bytes`, a file larger than that (its size, however sparse) is streamed into the
    repository, never read whole into git's memory, and an untracked one is not read at all:
    the commit holds a note saying its size instead (`Snapshot.too_large`)."""
    streaming = ["-c", f"core.bigFileThreshold={max_bytes}"] if max_bytes is not None else []
    with tempfile.TemporaryDirectory(prefix="spar-index-") as tmp:
        # every command of the index: one that looks at a file again would run the filter
        filters = _local_filters(repo)
        index = {"GIT_INDEX_FILE": os.path.join(tmp, "index"), **_index_settings(filters)}
        _parent_index(repo, parent, index, seed=not filters)
        large = _large_untracked(repo, index, max_bytes) if max_bytes is not None else {}
        pathspecs = ":/\0" + "".join(literal_pathspec(path_text(p), exclude=True) + "\0" for p in large)
        run(repo, *streaming, "add", "--all", "--pathspec-from-file=-", "--pathspec-file-nul",
            input=os.fsencode(pathspecs), env=index)
        if large:
            _add_notes(repo, index, large, max_bytes or 0)
        tree = run(repo, "write-tree", env=index).stdout.decode("ascii").strip()
        nested = _gitlinks(run(repo, "ls-files", "-z", "--stage", env=index).stdout)
    message = f"spar: the working tree on {parent}\n"
    commit = run(repo, "commit-tree", "--no-gpg-sign", "-p", parent, tree, input=message.encode(),
                 env=_SNAPSHOT_IDENTITY).stdout.decode("ascii").strip()
    # git adds a folder holding a repository (a `.git` folder or file) as that repository's
    # commit, none of its files: the copies hold nothing of it
    known = _gitlinks(run(repo, "ls-tree", "-r", "-z", "--full-tree", parent).stdout)
    return Snapshot(commit=commit, tree=tree, nested=tuple(sorted(set(nested) - set(known))),
                    too_large=tuple(large.items()))


def _parent_index(repo: Path | str, parent: str, index: dict[str, str], *, seed: bool) -> None:
    """The index file of `index` made `parent`'s tree. `seed`: from a copy of the user's own
    index (`read-tree --reset` keeps an entry's stat data where its content is the tree's,
    and drops a conflict's), so `git add` reads again only the files changed since git last
    looked at them, not every file; their assume-unchanged and skip-worktree marks are
    cleared, so no file is taken as it was without a look (and `_INDEX_SETTINGS` keeps git's
    own checks of a file whatever the repository's configuration says). As in a commit of
    the user's, an unchanged file keeps the blob git made of it when it last read it: a line
    ending rule changed since applies once the file is read again. Not with a filter of the
    repository's own (the user's entries hold what it made of the files), a sparse checkout
    or an index git cannot read: then every file is read."""
    own = _decode(run(repo, "rev-parse", "--path-format=absolute", "--git-path", "index").stdout).strip()
    sparse = run(repo, "config", "--type=bool", "--get-regexp", r"^(core\.sparsecheckout|index\.sparse)$",
                 ok=(0, 1)).stdout.split()
    if seed and b"true" not in sparse and os.path.isfile(own) and not os.path.islink(own):
        try:
            shutil.copy2(own, index["GIT_INDEX_FILE"])  # its time too: git's check of racily clean entries
            run(repo, "read-tree", "--reset", parent, env=index)
            marked = [raw[2:] for raw in run(repo, "ls-files", "-v", "-z", env=index).stdout.split(b"\0")
                      if raw[:1].islower() or raw[:1] == b"S"]
            for unmark in ("--no-assume-unchanged", "--no-skip-worktree") if marked else ():
                # one mark per call: update-index clears only the first it is given
                run(repo, "update-index", unmark, "-z", "--stdin", input=b"\0".join(marked) + b"\0", env=index)
            return
        except (GitError, OSError):
            pass  # the index is read from the tree alone
    run(repo, "read-tree", parent, env=index)


def _local_filters(repo: Path | str) -> list[str]:
    """The filter drivers the repository's own configuration defines, by name."""
    out = run(repo, "config", "--local", "-z", "--get-regexp", r"^filter\..+\.(clean|smudge|process|required)$",
              ok=(0, 1)).stdout
    return sorted({_decode(entry.split(b"\n", 1)[0]).partition(".")[2].rpartition(".")[0]
                   for entry in out.split(b"\0") if entry})


# git's own checks of whether a file changed, whatever the repository's configuration says
# (core.checkStat=minimal or core.trustctime=false would let a rewritten file pass as the
# index entry seeded from the user's); the index written whole, nothing of it in .git
_INDEX_SETTINGS = (("core.checkStat", "default"), ("core.trustctime", "true"), ("core.ignoreStat", "false"),
                   ("core.splitIndex", "false"), ("core.untrackedCache", "false"))


def _index_settings(filters: list[str]) -> dict[str, str]:
    """Variables for every git command on the snapshot's index: `_INDEX_SETTINGS`, and each
    of the repository's own filter drivers (`filters`) turned off: whoever wrote the change
    could write `.git/config` too, and a clean filter would record other bytes than the
    working tree holds. The user's and system's drivers (git-lfs installs its own there)
    stay as they are."""
    settings = list(_INDEX_SETTINGS) + [
        (f"filter.{name}.{key}", value) for name in filters
        for key, value in (("clean", ""), ("smudge", ""), ("process", ""), ("required", "false"))]
    env = {"GIT_CONFIG_COUNT": str(len(settings))}
    for n, (key, value) in enumerate(settings):
        env[f"GIT_CONFIG_KEY_{n}"], env[f"GIT_CONFIG_VALUE_{n}"] = key, value
    return env


def _large_untracked(repo: Path | str, index: dict[str, str], max_bytes: int) -> dict[str, int]:
    """Untracked, not ignored regular files over `max_bytes` (st_size: a sparse file counts
    its whole size) -> their size; paths as TreeEntry holds them."""
    out = run(repo, "ls-files", "-z", "--others", "--exclude-standard", env=index).stdout
    large = {}
    for raw in out.split(b"\0"):
        if not raw or raw.endswith(b"/"):  # a nested repository's folder
            continue
        try:
            st = os.lstat(os.path.join(os.fsencode(repo), raw))
        except OSError:
            continue  # gone meanwhile: git add will not find it either
        if stat.S_ISREG(st.st_mode) and st.st_size > max_bytes:
            large[_decode(raw)] = st.st_size
    return large


def _add_notes(repo: Path | str, index: dict[str, str], large: dict[str, int], max_bytes: int) -> None:
    """Each file of `large` in the index as a small note saying its size (one object per note)."""
    lines = []
    for path, size in large.items():
        note = (f"spar: this untracked file of the working tree is {size} bytes, over the {max_bytes}-byte cap "
                "per file (max_copy_bytes), so spar did not read it; this note stands in for it.\n")
        sha = run(repo, "hash-object", "-w", "--stdin", input=note.encode()).stdout.decode("ascii").strip()
        lines.append(b"100644 " + sha.encode() + b"\t" + path.encode("utf-8", "surrogateescape") + b"\0")
    run(repo, "update-index", "-z", "--index-info", input=b"".join(lines), env=index)


def _gitlinks(listing: bytes) -> list[str]:
    """The paths of the gitlink entries (mode 160000) of an `ls-files -s -z` or `ls-tree -z` listing."""
    out = []
    for record in listing.split(b"\0"):
        meta, tab, path = record.partition(b"\t")
        if tab and meta.startswith(b"160000 "):
            out.append(path_text(path))
    return out


def tree_of(repo: Path | str, commit: str) -> str:
    """The tree ID of `commit`."""
    return run(repo, "rev-parse", "--verify", "--end-of-options", f"{commit}^{{tree}}").stdout.decode("ascii").strip()


# the empty tree in each object format: an attribute source that holds no `.gitattributes`
_EMPTY_TREE = {"sha1": "4b825dc642cb6eb9a060e54bf8d69288fbee4904",
               "sha256": "6ef19b41225c5369f1c104d45d8d85efa9b057b53b14b4b9b939dd74decc5321"}
_STORES: dict[str, tuple[str, str]] = {}


def _object_store(repo: Path | str) -> tuple[str, str]:
    """(absolute objects folder, object format) of `repo`, asked once per repository."""
    key = os.path.realpath(repo)
    if key not in _STORES:
        out = _decode(run(repo, "rev-parse", "--path-format=absolute", "--git-path", "objects",
                          "--show-object-format").stdout).splitlines()
        if len(out) != 2 or out[1] not in _EMPTY_TREE:
            raise GitError(f"git rev-parse: cannot tell where {repo} keeps its objects")
        _STORES[key] = (out[0], out[1])
    return _STORES[key]


@contextlib.contextmanager
def plain(repo: Path | str) -> Iterator[dict[str, str]]:
    """Variables for a git that reads `repo`'s objects and nothing else of it: a repository
    of its own (bare, no refs, an empty configuration) borrowing the object folder. So no
    attribute of the reviewed change (`-diff`, `binary`, `diff=DRIVER`, `text`, `eol`,
    `filter`), of the repository (`info/attributes`, `.git/config` drivers, `diff.*`
    settings, replace refs) or of the user's and system's configuration changes what a diff
    or a blob read shows; git's own rule alone decides what is binary (a NUL byte)."""
    objects, object_format = _object_store(repo)
    with tempfile.TemporaryDirectory(prefix="spar-plain-git-") as gitdir:
        os.mkdir(os.path.join(gitdir, "refs"))
        with open(os.path.join(gitdir, "HEAD"), "w", encoding="ascii") as f:
            f.write("ref: refs/heads/none\n")  # unborn: no tree to take attributes from
        with open(os.path.join(gitdir, "config"), "w", encoding="ascii") as f:
            f.write(f"[core]\n\trepositoryformatversion = 1\n\tbare = true\n"
                    f"[extensions]\n\tobjectformat = {object_format}\n")
        yield {
            "GIT_DIR": gitdir, "GIT_OBJECT_DIRECTORY": objects, "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull, "GIT_ATTR_NOSYSTEM": "1", "GIT_NO_REPLACE_OBJECTS": "1",
            # the user's attributes file is read even without a global configuration
            "GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "core.attributesFile", "GIT_CONFIG_VALUE_0": os.devnull,
            # git 2.40 and later: attributes from this tree only (earlier versions ignore it)
            "GIT_ATTR_SOURCE": _EMPTY_TREE[object_format],
        }


def _ref_exists(repo: Path | str, ref: str) -> bool:
    return run(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}",
               ok=(0, 1, 128)).returncode == 0


def _default_branch(repo: Path | str) -> str | None:
    proc = run(repo, "symbolic-ref", "-q", "refs/remotes/origin/HEAD", ok=(0, 1, 128))
    candidates = []
    if proc.returncode == 0 and proc.stdout.strip():
        candidates.append(_decode(proc.stdout).strip())
    candidates += ["refs/heads/main", "refs/heads/master"]
    for ref in candidates:
        if _ref_exists(repo, ref):
            return ref
    return None


def default_base(repo: Path | str, head: str) -> str:
    """Design §5: merge-base of head with the default branch; failing that head~1."""
    branch = _default_branch(repo)
    if branch is not None:
        proc = run(repo, "merge-base", head, branch, ok=(0, 1))
        base = proc.stdout.decode("ascii", "replace").strip()
        # a merge-base equal to head (head is on or behind the branch) reviews nothing
        if proc.returncode == 0 and base and base != head:
            return base
    proc = run(repo, "rev-parse", "--verify", "--quiet", f"{head}~1^{{commit}}", ok=(0, 1, 128))
    parent = proc.stdout.decode("ascii", "replace").strip()
    if proc.returncode == 0 and parent:
        return parent
    if run(repo, "rev-parse", "--verify", "--quiet", f"{head}^{{commit}}", ok=(0, 1, 128)).returncode == 0:
        # a root commit: its change is every file it holds, reviewed against the empty tree
        return empty_tree(repo)
    raise Refused(f"cannot choose a base for {head[:12]}: it is not a commit")


def empty_tree(repo: Path | str) -> str:
    """The empty tree's ID in `repo`'s object format: the base of a root commit (git knows
    this tree without storing it)."""
    return _EMPTY_TREE[_object_store(repo)[1]]


# a full commit ID names one tree forever: `spar run` lists each commit twice (the
# workspace copy, then the judging context), 0.1 s each on 20,000 files
_TREE_CACHE: dict[tuple[str, str], tuple[TreeEntry, ...]] = {}
_TREE_CACHE_SIZE = 8
_FULL_ID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


def ls_tree(repo: Path | str, commit: str) -> list[TreeEntry]:
    """Blob entries (regular, executable, symlink) of the commit's whole tree; no gitlinks.
    Listed in `plain`, as diffs and blob reads are: the copies hold what the packet shows."""
    commit = _object_id(repo, commit)
    key = (os.path.realpath(repo), commit)
    if key not in _TREE_CACHE:
        if len(_TREE_CACHE) >= _TREE_CACHE_SIZE:
            _TREE_CACHE.pop(next(iter(_TREE_CACHE)), None)  # another thread may have dropped it
        _TREE_CACHE[key] = tuple(_ls_tree(repo, commit))
    return list(_TREE_CACHE[key])


def _ls_tree(repo: Path | str, commit: str) -> list[TreeEntry]:
    out = _plain_run(repo, "ls-tree", "-r", "-z", "--full-tree", commit).stdout
    entries = []
    for record in out.split(b"\0"):
        if not record:
            continue
        meta, _, raw_path = record.partition(b"\t")
        mode, typ, sha = meta.decode("ascii").split(" ")
        if typ != "blob":
            continue
        kind = BLOB_MODES.get(mode)
        if kind is None:
            # old trees may hold e.g. 100664: git treats any other 100xxx as a regular file
            if not mode.startswith("100"):
                continue
            mode, kind = "100644", "file"
        entries.append(TreeEntry(mode=mode, kind=kind, sha=sha, path=_decode(raw_path)))
    return entries


def _object_ids(shas: Iterable[str]) -> list[str]:
    """`shas` once each, in order; GitError for one that a batch request line cannot carry."""
    wanted = list(dict.fromkeys(shas))
    for sha in wanted:
        if not sha or any(c in sha for c in " \t\n\0"):
            raise GitError(f"not an object ID: {sha!r}")
    return wanted


def read_blobs(repo: Path | str, shas: Iterable[str]) -> dict[str, bytes]:
    """Contents of every blob in `shas`, through one `git cat-file --batch` process."""
    wanted = _object_ids(shas)
    if not wanted:
        return {}
    with plain(repo) as env:  # bytes as committed: no replace refs
        out = run(repo, "cat-file", "--batch", input="".join(s + "\n" for s in wanted).encode(), env=env).stdout
    result: dict[str, bytes] = {}
    pos = 0
    for sha in wanted:
        eol = out.index(b"\n", pos)
        header = out[pos:eol].decode("ascii", "replace").split(" ")
        pos = eol + 1
        if len(header) != 3 or header[1] != "blob":
            raise GitError(f"git cat-file: {sha} is not a blob ({' '.join(header[1:]) or 'no answer'})")
        size = int(header[2])
        result[sha] = out[pos:pos + size]
        pos += size + 1  # content is followed by one newline
    return result


def blob_sizes(repo: Path | str, shas: Iterable[str]) -> dict[str, int]:
    """The size in bytes of every blob in `shas` (`git cat-file --batch-check`: no blob is read)."""
    wanted = _object_ids(shas)
    if not wanted:
        return {}
    with plain(repo) as env:
        out = run(repo, "cat-file", "--batch-check", input="".join(s + "\n" for s in wanted).encode(),
                  env=env).stdout.decode("ascii", "replace").splitlines()
    sizes: dict[str, int] = {}
    for sha, line in zip(wanted, out, strict=False):
        header = line.split(" ")
        if len(header) != 3 or header[1] != "blob" or not header[2].isdigit():
            raise GitError(f"git cat-file: {sha} is not a blob ({' '.join(header[1:]) or 'no answer'})")
        sizes[sha] = int(header[2])
    return sizes


def stream_blobs(repo: Path | str, shas: Iterable[str]) -> Iterator[tuple[str, bytes]]:
    """(sha, content) for each blob of `shas` in order, through one `git cat-file --batch`,
    as git answers: memory holds one blob at a time, not the whole tree."""
    wanted = _object_ids(shas)
    if not wanted:
        return
    with plain(repo) as env:  # bytes as committed: no replace refs
        yield from _stream_blobs(repo, wanted, env)


def _stream_blobs(repo: Path | str, wanted: list[str], env: dict[str, str]) -> Iterator[tuple[str, bytes]]:
    try:
        proc = subprocess.Popen(_argv(repo, ["cat-file", "--batch"]), stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env={**_env(), **env})
    except OSError as exc:
        raise GitError(f"cannot run git: {exc.strerror or exc}") from exc

    stdin, out = proc.stdin, proc.stdout
    assert stdin is not None and out is not None  # both were asked for as pipes

    def feed() -> None:  # a thread: the request can be larger than the pipe buffer
        try:
            for i in range(0, len(wanted), 1024):
                stdin.write("".join(s + "\n" for s in wanted[i:i + 1024]).encode())
            stdin.close()
        except (BrokenPipeError, ValueError):
            pass  # git stopped early; the reader reports it

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    finished = False
    try:
        for sha in wanted:
            header = out.readline().decode("ascii", "replace").split()
            if len(header) != 3 or header[1] != "blob":
                raise GitError(f"git cat-file: {sha} is not a blob ({' '.join(header[1:]) or 'no answer'})")
            size = int(header[2])
            data = out.read(size)
            if len(data) != size or out.read(1) != b"\n":
                raise GitError(f"git cat-file: the answer for {sha} ended early")
            yield sha, data
        finished = True
    finally:
        if not finished:
            proc.kill()  # an error, or the caller stopped reading early
        out.close()
        writer.join()
        proc.wait()


def _relative(repo: Path | str, path: Path | str) -> str:
    """`path` relative to the repository root (paths are resolved so symlinked
    temp folders compare equal); "." for the root itself."""
    root = Path(os.path.realpath(repo))
    p = Path(path)
    if not p.is_absolute():
        p = root / p
    p = Path(os.path.realpath(p))
    try:
        rel = p.relative_to(root)
    except ValueError as exc:
        raise GitError(f"{path} is outside the repository {repo}") from exc
    return rel.as_posix() if rel.parts else "."


def is_ignored(repo: Path | str, path: Path | str, *, directory: bool | None = None) -> bool:
    """Whether the repository's ignore rules ignore `path` (which may not exist).

    `directory` says the path is (or will be) a folder, so `name/` patterns apply;
    None means: a folder when it exists as one."""
    rel = _relative(repo, path)
    if directory is None:
        directory = Path(path).is_dir() if Path(path).is_absolute() else (Path(repo) / path).is_dir()
    if directory and rel != ".":
        rel += "/"
    proc = run(repo, "check-ignore", "-q", "--no-index", "--", rel, ok=(0, 1), timeout=QUICK_LIMIT)
    return proc.returncode == 0


def tracked_under(repo: Path | str, path: Path | str) -> bool:
    """Whether the index holds any file at or under `path`."""
    rel = _relative(repo, path)
    # literal: a record path may hold `*` or `[` (check-ignore takes plain paths already)
    out = run(repo, "ls-files", "-z", "--full-name", "--", f":(literal){rel}", timeout=QUICK_LIMIT).stdout
    return bool(out.strip(b"\0"))


def tracks(repo: Path | str, path: Path | str) -> bool:
    """Whether the index holds `path` itself as an entry (a file, a link or a submodule)."""
    rel = _relative(repo, path)
    out = run(repo, "ls-files", "-z", "--full-name", "--", f":(literal){rel}", timeout=QUICK_LIMIT).stdout
    return rel.encode("utf-8", "surrogateescape") in out.split(b"\0")


def _diff_args(repo: Path | str, base: str, head: str) -> list[str]:
    # fixed prefixes and no external programs, whatever the user's diff settings; run in
    # `plain`, which knows no names, so revisions are commit IDs by then
    return ["diff", "--no-color", "--no-ext-diff", "--no-textconv", "--no-relative",
            "--src-prefix=a/", "--dst-prefix=b/", _object_id(repo, base), _object_id(repo, head), "--"]


def _object_id(repo: Path | str, rev: str) -> str:
    if _FULL_ID.fullmatch(rev):
        return rev
    return resolve_commit(repo, rev)


def _plain_run(repo: Path | str, *args: str) -> subprocess.CompletedProcess[bytes]:
    with plain(repo) as env:
        return run(repo, *args, env=env)


def diff_stat(repo: Path | str, base: str, head: str) -> str:
    args = _diff_args(repo, base, head)
    args.insert(1, "--stat")
    return _decode(_plain_run(repo, *args).stdout)


def diff(repo: Path | str, base: str, head: str) -> bytes:
    return _plain_run(repo, *_diff_args(repo, base, head)).stdout


@dataclass
class Change:
    """`git diff --stat` and the start of the patch."""

    stat: str
    patch: bytes  # the whole patch, or its first `keep` + 1 bytes when it is longer
    complete: bool  # False: git was stopped once more than `keep` bytes had come


def _scratch() -> BinaryIO:
    """An anonymous file in memory for a child's output (memfd: no temporary folder, and
    no `tempfile` import, with its shutil, random, bz2 and lzma, on `spar run`'s path)."""
    return open(os.memfd_create("spar-git", os.MFD_CLOEXEC), "w+b")


def diff_with_stat(repo: Path | str, base: str, head: str, keep: int, pathspecs: Sequence[str] = ()) -> Change:
    """The stat and at most `keep` + 1 bytes of the patch: git is stopped once the patch
    is longer than the caller keeps, so a change of thousands of files costs the stat
    and the kept part, not the whole patch. The stat runs meanwhile, in parallel."""
    args = _diff_args(repo, base, head) + list(pathspecs)
    with plain(repo) as plain_env:
        return _diff_with_stat(repo, args, keep, {**_env(), **plain_env})


def _diff_with_stat(repo: Path | str, args: list[str], keep: int, env: dict[str, str]) -> Change:
    with _scratch() as stat_out, _scratch() as stat_err, _scratch() as err:  # never pipes either side could block on
        try:
            stat_proc = subprocess.Popen(_argv(repo, [args[0], "--stat", *args[1:]]), stdin=subprocess.DEVNULL,
                                         stdout=stat_out, stderr=stat_err, env=env)
        except OSError as exc:
            raise GitError(f"cannot run git: {exc.strerror or exc}") from exc
        try:
            proc = subprocess.Popen(_argv(repo, args), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=err, env=env)
        except OSError as exc:
            stat_proc.kill()
            stat_proc.wait()
            raise GitError(f"cannot run git: {exc.strerror or exc}") from exc
        assert proc.stdout is not None
        patch = bytearray()
        try:
            with proc.stdout, _sigterm_raises():
                while len(patch) <= keep and (chunk := proc.stdout.read(min(1 << 16, keep + 1 - len(patch)))):
                    patch += chunk
                complete = len(patch) <= keep
                if not complete:
                    proc.kill()  # the rest would be read only to be thrown away
                code = proc.wait()
                stat_code = stat_proc.wait()
        except BaseException:  # Ctrl-C, SIGTERM: neither git outlives it
            for child in (proc, stat_proc):
                child.kill()
                child.wait()
            raise
        for what, returncode, errors in (("--stat", stat_code, stat_err), ("", code if complete else 0, err)):
            if returncode != 0:
                errors.seek(0)
                raise GitError(_failure([args[0], what] if what else args,
                                        subprocess.CompletedProcess(args, returncode, b"", errors.read())))
        stat_out.seek(0)
        return Change(_decode(stat_out.read()), bytes(patch), complete)


@dataclass
class ChangedFile:
    """One file of a change as `git diff --numstat` counts it (renames under their new path)."""

    path: str  # text form (spar.pathtext)
    added: int | None  # None: a binary file
    removed: int | None
    generated: bool = False  # generated or vendored: read after the sources (packet order)


def changed_files(repo: Path | str, base: str, head: str) -> list[ChangedFile]:
    """Every file the diff from `base` to `head` touches, in git's order."""
    args = _diff_args(repo, base, head)
    args[1:1] = ["--numstat", "-z"]
    fields = _plain_run(repo, *args).stdout.split(b"\0")
    out: list[ChangedFile] = []
    i = 0
    while i < len(fields) and fields[i]:
        added, removed, path = fields[i].split(b"\t", 2)
        if not path:  # a rename or copy: the old path, then the new one
            path, i = fields[i + 2], i + 2
        out.append(ChangedFile(path_text(path), _number(added), _number(removed)))
        i += 1
    return out


def literal_pathspec(path: str, *, exclude: bool = False) -> str:
    """A pathspec naming exactly the repository path `path` (text form), from the top."""
    return f":(top,literal{',exclude' if exclude else ''})" + os.fsdecode(text_bytes(path))


def _number(raw: bytes) -> int | None:
    return int(raw) if raw.isdigit() else None


def line_diff(repo: Path | str, old: str, new: str) -> str:
    """`git diff -U0 -M` from one commit to another, for following lines (spar.judge.linemap)."""
    args = _diff_args(repo, old, new)
    args[1:1] = ["-U0", "-M"]
    return _decode(_plain_run(repo, *args).stdout)
