"""Reading records back (G32).

Every reader raises RecordError naming the file (and line, for JSONL) when a
record is missing, not JSON or of another schema; commands refuse on it and
`spar gate` turns it into a blocked reason. Older records without fields added
later read as their documented meaning: no standpoints, locations that were
read, no smallest fix, extensions with no recorded cause.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeGuard, cast

from spar.config.model import STAGES
from spar.errors import RecordError, quote
from spar.records import jsonl, lock, record_rules
from spar.records.model import ExtensionLine, Finding, LedgerLine, RoundRecord, VerificationsRecord, WaiverLine
from spar.whitespace import trim

ROUND_SCHEMA = "review-round/v1"

ROUND_FILE = "round.json"
FINDINGS_FILE = "findings.json"
LEDGER_FILE = "ledger.jsonl"
WAIVERS_FILE = "waivers.jsonl"
EXTENSIONS_FILE = "extensions.jsonl"
VERIFICATIONS_FILE = "verifications.json"
REPEAT_CHECKS_FILE = "repeat-checks.json"  # spar.records.repeat_checks reads it


def _join(folder: Path | str, name: str) -> str:
    """str(Path(folder) / name) for a Path or a normalized path (a real path): a long
    series reads thousands of records, and building a Path each costs more than
    reading a small file."""
    where = os.fspath(folder)
    return name if where == "." else os.path.join(where, name)


def read_json(path: Path | str) -> Any:
    try:
        data = jsonl.file_bytes(path)
    except FileNotFoundError:
        raise RecordError(f"{path}: missing") from None
    except OSError as exc:
        raise RecordError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        return jsonl.DECODER.decode(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise RecordError(f"{path}: not UTF-8") from None
    except ValueError as exc:
        raise RecordError(f"{path}: not JSON ({exc})") from None


def _is_str(value: object) -> TypeGuard[str]:
    return isinstance(value, str)


def read_round(round_dir: Path | str) -> RoundRecord:
    """round.json as written by this spar; standpoint fields default to "none"."""
    path = _join(round_dir, ROUND_FILE)
    data = read_json(path)
    if not isinstance(data, dict):
        raise RecordError(f"{path}: not a JSON object")
    if data.get("schema") != ROUND_SCHEMA:
        got = data.get("schema")
        shown = quote(got) if isinstance(got, str) else "missing"
        raise RecordError(f"{path}: not a {ROUND_SCHEMA} record (schema {shown})")
    # the keys every reader relies on; anything else is kept as written
    for key in ("name", "base", "head"):
        if not _is_str(data.get(key)):
            raise RecordError(f"{path}: {key} is missing or not a string")
    if data.get("stage") not in STAGES:
        raise RecordError(f"{path}: stage is missing or not one of {', '.join(STAGES)}")
    reviewers = data.get("reviewers")
    if not isinstance(reviewers, list):
        raise RecordError(f"{path}: reviewers is missing or not a list")
    for number, entry in enumerate(reviewers, start=1):
        if not isinstance(entry, dict) or not _is_str(entry.get("name")) or not _is_str(entry.get("status")):
            raise RecordError(f"{path}: reviewer {number} is not an object with a name and a status")
        entry.setdefault("standpoint", None)
        entry.setdefault("standpoint_report", None)
    problem = record_rules.round_problem(data)
    if problem:
        raise RecordError(f"{path}: {problem}")
    data.setdefault("standpoints", [])
    data.setdefault("standpoints_uncovered", [])
    data.setdefault("decisions", [])
    return cast(RoundRecord, data)


def read_findings(round_dir: Path | str, *, missing_ok: bool = False,
                  round_json: RoundRecord | None = None) -> list[Finding]:
    """findings.json; a finding without location_unreadable had its location read.
    A missing smallest_fix is left absent (absent and "" both mean no direction).
    With `round_json`, every finding must belong to a reviewer that completed in it."""
    path = _join(round_dir, FINDINGS_FILE)
    if missing_ok and not Path(path).exists() and not Path(path).is_symlink():
        return []
    data = read_json(path)
    if not isinstance(data, list):
        raise RecordError(f"{path}: not a JSON array")
    for number, finding in enumerate(data, start=1):
        if not isinstance(finding, dict) or not _is_str(finding.get("id")):
            raise RecordError(f"{path}: finding {number} is not an object with an id")
    problem = record_rules.findings_problem(data, round_json)
    if problem:
        raise RecordError(f"{path}: {problem}")
    for finding in data:
        finding.setdefault("location_unreadable", False)
    return cast(list[Finding], data)


def read_verifications(round_dir: Path | str,
                       findings: list[Finding] | None = None) -> VerificationsRecord | None:
    """verifications.json, or None when the round was never verified. With `findings`,
    every finding it names must be one of them."""
    path = _join(round_dir, VERIFICATIONS_FILE)
    if not Path(path).exists() and not Path(path).is_symlink():
        return None
    data = read_json(path)
    ids = {finding["id"] for finding in findings} if findings is not None else None
    problem = record_rules.verifications_problem(data, ids)
    if problem:
        raise RecordError(f"{path}: {problem}")
    return cast(VerificationsRecord, data)


def _line_error(path: str, number: int, what: str) -> RecordError:
    return RecordError(f"{path}:{number}: {what}")


def read_ledger(round_dir: Path | str, findings: list[Finding] | None = None, *,
                missing_ok: bool = False, positions: Mapping[str, Any] | None = None) -> list[LedgerLine]:
    """ledger.jsonl in file order. A recorded round always has one (empty when nothing
    was deferred), so a missing ledger is unreadable (G32), never "no dispositions";
    `missing_ok` is for a round that was not recorded yet. With `findings`, every line
    is checked against the finding it names (design §7 and the auto-deferral rule).
    With `positions` (round name -> place in series order, spar.series.positions), a
    duplicate link into a later round is refused, as triage refuses to write one."""
    path = _join(round_dir, LEDGER_FILE)
    lines = jsonl.read(path, missing_ok=missing_ok)
    by_id = {finding["id"]: finding for finding in findings} if findings is not None else None
    problem = record_rules.ledger_problem(lines, by_id)
    if not problem and positions is not None:
        problem = record_rules.ledger_link_problem(lines, os.path.basename(os.fspath(round_dir)), positions.get)
    if problem:
        raise _line_error(path, *problem)
    return cast(list[LedgerLine], lines)


def read_waivers(round_dir: Path | str) -> list[WaiverLine]:
    """waivers.jsonl; none means no decision. Every line needs reviewer, preset and
    a user_quote that is not blank."""
    path = _join(round_dir, WAIVERS_FILE)
    lines = jsonl.read(path, missing_ok=True)
    for number, line in enumerate(lines, start=1):
        for key in ("reviewer", "preset"):
            value = line.get(key)
            if not isinstance(value, str) or not trim(value):
                raise _line_error(path, number, f"{key} is missing or empty")
        quote_text = line.get("user_quote")
        # whitespace as Go's unicode.IsSpace (str.strip() would also remove U+001C..U+001F)
        if not isinstance(quote_text, str) or not trim(quote_text):
            raise _line_error(path, number, "user_quote is missing or empty")
    return cast(list[WaiverLine], lines)


def read_extensions(series: Path | str) -> list[ExtensionLine]:
    """extensions.jsonl of a series; a line without cause/reason is an extension
    with no recorded cause (both then read as None). A line `spar extend` could not
    have written (a cause outside the five, a plan extension with a reason) is
    unreadable, never tallied as "no recorded cause"."""
    path = _join(series, EXTENSIONS_FILE)
    lines = jsonl.read(path, missing_ok=True)
    for number, line in enumerate(lines, start=1):
        problem = record_rules.extension_problem(line)
        if problem:
            raise _line_error(path, number, problem)
        line.setdefault("cause", None)
        line.setdefault("reason", None)
    return cast(list[ExtensionLine], lines)


def series_rounds(series: Path | str) -> list[Path]:
    """Round folders of a series: sub-folders holding a round.json, sorted by name.
    A series that does not exist yet has no rounds."""
    series = Path(series)
    return [series / name for name in series_round_names(series)]


def series_round_names(series: Path | str) -> list[str]:
    """The names of `series_rounds` (no Path per round of a long series)."""
    series = Path(series)
    try:
        with os.scandir(series) as entries:
            names = [entry.name for entry in entries if _is_dir(entry)]
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise RecordError(f"{series}: cannot read: {exc.strerror or exc}") from None
    # any round.json counts, so a damaged one surfaces as unreadable instead of vanishing
    where = os.fspath(series)
    return [name for name in sorted(names) if os.path.lexists(os.path.join(where, name, ROUND_FILE))]


def _is_dir(entry: os.DirEntry[str]) -> bool:
    """Path.is_dir() of a listed entry (a link to a folder is one), from the listing's
    file type where it has one."""
    try:
        return entry.is_dir()
    except OSError:
        return False


# the folders Spar writes NAME.tmp files into: the round folder and its reviewer folders
# (`workspace/` holds copies of the commits, whose files may be named anything). A
# verification's files (verify/, verifications.json) are advice that never changes the
# gate: a killed `spar verify` leaves the round as recorded (a rerun replaces them)
_NOT_SCANNED = ("workspace", "verify")
_NOT_LEFTOVERS = (VERIFICATIONS_FILE + ".tmp", REPEAT_CHECKS_FILE + ".tmp")


# a listed path with no folder behind it: most often a mistyped path, which the message says,
# so that it reads apart from a round that exists but cannot be read
NO_ROUND_FOLDER = "no such round folder (no folder at that path: a mistyped path?)"
# what Path.is_dir() answers False to rather than raising
_NOT_A_FOLDER = (errno.ENOENT, errno.ENOTDIR, errno.ELOOP, errno.EBADF)


def list_round(round_dir: Path | str) -> list[os.DirEntry[str]] | None:
    """One listing of a round folder, sorted by name: it tells which records exist and
    which `*.tmp` files are there (`leftover_temporary_files`), so a long series is not
    probed file by file. None when the folder exists but cannot be listed (ask by name
    then); RecordError when there is no such folder."""
    try:
        with os.scandir(round_dir) as listing:
            return sorted(listing, key=_name)
    except OSError as exc:
        if exc.errno in _NOT_A_FOLDER:
            raise RecordError(NO_ROUND_FOLDER) from None
    if not Path(round_dir).is_dir():  # raises when the folder cannot even be looked at
        raise RecordError(NO_ROUND_FOLDER)
    return None


def _name(entry: os.DirEntry[str]) -> str:
    return entry.name


def leftover_temporary_files(round_dir: Path | str, listing: list[os.DirEntry[str]] | None = None) -> list[str]:
    """`*.tmp` files that a killed write left in a round folder or its reviewer folders,
    relative to the round. While the series lock is held a write is in progress and
    its `NAME.tmp` is no leftover: only files seen before and after finding the lock
    free count. `listing`: the round folder's `list_round`, when the caller has it."""
    first = temporary_files(round_dir, listing)
    if not first or lock.is_locked(Path(round_dir).parent):
        return []
    return [name for name in temporary_files(round_dir) if name in first]


