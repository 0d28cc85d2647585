"""A whole series walked as a user would, with real `spar` processes (issue 5).

Code round with a defect, a requirement-question and hardening, and a codex
reviewer refused by its quota -> gate blocked with every reason -> waiver of
the unavailable reviewer, triage answered and fixed -> a second round after
the fix -> gate passed -> a dry run (never a series round to list, blocked
when listed) -> a third round refused by the cap, extended, run -> cap-report
in both formats checked field by field. Then a round with native reviewers
recorded by hand from a Claude Code subagent transcript and a result file.
Runs on trio and asyncio.
"""

from __future__ import annotations

import json

import pytest

from spar import __version__
from tests.gitrepo import commit, git
from tests.runsetup import finding, make_setup, result

pytestmark = pytest.mark.slow  # whole series through the real command line

CODEX_QUOTA = "You've hit your usage limit. Upgrade to Pro or try again at 12:16 PM."


def _alpha_findings():
    return [
        # rule 5: introduced by the change and a regression -> defect
        finding(id="d1", location="head/calc.py:6", introduced_by_change="yes", regression="yes",
                link_kind="criterion", link="AC-2"),
        # rule 4: requirement-question
        finding(id="q1", proposed_class="requirement-question", location="head/calc.py:5", link_kind="none",
                link="", introduced_by_change="unknown", regression="unknown", claim="should divide round?"),
        # rule 3: in check paths -> hardening, deferred automatically
        finding(id="h1", proposed_class="hardening", location="head/tests/test_calc.py:9", link_kind="none",
                link="", introduced_by_change="no", regression="no", claim="no test for divide(1, 0)"),
    ]


def _codex_answers(setup, head: str) -> None:
    ok = result(head=head, findings=[], verdict="no_blocking_findings")
    setup.scenario({"codex": {"result": ok}})


def _gate(setup, *rounds: str, out: str = "reviews/gate.json"):
    proc = setup.spar("gate", *rounds, "--out", out)
    gate = json.loads((setup.repo / out).read_text())
    return proc, gate


