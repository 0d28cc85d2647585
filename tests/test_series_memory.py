"""Series memory text, the "changes since" packet section, triage --repeats, spar record's
corroboration, and rounds written before series memory (they read, gate and report as before)."""

from __future__ import annotations

import json

import pytest

from spar.cli import main as spar_main
from spar.judge.convergence import round_convergence, stage_verdict
from spar.judge.similar import Place
from spar.round.history import PastFinding
from spar.round.memory import MEMORY_LIMIT, TEXT_LIMIT, render_memory
from spar.round.packet import DIFF_LIMIT
from tests import roundfactory as rf
from tests.gitrepo import git
from tests.runsetup import make_setup, result
from tests.test_packet import headings, packet

# ---------------------------------------------------------------- memory text


MOVED, WAS = Place("head", "a.py", 5, 5), Place("head", "a.py", 2, 2)


def past(round_name, n, disposition, *, order=0, place=MOVED, was=WAS, claim="x is wrong", **line):
    standing = None if disposition is None else {"finding": f"r-F{n}", "disposition": disposition, **line}
    f = {"id": f"r-F{n}", "reviewer": "r", "class": "defect", "claim": claim, "location": "head/a.py:2"}
    return PastFinding(round_name, order, n, f, standing, was, place)


def test_memory_lists_decided_findings_with_what_decided_them():
    text = render_memory([
        past("r2", 1, "fixed", order=1, commit="c" * 40, failed_before="t1 failed", passed_after="t1 passes"),
        past("r2", 2, None, order=1),  # no decision: not in the memory
        past("r1", 1, "rejected", evidence="it is checked on line 3"),
        past("r1", 2, "deferred", user_quote="later, says Ann", place=None),
        past("r1", 3, "deferred", auto=True, place=Place("head", "a.py", 2, 2)),
        past("r1", 4, "answered", user_quote="half-even", was=None, place=None),
        past("r1", 5, "duplicate", of="r1/r-F1"),
    ])
    assert text.startswith("## Already decided in this series\n\n")
    assert "Do not raise one of them again unless you have new evidence" in text
    titles = [line for line in text.splitlines() if line.startswith("### ")]
    assert titles == ["### 1. `r2/r-F1`: fixed", "### 2. `r1/r-F1`: rejected", "### 3. `r1/r-F2`: deferred",
                      "### 4. `r1/r-F3`: deferred", "### 5. `r1/r-F4`: answered", "### 6. `r1/r-F5`: duplicate"]
    assert f"Fixed by commit `{'c' * 40}`" in text and "t1 failed" in text and "t1 passes" in text
    assert "it is checked on line 3" in text and "later, says Ann" in text and "half-even" in text
    assert "Deferred automatically" in text and "A duplicate of `r1/r-F1`." in text
    assert "- Location: `head/a.py:5` (in round `r2`: `head/a.py:2`)" in text
    assert "- Location: `head/a.py:2` in round `r1`; those lines are gone at this head" in text
    assert "- Location: `head/a.py:2`\n" in text  # did not move
    assert "- Location: `head/a.py:2` in round `r1` (spar cannot place it at this head)" in text
    assert render_memory([past("r1", 1, None)]) == ""


def test_memory_is_bounded_and_counts_what_it_leaves_out():
    long_claim = "y" * (TEXT_LIMIT + 500)
    many = [past("r1", n, "rejected", evidence="e" * 900, claim=long_claim) for n in range(1, 200)]
    text = render_memory(many)
    assert len(text.encode()) <= MEMORY_LIMIT
    shown = text.count("\n### ")
    assert 0 < shown < 199
    assert text.rstrip("\n").endswith(f"{199 - shown} older decisions of this series are left out to keep this "
                                      f"section under {MEMORY_LIMIT // 1024} KiB.")
    assert "y" * TEXT_LIMIT + " […]" in text and "y" * (TEXT_LIMIT + 1) not in text


# ---------------------------------------------------------------- packet: changes since the last round