def scanned_folders(round_dir: Path | str) -> list[str]:
    """The folders of a round whose `*.tmp` files `temporary_files` looks for: the round's
    own and its reviewer folders (no link, not its copies or verification folders)."""
    try:
        with os.scandir(round_dir) as listing:
            inner = sorted(e.name for e in listing if _scanned(e))
    except OSError:
        return [os.fspath(round_dir)]
    return [os.fspath(round_dir), *(os.path.join(round_dir, name) for name in inner)]


def _scanned(entry: os.DirEntry[str]) -> bool:
    """A reviewer folder of a round, looked into for *.tmp files (no link, not the copies)."""
    return entry.name not in _NOT_SCANNED and _is_dir(entry) and not entry.is_symlink()


def temporary_files(round_dir: Path | str, children: list[os.DirEntry[str]] | None = None) -> list[str]:
    """Every `*.tmp` file of a round folder and its reviewer folders, in progress or left
    over (`leftover_temporary_files` tells which), relative to the round."""
    found = []
    if children is None:
        try:
            with os.scandir(round_dir) as listing:
                children = sorted(listing, key=_name)
        except OSError:
            return []
    for child in children:
        name = child.name
        if name.endswith(".tmp") and not _is_dir(child):
            if name not in _NOT_LEFTOVERS:
                found.append(name)
        elif _scanned(child):
            try:
                inner = os.listdir(child.path)
            except OSError:
                continue
            found += [f"{name}/{file}" for file in sorted(file for file in inner if file.endswith(".tmp")
                                                         and not os.path.isdir(os.path.join(child.path, file)))]
    return found


