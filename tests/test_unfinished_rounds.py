"""Rounds a killed write left unfinished are named, never judged (issue 12 point 4).

Built by hand as a killed `spar run` leaves them: findings.json written but the
final round.json never (reviewers still pending), a folder stopped before
round.json, and a recorded round with a leftover `NAME.tmp`.
"""

from __future__ import annotations

import json
import shutil
import sys

import pytest

from spar.cli import main as spar_main
from spar.judge.gate import remove_advice
from spar.records.lock import is_locked, series_lock
from tests import roundfactory as rf


def _killed_after_findings(series, repo):
    """round.json as written before the reviewers (pending), findings.json already replaced."""
    folder = rf.make_round(series, "r2", repo=repo, recorded=False, packet_text="second\n")
    (folder / "findings.json").write_text(json.dumps([rf.finding("claude", 1, cls="defect")]))
    return folder


def _gate(capsys, repo, series, *names):
    out = repo / "gates" / f"{series.name}.json"
    code = spar_main(["gate", *[str(series / n) for n in names], "--out", str(out)])
    capsys.readouterr()
    return code, json.loads(out.read_text())


def test_killed_after_findings_json_is_not_finished(repo, capsys):
    series = rf.fresh_series(repo)
    rf.make_round(series, "r1", repo=repo)
    _killed_after_findings(series, repo)
    code, doc = _gate(capsys, repo, series, "r1", "r2")
    assert code == 1
    assert doc["reasons"] == [f"round {series}/r2 was not finished: findings.json was written, "
                              f"but round.json was never marked recorded; {remove_advice(f'{series}/r2')}"]
    assert [r["state"] for r in doc["rounds"]] == ["ok", "unfinished"]
    # its findings are not judged (its pending reviewers would otherwise read as required)
    assert doc["open"] == [] and doc["required_reviewers"] == ["claude", "codex"]
    # G29 leaves out only a round "with neither finished_at nor findings.json": its findings
    # (a defect here) are never silently dropped by leaving it out of the list
    code, doc = _gate(capsys, repo, series, "r1")
    assert code == 1
    assert doc["reasons"] == [f"{series}: round r2 of the series is not in the gate list: list it too, or gate "
                              f"the whole series (spar gate --series {series})"]
    # deleting the unfinished round folder clears it
    shutil.rmtree(series / "r2")
    code, doc = _gate(capsys, repo, series, "r1")
    assert code == 0, doc["reasons"]


def test_a_round_stopped_before_findings_json_is_not_required(repo, capsys):
    series = rf.fresh_series(repo)
    rf.make_round(series, "r1", repo=repo)
    rf.make_round(series, "r2", repo=repo, recorded=False, packet_text="second\n")
    code, doc = _gate(capsys, repo, series, "r1")
    assert code == 0, doc["reasons"]


