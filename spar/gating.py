"""The gate's reading half: the listed round folders and the rest of their series,
read from disk and handed one round at a time to the judgment (`spar.judge.gate`).

Never locks and never raises for a record: anything it cannot read becomes the
round's error, which the judgment turns into a blocked reason. `spar gate` writes
the document; `spar report` shows it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from spar import git
from spar.errors import RecordError, Refused, quote
from spar.judge import gate as judgement
from spar.judge.dispositions import Key, LookupResult
from spar.judge.duplicate_trace import DuplicateLinks
from spar.judge.linemap import LineMap, parse_diff
from spar.records import readers
from spar.records.model import RoundRecord
from spar.series import repository_of

_READ_ERRORS = (RecordError, OSError, ValueError, TypeError, KeyError)


def listed_round(arg: str, real: str) -> judgement.ListedRound:
    """A listed round by its names alone, nothing read yet (`real`: its real path)."""
    return judgement.ListedRound(arg=os.path.normpath(arg), path=real, series_arg=_series_arg_of(arg),
                                 series=os.path.dirname(real), name=os.path.basename(real))


def read_listed(arg: str, real: str) -> judgement.ListedRound:
    """One listed round as read from disk (`real`: its real path)."""
    item = listed_round(arg, real)
    try:
        # one listing says which records exist and which *.tmp files are there
        listing = readers.list_round(real)
        names = {entry.name for entry in listing} if listing is not None else None
        if not _has(real, names, readers.ROUND_FILE):
            item.unfinished = "it has no round.json (a run stopped before writing it)"
            return item
        round_json = readers.read_round(real)
        item.round = round_json
        leftovers = readers.leftover_temporary_files(real, listing)
        if leftovers:
            item.unfinished = f"a write was interrupted, leaving {', '.join(leftovers)}"
        if round_json.get("dry_run") is True:
            return item
        # findings.json is written before round.json is marked recorded: a listing made before
        # reading round.json may have missed it, so ask again before calling it missing
        has_findings = _has(real, names, readers.FINDINGS_FILE) or _has(real, None, readers.FINDINGS_FILE)
        if not (round_json.get("finished_at") or round_json.get("recorded_at")):
            if has_findings and item.unfinished is None:
                # killed between findings.json and the final round.json: its reviewers still read pending
                item.unfinished = "findings.json was written, but round.json was never marked recorded"
            return item  # stopped before recording: never judged as a review
        if not has_findings:
            raise RecordError("round.json says the round was recorded but findings.json is missing")
        findings = readers.read_findings(real, round_json=round_json)
        item.findings, item.ledger = findings, readers.read_ledger(real, findings)
    except _READ_ERRORS as exc:
        item.round, item.findings, item.ledger, item.unfinished = None, None, None, None
        item.error = _why(exc)
        item.missing = item.error == readers.NO_ROUND_FOLDER
        return item
    try:
        # none in the listing: no waiver was given when the gate looked
        item.waivers = readers.read_waivers(real) if _has(real, names, readers.WAIVERS_FILE) else []
    except _READ_ERRORS as exc:
        item.waivers, item.waivers_error = [], _why(exc)
    return item


def _has(folder: str, names: set[str] | None, name: str) -> bool:
    """Whether `folder` holds `name` (a link counts), from its listing when there is one."""
    return name in names if names is not None else os.path.lexists(os.path.join(folder, name))


def real_paths(args: list[str]) -> list[str]:
    """os.path.realpath of each argument, resolving each folder holding rounds once: a
    round folder that is no link is its folder's real path plus its name."""
    folders: dict[str, str] = {}
    out = []
    for arg in args:
        folder, name = os.path.split(arg)
        if name in ("", ".", "..") or os.path.islink(arg):
            out.append(os.path.realpath(arg))
            continue
        if folder not in folders:
            folders[folder] = os.path.realpath(folder or ".")
        out.append(os.path.join(folders[folder], name))
    return out


def _series_arg_of(arg: str) -> str:
    """The series as spelled from a round argument (`dirname`, `.` when none)."""
    return os.path.dirname(os.path.normpath(arg)) or "."


