"""Whole-file replacement and whole-line JSONL appends."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
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
    with pytest.raises(RecordError, match=r"none\.jsonl: missing"):
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


# Reads PATH in a tight loop until it holds {"done": true}; every read must be one
# whole version: {"n": N, "pad": "x" * (N % 7) * 40000}. Prints reads, versions, bad reads.
READER = r"""
import json, sys
path = sys.argv[1]
reads = bad = 0
seen = set()
while True:
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except FileNotFoundError:
        continue
    reads += 1
    if reads == 1:
        print("reading", flush=True)  # the test starts writing now
    try:
        doc = json.loads(data)
    except ValueError:
        bad += 1
        continue
    if doc.get("done"):
        break
    if doc.get("pad") != "x" * (doc["n"] % 7) * 40000:
        bad += 1
    seen.add(doc["n"])
print(json.dumps({"reads": reads, "versions": len(seen), "bad": bad}))
"""


def _version(n: int) -> dict:
    return {"n": n, "pad": "x" * (n % 7) * 40000}


def _race(tmp_path: Path, write) -> dict:
    target = tmp_path / "round.json"
    atomic.write_json(target, _version(0))
    reader = subprocess.Popen([sys.executable, "-c", READER, str(target)], stdout=subprocess.PIPE, text=True)
    try:
        assert reader.stdout.readline() == "reading\n"  # the reader reads before the first replacement
        for n in range(1, 301):
            write(target, _version(n))
        atomic.write_json(target, {"done": True})
        out, _ = reader.communicate(timeout=60)
    finally:
        if reader.poll() is None:
            reader.kill()
            reader.wait()
    return json.loads(out)


@pytest.mark.slow
def test_concurrent_reader_sees_whole_versions_only(tmp_path):
    got = _race(tmp_path, atomic.write_json)
    assert got["bad"] == 0
    assert got["versions"] > 1 and got["reads"] > got["versions"]  # the reader really ran alongside
    assert not (tmp_path / "round.json.tmp").exists()


@pytest.mark.slow
def test_the_reader_would_see_a_torn_write(tmp_path):
    """Control for the test above: a writer that truncates and writes in place is caught."""

    def in_place(path: Path, obj: dict) -> None:
        data = atomic.dumps(obj).encode()
        with open(path, "wb") as fh:
            fh.write(data[: len(data) // 2])
            fh.flush()
            time.sleep(0.002)
            fh.write(data[len(data) // 2:])

    assert _race(tmp_path, in_place)["bad"] > 0


def test_unique_tmp_replaces_whole_and_readable(tmp_path):
    """Writers without a lock (the gate) use a temporary name of their own; the
    file ends up like any other replacement: whole, mode 0644, no leftover."""
    target = tmp_path / "gate.json"
    (tmp_path / "gate.json.tmp").write_text("someone else's NAME.tmp")
    atomic.write_json(target, {"state": "passed"}, unique_tmp=True)
    assert json.loads(target.read_text()) == {"state": "passed"}
    assert target.stat().st_mode & 0o777 == 0o644
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gate.json", "gate.json.tmp"]
    assert (tmp_path / "gate.json.tmp").read_text() == "someone else's NAME.tmp"


def test_write_files_replaces_every_file_or_none(tmp_path):
    """A batch (its fsyncs at once): every file in place with its bytes and no NAME.tmp
    left; when one cannot be written, none of the batch is put in place."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "old.md").write_text("old\n")
    files = [(tmp_path / "a" / "old.md", b"new\n"), (tmp_path / "a" / "x.json", b"{}\n"),
             (tmp_path / "b" / "input.md", "caf\u00e9\n".encode())]
    atomic.write_files(files)
    assert [p.read_bytes() for p, _ in files] == [data for _, data in files]
    assert sorted(p.name for p in tmp_path.rglob("*.tmp")) == []

    broken = [(tmp_path / "a" / "old.md", b"newer\n"), (tmp_path / "missing" / "input.md", b"x\n")]
    with pytest.raises(WriteFailed, match="missing"):
        atomic.write_files(broken)
    assert (tmp_path / "a" / "old.md").read_bytes() == b"new\n"  # untouched: the batch failed
    assert sorted(p.name for p in tmp_path.rglob("*.tmp")) == []
