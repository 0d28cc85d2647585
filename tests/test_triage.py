"""spar triage: design §7 / G30 rows (tests/data/g30_triage.json), G27 for
--commit (tests/data/g27_revisions.json), G32 refusals, history, and the
re-read under the series lock (G33)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from spar.cli import main as spar_main
from spar.judge.dispositions import standing
from spar.records import readers
from spar.records.lock import series_lock, waiting_message
from tests import roundfactory as rf
from tests.gitrepo import commit, git, make_repo
from tests.proctools import blocked_on_lock, wait_for

DATA = Path(__file__).parent / "data"
ROWS = json.loads((DATA / "g30_triage.json").read_text())["rows"]
G27_ROWS = json.loads((DATA / "g27_revisions.json").read_text())["rows"]


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    repo = make_repo(tmp_path_factory.mktemp("triage"), {"a.txt": "one\n", "app/main.py": "x\n",
                                                          ".gitignore": "reviews/\n"})
    git(repo, "tag", "-a", "v1", "-m", "tag")
    commit(repo, {"a.txt": "two\n"}, message="second")
    return repo


@pytest.fixture(scope="module")
def revisions(repo):
    """The repository's revisions by placeholder, read once: no test commits to it."""
    head = git(repo, "rev-parse", "HEAD").strip()
    return {"{head}": head, "{head_short}": head[:7], "{base}": git(repo, "rev-parse", "HEAD~1").strip(),
            "{blob}": git(repo, "rev-parse", "HEAD:a.txt").strip(),
            "{tree}": git(repo, "rev-parse", "HEAD^{tree}").strip()}


def _findings():
    return [rf.finding("claude", 1, cls="defect"), rf.finding("claude", 2, cls="requirement-question"),
            rf.finding("claude", 3, cls="hardening"), rf.finding("claude", 4, cls="note"),
            rf.finding("codex", 1, cls="defect")]


def _series(repo, ledger=None):
    series = rf.fresh_series(repo)
    rf.make_round(series, "r1", repo=repo, findings=_findings())
    rf.make_round(series, "r2", repo=repo, findings=_findings(), ledger=ledger)
    rf.make_round(series, "r3", repo=repo, findings=_findings())
    return series


def _fill(value, head):
    if isinstance(value, str):
        return value.replace("{head_short}", head[:7]).replace("{head}", head)
    if isinstance(value, list):
        return [_fill(v, head) for v in value]
    if isinstance(value, dict):
        return {k: _fill(v, head) for k, v in value.items()}
    return value


@pytest.mark.parametrize("row", ROWS, ids=[r["name"] for r in ROWS])
def test_g30_rows(repo, revisions, capsys, row):
    head = revisions["{head}"]
    series = _series(repo, row.get("ledger"))
    r2 = series / "r2"
    before = rf.snapshot(series)
    ledger_before = rf.read_jsonl(r2 / "ledger.jsonl")
    code = spar_main(["triage", str(r2), row["finding"], *_fill(row["args"], head)])
    err = capsys.readouterr().err
    assert code == row["exit"], err
    if code == 0:
        lines = rf.read_jsonl(r2 / "ledger.jsonl")
        assert lines[:-1] == ledger_before  # history stays
        new = lines[-1]
        at = new.pop("at")
        assert at.endswith("Z")
        assert new == _fill(row["line"], head)
        # one line, whole; summary.md rewritten to show it; nothing else in the series changed
        after = rf.snapshot(series)
        changed = {k for k in after if after[k] != before.get(k)}
        assert changed == {str(Path(r2.name) / "ledger.jsonl"), str(Path(r2.name) / "summary.md")}
        row_line = next(l for l in (r2 / "summary.md").read_text().splitlines() if l.startswith(f"| {row['finding']} |"))
        assert row["line"]["disposition"] in row_line
    else:
        if "message" in row:
            assert row["message"] in err
        assert rf.snapshot(series) == before


@pytest.mark.parametrize("row", G27_ROWS, ids=[repr(r["rev"]) for r in G27_ROWS])
def test_g27_commit(repo, revisions, capsys, tmp_path, monkeypatch, row):
    """--commit resolves in the round's repository (not the current folder) per G27."""
    series = _series(repo)
    r2 = series / "r2"
    head, base = revisions["{head}"], revisions["{base}"]
    rev = revisions.get(row["rev"], row["rev"])
    cwd = tmp_path / "elsewhere"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    before = rf.snapshot(series)
    # `--commit=VALUE`: the one spelling that hands an option-looking value to the option
    code = spar_main(["triage", str(r2), "claude-F1", "--to", "fixed", f"--commit={rev}",
                      "--failed-before", "t failed", "--passed-after", "t passes"])
    err = capsys.readouterr().err
    if row["expect"] is None and rev.strip():
        assert code == 65, err
        assert "is not a commit" in err
        assert rf.snapshot(series) == before
    elif row["expect"] is None:  # "" counts as not given (G30)
        assert code == 65 and "needs --commit" in err
        assert rf.snapshot(series) == before
    else:
        assert code == 0, err
        assert rf.read_jsonl(r2 / "ledger.jsonl")[-1]["commit"] == {"head": head, "base": base}[row["expect"]]
    assert list(cwd.iterdir()) == []