# what `spar run` writes into a new round folder before round.json
_ROUND_START_FILES = ("packet.md", "schema.json", "packet.md.tmp", "schema.json.tmp", "round.json.tmp")


def unfinished_rounds(series: Path | str) -> list[dict[str, Any]]:
    """Round folders of a series that a killed write left behind, by name: a folder
    `spar run` started without reaching round.json, and a round with leftover `*.tmp`
    files. Each is `{"name", "why"}`. (A round.json never marked recorded is the
    caller's to judge: it reads round.json anyway.)"""
    out = []
    stopped = set(stopped_before_round_json(series))
    for folder in _round_children(Path(series)):
        if folder.name in stopped:
            out.append({"name": folder.name, "why": "no round.json (a run stopped before writing it)"})
            continue
        if not os.path.lexists(folder / ROUND_FILE):
            continue
        leftovers = leftover_temporary_files(folder)
        if leftovers:
            out.append({"name": folder.name, "why": f"a write was interrupted, leaving {', '.join(leftovers)}"})
    return out


def _round_children(series: Path) -> list[Path]:
    try:
        return sorted(c for c in series.iterdir() if c.is_dir())
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise RecordError(f"{series}: cannot read: {exc.strerror or exc}") from None


def stopped_before_round_json(series: Path | str) -> list[str]:
    """Folders of a series `spar run` started without reaching round.json, by name; none
    while the series lock is held (a run in progress creates its folder before round.json)."""
    found = []
    busy = None
    for folder in _round_children(Path(series)):
        if os.path.lexists(folder / ROUND_FILE):
            continue
        if busy is None:
            busy = lock.is_locked(series)
        if not busy and any(os.path.lexists(folder / name) for name in _ROUND_START_FILES):
            found.append(folder.name)
    return found