def test_whole_series(tmp_path):
    s = make_setup(tmp_path)
    alpha = s.answer_reviewer("alpha", result(findings=_alpha_findings()))
    s.configure([alpha, {"name": "codex", "preset": "codex"}], timeout=60)
    s.scenario({"codex": {"refusal": CODEX_QUOTA}})

    # ---- round 1: alpha completes with three findings, codex refused by quota
    proc = s.run("--criteria", "docs/criteria.md", out="reviews/r1")
    assert proc.returncode == 1, proc.stderr.decode()
    r1 = s.repo / "reviews/r1"
    rj = json.loads((r1 / "round.json").read_text())
    by_name = {r["name"]: r for r in rj["reviewers"]}
    assert by_name["alpha"]["status"] == "completed"
    assert by_name["codex"]["status"] == "unavailable"
    assert by_name["codex"]["reason"].startswith("quota or rate limit: ")
    assert by_name["codex"]["resets"] == "12:16 PM"
    assert rj["counted"] is True and "finished_at" in rj
    findings = {f["id"]: f for f in json.loads((r1 / "findings.json").read_text())}
    assert {k: f["class"] for k, f in findings.items()} == {
        "alpha-F1": "defect", "alpha-F2": "requirement-question", "alpha-F3": "hardening"}
    assert findings["alpha-F3"]["in_check_paths"] is True
    ledger = [json.loads(l) for l in (r1 / "ledger.jsonl").read_text().splitlines()]
    assert [(l["finding"], l["disposition"], l["auto"]) for l in ledger] == [("alpha-F3", "deferred", True)]

    # ---- gate: blocked by the missing reviewer and both open findings
    proc, gate = _gate(s, "reviews/r1")
    assert proc.returncode == 1, proc.stderr.decode()
    assert gate["schema"] == "review-gate/v1" and gate["state"] == "blocked"
    assert gate["reasons"] == [
        f"round reviews/r1: required reviewer codex neither completed nor was waived "
        f"(unavailable: {by_name['codex']['reason']})",
        "round reviews/r1: finding alpha-F1 (defect) has no standing disposition",
        "round reviews/r1: finding alpha-F2 (requirement-question) has no standing disposition"]
    assert (gate["required_reviewers"], gate["completed"], gate["waived"]) == (["alpha", "codex"], ["alpha"], [])
    assert gate["open"] == ["r1/alpha-F1", "r1/alpha-F2"]
    assert gate["findings"] == {"defect": 1, "requirement-question": 1, "hardening": 1, "note": 0}
    assert gate["auto_deferred"] == 1
    assert gate["previous_gate_digest"] is None
    first_gate_bytes = (s.repo / "reviews/gate.json").read_bytes()

    # ---- the user waives codex, answers the question; the defect gets fixed
    assert s.spar("waive", "reviews/r1", "--reviewer", "codex",
                  "--user-quote", "codex is out of quota today, go on").returncode == 0
    assert s.spar("triage", "reviews/r1", "alpha-F2", "--to", "answered",
                  "--user-quote", "no rounding, plain float").returncode == 0
    fixed = {"calc.py": "def add(a, b):\n    return a + b\n\n\ndef divide(a, b):\n"
                        "    if b == 0:\n        raise ValueError(\"b must not be 0\")\n    return a / b\n"}
    head2 = commit(s.repo, fixed, message="divide refuses 0")
    proc = s.spar("triage", "reviews/r1", "alpha-F1", "--to", "fixed", "--commit", head2[:10],
                  "--failed-before", "test_divide_zero failed", "--passed-after", "test_divide_zero passes")
    assert proc.returncode == 0, proc.stderr.decode()
    ledger = [json.loads(l) for l in (r1 / "ledger.jsonl").read_text().splitlines()]
    assert ledger[-1]["commit"] == head2  # resolved to the full commit ID

    # ---- round 2 after the fix: both reviewers complete, no findings
    s.configure([s.answer_reviewer("alpha", result(findings=[], verdict="no_blocking_findings")),
                 {"name": "codex", "preset": "codex"}], timeout=60)
    _codex_answers(s, head2)
    proc = s.run("--criteria", "docs/criteria.md", "--base", s.base, out="reviews/r2")
    assert proc.returncode == 0, proc.stderr.decode()

    proc, gate = _gate(s, "reviews/r1", "reviews/r2")
    assert proc.returncode == 0, (proc.stderr.decode(), gate["reasons"])
    assert gate["state"] == "passed" and gate["reasons"] == []
    assert gate["head"] == head2 and gate["base"] == s.base
    assert [r["name"] for r in gate["rounds"]] == ["r1", "r2"]
    assert all(r["counted"] for r in gate["rounds"])
    assert gate["required_reviewers"] == ["alpha", "codex"] and gate["completed"] == ["alpha", "codex"]
    assert gate["open"] == []
    import hashlib
    assert gate["previous_gate_digest"] == hashlib.sha256(first_gate_bytes).hexdigest()

    assert gate["waived"] == []  # r2 is another input than r1: r1's waiver is not r2's

    # a dry run: never a series round to list, always blocked when listed
    proc = s.run("--criteria", "docs/criteria.md", "--base", s.base, "--dry-run", out="reviews/d1")
    assert proc.returncode == 0, proc.stderr.decode()
    assert json.loads((s.repo / "reviews/d1/round.json").read_text())["dry_run"] is True
    proc, gate = _gate(s, "reviews/r1", "reviews/r2", out="reviews/gate-dry.json")
    assert proc.returncode == 0, gate["reasons"]
    proc, gate = _gate(s, "reviews/r1", "reviews/r2", "reviews/d1", out="reviews/gate-dry.json")
    assert proc.returncode == 1
    assert gate["reasons"] == ["round reviews/d1 is a dry run; a dry run is not a review: leave it out of the "
                               "list (spar gate --series leaves dry runs out)"]

    # a series round left out of the list blocks
    proc, gate = _gate(s, "reviews/r2", out="reviews/gate-partial.json")
    assert proc.returncode == 1
    assert any("round r1 of the series is not in the gate list" in r for r in gate["reasons"])

    # ---- round 3: the code cap (2) is reached; extend by one, then it runs
    head3 = commit(s.repo, {"README.md": "calc\n"}, message="docs")
    _codex_answers(s, head3)
    proc = s.run("--criteria", "docs/criteria.md", "--base", s.base, out="reviews/r3")
    assert proc.returncode == 65
    err = proc.stderr.decode()
    assert "spar extend" in err and "2" in err
    assert not (s.repo / "reviews/r3").exists()
    proc = s.spar("extend", "reviews", "--stage", "code", "--by", "1", "--cause", "churn",
                  "--reason", "docs-only change after the fix")
    assert proc.returncode == 0, proc.stderr.decode()
    proc = s.run("--criteria", "docs/criteria.md", "--base", s.base, out="reviews/r3")
    assert proc.returncode == 0, proc.stderr.decode()

    # ---- cap-report, JSON field by field
    proc = s.spar("cap-report", "reviews", "--format", "json")
    assert proc.returncode == 0, proc.stderr.decode()
    report = json.loads(proc.stdout)
    (ext_line,) = [json.loads(l) for l in (s.repo / "reviews/extensions.jsonl").read_text().splitlines()]
    started = {n: json.loads((s.repo / "reviews" / n / "round.json").read_text())["started_at"]
               for n in ("r1", "r2", "d1", "r3")}
    zero = {"defect": 0, "requirement-question": 0, "hardening": 0, "note": 0}

    def row(name, head, statuses, findings, new, counted=True, dry=False, convergence=None):
        return {"name": name, "stage": "code", "head": head, "base": s.base, "started_at": started[name],
                "counted": counted, "dry_run": dry, "recorded": not dry,
                "reviewers": [{"name": "alpha", "preset": "command", "status": statuses[0]},
                              {"name": "codex", "preset": "codex", "status": statuses[1]}],
                "findings": findings, "new_defects": new, "convergence": convergence, "groups": []}

    # usage (what each attempt took) is checked against the attempts on record, then set aside
    attempts = {(n, r["name"]): r["attempts"] for n in started
                for r in json.loads((s.repo / "reviews" / n / "round.json").read_text())["reviewers"]}
    for r in report["rounds"]:
        for v in r["reviewers"]:
            assert v.pop("attempts") == len(attempts[(r["name"], v["name"])])
            assert set(v.pop("usage")) == {"duration_seconds", "input_tokens", "cached_input_tokens",
                                           "output_tokens", "cost_usd"}
    alpha_seconds = sum(a["usage"]["duration_seconds"] for (_, name), tried in attempts.items() if name == "alpha"
                        for a in tried)
    assert report.pop("usage")["reviewers"][0]["duration_seconds"] == pytest.approx(alpha_seconds, abs=1e-3)
    board = report.pop("scoreboard")
    assert board[0].pop("seconds_per_fixed_or_answered") == pytest.approx(alpha_seconds / 2, abs=1e-3)
    assert board == [
        {"name": "alpha", "presets": ["command"], "raised": 3,
         "ended": {"fixed": 1, "answered": 1, "rejected": 0, "duplicate": 0, "deferred": 1, "open": 0},
         "fixed_or_answered": 2, "share_fixed_or_answered": 0.667, "cost_per_fixed_or_answered": None},
        {"name": "codex", "presets": ["codex"], "raised": 0,
         "ended": {"fixed": 0, "answered": 0, "rejected": 0, "duplicate": 0, "deferred": 0, "open": 0},
         "fixed_or_answered": 0, "share_fixed_or_answered": None, "seconds_per_fixed_or_answered": None,
         "cost_per_fixed_or_answered": None},
    ]
    assert report.pop("noise") == {"verified_rounds": 0, "reviewers": []}  # no round was verified
    nothing = {"new": 0, "repeat": 0, "corroborated": 0, "groups": 0}

    no_cause = {"extensions": 0, "by": 0}
    assert report == {
        "schema": "cap-report/v1",
        "series": str((s.repo / "reviews").resolve()),
        "spar_version": __version__,
        "caps_from": "r3",
        "stages": [
            {"stage": "plan", "project_cap": 2, "extended_by": 0, "cap": 2, "counted": 0, "counted_rounds": [],
             "remaining": 2, "extensions": []},
            {"stage": "plan-delta", "project_cap": 1, "extended_by": 0, "cap": 1, "counted": 0, "counted_rounds": [],
             "remaining": 1, "extensions": []},
            {"stage": "code", "project_cap": 2, "extended_by": 1, "cap": 3, "counted": 3,
             "counted_rounds": ["r1", "r2", "r3"], "remaining": 0,
             "extensions": [{"by": 1, "cause": "churn", "reason": "docs-only change after the fix",
                             "at": ext_line["at"]}]},
        ],
        "rounds": [
            row("r1", s.head, ("completed", "unavailable"), {"defect": 1, "requirement-question": 1, "hardening": 1,
                                                           "note": 0}, 1, convergence=dict(nothing, new=3)),
            row("r2", head2, ("completed", "completed"), zero, 0, convergence=nothing),
            row("d1", head2, ("pending", "pending"), None, None, counted=False, dry=True),
            row("r3", head3, ("completed", "completed"), zero, 0, convergence=nothing),
        ],
        "code_extension_causes": {"churn": {"extensions": 1, "by": 1}, "recurring": no_cause, "unrelated": no_cause,
                                  "hardening": no_cause, "other": no_cause, "no_recorded_cause": no_cause},
        "verdicts": [{"stage": "code", "state": "converges", "new_per_round": [3, 0, 0],
                      "text": "code: converges (new findings per round: 3, 0, 0)"}],
        "unfinished": [],
        # each recorded round's reviewers completed with the whole diff inline (issue 24)
        "coverage": {"rounds": 3, "changed_files": 7, "unseen": 0},
    }

    # ---- cap-report, Markdown for people: a table per stage with the same numbers
    proc = s.spar("cap-report", "reviews")
    assert proc.returncode == 0
    series = (s.repo / "reviews").resolve()
    header = "| round | head | counted | reviewers | defect | requirement-question | hardening | note | new defects |"
    rule = "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
    done = "alpha: completed, codex: completed"
    text = proc.stdout.decode()
    assert text.startswith("\n".join([
        f"# Cap report: {series}", "", "Project caps as applied by round r3.", "",
        "## plan", "", "Cap 2 (project 2, extended by 0); 0 counted, 2 remaining.", "", "No rounds.", "",
        "## plan-delta", "", "Cap 1 (project 1, extended by 0); 0 counted, 1 remaining.", "", "No rounds.", "",
        "## code", "", "Cap 3 (project 2, extended by 1); 3 counted, 0 remaining.", "",
        "| extension | cause | reason | at |", "| --- | --- | --- | --- |",
        f"| +1 | churn | docs-only change after the fix | {ext_line['at']} |", "",
        header, rule,
        f"| r1 | {s.head[:12]} | yes | alpha: completed, codex: unavailable | 1 | 1 | 1 | 0 | 1 |",
        f"| r2 | {head2[:12]} | yes | {done} | 0 | 0 | 0 | 0 | 0 |",
        f"| d1 | {head2[:12]} | dry run | alpha: pending, codex: pending | - | - | - | - | - |",
        f"| r3 | {head3[:12]} | yes | {done} | 0 | 0 | 0 | 0 | 0 |", "",
        "## Code extension causes", "", "| cause | extensions | rounds added |", "| --- | --- | --- |",
        "| churn | 1 | 1 |", "| recurring | 0 | 0 |", "| unrelated | 0 | 0 |", "| hardening | 0 | 0 |",
        "| other | 0 | 0 |", "| no recorded cause | 0 | 0 |", ""]))
    assert "\n## Convergence\n\n- code: converges (new findings per round: 3, 0, 0)\n" in text
    assert "\n| r1 | code | 3 | 0 | 0 | 0 |\n| r2 | code | 0 | 0 | 0 | 0 |\n| r3 | code | 0 | 0 | 0 | 0 |\n" in text
    assert "\n| alpha | command | 3 | 1 | 1 | 0 | 0 | 1 | 0 | 67% |" in text
    assert git(s.repo, "status", "--porcelain").strip() == ""  # records are ignored, never tracked


