"""Whole-file replacement and whole-line JSONL appends."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from spar.errors import RecordError, WriteFailed
from spar.records import atomic, jsonl

DATA = Path(__file__).parent / "data"


def test_write_json_format_and_replace(tmp_path):
    target = tmp_path / "round.json"
    atomic.write_json(target, {"name": "r1", "text": "é \u2028", "n": [1, 2]})
    text = target.read_text(encoding="utf-8")
    assert text == '{\n  "name": "r1",\n  "text": "é \u2028",\n  "n": [\n    1,\n    2\n  ]\n}\n'
    atomic.write_json(target, {"name": "r2"})
    assert json.loads(target.read_text()) == {"name": "r2"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["round.json"]


def test_write_text_and_bytes(tmp_path):
    atomic.write_text(tmp_path / "summary.md", "# Sümmary\n")
    assert (tmp_path / "summary.md").read_bytes() == "# Sümmary\n".encode()
    blob = bytes(range(256)) * 1000
    atomic.write_bytes(tmp_path / "b.bin", blob)
    assert (tmp_path / "b.bin").read_bytes() == blob


def test_stale_tmp_is_replaced_not_followed(tmp_path):
    target = tmp_path / "findings.json"
    victim = tmp_path / "victim"
    victim.write_text("keep")
    (tmp_path / "findings.json.tmp").symlink_to(victim)
    with pytest.raises(WriteFailed):
        atomic.write_json(target, [])
    assert victim.read_text() == "keep"
    assert not target.exists()
    # an ordinary leftover .tmp from a crash is simply overwritten
    (tmp_path / "findings.json.tmp").unlink()
    (tmp_path / "findings.json.tmp").write_text("garbage from a crash" * 100)
    atomic.write_json(target, [])
    assert target.read_text() == "[]\n"
    assert not (tmp_path / "findings.json.tmp").exists()


def test_parent_is_a_file(tmp_path):
    (tmp_path / "plain").write_text("x")
    target = tmp_path / "plain" / "round.json"
    with pytest.raises(WriteFailed) as err:
        atomic.write_json(target, {})
    assert str(err.value).startswith(f"cannot write {target}: ")
    assert err.value.exit_code == 70


def test_fsync_failure_leaves_old_file_and_no_tmp(tmp_path, monkeypatch):
    target = tmp_path / "round.json"
    atomic.write_json(target, {"v": 1})

    def broken(fd):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "fsync", broken)
    with pytest.raises(WriteFailed, match="Input/output error"):
        atomic.write_json(target, {"v": 2})
    monkeypatch.undo()
    assert json.loads(target.read_text()) == {"v": 1}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["round.json"]


def test_target_is_a_folder(tmp_path):
    (tmp_path / "out").mkdir()
    with pytest.raises(WriteFailed):
        atomic.write_text(tmp_path / "out", "x")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_unencodable_object_touches_nothing(tmp_path):
    with pytest.raises(ValueError):
        atomic.write_json(tmp_path / "x.json", {"n": float("nan")})
    assert list(tmp_path.iterdir()) == []


# --- JSONL ------------------------------------------------------------------------

def test_append_whole_lines(tmp_path):
    path = tmp_path / "ledger.jsonl"
    jsonl.append(path, {"finding": "claude-F1", "disposition": "fixed", "note": "a\nb é"})
    jsonl.append(path, {"finding": "claude-F2", "disposition": "deferred"})
    raw = path.read_bytes()
    assert raw.count(b"\n") == 2 and raw.endswith(b"\n")
    assert raw.splitlines()[1] == b'{"finding":"claude-F2","disposition":"deferred"}'
    assert jsonl.read(path) == [
        {"finding": "claude-F1", "disposition": "fixed", "note": "a\nb é"},
        {"finding": "claude-F2", "disposition": "deferred"},
    ]


def test_append_refuses_after_torn_line(tmp_path):
    path = tmp_path / "waivers.jsonl"
    path.write_bytes(b'{"a":1}\n{"reviewer":"co')
    with pytest.raises(RecordError, match="incomplete"):
        jsonl.append(path, {"b": 2})
    assert path.read_bytes() == b'{"a":1}\n{"reviewer":"co'


def test_append_failure_is_write_failed(tmp_path):
    (tmp_path / "file").write_text("")
    with pytest.raises(WriteFailed):
        jsonl.append(tmp_path / "file" / "x.jsonl", {})


def test_read_missing(tmp_path):
    assert jsonl.read(tmp_path / "none.jsonl", missing_ok=True) == []
    with pytest.raises(RecordError, match="none.jsonl: missing"):
        jsonl.read(tmp_path / "none.jsonl")


JSONL_ROWS = json.loads((DATA / "jsonl_lines.json").read_text())["rows"]


@pytest.mark.parametrize("row", JSONL_ROWS, ids=[r["name"] for r in JSONL_ROWS])
def test_read_table(tmp_path, row):
    path = tmp_path / "x.jsonl"
    path.write_bytes(row["bytes"].encode("utf-8", "surrogateescape"))
    if "error_line" in row:
        with pytest.raises(RecordError) as err:
            jsonl.read(path)
        assert str(err.value).startswith(f"{path}:{row['error_line']}: {row['error']}")
    else:
        assert jsonl.read(path) == row["records"]