def test_history_kept_latest_stands(repo, capsys):
    series = _series(repo)
    r2 = series / "r2"
    assert spar_main(["triage", str(r2), "claude-F1", "--to", "rejected", "--evidence", "first"]) == 0
    assert spar_main(["triage", str(r2), "claude-F1", "--to", "deferred", "--user-quote", "second"]) == 0
    lines = rf.read_jsonl(r2 / "ledger.jsonl")
    mine = [l for l in lines if l["finding"] == "claude-F1"]
    assert [l["disposition"] for l in mine] == ["rejected", "deferred"]
    assert standing(readers.read_ledger(r2))["claude-F1"]["user_quote"] == "second"
    # the automatic deferral written when the round was recorded is still first
    assert lines[0] == {"finding": "claude-F3", "disposition": "deferred", "auto": True, "at": lines[0]["at"]}


def test_triage_an_auto_deferred_hardening_as_rejected(repo, capsys):
    series = _series(repo)
    assert spar_main(["triage", str(series / "r2"), "claude-F3", "--to", "rejected", "--evidence", "not real"]) == 0
    assert standing(readers.read_ledger(series / "r2"))["claude-F3"]["auto"] is False


BROKEN = [
    ("corrupt round.json", lambda s: (s / "r2" / "round.json").write_text('{"schema":'), "not JSON"),
    ("round.json of another schema", lambda s: (s / "r2" / "round.json").write_text('{"schema": "x/v1"}'), "not a review-round/v1"),
    ("findings.json missing", lambda s: (s / "r2" / "findings.json").unlink(), "findings.json: missing"),
    ("findings.json corrupt", lambda s: (s / "r2" / "findings.json").write_text("[{"), "not JSON"),
    ("ledger.jsonl not JSON", lambda s: (s / "r2" / "ledger.jsonl").write_text("nope\n"), "ledger.jsonl:1"),
    ("ledger.jsonl torn", lambda s: (s / "r2" / "ledger.jsonl").write_text('{"finding": "claude-F3"'), "incomplete last line"),
    ("ledger.jsonl unknown disposition", lambda s: (s / "r2" / "ledger.jsonl").write_text('{"finding": "x", "disposition": "done"}\n'), "disposition is not one of"),
    ("--of round corrupt", lambda s: (s / "r1" / "findings.json").write_text("{"), "r1/findings.json"),
]


@pytest.mark.parametrize("name, break_it, message", BROKEN, ids=[b[0] for b in BROKEN])
def test_unreadable_records_refused(repo, capsys, name, break_it, message):
    series = _series(repo)
    break_it(series)
    before = rf.snapshot(series)
    code = spar_main(["triage", str(series / "r2"), "claude-F1", "--to", "duplicate", "--of", "r1/claude-F1"])
    err = capsys.readouterr().err
    assert code == 65, err
    assert message in err
    assert rf.snapshot(series) == before


@pytest.mark.parametrize("kw, message", [({"recorded": False}, "not recorded findings yet"), ({"dry_run": True}, "dry run")],
                         ids=["not recorded", "dry run"])
def test_round_without_findings_refused(repo, capsys, kw, message):
    series = rf.fresh_series(repo)
    r = rf.make_round(series, "r1", repo=repo, **kw)
    before = rf.snapshot(series)
    assert spar_main(["triage", str(r), "claude-F1", "--to", "rejected", "--evidence", "e"]) == 65
    assert message in capsys.readouterr().err
    assert rf.snapshot(series) == before


def test_of_a_dry_run_round_refused(repo, capsys):
    series = rf.fresh_series(repo)
    rf.make_round(series, "r0", repo=repo, dry_run=True)
    r1 = rf.make_round(series, "r1", repo=repo, findings=_findings())
    before = rf.snapshot(series)
    assert spar_main(["triage", str(r1), "claude-F1", "--to", "duplicate", "--of", "r0/claude-F1"]) == 65
    assert "dry run" in capsys.readouterr().err
    assert rf.snapshot(series) == before


def test_missing_round_folder_refused(repo, capsys):
    series = rf.fresh_series(repo)
    assert spar_main(["triage", str(series / "r1"), "claude-F1", "--to", "rejected", "--evidence", "e"]) == 65
    assert list(series.iterdir()) == []


