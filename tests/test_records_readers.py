"""G32: reading records back."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path

import pytest

from spar.errors import RecordError
from spar.judge.dispositions import standing
from spar.records import jsonl, readers

DATA = Path(__file__).parent / "data"
TABLE = json.loads((DATA / "g32_records.json").read_text())
ROWS = TABLE["rows"]

FILES = {
    "round": readers.ROUND_FILE,
    "findings": readers.FINDINGS_FILE,
    "ledger": readers.LEDGER_FILE,
    "waivers": readers.WAIVERS_FILE,
    "extensions": readers.EXTENSIONS_FILE,
}
READERS = {
    "round": readers.read_round,
    "findings": readers.read_findings,
    "ledger": readers.read_ledger,
    "waivers": readers.read_waivers,
    "extensions": readers.read_extensions,
}


def _content(row: dict) -> bytes | None:
    if "patch" in row:
        value = copy.deepcopy(TABLE["base_round"])
        for key, new in row["patch"].items():
            if new is None:
                value.pop(key, None)
            else:
                value[key] = new
        return json.dumps(value, indent=2).encode()
    if "json" in row:
        return json.dumps(row["json"]).encode()
    if "text" in row:
        return row["text"].encode()
    return None


def _contains(got, want) -> None:
    if isinstance(want, dict):
        assert isinstance(got, dict)
        for key, value in want.items():
            assert key in got, key
            _contains(got[key], value)
    elif isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want)
        for g, w in zip(got, want):
            _contains(g, w)
    else:
        assert got == want


@pytest.mark.parametrize("row", ROWS, ids=[r["name"] for r in ROWS])
def test_g32_table(tmp_path, row):
    folder = tmp_path / "series" / "r1"
    folder.mkdir(parents=True)
    # extensions.jsonl lives in the series; everything else in the round folder
    where = folder.parent if row["reader"] == "extensions" else folder
    path = where / FILES[row["reader"]]
    content = _content(row)
    if content is not None:
        path.write_bytes(content)
    if "error" in row:
        with pytest.raises(RecordError) as err:
            READERS[row["reader"]](where)
        assert str(err.value).startswith(f"{path}{row['error']}")
        assert err.value.exit_code == 65
    else:
        got = READERS[row["reader"]](where)
        _contains(got, row["expect"])
        for key in row.get("absent", []):
            assert all(key not in item for item in got)


def test_findings_missing_ok(tmp_path):
    assert readers.read_findings(tmp_path, missing_ok=True) == []
    (tmp_path / "findings.json").write_text("{")
    with pytest.raises(RecordError):
        readers.read_findings(tmp_path, missing_ok=True)


def test_standing_dispositions_latest_line_wins(tmp_path):
    path = tmp_path / "ledger.jsonl"
    lines = [
        {"finding": "claude-F1", "disposition": "deferred", "auto": True, "at": "t1"},
        {"finding": "codex-F1", "disposition": "rejected", "auto": False, "at": "t2", "evidence": "e"},
        {"finding": "claude-F1", "disposition": "fixed", "auto": False, "at": "t3", "commit": "c" * 40,
         "failed_before": "t failed", "passed_after": "t passed"},
        {"finding": "claude-F1", "disposition": "duplicate", "auto": False, "at": "t4", "of": "r0/codex-F3"},
    ]
    for line in lines:
        jsonl.append(path, line)
    standing_lines = standing(readers.read_ledger(tmp_path))
    assert standing_lines == {"claude-F1": lines[3], "codex-F1": lines[1]}
    assert standing([]) == {}


def test_series_rounds(tmp_path):
    series = tmp_path / "series"
    assert readers.series_rounds(series) == []
    for name in ("r10", "r2", "a-first", "no-round", "broken"):
        (series / name).mkdir(parents=True)
    for name in ("r10", "r2", "a-first"):
        (series / name / "round.json").write_text("{}")
    (series / "broken" / "round.json").mkdir()  # damaged: still a round, unreadable when read
    (series / "extensions.jsonl").write_text("")
    (series / ".spar.lock").write_text("")
    (series / "round.json").write_text("{}")  # a file in the series itself is no round
    names = [p.name for p in readers.series_rounds(series)]
    assert names == ["a-first", "broken", "r10", "r2"]
    with pytest.raises(RecordError):
        readers.read_round(series / "broken")
    (tmp_path / "plainfile").write_text("")
    with pytest.raises(RecordError):
        readers.series_rounds(tmp_path / "plainfile")


def test_read_round_keeps_unknown_and_newer_keys(tmp_path):
    value = copy.deepcopy(TABLE["base_round"])
    value["finished_at"] = "2024-01-01T00:01:00.000Z"
    value["reviewers"][0]["standpoint"] = "look at concurrency"
    (tmp_path / "round.json").write_text(json.dumps(value))
    got = readers.read_round(tmp_path)
    assert got["finished_at"] == value["finished_at"]
    assert got["reviewers"][0]["standpoint"] == "look at concurrency"
    assert got["reviewers"][0]["standpoint_report"] is None


@pytest.mark.parametrize("size", [0, 1, 4096, 70_000])
def test_file_bytes_reads_what_open_reads(tmp_path, size):
    path = tmp_path / "f"
    path.write_bytes(bytes(range(256)) * (size // 256) + b"x" * (size % 256))
    assert jsonl.file_bytes(path) == path.read_bytes()


@pytest.mark.parametrize("told", [0, 10, 99_999])  # the size fstat gives, as if the file grew or shrank since
def test_file_bytes_reads_to_the_end_whatever_size_fstat_said(tmp_path, monkeypatch, told):
    path = tmp_path / "f"
    path.write_bytes(b"y" * 100_000)
    real_fstat = os.fstat

    def fstat(fd):
        st = real_fstat(fd)
        return os.stat_result((*st[:6], told, *st[7:]))

    monkeypatch.setattr(os, "fstat", fstat)
    assert jsonl.file_bytes(path) == b"y" * 100_000


def test_file_bytes_refuses_as_open_does(tmp_path):
    with pytest.raises(FileNotFoundError):
        jsonl.file_bytes(tmp_path / "missing")
    with pytest.raises(IsADirectoryError):
        jsonl.file_bytes(tmp_path)