def test_leftover_temporary_file_and_folder_without_round_json(repo, capsys):
    series = rf.fresh_series(repo)
    r1 = rf.make_round(series, "r1", repo=repo)
    (r1 / "summary.md.tmp").write_text("half a summa")
    (r1 / "claude" / "input.md.tmp").write_text("")
    started = series / "r3"
    started.mkdir()
    (started / "packet.md").write_text("# Review packet\n")
    (started / "round.json.tmp").write_text('{"schema": "review-round/v1", "na')
    (series / "notes").mkdir()  # not a round folder: never reported
    code, doc = _gate(capsys, repo, series, "r1")
    assert code == 1
    assert doc["reasons"] == [f"round {series}/r1 was not finished: a write was interrupted, leaving "
                              f"claude/input.md.tmp, summary.md.tmp; {remove_advice(f'{series}/r1')}"]
    code, doc = _gate(capsys, repo, series, "r3")
    assert code == 1 and doc["reasons"][0] == (f"round {series}/r3 was not finished: "
                                               "it has no round.json (a run stopped before writing it); "
                                               f"{remove_advice(f'{series}/r3')}")
    assert spar_main(["cap-report", str(series), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["unfinished"] == [
        {"name": "r1", "why": "a write was interrupted, leaving claude/input.md.tmp, summary.md.tmp"},
        {"name": "r3", "why": "no round.json (a run stopped before writing it)"}]
    assert spar_main(["cap-report", str(series)]) == 0
    markdown = capsys.readouterr().out
    assert "## Unfinished rounds" in markdown and "| r3 | no round.json (a run stopped before writing it) |" in markdown


def test_a_write_in_progress_is_not_a_leftover(repo, capsys):
    """While the series lock is held, NAME.tmp files and a folder without round.json are a
    write in progress (G33): neither the gate nor cap-report calls them unfinished."""
    series = rf.fresh_series(repo)
    r1 = rf.make_round(series, "r1", repo=repo)
    (r1 / "summary.md.tmp").write_text("")
    (series / "r3").mkdir()
    (series / "r3" / "packet.md").write_text("")
    assert is_locked(series) is False
    with series_lock(series):
        assert is_locked(series) is True
        code, doc = _gate(capsys, repo, series, "r1")
        assert code == 0, doc["reasons"]
        assert spar_main(["cap-report", str(series), "--format", "json"]) == 0
        assert json.loads(capsys.readouterr().out)["unfinished"] == []


def test_a_later_run_is_not_disturbed(repo, capsys, tmp_path, monkeypatch):
    series = rf.fresh_series(repo)
    rf.make_round(series, "r1", repo=repo)
    _killed_after_findings(series, repo)
    (series / "r1" / "findings.json.tmp").write_text("[")
    (series / "r3").mkdir()
    (series / "r3" / "round.json.tmp").write_text("{")
    config = tmp_path / "spar.toml"
    config.write_text(f'[[reviewers]]\nname = "house"\npreset = "command"\n'
                      f'argv = [{json.dumps(sys.executable)}, "-c", "pass", "{{prompt}}"]\n')
    monkeypatch.setenv("SPAR_CONFIG", str(config))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "home" / ".config"))
    monkeypatch.chdir(repo)
    code = spar_main(["run", "--stage", "code", "--out", str(series / "r9"), "--dry-run"])
    assert code == 0, capsys.readouterr().err
    assert (series / "r9" / "round.json").is_file()


@pytest.mark.parametrize("command", ["triage", "waive"])
def test_triage_and_waive_refuse_a_round_that_was_not_finished(repo, capsys, command):
    series = rf.fresh_series(repo)
    r2 = _killed_after_findings(series, repo)
    before = rf.snapshot(series)
    argv = (["triage", str(r2), "claude-F1", "--to", "rejected", "--evidence", "e"] if command == "triage"
            else ["waive", str(r2), "--reviewer", "codex", "--user-quote", "ok"])
    assert spar_main(argv) == 65
    err = capsys.readouterr().err
    assert "not finished" in err or "not been recorded" in err, err
    assert rf.snapshot(series) == before
    assert not (r2 / "ledger.jsonl").exists()  # never started afresh


def test_recording_creates_the_ledger_even_when_nothing_is_deferred(repo):
    """G32: a recorded round always has its ledger.jsonl, so a missing one is damage."""
    from spar.records import readers
    from spar.round.recording import write_round_outputs

    series = rf.fresh_series(repo)
    folder = rf.make_round(series, "r1", repo=repo, recorded=False)
    assert not (folder / "ledger.jsonl").exists()
    write_round_outputs(folder, readers.read_round(folder), [rf.finding("claude", 1, cls="note")])
    assert (folder / "ledger.jsonl").read_bytes() == b""
    assert readers.read_ledger(folder, readers.read_findings(folder)) == []


def test_record_refuses_a_round_killed_while_recording(repo, capsys, tmp_path):
    series = rf.fresh_series(repo)
    r2 = _killed_after_findings(series, repo)
    result = tmp_path / "result.json"
    result.write_text("{}")
    before = rf.snapshot(series)
    assert spar_main(["record", str(r2), "--reviewer", "codex", "--result", str(result)]) == 65
    assert "was not finished: its findings were written" in capsys.readouterr().err
    assert rf.snapshot(series) == before