def test_changes_since_section_follows_the_subject_and_is_cut_like_the_diff():
    assert "## Changes since" not in packet()
    text = packet(since_round="r1", since_head="d" * 40, since_stat=" a.py | 1 +\n", since_diff=b"+x\n")
    assert headings(text).index("## Changes since round r1") == headings(text).index("## Subject") + 1
    assert f"reviewed head `{'d' * 40}`" in text and " a.py | 1 +" in text
    big = b"".join(b"+line %d\n" % n for n in range(DIFF_LIMIT // 8))
    cut = packet(since_round="r1", since_head="d" * 40, since_stat="", since_diff=big)
    section = cut.split("## Changes since round r1")[1]
    assert f"of {len(big)} bytes shown" in section and "as they are now in `head/`" in section


# ---------------------------------------------------------------- triage --repeats


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    return rf.series_repo(tmp_path_factory.mktemp("memory"))[0]


def repeat(f, round_name, fid, disposition):
    f["repeat_of"] = {"round": round_name, "finding": fid, "disposition": disposition}
    return f


def _triage(capsys, *args):
    code = spar_main(["triage", *args])
    return code, capsys.readouterr()


def test_repeats_follow_duplicate_chains_and_leave_open_ones_alone(repo, capsys):
    series = rf.fresh_series(repo)
    rf.make_round(series, "r1", repo=repo, findings=[rf.finding("claude", 1), rf.finding("claude", 2),
                                                     rf.finding("codex", 1)],
                  ledger=[rf.ledger_line("claude-F1", "rejected", evidence="no"),
                          rf.ledger_line("codex-F1", "duplicate", of="r1/claude-F1")])
    r2 = rf.make_round(series, "r2", repo=repo, packet_text="r2\n", findings=[
        repeat(rf.finding("claude", 1), "r1", "codex-F1", "duplicate"),  # traced to a rejection
        repeat(rf.finding("claude", 2), "r1", "claude-F2", None),  # the earlier one is still open
        repeat(rf.finding("codex", 1), "r1", "claude-F1", "rejected"),
        rf.finding("codex", 2)])
    rf.make_round(series, "r3", repo=repo, packet_text="r3\n", ledger=[],
                  findings=[repeat(rf.finding("claude", 1), "r2", "claude-F1", None)])
    code, out = _triage(capsys, str(r2), "codex-F1", "--to", "rejected", "--evidence", "by hand")
    assert code == 0
    code, out = _triage(capsys, str(r2), "--repeats")
    assert code == 0, out.err
    assert out.out.splitlines() == [
        "round r2: claude-F1 -> duplicate --of r1/codex-F1 (rejected)",
        "round r2: claude-F2: left alone, r1/claude-F2 has no standing decision",
        "round r2: codex-F1: left alone, it is rejected already (repeat of r1/claude-F1)",
    ]
    lines = rf.read_jsonl(r2 / "ledger.jsonl")
    assert [(x["finding"], x["disposition"], x.get("of"), x["auto"]) for x in lines] == [
        ("codex-F1", "rejected", None, False), ("claude-F1", "duplicate", "r1/codex-F1", False)]
    # a repeat of a duplicate that is itself a settled repeat: traced through both rounds
    code, out = _triage(capsys, str(series / "r3"), "--repeats")
    assert out.out == "round r3: claude-F1 -> duplicate --of r2/claude-F1 (rejected)\n"
    gate = spar_main(["gate", str(series / "r1"), str(r2), str(series / "r3"), "--out",
                      str(repo / "gates" / f"{series.name}.json")])
    capsys.readouterr()
    report = json.loads((repo / "gates" / f"{series.name}.json").read_text())
    assert gate == 1 and report["open"] == ["r1/claude-F2", "r2/claude-F2", "r2/codex-F2"]


@pytest.mark.parametrize("args", [["claude-F1", "--repeats"], ["--repeats", "--to", "rejected"],
                                  ["--repeats", "--evidence", "x"], [], ["claude-F1"]])
def test_repeats_usage(repo, capsys, args):
    series = rf.fresh_series(repo)
    r1 = rf.make_round(series, "r1", repo=repo, findings=[rf.finding("claude", 1)])
    before = rf.snapshot(series)
    code, out = _triage(capsys, str(r1), *args)
    assert code == 64, out
    assert rf.snapshot(series) == before


def test_no_repeat_to_settle_writes_nothing(repo, capsys):
    series = rf.fresh_series(repo)
    r1 = rf.make_round(series, "r1", repo=repo, findings=[rf.finding("claude", 1)])
    before = rf.snapshot(series)
    code, out = _triage(capsys, str(r1), "--repeats")
    assert (code, out.out) == (0, "round r1: no repeat to settle\n")
    assert rf.snapshot(series) == before


# ---------------------------------------------------------------- spar record joins the round's groups


def native_answer(repo, claim):
    """A native reviewer's result with one defect on app/main.py:1."""
    return {"reviewed_head": git(repo, "rev-parse", "HEAD").strip(), "verdict": "blocking_findings",
            "angles_checked": [{"angle": a, "result": "ok"}
                               for a in ("criteria", "correctness", "checks", "contracts", "risk")],
            "angles_unchecked": [], "limits": "", "findings": [{
                "id": "N1", "proposed_class": "defect", "angle": "correctness", "location": "head/app/main.py:1",
                "claim": claim, "failure_scenario": "prints 2", "evidence": "line 1",
                "link_kind": "none", "link": "", "introduced_by_change": "yes", "regression": "yes",
                "check_impact": "none", "confidence": "high"}]}



def test_recorded_native_finding_is_corroborated_and_checked_for_repeats(repo, capsys, tmp_path):
    series = rf.fresh_series(repo)
    rf.make_round(series, "r0", repo=repo, findings=[rf.finding("codex", 1, path="app/main.py",
                                                                claim="main prints the wrong number")],
                  ledger=[rf.ledger_line("codex-F1", "rejected", evidence="2 is right")])
    r1 = rf.make_round(series, "r1", repo=repo, packet_text="r1\n",
                       reviewers=[rf.reviewer("claude"), rf.reviewer("native", status="awaiting_record")],
                       findings=[rf.finding("claude", 1, path="app/main.py", claim="main prints a wrong number")])
    answer = native_answer(repo, "The number main prints is wrong")
    path = tmp_path / "answer.json"
    path.write_text(json.dumps(answer))
    assert spar_main(["record", str(r1), "--reviewer", "native", "--result", str(path)]) == 0, capsys.readouterr()
    by_id = {f["id"]: f for f in json.loads((r1 / "findings.json").read_text())}
    assert by_id["native-F1"]["corroborated_by"] == ["claude-F1"] and by_id["native-F1"]["vendor_count"] == 2
    assert by_id["claude-F1"]["corroborated_by"] == ["native-F1"]
    assert by_id["native-F1"]["repeat_of"] == {"round": "r0", "finding": "codex-F1", "disposition": "rejected"}
    assert "| claude-F1 (2 vendors) | r0/codex-F1 (rejected) |" in (r1 / "summary.md").read_text()


# ---------------------------------------------------------------- rounds written before series memory


def test_old_rounds_read_gate_and_report_as_before(repo, capsys):
    """Rounds without memory_sha256, repeat_of, corroborated_by: the summary keeps its old
    table, the gate judges them as before, cap-report reports them with unknown convergence,
    and a new round still finds repeats of their findings."""
    series = rf.fresh_series(repo)
    old = rf.make_round(series, "old", repo=repo, findings=[rf.finding("claude", 1, claim="main prints 2")])
    assert _triage(capsys, str(old), "claude-F1", "--to", "rejected", "--evidence", "2 is right")[0] == 0
    summary = (old / "summary.md").read_text()
    assert "| id | class | angle | location | claim | link | disposition |" in summary
    assert "corroborated" not in summary and "repeat" not in summary
    gate_out = str(repo / "gates" / f"{series.name}.json")
    assert spar_main(["gate", str(old), "--out", gate_out]) == 0
    capsys.readouterr()
    assert spar_main(["cap-report", str(series), "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["rounds"][0]["convergence"] is None
    assert report["rounds"][0]["findings"] == {"defect": 1, "requirement-question": 0, "hardening": 0, "note": 0}
    assert report["verdicts"] == [{"stage": "code", "state": "unknown", "new_per_round": [],
                                   "text": "code: no round with known counts"}]
    assert report["scoreboard"][0]["ended"]["rejected"] == 1

    # a round recorded now, after the old one: its finding repeats the old one
    new = rf.make_round(series, "new", repo=repo, packet_text="new\n",
                        reviewers=[rf.reviewer("claude"), rf.reviewer("native", status="awaiting_record")])
    answer = native_answer(repo, "main prints 2, not 1")
    path = repo.parent / f"{series.name}-answer.json"
    path.write_text(json.dumps(answer))
    assert spar_main(["record", str(new), "--reviewer", "native", "--result", str(path)]) == 0
    capsys.readouterr()
    (f,) = json.loads((new / "findings.json").read_text())
    assert f["repeat_of"] == {"round": "old", "finding": "claude-F1", "disposition": "rejected"}
    assert _triage(capsys, str(new), "--repeats")[1].out == "round new: native-F1 -> duplicate --of old/claude-F1 (rejected)\n"
    assert spar_main(["gate", str(old), str(new), "--out", gate_out]) == 0
    capsys.readouterr()


@pytest.mark.slow
def test_an_earlier_head_that_is_gone_leaves_a_note_not_a_failure(tmp_path):
    """A series whose last round reviewed a commit the repository no longer has (rebased and
    pruned): the run still works; the packet says no diff can be shown; the memory lists the
    decision at its recorded location; nothing matches it."""
    s = make_setup(tmp_path)
    series = s.repo / "reviews"
    gone = "f" * 40
    rf.make_round(series, "old", repo=s.repo, base=s.base, head=gone, reviewers=[rf.reviewer("house")],
                  findings=[rf.finding("house", 1, path="calc.py", claim="divide by zero")],
                  ledger=[rf.ledger_line("house-F1", "rejected", evidence="b is checked")])
    s.configure([s.answer_reviewer("house", result())])
    run = s.run(out="reviews/r2")
    assert run.returncode == 0, run.stderr.decode()
    packet_text = (series / "r2" / "packet.md").read_text()
    assert f"`old`, reviewed head `{gone}`, which this repository no longer has" in packet_text
    memory = (series / "r2" / "memory.md").read_text()
    assert "`head/calc.py:1` in round `old` (spar cannot place it at this head)" in memory
    (f,) = json.loads((series / "r2" / "findings.json").read_text())
    assert f["repeat_of"] is None


@pytest.mark.parametrize("counts, state", [([], "unknown"), ([4], "unknown"), ([5, 3], "converges"),
                                           ([3, 3], "churns"), ([2, 4], "churns"), ([4, 0], "converges"),
                                           ([0, 0], "converges"), ([5, 1, 2], "churns")])
def test_stage_verdict(counts, state):
    verdict = stage_verdict("code", counts)
    assert verdict["state"] == state and verdict["new_per_round"] == counts
    assert verdict["text"].startswith(f"code: {'no' if state == 'unknown' else state}")


def test_round_convergence_counts_groups_once():
    findings = [
        {"id": "a-F1", "repeat_of": None, "corroborated_by": ["b-F1", "c-F1"]},
        {"id": "b-F1", "repeat_of": {"round": "r1", "finding": "x", "disposition": "rejected"},
         "corroborated_by": ["a-F1", "c-F1"]},
        {"id": "c-F1", "repeat_of": None, "corroborated_by": ["a-F1", "b-F1"]},
        {"id": "a-F2", "repeat_of": None, "corroborated_by": ["b-F2"]},
        {"id": "b-F2", "repeat_of": None, "corroborated_by": ["a-F2"]},
        {"id": "c-F2", "repeat_of": None, "corroborated_by": []},
    ]
    assert round_convergence(findings) == {"new": 5, "repeat": 1, "corroborated": 5, "groups": 2}
    assert round_convergence([{"id": "old-F1"}]) is None  # recorded before repeats existed
    assert round_convergence([]) == {"new": 0, "repeat": 0, "corroborated": 0, "groups": 0}