def _why(exc: BaseException) -> str:
    if isinstance(exc, OSError):
        return exc.strerror or str(exc)
    return str(exc)


def _list_series(path: str, arg: str, names: list[str] | str, listed_names: set[str]) -> judgement.SeriesListing:
    """The series' rounds that were not listed (`names`: every round folder of the
    series, or why it cannot be listed)."""
    listing = judgement.SeriesListing(path=path, arg=arg)
    if isinstance(names, str):
        listing.error = names
        return listing
    for name in names:
        if name in listed_names:
            continue  # read (and judged) as a listed round
        folder = Path(path) / name
        if _other_schema(folder):
            continue  # G29 asks for every review-round/v1 round; this is something else
        try:
            round_json = readers.read_round(folder)
            # what belongs_in_list reads, not the whole round.json of every round left out
            kept = cast(RoundRecord, {key: round_json[key] for key in judgement.SERIES_ROUND_KEYS  # type: ignore[literal-required]
                                      if key in round_json})
            listing.rounds.append(judgement.ListingRound(
                folder.name, kept, has_findings=os.path.lexists(folder / readers.FINDINGS_FILE)))
        except _READ_ERRORS as exc:
            listing.rounds.append(judgement.ListingRound(folder.name, None, _why(exc)))
    return listing


def _other_schema(folder: Path) -> bool:
    """True when round.json is a readable JSON object of another schema. Anything
    that cannot be read (a torn write included) is not known to be another schema."""
    try:
        value = readers.read_json(folder / readers.ROUND_FILE)
    except _READ_ERRORS:
        return False
    return isinstance(value, dict) and isinstance(value.get("schema"), str) and value["schema"] != "review-round/v1"


def _head_check(latest: judgement.ListedRound | None, expect: str | None) -> judgement.HeadCheck | None:
    if latest is None:
        return None
    repo = repository_of(latest.record)
    source = f"--expect-head {quote(expect)}" if expect is not None else f"HEAD of {repo}"
    if not isinstance(repo, str) or not repo:
        return judgement.HeadCheck(None, source, f"round {latest.arg} names no repository")
    try:
        if expect is not None:
            expected = git.resolve_commit(repo, expect, what="--expect-head")
        else:
            expected = git.head_commit(repo)
        # a round of the working tree is judged by its tree (spar.judge.gate.head_reasons)
        tree = git.tree_of(repo, expected) if latest.record.get("head_source") == "worktree" else None
        return judgement.HeadCheck(expected, source, expected_tree=tree)
    except (Refused, git.GitError, OSError) as exc:
        return judgement.HeadCheck(None, source, str(exc))


def _extra_lookup(series: str, key: Key) -> LookupResult:
    """Findings of a series round that was not listed, for duplicate tracing."""
    folder = Path(series) / key[0]
    if not os.path.lexists(folder / readers.ROUND_FILE):
        return "missing", f"round {key[0]} does not exist in the series"
    links = _reload(series, key[0])
    if isinstance(links, str):
        return "unreadable", f"round {key[0]} cannot be read: {links}"
    if key[1] not in links:
        return "missing", f"{key[0]}/{key[1]} does not exist"
    return "ok", links[key[1]]


def _reload(series: str, name: str) -> DuplicateLinks | str:
    """A round's findings and standing dispositions, read (again) for duplicate tracing,
    under the same rules as a listed round; or why they cannot be read."""
    folder = Path(series) / name
    try:
        round_json = readers.read_round(folder)
        findings = readers.read_findings(folder, round_json=round_json)
        return judgement.links_of(findings, readers.read_ledger(folder, findings))
    except _READ_ERRORS as exc:
        return _why(exc)


def _fix_diff(round_json: RoundRecord, earlier: str) -> LineMap | None:
    """The line changes from `earlier` to the round's head in its repository (the last fix);
    None when they cannot be read (a commit or the repository gone)."""
    repo = repository_of(round_json)
    if repo is None:
        return None
    try:
        return parse_diff(git.line_diff(repo, earlier, round_json["head"]))
    except (git.GitError, OSError):
        return None


