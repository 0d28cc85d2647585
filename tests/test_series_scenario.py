"""Issue 13 point 6, measured end to end as a user would: two rounds of a series with
real `spar run` (a fake `claude` CLI and a `command` reviewer: two vendors), triage,
`spar triage --repeats`, the gate and `spar cap-report`."""

from __future__ import annotations

import json

import pytest

from tests.gitrepo import commit
from tests.runsetup import finding, make_setup, result

pytestmark = pytest.mark.slow

SHOP = {n: f"value_{n} = {n}\n" for n in range(1, 51)}


def shop(lines: dict[int, str], top: int = 0) -> str:
    return "".join(f"# header {n}\n" for n in range(1, top + 1)) + "".join(lines[n] for n in sorted(lines))


def item(fid, line, claim, cls="defect", **kw):
    values = {"introduced_by_change": "yes", "regression": "yes"}  # a defect without a link stays one
    values.update(kw)
    return finding(id=fid, location=f"head/shop.py:{line}", claim=claim, proposed_class=cls,
                   link_kind="none", link="", **values)


def load(path):
    return json.loads(path.read_text(encoding="utf-8"))


def ledger(round_dir):
    return [json.loads(x) for x in (round_dir / "ledger.jsonl").read_text().splitlines() if x.strip()]


