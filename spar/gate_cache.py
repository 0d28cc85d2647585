"""Rounds as the gate read them, kept between calls of `spar hook stop`.

The hook judges the whole series again after each new round; reading and checking
every record of a long series is most of that time. What the judgment reads of a
round (`spar.judge.gate`: a few fields of round.json, of each finding, ledger line
and waiver) is kept in SERIES/.spar-hook-rounds.json together with a stat of every
file the gate's reading looks at; a round whose stats are all the same is taken
from there, any other is read from its records. Only rounds read whole and well
(`ok`) are kept: an unfinished, unreadable or dry-run round is read each time.

The file is trusted as the records beside it are (whoever can write one can write
the other); `spar gate` reads the records alone.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

from spar import __version__, gating
from spar.judge.gate import ListedRound
from spar.records import atomic, paths, readers
from spar.records.model import RoundRecord

CACHE_FILE = ".spar-hook-rounds.json"
SCHEMA = "spar-hook-rounds/v1"
LIMIT = 256 * 1024 * 1024  # bytes of a kept file read back; a bigger one is ignored

# what the judgment reads, and nothing more (tests/test_gate_cache.py checks it reads no other key)
ROUND_KEYS = ("schema", "stage", "head", "base", "packet_sha256", "counted", "dry_run", "started_at",
              "finished_at", "recorded_at", "criteria_digest", "repository", "head_source", "head_tree",
              "head_parent", "reviewers")
REVIEWER_KEYS = ("name", "status", "reason", "not_run")  # not_run: read by the hook itself
FINDING_KEYS = ("id", "class", "class_reason", "claimed_link", "claimed_link_kind", "group", "in_check_paths",
                "introduced_by_change", "location", "path", "repeat_of")
LEDGER_KEYS = ("finding", "disposition", "auto", "of")
WAIVER_KEYS = ("reviewer",)
# the records whose change makes a round read again (and the folders: readers.scanned_folders)
WATCHED = (readers.ROUND_FILE, readers.FINDINGS_FILE, readers.LEDGER_FILE, readers.WAIVERS_FILE)

Stats = list[list[int] | None]


class RoundCache:
    """The kept rounds of one series: `read_listed` and `known_round` for `spar.gating`,
    `stale` and `write` for what this call read anew.

    The file is JSON Lines: a header, then one line a round of four JSON texts joined by
    tabs (JSON never writes a raw tab): its name, its stats, what is kept of round.json,
    and of its findings, ledger and waivers. A round's texts are decoded only when it is
    judged, and a round kept again is written back as the very bytes read: a long series
    is never held decoded whole."""

    def __init__(self, series: Path, kept: dict[str, list[bytes]], now: dict[str, Stats] | None = None) -> None:
        self.series = os.path.realpath(series)
        self._kept = kept  # name -> [stats, round, rest], each a JSON text
        # stats taken this call, each folder once (`now`: taken by the caller, `round_stats`)
        self._now: dict[str, Stats] = dict(now or {})
        self._parents: dict[str, str] = {}  # the real path of each folder of rounds named
        self._rounds: dict[str, RoundRecord] = {}  # kept round.json records decoded this call, by name
        self.used: dict[str, list[bytes]] = {}  # what the next call keeps: the rounds read this call
        self._changed = False

    @classmethod
    def load(cls, series: Path, now: dict[str, Stats] | None = None) -> RoundCache:
        """The kept rounds; none when the file is missing, too big, of another version or
        of another series (then every round is read); a damaged line keeps no round."""
        kept: dict[str, list[bytes]] = {}
        try:
            # never blocks on a FIFO, reads a regular file only
            with open(os.open(series / CACHE_FILE, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC), "rb") as fh:
                st = os.fstat(fh.fileno())
                if (not stat.S_ISREG(st.st_mode) or st.st_size > LIMIT
                        or fh.readline() != _header(os.path.realpath(series)) + b"\n"):
                    return cls(series, {}, now)
                left = LIMIT  # a file that grows meanwhile is read no further than the bound
                while left > 0 and (line := fh.readline(left)):  # a line at a time: never held twice
                    left -= len(line)
                    _take(kept, line.rstrip(b"\n"))
        except OSError:
            return cls(series, {}, now)
        return cls(series, kept, now)

    def _stats(self, name: str) -> Stats:
        if name not in self._now:
            self._now[name] = round_stats(os.path.join(self.series, name))
        return self._now[name]

    def _fresh(self, name: str) -> list[bytes] | None:
        """The kept round `name` when none of its files changed since it was kept."""
        texts = self._kept.get(name)
        if texts is None:
            return None
        try:
            if json.loads(texts[0]) != self._stats(name):
                return None
        except ValueError:
            return None
        self.used[name] = texts
        return texts

    def known_round(self, folder: Path) -> RoundRecord | None:
        """A kept round's round.json (what the judgment reads of it), or None."""
        parent = str(folder.parent)
        if parent not in self._parents:
            self._parents[parent] = os.path.realpath(parent)
        if self._parents[parent] != self.series or os.path.islink(folder):
            return None
        texts = self._fresh(folder.name)
        return self._round(folder.name, texts) if texts is not None else None

    def _round(self, name: str, texts: list[bytes]) -> RoundRecord:
        """A kept round's round.json, decoded once a call (the series list, the judgment
        and the hook each ask for it)."""
        if name not in self._rounds:
            record = json.loads(texts[1])
            if not isinstance(record, dict):
                raise ValueError(f"{CACHE_FILE}: round {name} is damaged")
            self._rounds[name] = record  # type: ignore[assignment]
        return self._rounds[name]

    def read_listed(self, arg: str, real: str) -> ListedRound:
        """The listed round from what was kept, or read from its records (and kept)."""
        series, name = os.path.split(real)
        if series != self.series:
            return gating.read_listed(arg, real)
        texts = self._fresh(name)
        if texts is not None:
            item = gating.listed_round(arg, real)
            rest = json.loads(texts[2])
            item.round, item.waivers = self._round(name, texts), rest["waivers"]
            item.findings = _records(rest["findings"], FINDING_KEYS)  # type: ignore[assignment]
            item.ledger = _records(rest["ledger"], LEDGER_KEYS)  # type: ignore[assignment]
            return item
        stats = self._stats(name)  # before reading: a write meanwhile makes the next call read again
        item = gating.read_listed(arg, real)
        # a *.tmp file is kept out whether or not a write holds the lock now: once the lock is
        # free, a leftover blocks the round, and nothing the stats watch would change
        if (item.state == "ok" and item.waivers_error is None and None not in stats[:2]
                and not readers.temporary_files(real)):
            self.used[name] = _kept(item, stats)
            self._changed = True
        return item

    @property
    def stale(self) -> bool:
        """Whether the kept file differs from what this call read (a round read anew or gone)."""
        return self._changed or self.used.keys() != self._kept.keys()

    def write(self, repo: Path) -> None:
        """Keep the rounds of this call (rounds removed from the series are dropped)."""
        target = Path(self.series) / CACHE_FILE
        paths.check_no_link_below(repo, target, writer="the hook")
        pieces = [_header(self.series), b"\n"]
        for name in sorted(self.used):
            stats, round_json, rest = self.used[name]
            pieces += [_json(name), b"\t", stats, b"\t", round_json, b"\t", rest, b"\n"]
        data = b"".join(pieces)  # the one copy of the rounds kept
        if len(data) <= LIMIT:
            atomic.write_bytes(target, data, unique_tmp=True)