# how a listed round is read: (argument, real path) -> the round as read
ReadListed = Callable[[str, str], judgement.ListedRound]
# a round.json already read and known to be a review-round/v1 record, or None: read it
KnownRound = Callable[[Path], RoundRecord | None]


def build_gate(round_args: list[str], expect_head: str | None, *, real_args: list[str] | None = None,
               series_folders: dict[str, list[str] | str] | None = None,
               check_head: bool = True, read: ReadListed | None = None) -> dict[str, Any]:
    """Read and judge, one round at a time; the document without previous_gate_digest.
    `real_args` (the real path of each argument) and `series_folders` (each series'
    round folders, or why it cannot be listed) when the caller has them already;
    `check_head` False leaves the head out (the hook compares the working tree itself);
    `read` another way to read a listed round (the hook's kept rounds)."""
    reals = real_args if real_args is not None else [os.path.realpath(arg) for arg in round_args]
    fold = judgement.Judgement(_reload, _extra_lookup, _fix_diff)
    seen: set[str] = set()
    series_args: dict[str, str] = {}
    for arg, real in zip(round_args, reals, strict=True):
        if real in seen:  # the same round twice adds nothing
            continue
        seen.add(real)
        item = (read or read_listed)(arg, real)
        series_args.setdefault(item.series, item.series_arg)
        fold.add(item)  # then dropped: the judgment keeps what it needs
    folders = series_folders if series_folders is not None else series_round_folders(list(series_args))
    series = [_list_series(path, arg, folders[path], fold.listed_names(path)) for path, arg in series_args.items()]
    return fold.finish(series, _head_check(fold.latest, expect_head) if check_head else None)


def series_round_folders(series_dirs: list[str]) -> dict[str, list[str] | str]:
    """Each series' round folder names (listed or not), or why the series cannot be listed."""
    out: dict[str, list[str] | str] = {}
    for series in series_dirs:
        try:
            out[series] = readers.series_round_names(series)
        except _READ_ERRORS as exc:
            out[series] = _why(exc)
    return out


@dataclass
class GateList:
    """The rounds of a series every series-wide view gates (`spar gate --series`, `spar
    report`, `spar hook`): G29's list, every round but dry runs and rounds stopped before
    recording; those left out are named, with what to do about them."""

    rounds: list[str]  # round folder paths, by name
    dry_runs: list[str]  # names
    left_out: list[str]  # reasons, one per stopped round


def series_gate_list(series: Path | str, known: KnownRound | None = None) -> GateList:
    """G29's list of `series`: what `spar gate` requires listed, so that a listed round
    and the series agree. A folder a run stopped in (no round.json, or neither
    finished_at nor findings.json) is left out, as G29 leaves it out, and named.
    `known`: round.json records already read (the hook's kept rounds)."""
    series = Path(series)
    out = GateList([], [], [])
    for name in readers.series_round_names(series):
        folder = series / name
        round_json = known(folder) if known is not None else None
        if round_json is None:
            if _other_schema(folder):
                continue
            try:
                round_json = readers.read_round(folder)
            except _READ_ERRORS:
                out.rounds.append(str(folder))  # listed, it blocks as unreadable
                continue
        kept = judgement.ListingRound(name, round_json, has_findings=os.path.lexists(folder / readers.FINDINGS_FILE))
        if round_json.get("dry_run") is True:
            out.dry_runs.append(name)
        elif kept.belongs_in_list:
            out.rounds.append(str(folder))
        else:
            out.left_out.append(f"round {name} was stopped before its findings were recorded and is not gated; "
                                f"{judgement.remove_advice(str(folder))}")
    for name in readers.stopped_before_round_json(series):
        if os.path.lexists(series / name / readers.FINDINGS_FILE):
            out.rounds.append(str(series / name))  # findings recorded, round.json gone: damage, which blocks
            continue
        out.left_out.append(f"round {name} was stopped before it wrote round.json and is not gated; "
                            f"{judgement.remove_advice(str(series / name))}")
    out.rounds.sort(key=lambda folder: Path(folder).name)  # by name, as series_round_names lists them
    return out