def test_a_series_converges(tmp_path):
    s = make_setup(tmp_path)
    h1 = commit(s.repo, {"shop.py": shop(SHOP)}, message="shop")
    series = s.repo / "reviews"
    r1, r2 = series / "r1", series / "r2"

    def reviewers(claude_findings, house_findings, head):
        s.scenario({"claude": {"result": result(head=head, findings=claude_findings)}})
        s.configure([{"name": "claude", "preset": "claude"}, s.answer_reviewer("house", result(findings=house_findings))])

    # ---- round 1: five findings, two of them the same defect seen by both vendors
    reviewers([item("c1", 10, "total() ignores the discount for bulk orders"),
               item("c2", 20, "refund() accepts a negative amount")],
              [item("h1", 21, "Negative refund amounts are accepted by refund"),
               item("h2", 30, "Should prices be rounded half-up or half-even?", cls="requirement-question",
                    introduced_by_change="no", regression="no"),
               item("h3", 40, "log_order writes the card number to the log")], h1)
    run1 = s.run("--base", s.base, out="reviews/r1")
    assert run1.returncode == 0, run1.stderr.decode()
    f1 = {f["id"]: f for f in load(r1 / "findings.json")}
    assert sorted(f1) == ["claude-F1", "claude-F2", "house-F1", "house-F2", "house-F3"]
    assert f1["claude-F2"]["corroborated_by"] == ["house-F1"] and f1["claude-F2"]["vendor_count"] == 2
    assert f1["house-F1"]["corroborated_by"] == ["claude-F2"] and f1["house-F1"]["vendor_count"] == 2
    assert all(f["repeat_of"] is None for f in f1.values())
    assert all(f1[i]["corroborated_by"] == [] for i in ("claude-F1", "house-F2", "house-F3"))
    assert "memory_sha256" not in load(r1 / "round.json") and not (r1 / "memory.md").exists()
    summary1 = (r1 / "summary.md").read_text()
    # the group comes first
    rows = [line.split(" | ")[0][2:] for line in summary1.splitlines() if line.startswith("| ") and "-F" in line]
    assert rows[:2] == ["claude-F2", "house-F1"]
    assert "| house-F1 (2 vendors) |" in summary1

    # ---- triage: a fix in a commit that moves every line down by 3 and changes line 10
    fixed = {**SHOP, 10: "value_10 = 10  # discount applied\n"}
    h2 = commit(s.repo, {"shop.py": shop(fixed, top=3)}, message="fix total")
    for args in (["claude-F1", "--to", "fixed", "--commit", h2, "--failed-before", "test_bulk failed",
                  "--passed-after", "test_bulk passes"],
                 ["claude-F2", "--to", "rejected", "--evidence", "refund() checks the sign on line 19"],
                 ["house-F1", "--to", "rejected", "--evidence", "same as claude-F2"],
                 ["house-F2", "--to", "answered", "--user-quote", "half-even, like the bank"],
                 ["house-F3", "--to", "deferred", "--user-quote", "we fix logging next sprint"]):
        done = s.spar("triage", "reviews/r1", *args)
        assert done.returncode == 0, done.stderr.decode()

    # ---- round 2: the rejected and deferred ones again, reworded at shifted lines, plus three new
    reviewers([item("c1", 23, "refund() does not refuse negative amounts"),
               item("c2", 13, "total() applies the bulk discount twice"),
               item("c3", 16, "add_item() accepts a zero quantity")],
              [item("h1", 43, "Card numbers end up in the order log"),
               item("h2", 48, "cancel() never releases the reserved stock")], h2)
    run2 = s.run("--base", s.base, out="reviews/r2")
    assert run2.returncode == 0, run2.stderr.decode()
    rj2 = load(r2 / "round.json")
    assert rj2["counted"] is True

    # what the reviewers received: the memory after the packet, with locations mapped
    memory = (r2 / "memory.md").read_text()
    received = (s.answers / "house.received").read_text()
    packet = (r2 / "packet.md").read_text()
    assert received.endswith(memory) and received.startswith(packet)
    assert "Already decided" not in packet and "## Changes since round r1" in packet
    assert f"`{h1}`" in packet.split("## Changes since round r1")[1]
    import hashlib
    assert rj2["memory_sha256"] == hashlib.sha256(memory.encode()).hexdigest()
    assert rj2["packet_sha256"] == hashlib.sha256(packet.encode()).hexdigest()
    assert memory.count("\n### ") == 5
    # the claude CLI got it on stdin: input.md records exactly what it read
    claude_input = (r2 / "claude" / "input.md").read_bytes()
    assert claude_input.decode().startswith(packet) and claude_input.decode().endswith(memory)
    (call,) = [c for c in s.fake_calls() if c["prog"] == "claude" and c["argv"] != ["--version"]][-1:]
    assert call["stdin_sha256"] == hashlib.sha256(claude_input).hexdigest()
    assert "`head/shop.py:23` (in round `r1`: `head/shop.py:20`)" in memory
    assert "`head/shop.py:10` in round `r1`; those lines are gone at this head" in memory
    assert "half-even, like the bank" in memory and "Do not raise one of them again" in memory
    assert memory.index("r1/claude-F1") < memory.index("r1/house-F3")

    f2 = {f["id"]: f for f in load(r2 / "findings.json")}
    assert f2["claude-F1"]["repeat_of"]["round"] == "r1"
    assert f2["claude-F1"]["repeat_of"]["finding"] in ("claude-F2", "house-F1")
    assert f2["claude-F1"]["repeat_of"]["disposition"] == "rejected"
    assert f2["house-F1"]["repeat_of"] == {"round": "r1", "finding": "house-F3", "disposition": "deferred"}
    for new in ("claude-F2", "claude-F3", "house-F2"):
        assert f2[new]["repeat_of"] is None, new  # claude-F2 is at the fixed (changed) line: not a repeat
    summary2 = (r2 / "summary.md").read_text()
    assert "r1/house-F3 (deferred)" in summary2

    # ---- gate blocked, then --repeats settles the repeats, then the new findings by hand
    gate = s.spar("gate", "reviews/r1", "reviews/r2", "--out", "reviews/gate.json")
    assert gate.returncode == 1
    assert sorted(load(series / "gate.json")["open"]) == sorted(f"r2/{i}" for i in f2)
    rep = s.spar("triage", "reviews/r2", "--repeats")
    assert rep.returncode == 0, rep.stderr.decode()
    out = rep.stdout.decode()
    target = f2["claude-F1"]["repeat_of"]["finding"]
    assert f"round r2: claude-F1 -> duplicate --of r1/{target} (rejected)" in out
    assert "round r2: house-F1 -> duplicate --of r1/house-F3 (deferred)" in out
    lines = ledger(r2)
    assert [(x["finding"], x["disposition"], x["of"]) for x in lines] == [
        ("claude-F1", "duplicate", f"r1/{target}"), ("house-F1", "duplicate", "r1/house-F3")]
    again = s.spar("triage", "reviews/r2", "--repeats")
    assert again.returncode == 0 and "no repeat to settle" in again.stdout.decode()
    assert "claude-F1: left alone, it is duplicate already" in again.stdout.decode()
    assert len(ledger(r2)) == 2
    for args in (["claude-F2", "--to", "rejected", "--evidence", "the discount is applied once, see test_bulk"],
                 ["claude-F3", "--to", "deferred", "--user-quote", "zero quantities are fine for now"],
                 ["house-F2", "--to", "rejected", "--evidence", "cancel() calls release() on line 50"]):
        assert s.spar("triage", "reviews/r2", *args).returncode == 0
    gate = s.spar("gate", "reviews/r1", "reviews/r2", "--out", "reviews/gate.json")
    assert gate.returncode == 0, load(series / "gate.json")["reasons"]

    # ---- cap-report shows the numbers
    report = s.spar("cap-report", "reviews", "--format", "json")
    assert report.returncode == 0, report.stderr.decode()
    doc = json.loads(report.stdout)
    conv = {r["name"]: r["convergence"] for r in doc["rounds"]}
    assert conv == {"r1": {"new": 5, "repeat": 0, "corroborated": 2, "groups": 1},
                    "r2": {"new": 3, "repeat": 2, "corroborated": 0, "groups": 0}}
    (code,) = [v for v in doc["verdicts"] if v["stage"] == "code"]
    assert (code["state"], code["new_per_round"]) == ("converges", [5, 3])
    board = {b["name"]: b for b in doc["scoreboard"]}
    assert board["claude"]["raised"] == 5 and board["house"]["raised"] == 5
    assert board["claude"]["ended"] == {"fixed": 1, "answered": 0, "rejected": 2, "duplicate": 1, "deferred": 1,
                                        "open": 0}
    assert board["house"]["ended"] == {"fixed": 0, "answered": 1, "rejected": 2, "duplicate": 1, "deferred": 1,
                                       "open": 0}
    assert board["claude"]["share_fixed_or_answered"] == 0.2 and board["house"]["share_fixed_or_answered"] == 0.2
    assert board["claude"]["presets"] == ["claude"] and board["house"]["presets"] == ["command"]
    # time and cost per fixed or answered finding: the attempts' usage over the series / 1
    for name in ("claude", "house"):
        usages = [a["usage"] for rd in (r1, r2) for r in load(rd / "round.json")["reviewers"] if r["name"] == name
                  for a in r["attempts"]]
        assert board[name]["seconds_per_fixed_or_answered"] == round(sum(u["duration_seconds"] for u in usages), 3)
        costs = [u["cost_usd"] for u in usages if u["cost_usd"] is not None]
        assert board[name]["cost_per_fixed_or_answered"] == (round(sum(costs), 6) if costs else None)
    assert board["house"]["cost_per_fixed_or_answered"] is None  # a command reviewer reports no cost
    md = s.spar("cap-report", "reviews").stdout.decode()
    assert "- code: converges (new findings per round: 5, 3)" in md
    assert "| r2 | code | 3 | 2 | 0 | 0 |" in md
    assert "| house | command | 5 | 0 | 1 | 2 | 1 | 1 | 0 | 20% |" in md


