"""spar gate over a long series: rounds are read, checked and judged one at a time,
so memory does not grow with the rounds' records, and a duplicate naming a round
the judgment no longer holds is traced by reading that round again."""

from __future__ import annotations

import json
import os
import shutil
import tracemalloc
from pathlib import Path

import pytest

from spar import gating
from spar.cli import main as spar_main
from spar.judge import duplicate_trace
from spar.judge import gate as judgement
from tests import roundfactory as rf
from tests.spies import calls_to
from tests.test_gate import SCENARIOS, build_series

FINDINGS_PER_ROUND = 50


def _findings() -> list[dict]:
    """50 findings of two reviewers: defects, requirement-questions, hardening, notes."""
    classes = ("defect", "requirement-question", "hardening", "note", "defect")
    return [rf.finding(name, n, cls=classes[n % 5], introduced_by_change="yes" if n % 5 == 4 else "no",
                       claim=f"claim {n} of {name}: " + "a caller passes an empty list and " * 4)
            for name in ("claude", "codex") for n in range(1, FINDINGS_PER_ROUND // 2 + 1)]


def _dispositions(findings: list[dict], previous: str | None, duplicate_of: str | None = None) -> list[dict]:
    """Every blocking finding disposed: defects rejected, or (with a previous round)
    marked duplicates of the same finding there; questions answered."""
    lines = []
    for f in findings:
        if f["class"] == "defect" and previous is not None:
            lines.append(rf.ledger_line(f["id"], "duplicate", of=f"{duplicate_of or previous}/{f['id']}"))
        elif f["class"] == "defect":
            lines.append(rf.ledger_line(f["id"], "rejected", evidence="covered by tests/test_main.py"))
        elif f["class"] == "requirement-question":
            lines.append(rf.ledger_line(f["id"], "answered", user_quote="yes, that is an error"))
    return lines


def long_series(repo: Path, rounds: int, *, open_last: bool = True) -> tuple[Path, list[str]]:
    """`rounds` code rounds of 50 findings, each defect a duplicate of the previous
    round's; the last round's blocking findings stay open unless open_last is False.
    One round is written by the factory, the others are copies with their own name,
    start time and packet digest (so every round is counted and none is a rerun)."""
    series = Path(os.path.realpath(rf.fresh_series(repo)))
    findings = _findings()
    template = rf.make_round(series, "r0001", repo=repo, findings=findings, ledger=_dispositions(findings, None))
    record = json.loads((template / "round.json").read_text())
    names = ["r0001"]
    for n in range(2, rounds + 1):
        name = f"r{n:04d}"
        folder = series / name
        shutil.copytree(template, folder)
        started = f"2024-01-{1 + n // 1440:02d}T{(n // 60) % 24:02d}:{n % 60:02d}:00.000Z"
        data = dict(record, name=name, started_at=started, recorded_at=started, finished_at=started,
                    packet_sha256=f"{n:064x}")
        (folder / "round.json").write_text(json.dumps(data, indent=2))
        auto = [line for line in rf.read_jsonl(template / "ledger.jsonl") if line["auto"]]
        lines = auto + ([] if n == rounds and open_last else _dispositions(findings, names[-1]))
        (folder / "ledger.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
        names.append(name)
    return series, names


def _gate(capsys, repo: Path, series: Path, names: list[str]) -> dict:
    out = repo / "gates" / f"{series.name}.json"
    spar_main(["gate", *[str(series / name) for name in names], "--out", str(out)])
    capsys.readouterr()
    document = json.loads(out.read_text())
    for key in ("generated_at", "previous_gate_digest"):  # the time, and the same --out written before
        document.pop(key)
    return document


def test_rounds_are_read_and_judged_one_at_a_time(repo, capsys, monkeypatch):
    """The command hands the judgment each round as soon as it is read, and reads the
    next only then: no list of every round's records is ever built."""
    series, names = long_series(repo, 6)
    events: list[tuple[str, str]] = []
    read, add = gating.read_listed, judgement.Judgement.add

    def spy_read(arg, real):
        events.append(("read", os.path.basename(real)))
        return read(arg, real)

    def spy_add(self, item):
        events.append(("judge", item.name))
        return add(self, item)

    monkeypatch.setattr(gating, "read_listed", spy_read)
    monkeypatch.setattr(judgement.Judgement, "add", spy_add)
    document = _gate(capsys, repo, series, names)
    assert events == [(step, name) for name in names for step in ("read", "judge")]
    assert document["findings"]["defect"] == len(names) * 20  # every round was judged


def _peak_bytes(capsys, repo: Path, series: Path, names: list[str]) -> int:
    tracemalloc.start()
    try:
        _gate(capsys, repo, series, names)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.slow  # gates over 40 and 160 rounds, traced by tracemalloc
def test_memory_does_not_grow_with_the_rounds(repo, capsys):
    """Peak memory of the whole gate at 40 and at 160 rounds of 50 findings: what grows
    is the gate file's own rounds[] and a few hundred bytes per round, far below one
    round's records (which a judgment holding every round would keep per round)."""
    small, small_names = long_series(repo, 40)
    large, large_names = long_series(repo, 160)
    _gate(capsys, repo, small, small_names)  # first use: imports and caches are not counted
    low = _peak_bytes(capsys, repo, small, small_names)
    high = _peak_bytes(capsys, repo, large, large_names)
    one_round = len((small / "r0001" / "findings.json").read_bytes()) + len((small / "r0001" / "round.json").read_bytes())
    per_round = (high - low) / (len(large_names) - len(small_names))
    assert per_round < one_round / 8, (low, high, per_round, one_round)


def test_a_duplicate_of_a_round_no_longer_held_is_read_again(repo, capsys, monkeypatch):
    """Duplicates of a round far back (not among the recent rounds the judgment holds)
    are traced by reading that round again, and judged as with every round at hand."""
    rounds = duplicate_trace.DuplicateTracer.RECENT + 4
    series, names = long_series(repo, rounds, open_last=False)
    last = series / names[-1]
    findings = json.loads((last / "findings.json").read_text())
    lines = [line for line in rf.read_jsonl(last / "ledger.jsonl") if line["disposition"] != "duplicate"]
    lines += [line for line in _dispositions(findings, names[-2], duplicate_of=names[0])
              if line["disposition"] == "duplicate"]
    (last / "ledger.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    reloaded = calls_to(monkeypatch, gating, "_reload", lambda _series, name: name)
    document = _gate(capsys, repo, series, names)
    assert reloaded == [names[0]]  # once: then it is among the recent rounds again
    assert document["state"] == "passed", document["reasons"]
    # the round far back loses its dispositions: every duplicate of it is open now
    (series / names[0] / "ledger.jsonl").write_text("".join(
        line + "\n" for line in (series / names[0] / "ledger.jsonl").read_text().splitlines()
        if json.loads(line)["auto"]))
    reloaded.clear()
    document = _gate(capsys, repo, series, names)
    assert names[0] in reloaded
    assert f"{names[-1]}/claude-F4" in document["open"]
    assert (f"round {series / names[-1]}: finding claude-F4 (defect) is a duplicate of {names[0]}/claude-F4, "
            f"traced to {names[0]}/claude-F4, which has no standing disposition") in document["reasons"]


def test_a_duplicate_of_a_finding_disposed_in_a_round_at_hand_is_not_walked(repo, capsys, monkeypatch):
    """Most duplicates name a finding of the round before, disposed there or a duplicate
    whose chain is known to end disposed: the judgment settles each from the links at hand
    instead of walking, so a chain running back through every round is never walked; both
    judge as the walk would (RECENT 0: nothing at hand, every duplicate walked)."""
    series, names = long_series(repo, 4, open_last=False)
    walked = calls_to(monkeypatch, duplicate_trace, "trace", lambda start, *_: start)
    document = _gate(capsys, repo, series, names)
    # r0002's defects name r0001's rejected ones; each later round's name the round before's duplicates
    assert walked == []
    assert document["state"] == "passed", document["reasons"]
    monkeypatch.setattr(duplicate_trace.DuplicateTracer, "RECENT", 0)
    assert _gate(capsys, repo, series, names) == document
    assert {name for name, _fid in walked} == set(names[1:])


def test_a_chain_ending_open_is_walked_and_judged_as_without_links_at_hand(repo, capsys, monkeypatch):
    """A chain whose end has no standing disposition is never settled from the links at
    hand: each of its duplicates is open, named with its first link and the chain's end."""
    series, names = long_series(repo, 4, open_last=False)
    first = series / names[0] / "ledger.jsonl"
    first.write_text("".join(line + "\n" for line in first.read_text().splitlines()
                             if json.loads(line)["disposition"] != "rejected"))
    document = _gate(capsys, repo, series, names)
    assert document["state"] == "blocked"
    assert f"{names[-1]}/claude-F4" in document["open"]
    assert (f"round {series / names[-1]}: finding claude-F4 (defect) is a duplicate of {names[-2]}/claude-F4, "
            f"traced to {names[0]}/claude-F4, which has no standing disposition") in document["reasons"]
    monkeypatch.setattr(duplicate_trace.DuplicateTracer, "RECENT", 0)
    assert _gate(capsys, repo, series, names) == document


DUPLICATE_SCENARIOS = [s for s in SCENARIOS if "duplicate" in s["name"]]


@pytest.mark.parametrize("scenario", DUPLICATE_SCENARIOS, ids=[s["name"] for s in DUPLICATE_SCENARIOS])
def test_holding_no_round_judges_the_same(repo, capsys, monkeypatch, scenario):
    """With no recent round held, every duplicate link is traced by reading its round
    again; with the list reversed, links lead into rounds not read yet and are traced
    at the end. Both give the document of the plain run."""
    series = build_series(repo, scenario)
    names = scenario.get("list") or [r["name"] for r in scenario["rounds"]]
    plain = _gate(capsys, repo, series, names)
    monkeypatch.setattr(duplicate_trace.DuplicateTracer, "RECENT", 0)
    assert _gate(capsys, repo, series, names) == plain
    monkeypatch.undo()
    backwards = _gate(capsys, repo, series, names[::-1])
    for key in ("rounds", "reasons", "open"):
        backwards.pop(key), plain.pop(key)
    assert backwards == plain


def test_links_hold_each_finding_and_its_standing_line():
    """What a duplicate trace reads of a round: every finding, with its latest ledger
    line or None; lines about findings that are not there, or naming none, are left out."""
    findings = [{"id": "claude-F1"}, {"id": "claude-F2"}, {"id": "codex-F1"}]
    first = {"finding": "claude-F1", "disposition": "rejected"}
    latest = {"finding": "claude-F1", "disposition": "duplicate", "of": "r1/claude-F9"}
    answered = {"finding": "codex-F1", "disposition": "answered"}
    assert judgement.links_of(findings, [first, answered, latest]) == {
        "claude-F1": latest, "claude-F2": None, "codex-F1": answered}
    stray = [{"finding": "gone-F1", "disposition": "rejected"}, {"disposition": "rejected"}, {"finding": ["x"]}]
    assert judgement.links_of(findings, [first, *stray]) == {"claude-F1": first, "claude-F2": None, "codex-F1": None}