def _take(kept: dict[str, list[bytes]], line: bytes) -> None:
    """One kept round's line into `kept`; a damaged line keeps nothing."""
    parts = line.split(b"\t")
    try:
        name = json.loads(parts[0]) if len(parts) == 4 else None
    except ValueError:
        return
    if isinstance(name, str):
        kept[name] = parts[1:]


def _json(value: Any) -> bytes:
    # ASCII: a lone surrogate a record's JSON escape made (readers accept it) encodes too
    return json.dumps(value, separators=(",", ":")).encode()


def _header(series: str) -> bytes:
    return _json({"schema": SCHEMA, "spar_version": __version__, "series": series})


def round_stats(folder: str) -> Stats:
    """A stat of each record of a round the gate reads and of each folder it looks into for
    *.tmp files (the round's and its reviewers': a file made or removed in one changes it)."""
    return ([file_stat(os.path.join(folder, file)) for file in WATCHED]
            + [file_stat(path) for path in readers.scanned_folders(folder)])


def file_stat(path: str) -> list[int] | None:
    """Device, inode, size and change times of `path` (None: not there): a write to it, or
    its replacement, changes them."""
    try:
        st = os.stat(path)  # the readers follow a link: so does the stat
    except OSError:
        return None
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def _kept(item: ListedRound, stats: Stats) -> list[bytes]:
    record = item.record
    round_json = {key: record[key] for key in ROUND_KEYS if key in record}  # type: ignore[literal-required]
    round_json["reviewers"] = [_only(entry, REVIEWER_KEYS) for entry in record["reviewers"]]
    findings = []
    for finding in item.findings or []:
        kept = _only(finding, FINDING_KEYS)
        group = kept.get("group")
        if isinstance(group, dict):
            kept["group"] = _only(group, ("id",))
        findings.append(kept)
    rest = {"findings": _rows(findings, FINDING_KEYS), "ledger": _rows(item.ledger or [], LEDGER_KEYS),
            "waivers": [_only(line, WAIVER_KEYS) for line in item.waivers or []]}
    return [_json(stats), _json(round_json), _json(rest)]


def _only(record: Any, keys: tuple[str, ...]) -> dict[str, Any]:
    return {key: record[key] for key in keys if key in record}


def _rows(records: list[Any], keys: tuple[str, ...]) -> list[list[Any]]:
    """Records as rows of their `keys`' values, half the bytes of the objects to read back:
    a row with keys absent has one more item, the absent keys (their values null)."""
    out = []
    for record in records:
        row = [record.get(key) for key in keys]
        absent = [key for key in keys if key not in record]
        out.append([*row, absent] if absent else row)
    return out


def _records(rows: list[list[Any]], keys: tuple[str, ...]) -> list[dict[str, Any]]:
    out = [dict(zip(keys, row, strict=False)) for row in rows]
    for record, row in zip(out, rows, strict=True):
        if len(row) > len(keys):
            for key in row[-1]:
                del record[key]
    return out