@pytest.mark.parametrize("argv", [["triage"], ["triage", "ROUND"], ["triage", "ROUND", "--to", "fixed"]])
def test_missing_arguments_are_usage_errors(capsys, argv):
    assert spar_main(argv) == 64


@pytest.mark.slow
def test_rereads_after_taking_the_lock(repo):
    """G33: a triage that waited for the lock sees the line written meanwhile, so
    the cycle it would close is refused."""
    series = _series(repo)
    r2 = series / "r2"
    with series_lock(series):
        proc = subprocess.Popen([sys.executable, "-m", "spar", "triage", str(r2), "claude-F1", "--to", "duplicate",
                                 "--of", "codex-F1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert rf.read_line(proc.stderr, timeout=20).rstrip("\n") == waiting_message(str(series))
        # another write, done while the triage waits
        with open(r2 / "ledger.jsonl", "a") as fh:
            fh.write(json.dumps({"finding": "codex-F1", "disposition": "duplicate", "auto": False,
                                 "at": "2024-01-05T00:00:00.000Z", "of": "r2/claude-F1"}) + "\n")
        assert wait_for(lambda: blocked_on_lock(proc.pid) or proc.poll() is not None)
        assert proc.poll() is None
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 65, err
    assert "cycle" in err
    assert [l["finding"] for l in rf.read_jsonl(r2 / "ledger.jsonl")] == ["claude-F3", "codex-F1"]


def test_unreadable_waivers_never_refuse_a_triage(repo, capsys):
    """G32: only waive and gate read waivers.jsonl. A torn one must neither refuse
    a triage nor fail it after its ledger line was written; the summary then
    names no waiver, as the gate would count none."""
    series = _series(repo)
    r2 = series / "r2"
    (r2 / "waivers.jsonl").write_text('{"reviewer": "codex", "preset": "codex", "user_quote": "fine"')
    code = spar_main(["triage", str(r2), "claude-F1", "--to", "rejected", "--evidence", "not a bug"])
    assert code == 0, capsys.readouterr().err
    assert rf.read_jsonl(r2 / "ledger.jsonl")[-1]["evidence"] == "not a bug"
    row = next(l for l in (r2 / "summary.md").read_text().splitlines() if l.startswith("| claude-F1 |"))
    assert "rejected" in row


def test_summary_records_are_read_before_the_line_is_written(repo, capsys):
    """Whatever refuses a triage refuses it before the append (nothing written)."""
    series = _series(repo)
    r2 = series / "r2"
    rj = json.loads((r2 / "round.json").read_text())
    rj["reviewers"] = "broken"
    (r2 / "round.json").write_text(json.dumps(rj))
    before = rf.snapshot(series)
    assert spar_main(["triage", str(r2), "claude-F1", "--to", "rejected", "--evidence", "e"]) == 65
    assert "reviewers is missing or not a list" in capsys.readouterr().err
    assert rf.snapshot(series) == before


def test_an_old_link_to_a_round_that_is_gone_does_not_refuse(repo, capsys):
    """Cycle checking follows links already in the ledgers; one that points at a
    round removed since ends the chain (no cycle) instead of being reported as
    if it were this triage's --of."""
    series = _series(repo, ledger=[{"finding": "codex-F1", "disposition": "duplicate", "auto": False,
                                    "at": "2024-01-02T00:00:00.000Z", "of": "r0/claude-F1"}])
    code = spar_main(["triage", str(series / "r2"), "claude-F1", "--to", "duplicate", "--of", "codex-F1"])
    assert code == 0, capsys.readouterr().err
    assert rf.read_jsonl(series / "r2" / "ledger.jsonl")[-1]["of"] == "r2/codex-F1"


def test_commit_resolved_in_a_repository_moved_since_the_round(tmp_path, capsys, monkeypatch):
    """round.json names where the repository was; once moved, --commit resolves in
    the repository triage runs in, when it has the round's head commit."""
    import os

    repo, series = rf.series_repo(tmp_path / "old")
    r1 = rf.make_round(series, "r1", repo=repo, findings=_findings())
    moved = tmp_path / "moved"
    os.rename(repo, moved)
    r1 = moved / "reviews" / r1.name
    args = ["triage", str(r1), "claude-F1", "--to", "fixed", "--commit", "HEAD", "--failed-before", "t failed",
            "--passed-after", "t passes"]
    monkeypatch.chdir(tmp_path)  # not inside a repository: nothing to fall back to
    assert spar_main(args) == 65
    assert "--commit" in capsys.readouterr().err
    monkeypatch.chdir(moved)
    assert spar_main(args) == 0, capsys.readouterr().err
    assert rf.read_jsonl(r1 / "ledger.jsonl")[-1]["commit"] == git(moved, "rev-parse", "HEAD").strip()
    assert json.loads((r1 / "round.json").read_text())["repository"] == str((tmp_path / "old" / "repo").resolve())
