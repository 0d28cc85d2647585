"""Where records may be written (G28). Every check only reads; nothing is written.

One rule for run --out, the series of extend and gate --out: every git
repository containing the path (the innermost and each one around it) must
ignore it, none may track a file under it, and when a `.git` sits above it git
must be able to decide. The path as given must not pass through a symbolic
link below a repository's top folder (a committed `reviews -> elsewhere` would
send records outside every repository and past its ignore rules), and a
series folder is never a path the repository tracks.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Iterable
from pathlib import Path

from spar import git
from spar.errors import Refused, quote
from spar.records.readers import EXTENSIONS_FILE, ROUND_FILE

GATE_SCHEMA = "review-gate/v1"


def _real(path: Path | str) -> Path:
    return Path(os.path.realpath(os.path.abspath(path)))


def _git_dirs_above(real: Path) -> list[Path]:
    """Folders at or above `real` that hold a `.git` entry (file, folder or link)."""
    found = []
    for folder in (real, *real.parents):
        if os.path.lexists(folder / ".git"):
            found.append(folder)
    return found


def containing_repos(path: Path | str, *, kind: str = "path") -> list[Path]:
    """Work tree roots containing `path`, innermost first; Refused when git cannot decide."""
    real = _real(path)
    shown = quote(str(path))
    roots: list[Path] = []
    current = real
    while True:
        try:
            root = git.repo_root(current)
        except git.GitError as exc:
            above = _git_dirs_above(current)
            folder = quote(str(above[0] if above else current))
            raise Refused(f"{kind} {shown}: git cannot decide whether {folder} ignores it ({exc})") from None
        if root is None:
            break
        root = _real(root)
        if root in roots:  # defensive: never loop
            break
        roots.append(root)
        if root.parent == root:
            break
        current = root.parent
    for holder in _git_dirs_above(real):
        if holder not in roots:
            raise Refused(f"{kind} {shown}: git cannot decide whether {quote(str(holder))} "
                          f"ignores it ({quote(str(holder / '.git'))} is not a repository git can read)")
    return roots


def check_no_link_in_repository(path: Path | str, *, kind: str) -> None:
    """Refused when a folder of `path` (as given, made absolute) below the top of a
    repository is a symbolic link: what the user named is not where it would land.
    Links above the top (`/tmp` on some systems, a link to the repository itself)
    are the user's own and stay allowed."""
    given = Path(os.path.abspath(path))
    top: Path | None = None
    for folder in (*reversed(given.parents), given):
        if top is not None and os.path.islink(folder):
            raise Refused(f"{kind} {quote(str(path))} goes through the symbolic link {quote(str(folder))} inside "
                          f"the git repository {quote(str(top))}; records are written only where they are named "
                          "(give a folder that is no link)")
        if os.path.lexists(folder / ".git"):
            top = folder


def check_series_folder(series: Path | str, *, kind: str) -> None:
    """A series folder is where it is named: no symbolic link on its way inside a
    repository (check_no_link_in_repository), and never a path the repository holding
    it tracks (a file, link or submodule of the index, whatever the disk holds now)."""
    check_no_link_in_repository(series, kind=kind)
    roots = containing_repos(series, kind=kind)
    if not roots:
        return
    try:
        tracked = git.tracks(roots[0], _real(series))
    except git.GitError as exc:
        raise Refused(f"{kind} {quote(str(series))}: git cannot decide whether the repository "
                      f"{quote(str(roots[0]))} tracks it ({exc})") from None
    if tracked:
        raise Refused(f"{kind}: the series folder {quote(str(series))} is a path the git repository "
                      f"{quote(str(roots[0]))} tracks; a series folder is never a tracked path")


