"""A JSONL append that writes only part of its line is undone (issue 12 point 3).

The file is cut back to its size before the append and fsynced, and the
command exits 70; the series is never left with a torn last line that would
block it until someone edits the file by hand. Shown twice: with a short write
injected into `os.write` (any user), and on a real, full tmpfs (root only).
"""

from __future__ import annotations

import errno
import os

import pytest

from spar.cli import main as spar_main
from spar.errors import WriteFailed
from spar.records import atomic, jsonl
from tests import roundfactory as rf
from tests.faulttools import small_disk
from tests.gitrepo import commit, make_repo

LINE = {"finding": "claude-F1", "disposition": "rejected", "auto": False, "at": "t", "evidence": "x" * 100}


def _short_then_fail(monkeypatch, *, code: int = errno.ENOSPC, after: int = 10):
    """os.write writes `after` bytes of a JSONL line, then fails with `code`."""
    real = os.write
    calls = []

    def write(fd, data):
        if calls and calls[0] == fd:  # the rest of the line
            raise OSError(code, os.strerror(code))
        if bytes(data[:1]) == b"{" and bytes(data).endswith(b"\n"):
            calls.append(fd)
            return real(fd, bytes(data[:after]))
        return real(fd, data)

    monkeypatch.setattr(os, "write", write)
    return calls


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EIO])
def test_short_write_is_cut_back(tmp_path, monkeypatch, code):
    path = tmp_path / "ledger.jsonl"
    path.write_bytes(b'{"finding":"a-F1","disposition":"fixed"}\n')
    before = path.read_bytes()
    calls = _short_then_fail(monkeypatch, code=code)
    with pytest.raises(WriteFailed) as err:
        jsonl.append(path, LINE)
    assert calls and path.read_bytes() == before
    assert str(err.value).startswith(f"cannot write {path} (the append was undone): {os.strerror(code)}")
    monkeypatch.undo()
    jsonl.append(path, LINE)  # the next append is not blocked by a torn line
    assert jsonl.read(path)[-1] == LINE


def test_new_file_short_write_leaves_it_empty(tmp_path, monkeypatch):
    path = tmp_path / "extensions.jsonl"
    _short_then_fail(monkeypatch)
    with pytest.raises(WriteFailed):
        jsonl.append(path, {"stage": "code", "by": 1, "at": "t"})
    assert path.read_bytes() == b""  # an empty file is a valid record: no lines


def test_undo_failing_too_says_the_line_may_be_torn(tmp_path, monkeypatch):
    path = tmp_path / "ledger.jsonl"
    _short_then_fail(monkeypatch)

    def no_truncate(fd, size):
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    monkeypatch.setattr(os, "ftruncate", no_truncate)
    with pytest.raises(WriteFailed, match=r"undoing the append failed too.*may be torn"):
        atomic.append_line(path, jsonl.dumps_line(LINE))


@pytest.fixture
def repo(tmp_path):
    repo = make_repo(tmp_path / "r", {"app/main.py": "x\n", ".gitignore": "reviews/\n"})
    commit(repo, {"app/main.py": "y\n"}, message="second")
    return repo


def _round(series, repo):
    return rf.make_round(series, "r1", repo=repo, findings=[rf.finding("claude", 1, cls="defect")])


def test_triage_with_a_short_write_exits_70_and_leaves_the_ledger_as_it_was(repo, monkeypatch, capsys):
    r1 = _round(repo / "reviews" / "s", repo)
    before = (r1 / "ledger.jsonl").read_bytes()
    _short_then_fail(monkeypatch)
    code = spar_main(["triage", str(r1), "claude-F1", "--to", "rejected", "--evidence", "not a bug"])
    assert code == 70
    assert "the append was undone" in capsys.readouterr().err
    assert (r1 / "ledger.jsonl").read_bytes() == before
    monkeypatch.undo()
    assert spar_main(["triage", str(r1), "claude-F1", "--to", "rejected", "--evidence", "not a bug"]) == 0


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")
def test_triage_on_a_full_tmpfs_exits_70_and_leaves_no_torn_line(repo, tmp_path, capsys):
    disk = tmp_path / "disk"
    with small_disk(disk, "256k"):
        r1 = _round(disk / "s", repo)
        ledger = r1 / "ledger.jsonl"
        before = ledger.read_bytes()
        filler = disk / "filler"
        fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
        try:  # take every free page
            while True:
                os.write(fd, b"\0" * 4096)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
        finally:
            os.close(fd)
        # the line is longer than the room left in the ledger's last page: only part of it fits
        evidence = "e" * 8192
        code = spar_main(["triage", str(r1), "claude-F1", "--to", "rejected", "--evidence", evidence])
        err = capsys.readouterr().err
        assert code == 70, err
        assert f"cannot write {ledger} (the append was undone): No space left on device" in err
        assert ledger.read_bytes() == before
        filler.unlink()
        assert spar_main(["triage", str(r1), "claude-F1", "--to", "rejected", "--evidence", evidence]) == 0
        assert rf.read_jsonl(ledger)[-1]["evidence"] == evidence