def test_a_triage_between_a_round_and_its_rerun_keeps_the_rerun_free(tmp_path):
    """The memory changes with the triage; packet_sha256 does not, so the rerun is not counted."""
    s = make_setup(tmp_path)
    s.configure([s.answer_reviewer("house", result()), s.answer_reviewer("flaky", result(), exit_code=3)])
    first = s.run(out="reviews/r1")
    assert first.returncode == 1
    assert s.spar("triage", "reviews/r1", "house-F1", "--to", "rejected", "--evidence", "b is checked").returncode == 0
    s.configure([s.answer_reviewer("flaky", result())])
    rerun = s.run(out="reviews/r1-rerun")
    assert rerun.returncode == 0, rerun.stderr.decode()
    rj1, rj2 = load(s.repo / "reviews/r1/round.json"), load(s.repo / "reviews/r1-rerun/round.json")
    assert rj2["counted"] is False and rj2["packet_sha256"] == rj1["packet_sha256"]
    assert "memory_sha256" not in rj1 and rj2["memory_sha256"]
    assert "b is checked" in (s.repo / "reviews/r1-rerun/flaky/input.md").read_text()
    assert "## Changes since" not in (s.repo / "reviews/r1-rerun/packet.md").read_text()  # same head
    # the rerun's finding repeats the rejected one
    (f,) = load(s.repo / "reviews/r1-rerun/findings.json")
    assert f["repeat_of"] == {"round": "r1", "finding": "house-F1", "disposition": "rejected"}