def check_record_path(path: Path | str, *, kind: str, directory: bool | None = None) -> None:
    """G28 for one record path. `kind` names the argument in messages (e.g. "--out");
    `directory` says whether the path is (or will be) a folder, which decides
    whether `name/` ignore patterns apply (default: a folder unless kind is "file")."""
    check_no_link_in_repository(path, kind=kind)
    real = _real(path)
    shown = quote(str(path))
    if real.exists():
        directory = real.is_dir()
    elif directory is None:
        directory = kind != "file"
    roots = containing_repos(path, kind=kind)
    for number, root in enumerate(roots):
        where = quote(str(root))
        # an outer repository sees a nested one as one opaque folder (and its
        # check-ignore would wrongly apply the nested .gitignore files), so it
        # must ignore the nested repository's folder itself
        subject = real if number == 0 else roots[number - 1]
        try:
            ignored = git.is_ignored(root, subject, directory=directory if number == 0 else True)
            tracked = git.tracked_under(root, real)
        except git.GitError as exc:
            raise Refused(f"{kind} {shown}: git cannot decide whether the repository {where} "
                          f"ignores it ({exc})") from None
        if tracked:
            raise Refused(f"{kind} {shown} holds files tracked by the git repository {where}")
        if not ignored and number == 0:
            raise Refused(f"{kind} {shown} is inside the git repository {where}, which does not "
                          "ignore it (add it to .gitignore)")
        if not ignored:
            raise Refused(f"{kind} {shown} is inside the git repository {where}, which does not "
                          f"ignore the nested repository {quote(str(subject))} holding it")


def check_run_out(path: Path | str, *, repository: bool = True) -> None:
    """run --out: G28, and the round folder must not exist yet. `repository=False` checks
    only the name (`spar run` again under the series lock, its G28 checks made before)."""
    if os.path.lexists(path):
        raise Refused(f"--out {quote(str(path))} already exists (a round folder must be new)")
    # a round folder is not a series (extend and cap-report refuse it as one): a
    # round made there could never be extended and would sit among another's records
    series = Path(os.path.abspath(path)).parent
    if os.path.lexists(series / "round.json"):
        raise Refused(f"--out {quote(str(path))} is inside the round folder {quote(str(series))}; "
                      f"put the round next to it, in {quote(str(series.parent))}")
    if repository:
        check_record_path(path, kind="--out", directory=True)
        check_series_folder(series, kind="--out")


def check_series_folder_exists(out: Path, repo: Path) -> None:
    """run --out's series folder (the round folder's parent) exists, or is one new folder
    inside the repository under review: its first round starts it there (`reviews/r1`).
    Anywhere else a new series is the user's to create: a mistyped path would otherwise
    create folders and start a new series silently, its caps, memory and repeats over."""
    series = out.parent
    if series.is_dir():
        return
    shown = quote(str(out))
    if not _inside(Path(os.path.realpath(series)), Path(os.path.realpath(repo))):
        raise Refused(f"--out {shown}: the series folder {quote(str(series))} does not exist; spar run starts "
                      f"a new series outside the repository only in a folder you made (mkdir {quote(str(series))})")
    if not series.parent.is_dir():
        raise Refused(f"--out {shown}: the folder {quote(str(series.parent))} does not exist; spar run creates "
                      f"the series folder {quote(series.name)} alone, inside a folder that exists")


def _inside(child: Path, parent: Path) -> bool:
    return child == parent or parent in child.parents


def _holds_rounds(folder: Path) -> bool:
    """Whether `folder` looks like a series: an extensions.jsonl, or a round folder in it."""
    if os.path.lexists(folder / EXTENSIONS_FILE):
        return True
    try:
        with os.scandir(folder) as entries:
            return any(e.is_dir(follow_symlinks=False) and os.path.lexists(Path(e.path) / ROUND_FILE)
                       for e in entries)
    except OSError:
        return False