# ---------------------------------------------------------------------------- native reviewers

_SESSION = "5c0f3a52-8d0e-4d47-9a53-0a3c8f1e2b77"


class _Transcript:
    """A Claude Code subagent transcript as the host writes it (sidechain JSONL:
    uuid/parentUuid chain, tool_use blocks answered by tool_result lines)."""

    def __init__(self, cwd, agent: str, model: str = "claude-sonnet-4-5-20250929"):
        self.cwd, self.agent, self.model, self.lines, self.n = str(cwd), agent, model, [], 0

    def _line(self, kind: str, message: dict, **extra) -> None:
        self.n += 1
        line = {"parentUuid": self.lines[-1]["uuid"] if self.lines else None, "isSidechain": True,
                "userType": "external", "cwd": self.cwd, "sessionId": _SESSION, "version": "2.0.14",
                "gitBranch": "main", "agentId": self.agent, "type": kind, "message": message,
                "uuid": f"{self.agent}-{self.n:04d}", "timestamp": f"2025-10-01T10:00:{self.n:02d}.000Z"}
        line.update(extra)
        self.lines.append(line)

    def prompt(self, text: str) -> None:
        self._line("user", {"role": "user", "content": text})

    def tool(self, name: str, **inputs) -> None:
        tid = f"toolu_{self.agent}{self.n:04d}"
        self._line("assistant", {"model": self.model, "id": f"msg_{self.n}", "type": "message", "role": "assistant",
                                 "content": [{"type": "tool_use", "id": tid, "name": name, "input": inputs}],
                                 "stop_reason": None, "usage": {"input_tokens": 10, "output_tokens": 5}},
                   requestId=f"req_{self.n}")
        self._line("user", {"role": "user", "content": [{"tool_use_id": tid, "type": "tool_result",
                                                          "content": "     1\tdef add(a, b):\n"}]},
                   toolUseResult={"type": "text"})

    def answer(self, result_obj: dict) -> None:
        # the one G1 answer rule (spar/judge/answer.py): the last assistant text is the
        # object itself, as the packet's "How to report" asks; a fenced one is invalid_output
        text = json.dumps(result_obj, indent=2)
        self._line("assistant", {"model": self.model, "id": f"msg_{self.n}", "type": "message", "role": "assistant",
                                 "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
                                 "usage": {"input_tokens": 10, "output_tokens": 50}})

    def write(self, path) -> None:
        path.write_text("".join(json.dumps(line) + "\n" for line in self.lines), encoding="utf-8")


