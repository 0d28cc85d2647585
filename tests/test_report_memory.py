"""`spar cap-report` and `spar report` read a series round by round: memory grows with
the number of rounds by a small row each, not by every round's findings (issue 25,
"memory": 1,000 rounds x 50 findings peaked at 435 MiB for the report, 174 MiB for
cap-report; bench/report_memory.py measures the real figures)."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest

from spar.commands import cap_report, report
from spar.records import readers
from tests.roundfactory import finding, head_and_base, ledger_line, make_round, reviewer, series_repo

PER_ROUND = 50


def _series(tmp_path: Path, rounds: int) -> Path:
    """`rounds` recorded rounds of 50 findings each (25 per reviewer), half of them triaged,
    each with the file lists of a 1,000-file change (issue 24: the report's file table)."""
    repo, _ = series_repo(tmp_path)
    series = repo / "reviews" / f"long-{rounds}"
    base, head = head_and_base(repo)
    for n in range(rounds):
        found = [finding(name, k, cls=("defect", "note")[k % 2], claim=f"round {n}: problem {k} " + "x" * 200)
                 for name in ("claude", "codex") for k in range(1, PER_ROUND // 2 + 1)]
        ledger = [ledger_line(f["id"], "rejected", evidence="not a problem " * 10) for f in found[::2]
                  if f["class"] == "defect"]
        files, reviewers = _coverage(n)
        make_round(series, f"r{n:03d}", repo=repo, base=base, head=head, findings=found, ledger=ledger,
                   started_at=f"2024-01-01T{n // 60:02d}:{n % 60:02d}:00.000Z", reviewers=reviewers, extra=files)
    return series


def _coverage(n: int, changed: int = 1000) -> tuple[dict, list[dict]]:
    """A quarter of the files inline, a quarter opened by each reviewer, a quarter unseen."""
    paths = [f"src/round_{n:03d}/module_{k:04d}/file.py" for k in range(changed)]
    quarter = changed // 4
    reviewers = []
    for i, name in enumerate(("claude", "codex")):
        opened = paths[(i + 1) * quarter:(i + 2) * quarter]
        entry = reviewer(name)
        entry["attempts"] = [{"coverage": {"inline": quarter, "opened": len(opened), "changed_files": changed,
                                           "observed": True, "opened_files": opened}}]
        reviewers.append(entry)
    return {"changed_files": changed, "inline_files": paths[:quarter], "unseen": paths[3 * quarter:]}, reviewers


def _peak(work: Callable[[], object]) -> int:
    tracemalloc.start()
    try:
        work()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _one_round_of_findings(series: Path) -> int:
    first = readers.series_rounds(series)[0]
    return _peak(lambda: (readers.read_findings(first), readers.read_ledger(first)))


@pytest.fixture(scope="module")
def two_lengths(tmp_path_factory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("memory")
    return _series(tmp / "short", 8), _series(tmp / "long", 32)


@pytest.mark.slow  # reports over 8 and 32 rounds, traced by tracemalloc
@pytest.mark.parametrize("command", ["cap-report", "report"])
def test_memory_grows_by_a_row_per_round_not_by_its_findings(two_lengths, command, tmp_path, monkeypatch, capsys):
    """issue 25 memory: over a series of 8 and of 32 rounds of 50 findings, the peak grows
    by far less than one round's findings per added round (the series is streamed; the
    report keeps every finding of its latest rounds only: 4 here, the default being 20)."""
    short, long = two_lengths
    monkeypatch.setattr(report, "DETAIL_ROUNDS", 4, raising=False)

    def run(series: Path) -> Callable[[], object]:
        if command == "cap-report":
            return lambda: cap_report.main([str(series), "--format", "json"])
        return lambda: report.main([str(series), "--out", str(tmp_path / "report.html")])

    per_round = (_peak(run(long)) - _peak(run(short))) / (32 - 8)
    capsys.readouterr()
    if command == "report":  # the latest 4 rounds' file tables are drawn, 200 + 200 rows each
        page = (tmp_path / "report.html").read_text(encoding="utf-8")
        assert page.count('<section class="coverage"') == 4
        assert page.count('<tr class="unseen"') == page.count('<tr class="seen"') == 4 * 200
    findings = _one_round_of_findings(short)
    assert per_round < findings / 4, (per_round, findings)