def check_not_record(path: Path | str, round_dirs: Iterable[Path | str] = (),
                     series_dirs: Iterable[Path | str] = (), *, kind: str = "--out") -> None:
    """An output file (gate --out, export --out, report --out) never names a record of a
    series: nothing inside a round folder (one given in `round_dirs`, or any folder holding
    round.json above the path, links resolved), and no series' extensions.jsonl. Writing
    there would replace a record whole and leave the series unreadable."""
    real = _real(path)
    shown = quote(str(path))
    # a folder holding `real` is one of its ancestors: compare inodes first (one stat per
    # round folder of a long series instead of resolving each), resolve only a match
    ancestors = set()
    for folder in (real, *real.parents):
        with contextlib.suppress(OSError):
            st = os.stat(folder)
            ancestors.add((st.st_dev, st.st_ino))
        if os.path.lexists(folder / ROUND_FILE):
            raise Refused(f"{kind} {shown} is inside the round folder {quote(str(folder))}, whose files are "
                          "the series' records")
    for round_dir in round_dirs:
        try:
            st = os.stat(round_dir)
            maybe = (st.st_dev, st.st_ino) in ancestors
        except OSError:
            maybe = True  # no folder to compare: by its path alone
        if maybe and _inside(real, _real(round_dir)):
            raise Refused(f"{kind} {shown} is inside the round folder {quote(str(round_dir))}")
    for series in series_dirs:
        if real == _real(Path(series) / EXTENSIONS_FILE):
            raise Refused(f"{kind} {shown} is the series' {EXTENSIONS_FILE}")
    if real.name == EXTENSIONS_FILE and _holds_rounds(real.parent):
        raise Refused(f"{kind} {shown} is the {EXTENSIONS_FILE} of the series {quote(str(real.parent))}")


def check_out_folder(path: Path | str) -> None:
    """--out's folder exists: the user's to create, never Spar's (a typo would grow folders)."""
    folder = Path(path).parent
    if not folder.is_dir():
        raise Refused(f"--out {quote(str(path))}: the folder {quote(str(folder))} does not exist")


def check_gate_out(path: Path | str, round_dirs: Iterable[Path | str],
                   series_dirs: Iterable[Path | str]) -> str | None:
    """gate --out: G28 plus the gate's own rules. Returns previous_gate_digest
    (sha256 of the existing file's bytes) or None when the file is new."""
    shown = quote(str(path))
    check_not_record(path, round_dirs, series_dirs)
    check_record_path(path, kind="--out", directory=False)
    if not os.path.lexists(path):
        return None
    not_gate = f"--out {shown} exists and is not a {GATE_SCHEMA} file"
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise Refused(f"{not_gate} ({exc.strerror or exc})") from None
    try:
        value = json.loads(data.decode("utf-8"))
    except ValueError:
        raise Refused(not_gate) from None
    if not isinstance(value, dict) or value.get("schema") != GATE_SCHEMA:
        raise Refused(not_gate)
    return hashlib.sha256(data).hexdigest()


def check_no_link_below(root: Path | str, path: Path | str, *, writer: str) -> None:
    """Refused when `link_below` finds a link on `path` (`writer` names who would write)."""
    link = link_below(root, path)
    if link is not None:
        raise Refused(f"{link} is a symbolic link inside the repository; {writer} writes no file through it")


def link_below(root: Path | str, path: Path | str) -> Path | None:
    """The first symbolic link on `path` below the work tree `root` (its repository-relative
    part), or None. Folders above the root may be links (a home on another disk); a link
    inside the repository may be committed by anyone, and writing through it would put the
    file wherever it points while the user was shown the repository path."""
    chain = [Path(os.path.abspath(path))]
    chain += list(chain[0].parents)
    real_root = _real(root)
    below: list[Path] = []
    for number, folder in enumerate(reversed(chain)):  # from / down: the first folder that is the root
        if _real(folder) == real_root:
            below = list(reversed(chain))[number + 1:]
            break
    for part in below:
        if os.path.islink(part):
            return part
        if not os.path.lexists(part):
            break
    return None
