"""spar extend: G31 rows (tests/data/g31_extend.json), G28 on the series path,
G32 on extensions.jsonl, G33 waiting line, and a cap reached then extended."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from spar.cli import main as spar_main
from spar.errors import Refused
from spar.judge.caps import decide
from spar.records import readers
from spar.records.lock import series_lock, waiting_message
from spar.series import project_caps, read_series, stage_caps
from tests import roundfactory as rf
from tests.proctools import blocked_on_lock, wait_for

ROWS = json.loads((Path(__file__).parent / "data" / "g31_extend.json").read_text())["rows"]


def _ids(row):
    return " ".join(row["args"]) or "none"


@pytest.mark.parametrize("row", ROWS, ids=[_ids(r) for r in ROWS])
def test_g31_rows(series, capsys, row):
    before = rf.snapshot(series)
    code = spar_main(["extend", str(series), *row["args"]])
    err = capsys.readouterr().err
    assert code == row["exit"], err
    if row["exit"] == 0:
        lines = rf.read_jsonl(series / "extensions.jsonl")
        assert len(lines) == 1
        at = lines[0].pop("at")
        assert at.endswith("Z") and len(at) == len("2024-01-01T00:00:00.000Z")
        assert lines[0] == row["line"]
        # key order as docs/records.md gives it
        assert list(json.loads((series / "extensions.jsonl").read_text().splitlines()[0])) == [*row["line"], "at"]
    else:
        assert err.startswith("spar: ")
        if "message" in row:
            assert row["message"] in err
        assert rf.snapshot(series) == before


def test_lines_accumulate_and_read_back(series, capsys):
    assert spar_main(["extend", str(series), "--stage", "code", "--by", "1", "--cause", "churn"]) == 0
    assert spar_main(["extend", str(series), "--stage", "plan", "--by", "2"]) == 0
    lines = readers.read_extensions(series)
    assert [(l["stage"], l["by"], l["cause"], l["reason"]) for l in lines] == [("code", 1, "churn", None), ("plan", 2, None, None)]


@pytest.mark.parametrize("target, make, message", [
    ("gone/series", lambda s: None, "nor does the folder"),
    ("series", lambda s: s.write_text("not a folder"), "is not a folder"),
], ids=["missing with its parent", "a file"])
def test_series_missing_or_not_a_folder(tmp_path, capsys, target, make, message):
    target = tmp_path / target
    make(target)
    before = rf.snapshot(tmp_path)
    assert spar_main(["extend", str(target), "--stage", "plan", "--by", "1"]) == 65
    assert message in capsys.readouterr().err
    assert rf.snapshot(tmp_path) == before


def test_series_without_rounds_yet(repo, capsys):
    """A project cap of 0 makes `spar run` ask for `spar extend SERIES` before the
    series' first round: the series folder is created for the extension (when
    G28 allows it), instead of a refusal that leaves the user stuck."""
    series = repo / "reviews" / "fresh-series"
    assert not series.exists()
    assert spar_main(["extend", str(series), "--stage", "plan", "--by", "1"]) == 0, capsys.readouterr().err
    assert [(l["stage"], l["by"]) for l in rf.read_jsonl(series / "extensions.jsonl")] == [("plan", 1)]
    # G28 still applies to a series that does not exist yet
    visible = repo / "not-ignored-series"
    assert spar_main(["extend", str(visible), "--stage", "plan", "--by", "1"]) == 65
    assert "does not ignore it" in capsys.readouterr().err
    assert not visible.exists()


def test_series_inside_a_repository_that_does_not_ignore_it(repo, capsys):
    visible = repo / "visible-series"
    visible.mkdir()
    assert spar_main(["extend", str(visible), "--stage", "plan", "--by", "1"]) == 65
    assert "does not ignore it" in capsys.readouterr().err
    assert list(visible.iterdir()) == []


def test_series_holding_tracked_files(repo, capsys):
    # app/ holds the tracked app/main.py
    assert spar_main(["extend", str(repo / "app"), "--stage", "plan", "--by", "1"]) == 65
    assert "tracked" in capsys.readouterr().err
    assert not (repo / "app" / "extensions.jsonl").exists()


@pytest.mark.parametrize("content, message", [
    (b'{"stage": "code", "by": 1, "cause": "churn"', "incomplete last line"),
    (b"not json\n", "not JSON"),
    (b'{"stage": "plan_delta", "by": 1}\n', "stage is not one of"),
    (b'{"stage": "code", "by": 0}\n', "by is not an integer"),
])
def test_unreadable_extensions_refused(series, capsys, content, message):
    (series / "extensions.jsonl").write_bytes(content)
    before = rf.snapshot(series)
    assert spar_main(["extend", str(series), "--stage", "code", "--by", "1", "--cause", "churn"]) == 65
    assert message in capsys.readouterr().err
    assert rf.snapshot(series) == before


def test_old_lines_without_cause_are_read(series, capsys):
    (series / "extensions.jsonl").write_text('{"stage": "code", "by": 1, "at": "2024-01-01T00:00:00.000Z"}\n')
    assert spar_main(["extend", str(series), "--stage", "code", "--by", "1", "--cause", "churn"]) == 0
    assert len(rf.read_jsonl(series / "extensions.jsonl")) == 2


@pytest.mark.slow
def test_waits_for_the_series_lock(series):
    """G33: another write holds the lock -> the waiting line, then the write."""
    with series_lock(series):
        proc = subprocess.Popen([sys.executable, "-m", "spar", "extend", str(series), "--stage", "plan", "--by", "1"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        first = rf.read_line(proc.stderr, timeout=20)
        assert first.rstrip("\n") == waiting_message(str(series))
        assert wait_for(lambda: blocked_on_lock(proc.pid) or proc.poll() is not None)
        assert proc.poll() is None, "extend must wait while the lock is held"
        assert not (series / "extensions.jsonl").exists()
    _out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert len(rf.read_jsonl(series / "extensions.jsonl")) == 1


def test_cap_reached_then_extended(repo, capsys):
    """Three counted code rounds reach the default cap of 3; spar run's cap decision
    refuses a fourth until `spar extend` adds one."""
    series = rf.fresh_series(repo)
    for n in range(1, 4):
        rf.make_round(series, f"r{n}", repo=repo, packet_text=f"packet {n}\n")

    def decision():
        rounds = read_series(series)
        caps, _ = project_caps(rounds)
        return decide(series=str(series), stage="code", base="b", head="h", packet_sha256="new", dry_run=False,
                      caps=caps, extensions=readers.read_extensions(series), rounds=[r.round for r in rounds])

    with pytest.raises(Refused, match="spar extend"):
        decision()
    code_caps = stage_caps(read_series(series), project_caps(read_series(series))[0], [])[2]
    assert (code_caps.cap, len(code_caps.counted), code_caps.remaining) == (3, 3, 0)
    assert spar_main(["extend", str(series), "--stage", "code", "--by", "1", "--cause", "recurring"]) == 0
    result = decision()
    assert (result.cap, result.extended_by, result.counted) == (4, 1, True)


def test_a_round_folder_is_not_a_series(series, capsys):
    """An extension in a round folder would be read by no cap decision."""
    before = rf.snapshot(series)
    assert spar_main(["extend", str(series / "r1"), "--stage", "code", "--by", "1", "--cause", "churn"]) == 65
    err = capsys.readouterr().err
    assert "is a round folder" in err and str(series) in err
    assert rf.snapshot(series) == before