def test_native_reviewers_recorded_by_hand(tmp_path):
    """Real `spar run` with two native reviewers -> awaiting_record, exit 1 -> the
    host records one from its subagent's transcript alone (relative paths against
    the transcript's cwd, the answer as one JSON object) and one from --result plus
    a transcript with violations -> the gate follows each step."""
    s = make_setup(tmp_path)
    s.configure([s.answer_reviewer("alpha", result(findings=[], verdict="no_blocking_findings")),
                 {"name": "nat", "preset": "native"}, {"name": "nat2", "preset": "native"}], timeout=60)
    proc = s.run("--criteria", "docs/criteria.md", out="reviews/r1")
    assert proc.returncode == 1, proc.stderr.decode()
    r1 = s.repo / "reviews" / "r1"
    rj = json.loads((r1 / "round.json").read_text())
    assert [(r["name"], r["status"]) for r in rj["reviewers"]] == [
        ("alpha", "completed"), ("nat", "awaiting_record"), ("nat2", "awaiting_record")]
    assert rj["recorded_at"] and "finished_at" not in rj
    assert (r1 / "nat" / "prompt.md").is_file() and (r1 / "nat2" / "prompt.md").is_file()

    proc, gate = _gate(s, "reviews/r1")
    assert proc.returncode == 1
    assert gate["reasons"] == [
        f"round reviews/r1: required reviewer {n} neither completed nor was waived (awaiting_record: awaiting spar record)"
        for n in ("nat", "nat2")]

    # nat: the subagent works from the repository (the host's cwd), reads prompt.md and
    # the workspace with relative and absolute paths, and answers with the bare object
    t = _Transcript(s.repo, "a1b2c3")
    t.prompt("Review the change. Your instructions: reviews/r1/nat/prompt.md")
    t.tool("Read", file_path="reviews/r1/nat/prompt.md")
    t.tool("Glob", pattern="**/*.py", path="reviews/r1/workspace/head")
    t.tool("Read", file_path=str(r1 / "workspace" / "head" / "calc.py"))
    t.tool("Grep", pattern="def divide", path="reviews/r1/workspace/base", output_mode="content")
    t.tool("Read", file_path="reviews/r1/workspace/head/tests/test_calc.py")
    t.answer(result(head=s.head[:12], findings=[
        finding(id="D1", location="head/calc.py:6", introduced_by_change="yes", regression="yes"),
        finding(id="H1", proposed_class="hardening", location="head/tests/test_calc.py:9", link_kind="none",
                link="", claim="no test for divide(1, 0)", introduced_by_change="no")]))
    t.write(tmp_path / "nat.jsonl")
    proc = s.spar("record", "reviews/r1", "--reviewer", "nat", "--transcript", str(tmp_path / "nat.jsonl"))
    assert proc.returncode == 0, proc.stderr.decode()
    rj = json.loads((r1 / "round.json").read_text())
    nat = rj["reviewers"][1]
    assert (nat["status"], nat["warnings"], nat["observed_model"], nat["finding_count"]) == (
        "completed", [], "claude-sonnet-4-5-20250929", 2)
    assert "finished_at" not in rj  # nat2 still awaits its record
    findings = {f["id"]: f for f in json.loads((r1 / "findings.json").read_text())}
    assert {k: (f["class"], f["reviewer_id"]) for k, f in findings.items()} == {
        "nat-F1": ("defect", "D1"), "nat-F2": ("hardening", "H1")}
    ledger = [json.loads(l) for l in (r1 / "ledger.jsonl").read_text().splitlines()]
    assert [(l["finding"], l["disposition"], l["auto"]) for l in ledger] == [("nat-F2", "deferred", True)]

    # nat2: --result gives the answer; the transcript shows a shell call, a read
    # outside the workspace and a prompt that was never read
    (r1 / "nat2" / "result.json").write_text(json.dumps(result(head=s.head, findings=[], verdict="no_blocking_findings")))
    t2 = _Transcript(s.repo, "d4e5f6")
    t2.prompt("Review the change as described in the file I gave you.")
    t2.tool("Bash", command="cat reviews/r1/nat2/prompt.md")
    t2.tool("Read", file_path="calc.py")  # the working tree, not the workspace
    t2.tool("Grep", pattern="divide", path=str(r1 / "workspace"))
    t2.write(tmp_path / "nat2.jsonl")
    proc = s.spar("record", str(r1), "--reviewer", "nat2", "--transcript", str(tmp_path / "nat2.jsonl"),
                  "--result", str(r1 / "nat2" / "result.json"))
    assert proc.returncode == 0, proc.stderr.decode()
    rj = json.loads((r1 / "round.json").read_text())
    nat2 = rj["reviewers"][2]
    assert nat2["status"] == "completed" and nat2["finding_count"] == 0
    assert nat2["warnings"] == [{"kind": "tool_not_allowed", "tool": "Bash"},
                                {"kind": "read_outside_workspace", "tool": "Read"},
                                {"kind": "prompt_not_read", "tool": "Read"}]
    assert rj["finished_at"] == rj["recorded_at"]

    # the gate: only the native defect is left; rejecting it passes the gate
    proc, gate = _gate(s, "reviews/r1")
    assert proc.returncode == 1
    assert gate["reasons"] == ["round reviews/r1: finding nat-F1 (defect) has no standing disposition"]
    assert gate["completed"] == ["alpha", "nat", "nat2"] and gate["auto_deferred"] == 1
    assert s.spar("triage", "reviews/r1", "nat-F1", "--to", "rejected",
                  "--evidence", "divide(1, 0) raising is the documented contract").returncode == 0
    proc, gate = _gate(s, "reviews/r1")
    assert proc.returncode == 0, gate["reasons"]
    # recording twice is refused: the findings of a completed reviewer are never dropped
    proc = s.spar("record", "reviews/r1", "--reviewer", "nat", "--transcript", str(tmp_path / "nat.jsonl"))
    assert proc.returncode == 65 and b"already completed" in proc.stderr


