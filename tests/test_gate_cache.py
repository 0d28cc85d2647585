"""The rounds `spar hook stop` keeps between calls (`spar/gate_cache.py`): judged from what
was kept, a series gives the very document its records give; a round is read again when
any file of it changed; only new or changed rounds are read; a damaged, hostile or linked
kept file never changes a verdict."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from spar import gate_cache, gating
from spar.cli import main
from spar.gate_cache import CACHE_FILE, RoundCache
from tests import roundfactory as rf
from tests.gitrepo import commit


def _finding(name: str, n: int, **extra) -> dict:
    f = rf.finding(name, n, **{k: extra.pop(k) for k in ("cls", "in_check_paths", "introduced_by_change",
                                                          "proposed_class", "claim") if k in extra})
    f.update(repeat_of=None, corroborated_by=[], group=None, vendor_count=1)
    f.update(extra)
    return f


def _rich_series(tmp_path: Path) -> tuple[Path, Path]:
    """Every kind of record the judgment reads: dispositions (fixed, rejected, a duplicate
    chain, automatic deferrals), a group, a repeat, a note kept for its link, a waiver of a
    reviewer that could not run, a dry run, an unfinished round, a rerun, growth at a new head."""
    repo, series = rf.series_repo(tmp_path)
    group = {"id": "G1", "members": ["claude-F2", "codex-F2"], "vendors": ["claude", "codex"]}
    demoted = _finding("claude", 4, cls="note", proposed_class="defect", class_reason="rule 6: no confirmed link",
                       claimed_link_kind="rule", claimed_link="BASE-NOPE")
    rf.make_round(series, "r1", repo=repo, findings=[
        _finding("claude", 1), _finding("claude", 2, group=group, corroborated_by=["codex-F2"], vendor_count=2),
        _finding("codex", 2, group=group, corroborated_by=["claude-F2"], vendor_count=2),
        _finding("claude", 3, cls="hardening"), demoted, _finding("codex", 5, cls="requirement-question")],
        ledger=[rf.ledger_line("claude-F1", "fixed", commit="a" * 40, failed_before="t fails",
                                passed_after="t passes"),
                rf.ledger_line("claude-F2", "rejected", evidence="the caller checks it"),
                rf.ledger_line("codex-F2", "duplicate", of="r1/claude-F2")])
    rf.make_round(series, "r2", repo=repo, packet_text="again\n",
                  reviewers=[rf.reviewer("claude"), rf.reviewer("codex", status="unavailable", reason="quota: limit")],
                  findings=[_finding("claude", 1, repeat_of={"round": "r1", "finding": "claude-F1",
                                                             "disposition": "fixed"}), _finding("claude", 6)],
                  ledger=[rf.ledger_line("claude-F1", "duplicate", of="r1/claude-F1")],
                  waivers=[{"reviewer": "codex", "preset": "codex", "user_quote": "ship it without codex",
                            "at": "2024-01-02T00:00:00.000Z"}])
    rf.make_round(series, "r3", repo=repo, dry_run=True)
    head = commit(repo, {"app/main.py": "print(3)\nprint(4)\n"}, message="a fix")
    base = rf.head_and_base(repo)[1]
    rf.make_round(series, "r4", repo=repo, head=head, base=base, packet_text="fixed\n", findings=[
        _finding("claude", 1, introduced_by_change="yes"), _finding("codex", 2, in_check_paths=True)])
    rf.make_round(series, "r5", repo=repo, head=head, base=base, packet_text="fixed\n",
                  reviewers=[rf.reviewer("codex")], findings=[_finding("codex", 9, cls="hardening"),
                                                             _finding("codex", 1, introduced_by_change="yes")])
    unfinished = rf.make_round(series, "r6", repo=repo, head=head, base=base, packet_text="last\n")
    (unfinished / "findings.json.tmp").write_text("{")
    return repo, series


def _gate(series: Path, cache: RoundCache | None = None) -> dict:
    listed = gating.series_gate_list(series, cache.known_round if cache is not None else None)
    return gating.build_gate(listed.rounds, None, real_args=gating.real_paths(listed.rounds),
                             read=cache.read_listed if cache is not None else None)


def _reads(monkeypatch) -> list[str]:
    """The names of the rounds read from their records from now on."""
    names: list[str] = []
    read = gating.read_listed

    def spy(arg: str, real: str):
        names.append(os.path.basename(real))
        return read(arg, real)
    monkeypatch.setattr(gating, "read_listed", spy)
    return names


def test_the_kept_rounds_judge_as_the_records_do(tmp_path, monkeypatch):
    repo, series = _rich_series(tmp_path)
    fresh = _gate(series)
    assert fresh["state"] == "blocked" and fresh["open"] and fresh["demoted"] and fresh["growth_findings"]
    first = RoundCache.load(series)
    assert _gate(series, first) == fresh
    first.write(repo)
    reads = _reads(monkeypatch)
    kept = RoundCache.load(series)
    assert _gate(series, kept) == fresh
    # the unfinished round is read each time (a dry run is not gated); the others came from the kept file
    assert reads == ["r6"] and not kept.stale


class _Reading(dict):
    """A record that notes each key the judgment reads."""

    def __init__(self, kind: str, value: dict, seen: dict[str, set[str]]) -> None:
        super().__init__(value)
        self.kind, self.seen = kind, seen

    def _note(self, key: object) -> None:
        self.seen.setdefault(self.kind, set()).add(str(key))

    def __getitem__(self, key):
        self._note(key)
        return super().__getitem__(key)

    def get(self, key, default=None):
        self._note(key)
        return super().get(key, default)

    def __contains__(self, key):
        self._note(key)
        return super().__contains__(key)

    def __iter__(self):
        self._note("*every key*")
        return super().__iter__()

    def items(self):
        self._note("*every key*")
        return super().items()


def test_the_judgment_reads_no_field_the_kept_rounds_leave_out(tmp_path, monkeypatch):
    """What the kept file leaves out of a record is never read by the judgment: were it read,
    a judgment from the kept file would see it missing."""
    _, series = _rich_series(tmp_path)
    seen: dict[str, set[str]] = {}
    read = gating.read_listed

    def noting(arg: str, real: str):
        item = read(arg, real)
        if item.round is not None:
            item.round = _Reading("round", item.round, seen)  # type: ignore[assignment]
            item.round["reviewers"] = [_Reading("reviewer", r, seen) for r in item.round["reviewers"]]
            seen.pop("round", None)
        item.findings = [_Reading("finding", f, seen) for f in item.findings or []] if item.findings else item.findings
        item.ledger = [_Reading("ledger", line, seen) for line in item.ledger or []] if item.ledger else item.ledger
        item.waivers = [_Reading("waiver", w, seen) for w in item.waivers or []] if item.waivers else item.waivers
        return item
    monkeypatch.setattr(gating, "read_listed", noting)
    _gate(series)
    kept = {"round": gate_cache.ROUND_KEYS, "reviewer": gate_cache.REVIEWER_KEYS,
            "finding": gate_cache.FINDING_KEYS, "ledger": gate_cache.LEDGER_KEYS, "waiver": gate_cache.WAIVER_KEYS}
    assert seen.keys() == kept.keys()
    for kind, keys in seen.items():
        assert keys <= set(kept[kind]), (kind, keys - set(kept[kind]))


# ---------------------------------------------------------------- through spar hook stop


def _hook(monkeypatch, capsys, repo: Path) -> tuple[dict, str]:
    payload = {"session_id": "s", "cwd": str(repo), "hook_event_name": "Stop", "stop_hook_active": False}
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(json.dumps(payload).encode())))
    assert main(["hook", "stop", "--agent", "claude", "--deadline", "20"]) == 0
    out, err = capsys.readouterr()
    return json.loads(out), err


CAPS = {"plan": 2, "plan_delta": 2, "code": 9}


@pytest.fixture
def repo(tmp_path):
    repo, series = rf.series_repo(tmp_path)
    series.mkdir()
    return repo


def test_after_a_new_round_only_that_round_is_read(repo, monkeypatch, capsys):
    series = repo / "reviews"
    for n in range(1, 4):
        rf.make_round(series, f"code-{n}", repo=repo, packet_text=f"packet {n}\n", caps=CAPS,
                      findings=[_finding("claude", n)], ledger=[rf.ledger_line(f"claude-F{n}", "rejected",
                                                                               evidence="not so")])
    assert _hook(monkeypatch, capsys, repo)[0] == {}
    rf.make_round(series, "code-4", repo=repo, packet_text="packet 4\n", caps=CAPS, findings=[_finding("claude", 9)])
    reads = _reads(monkeypatch)
    answer, _ = _hook(monkeypatch, capsys, repo)
    assert reads == ["code-4"]
    assert answer["decision"] == "block" and "code-4/claude-F9" in answer["reason"]


def test_a_round_changed_since_it_was_kept_is_read_again(repo, monkeypatch, capsys):
    series = repo / "reviews"
    rf.make_round(series, "code-1", repo=repo, findings=[_finding("claude", 1)])
    rf.make_round(series, "code-2", repo=repo, packet_text="two\n", findings=[_finding("codex", 2)],
                  ledger=[rf.ledger_line("codex-F2", "rejected", evidence="not so")])
    answer, _ = _hook(monkeypatch, capsys, repo)
    assert answer["decision"] == "block" and "code-1/claude-F1" in answer["reason"]
    # a triage appends to the ledger of a kept round
    with open(series / "code-1" / "ledger.jsonl", "a") as fh:
        fh.write(json.dumps(rf.ledger_line("claude-F1", "rejected", evidence="the caller checks it")) + "\n")
    reads = _reads(monkeypatch)
    assert _hook(monkeypatch, capsys, repo)[0] == {}
    assert reads == ["code-1"]
    # a round removed is dropped from the kept file
    subprocess.run(["rm", "-rf", str(series / "code-2")], check=True)
    assert _hook(monkeypatch, capsys, repo)[0] == {}
    names = [json.loads(line.split(b"\t")[0]) for line in (series / CACHE_FILE).read_bytes().splitlines()[1:]]
    assert names == ["code-1"]


def test_a_damaged_or_hostile_kept_file_changes_no_verdict(repo, monkeypatch, capsys):
    series = repo / "reviews"
    rf.make_round(series, "code-1", repo=repo, findings=[_finding("claude", 1)])
    blocked, _ = _hook(monkeypatch, capsys, repo)
    assert blocked["decision"] == "block"
    kept = series / CACHE_FILE
    head, line = kept.read_bytes().splitlines()
    name, stats, round_json, _ = line.split(b"\t")
    for damaged in (b"garbage", head + b"\n" + b"\t".join([name, stats, round_json, b'{"findings": 5}']),
                    head + b"\n" + b"\t".join([name, stats, b"[1]", b"{}"]), head + b"\n" + line[:40]):
        kept.write_bytes(damaged)
        (series / ".spar-hook.json").unlink()
        assert _hook(monkeypatch, capsys, repo)[0] == blocked
    # a FIFO there is never opened for a blocking read: the answer comes, from the records
    kept.unlink()
    os.mkfifo(kept)
    (series / ".spar-hook.json").unlink()
    assert _hook(monkeypatch, capsys, repo)[0] == blocked
    assert kept.is_file() and not kept.is_symlink()  # replaced whole, never written into


def test_the_kept_file_is_never_written_through_a_link(repo, monkeypatch, capsys, tmp_path):
    series = repo / "reviews"
    rf.make_round(series, "code-1", repo=repo)
    outside = tmp_path / "outside.json"
    outside.write_text("mine\n")
    (series / CACHE_FILE).symlink_to(outside)
    answer, err = _hook(monkeypatch, capsys, repo)
    assert answer == {} and "symbolic link" in err
    assert outside.read_text() == "mine\n"


def test_a_kept_file_over_the_bound_is_not_read(repo, monkeypatch, capsys):
    series = repo / "reviews"
    rf.make_round(series, "code-1", repo=repo, findings=[_finding("claude", 1)])
    blocked, _ = _hook(monkeypatch, capsys, repo)
    (series / ".spar-hook.json").unlink()
    monkeypatch.setattr(gate_cache, "LIMIT", (series / CACHE_FILE).stat().st_size - 1)
    reads = _reads(monkeypatch)
    assert _hook(monkeypatch, capsys, repo)[0] == blocked
    assert reads == ["code-1"]  # judged from the records, the kept file left unread


def test_a_leftover_seen_while_a_write_holds_the_lock_is_never_kept(repo, monkeypatch, capsys):
    """While a run holds the series lock a *.tmp file is a write in progress and the round reads
    as finished; once the lock is free it is a leftover that blocks. A round with any *.tmp file
    is therefore never kept, and one made later in a reviewer's folder is seen too."""
    from spar.records.lock import series_lock
    series = repo / "reviews"
    rf.make_round(series, "code-1", repo=repo)
    (series / "code-1" / "ledger.jsonl.tmp").write_text("{")
    with series_lock(series):
        assert _hook(monkeypatch, capsys, repo)[0] == {}  # a write in progress
    assert _hook(monkeypatch, capsys, repo)[0]["decision"] == "block"
    kept = json.loads((series / ".spar-hook.json").read_text())["series"]
    assert any("ledger.jsonl.tmp" in reason for reason in kept["reasons"])
    (series / "code-1" / "ledger.jsonl.tmp").unlink()
    assert _hook(monkeypatch, capsys, repo)[0] == {}  # kept now
    (series / "code-1" / "claude" / "answer.json.tmp").write_text("{")
    assert _hook(monkeypatch, capsys, repo)[0]["decision"] == "block"
    kept = json.loads((series / ".spar-hook.json").read_text())["series"]
    assert any("claude/answer.json.tmp" in reason for reason in kept["reasons"])


def test_a_record_with_a_lone_surrogate_is_kept_as_json_reads_it(repo, monkeypatch, capsys):
    series = repo / "reviews"
    folder = rf.make_round(series, "code-1", repo=repo, findings=[dict(rf.finding("claude", 1, cls="note"))])
    findings = (folder / "findings.json").read_text().replace('"path": "app/main.py"', '"path": "app/\\udc80.py"')
    (folder / "findings.json").write_text(findings)
    assert _hook(monkeypatch, capsys, repo)[0] == {}
    (series / ".spar-hook.json").unlink()
    assert _hook(monkeypatch, capsys, repo)[0] == {}
    assert (series / CACHE_FILE).read_bytes().count(b"\n") == 2  # the header and the round
