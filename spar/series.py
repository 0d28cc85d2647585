"""Reading a series for the commands that work after a round: where a round
and its series are, the series' rounds in order, and the caps.

Everything here reads through `spar.records.readers`, so an unreadable record
raises RecordError (65) for the commands that refuse (G32); `spar gate` reads
on its own and turns problems into blocked reasons.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from spar import git
from spar.config.model import DEFAULT_CAPS, STAGES
from spar.errors import Refused, quote
from spar.judge.caps import stage_cap
from spar.records import readers
from spar.records.model import ExtensionLine, RoundRecord


def round_folder(arg: str) -> tuple[Path, Path]:
    """(round folder, series folder) of a ROUND argument; refused when it is not
    an existing folder holding a round.json, before any lock is taken (the lock
    would otherwise create folders)."""
    path = Path(os.path.abspath(arg))
    if not path.is_dir():
        raise Refused(f"round {quote(arg)} is not a round folder (no such folder)")
    if not os.path.lexists(path / readers.ROUND_FILE):
        raise Refused(f"round {quote(arg)} is not a round folder (no round.json)")
    return path, path.parent


def series_folder(arg: str, *, may_be_new: bool = False, read: Literal["empty ok", "rounds"] | None = None) -> Path:
    """The SERIES argument of extend, cap-report and report: an existing folder that is
    not itself a round folder (a round's path given by mistake would otherwise read as
    an empty series, or get an extensions.jsonl that no cap decision ever reads).

    may_be_new (extend): a series without rounds yet may not exist, as long as the
    folder holding it does; a project cap of 0 makes `spar run` ask for an
    extension before the series' first round.

    read (cap-report, report): the folder must hold a round folder or the series'
    extensions.jsonl, so that a source folder given by mistake is refused rather than
    read as an empty series; "empty ok" lets an empty folder through (a series whose
    first round is still to come has its default caps), "rounds" does not."""
    path = Path(arg)
    if not path.exists() and not path.is_symlink() and may_be_new:
        parent = Path(os.path.abspath(arg)).parent
        if not parent.is_dir():
            raise Refused(f"series {quote(arg)} does not exist, nor does the folder {quote(str(parent))} to hold it")
        return path
    if not path.exists():
        raise Refused(f"series {quote(arg)} does not exist")
    if not path.is_dir():
        raise Refused(f"series {quote(arg)} is not a folder")
    if os.path.lexists(path / readers.ROUND_FILE):
        raise Refused(f"series {quote(arg)} is a round folder (it holds round.json); "
                      f"its series is {quote(os.path.dirname(os.path.abspath(arg)))}")
    if read is not None:
        _check_holds_a_series(arg, path, empty_ok=read == "empty ok")
    return path


def _check_holds_a_series(arg: str, path: Path, *, empty_ok: bool) -> None:
    """Refused unless `path` holds a round folder (with round.json, or one a killed run
    left) or extensions.jsonl; an empty folder passes when `empty_ok`."""
    if (os.path.lexists(path / readers.EXTENSIONS_FILE) or readers.series_round_names(path)
            or readers.unfinished_rounds(path)):
        return
    try:
        with os.scandir(path) as entries:
            empty = next(entries, None) is None
    except OSError as exc:
        raise Refused(f"series {quote(arg)} cannot be read: {exc.strerror or exc}") from None
    if empty and empty_ok:
        return
    what = ("is empty: no round yet" if empty
            else "holds no round folder (none with a round.json) and no extensions.jsonl")
    raise Refused(f"series {quote(arg)} is not a series folder: it {what}")


def repository_of(round_json: RoundRecord) -> str | None:
    """The repository round.json names; when that folder is gone (the repository
    was moved or renamed), the repository holding the current folder, provided it
    has the round's head commit. Otherwise nothing could be resolved in it again
    (gate's expected head, triage --commit) and the series would be stuck."""
    repo = round_json.get("repository")
    if not isinstance(repo, str):
        return None
    if not repo or os.path.isdir(repo):
        return repo
    head = round_json.get("head")
    try:
        here = git.repo_root(os.getcwd())
        if here is not None and isinstance(head, str) and git.resolve_commit(here, head) == head:
            return str(here)
    except (Refused, git.GitError, OSError):
        pass
    return repo


def order_key(round_json: RoundRecord) -> tuple[str, str]:
    """Series order: `started_at` (RFC 3339 UTC, same shape everywhere, so text
    order is time order), then the folder name."""
    started = round_json.get("started_at")
    return (started if isinstance(started, str) else "", str(round_json.get("name", "")))


@dataclass
class SeriesRound:
    """One round of a series: its folder and round.json."""

    path: Path
    round: RoundRecord

    @property
    def name(self) -> str:
        return self.path.name


def read_series(series: Path | str) -> list[SeriesRound]:
    """Every round of the series in series order; RecordError on an unreadable one."""
    rounds = [SeriesRound(p, readers.read_round(p)) for p in readers.series_rounds(series)]
    rounds.sort(key=lambda r: (order_key(r.round)[0], r.name))
    return rounds


def position(round_json: RoundRecord, name: str) -> tuple[str, str]:
    """A round's place in series order (compare two with `<`)."""
    return order_key(round_json)[0], name


def positions(rounds: list[SeriesRound]) -> dict[str, tuple[str, str]]:
    """Round name -> place in series order, for readers.read_ledger's link rule."""
    return {item.name: position(item.round, item.name) for item in rounds}


def is_earlier(a: RoundRecord, a_name: str, b: RoundRecord, b_name: str) -> bool:
    """True when round `a` comes before round `b` in the series."""
    return position(a, a_name) < position(b, b_name)


def project_caps(rounds: list[SeriesRound]) -> tuple[dict[str, int], str | None]:
    """The project caps the latest round applied (round.json `config.caps`), and
    that round's name; the defaults (and None) for a series without one."""
    for item in reversed(rounds):
        caps = (item.round.get("config") or {}).get("caps")
        if isinstance(caps, dict) and all(isinstance(caps.get(k), int) for k in DEFAULT_CAPS):
            return {k: caps[k] for k in DEFAULT_CAPS}, item.name
    return dict(DEFAULT_CAPS), None


@dataclass
class StageCaps:
    """A stage's cap in a series: the project's, and what extensions added."""

    stage: str
    cap: int
    project_cap: int
    extended_by: int
    extensions: list[ExtensionLine]
    counted: list[str]  # names of counted rounds

    @property
    def remaining(self) -> int:
        return max(self.cap - len(self.counted), 0)


def stage_caps(rounds: list[SeriesRound], caps: dict[str, int], extensions: list[ExtensionLine]) -> list[StageCaps]:
    """Design §8 per stage: cap = project cap + extensions; counted rounds are
    the non-dry rounds whose round.json says `counted`."""
    out = []
    for stage in STAGES:
        cap, project, extra = stage_cap(stage, caps, extensions)
        counted = [r.name for r in rounds
                   if r.round.get("stage") == stage and r.round.get("counted") is True and not r.round.get("dry_run")]
        out.append(StageCaps(stage, cap, project, extra, [e for e in extensions if e.get("stage") == stage], counted))
    return out