def test_records_written_before_the_optional_fields(tmp_path, capsys):
    """G32: a series written before standpoints, location_unreadable, smallest_fix
    and extension causes existed is read by every command as documented."""
    from spar.cli import main as spar_main
    from tests import roundfactory as rf

    repo, _ = rf.series_repo(tmp_path)
    series = rf.fresh_series(repo)
    r = rf.make_round(series, "r1", repo=repo,
                      reviewers=[rf.reviewer("claude"), rf.reviewer("native", status="awaiting_record")],
                      findings=[rf.finding("claude", 1),
                                rf.finding("claude", 2, cls="hardening", in_check_paths=True, path="tests/test_main.py")])
    rj = json.loads((r / "round.json").read_text())
    for key in ("standpoints", "standpoints_uncovered", "decisions"):
        del rj[key]
    for entry in rj["reviewers"]:
        del entry["standpoint"], entry["standpoint_report"]
    (r / "round.json").write_text(json.dumps(rj))
    old = json.loads((r / "findings.json").read_text())
    for f in old:
        del f["location_unreadable"], f["smallest_fix"]
    (r / "findings.json").write_text(json.dumps(old))
    (series / "extensions.jsonl").write_text('{"stage": "code", "by": 1, "at": "2024-01-01T00:00:00.000Z"}\n')

    assert spar_main(["triage", str(r), "claude-F1", "--to", "rejected", "--evidence", "not a bug"]) == 0
    assert spar_main(["waive", str(r), "--reviewer", "native", "--user-quote", "no host today"]) == 0
    answer = {"reviewed_head": rj["head"][:10], "verdict": "no_blocking_findings", "angles_unchecked": [],
              "angles_checked": [{"angle": a, "result": "ok"}
                                 for a in ("criteria", "correctness", "checks", "contracts", "risk")],
              "findings": [], "limits": ""}
    (tmp_path / "answer.json").write_text(json.dumps(answer))
    assert spar_main(["record", str(r), "--reviewer", "native", "--result", str(tmp_path / "answer.json")]) == 0
    after = json.loads((r / "round.json").read_text())
    assert after["finished_at"] and after["reviewers"][1]["status"] == "completed"
    assert spar_main(["extend", str(series), "--stage", "code", "--by", "1", "--cause", "churn"]) == 0
    capsys.readouterr()
    assert spar_main(["cap-report", str(series), "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["code_extension_causes"]["no_recorded_cause"] == {"extensions": 1, "by": 1}
    assert report["code_extension_causes"]["churn"] == {"extensions": 1, "by": 1}
    assert report["rounds"][0]["findings"] == {"defect": 1, "requirement-question": 0, "hardening": 1, "note": 0}
    out = repo / "gates" / "old.json"
    assert spar_main(["gate", str(r), "--out", str(out)]) == 0, capsys.readouterr().out
    gate = json.loads(out.read_text())
    assert (gate["auto_deferred"], gate["completed"], gate["waived"]) == (1, ["claude", "native"], ["native"])
