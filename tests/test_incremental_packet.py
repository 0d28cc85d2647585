"""Incremental packets (issue 24 point 2): `[packet] code = "incremental"` in the project
configuration; round.json `packet` and each reviewer's `input_bytes`; the fallback to a
full packet when the last round's head is gone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spar.config.checks import check_project
from spar.config.model import AppliedConfig
from spar.config.toml_positions import locate_toml
from spar.errors import ConfigError
from spar.round.packet import DIFF_LIMIT, DiffPart, PacketInput, build_packet, diff_parts
from tests.gitrepo import commit, git
from tests.runsetup import make_setup, result

PROJECT = ('rules = ["AGENTS.md"]\ncheck_paths = ["tests/**"]\n\n[caps]\ncode = 5\n\n'
           '[packet]\ncode = "incremental"\n')
FIX = ("def add(a, b):\n    return a + b\n\n\ndef divide(a, b):\n    if b == 0:\n"
       "        raise ValueError('b is 0')\n    return a / b\n")
OTHER_FIX = FIX.replace("'b is 0'", "'cannot divide by 0'")
WHOLE_ONLY = "+def divide(a, b):"  # a line of the whole diff that no later fix's diff holds


def load(path):
    return json.loads(path.read_text(encoding="utf-8"))


def whole_diff(repo, base, head) -> bytes:
    proc = git(repo, "diff", "--no-color", "--no-ext-diff", "--no-textconv", "--no-relative",
               "--src-prefix=a/", "--dst-prefix=b/", base, head, "--")
    return proc.encode("utf-8", "surrogateescape")


@pytest.mark.slow
def test_three_rounds_incremental_then_full_when_the_last_head_is_gone(tmp_path):
    """Issue 24 point 2: round 1 is full (first round); round 2's packet holds the diff since
    round 1 and the list of changed files, the memory follows it, the whole diff is
    workspace/change.diff byte for byte and the bytes each reviewer got are recorded; round 3,
    after round 2's head was rewritten away and pruned, is full and says why."""
    s = make_setup(tmp_path)
    h1 = commit(s.repo, {".jaekit/spar.toml": PROJECT}, message="incremental packets")
    s.configure([s.answer_reviewer("house", result())])
    series = s.repo / "reviews"

    first = s.run("--base", s.base, out="reviews/r1")
    assert first.returncode == 0, first.stderr.decode()
    r1 = load(series / "r1" / "round.json")
    assert r1["packet"]["configured"] == "incremental" and r1["packet"]["kind"] == "full"
    assert "first round" in r1["packet"]["reason"]
    assert WHOLE_ONLY in (series / "r1" / "packet.md").read_text()
    assert not (series / "r1" / "workspace" / "change.diff").exists()
    triage = s.spar("triage", str(series / "r1"), "house-F1", "--to", "rejected", "--evidence", "b is checked")
    assert triage.returncode == 0, triage.stderr.decode()

    h2 = commit(s.repo, {"calc.py": FIX}, message="fix divide")
    second = s.run("--base", s.base, out="reviews/r2")
    assert second.returncode == 0, second.stderr.decode()
    r2dir = series / "r2"
    packet = (r2dir / "packet.md").read_text()
    received = (s.answers / "house.received").read_bytes()
    assert "## Changes since round r1" in packet and "+        raise ValueError('b is 0')" in packet
    assert WHOLE_ONLY not in packet
    assert "### Changed files (3)" in packet and "- `calc.py`: +6 -0; `change.diff` lines" in packet
    assert "## Already decided in this series" in received.decode() and "b is checked" in received.decode()
    whole = whole_diff(s.repo, s.base, h2)
    assert WHOLE_ONLY in whole.decode()
    assert (r2dir / "workspace" / "change.diff").read_bytes() == whole
    r2 = load(r2dir / "round.json")
    assert r2["packet"] == {"configured": "incremental", "kind": "incremental", "reason": None,
                            "since_round": "r1", "change_diff_bytes": len(whole)}
    (entry,) = r2["reviewers"]
    assert entry["input_bytes"]["prompt"] == len(received)
    assert entry["input_bytes"]["files"] == len((r2dir / "house" / "input.md").read_bytes())
    r1_packet = (series / "r1" / "packet.md").read_bytes()  # round 1: the packet alone, no input.md
    assert load(series / "r1" / "round.json")["reviewers"][0]["input_bytes"] == {"prompt": len(r1_packet), "files": 0}
    assert not [w for w in r2["warnings"] if "workspace changed" in w]
    assert "- Packet: incremental (the changes since round r1" in (r2dir / "summary.md").read_text()
    # coverage: round 1's packet held every file's diff, round 2's none (it is in change.diff)
    changed = [".jaekit/spar.toml", "calc.py", "tests/test_calc.py"]
    assert r1["inline_files"] == changed and r1["unseen"] == []
    assert r2["inline_files"] == [] and r2["unseen"] == changed
    assert r2["reviewers"][0]["attempts"][0]["coverage"]["inline"] == 0

    # round 2's head rewritten away: the other fix replaces it, and git really forgets it
    git(s.repo, "reset", "--hard", h1)
    commit(s.repo, {"calc.py": OTHER_FIX}, message="fix divide differently")
    git(s.repo, "reflog", "expire", "--expire=now", "--all")
    git(s.repo, "gc", "--prune=now", "--quiet")
    with pytest.raises(RuntimeError):
        git(s.repo, "cat-file", "-e", h2)
    third = s.run("--base", s.base, out="reviews/r3")
    assert third.returncode == 0, third.stderr.decode()
    r3 = load(series / "r3" / "round.json")
    assert r3["packet"]["kind"] == "full" and r3["packet"]["change_diff_bytes"] is None
    assert f"reviewed head {h2}, which this repository no longer has" in r3["packet"]["reason"]
    assert WHOLE_ONLY in (series / "r3" / "packet.md").read_text()
    assert not (series / "r3" / "workspace" / "change.diff").exists()
    summary = (series / "r3" / "summary.md").read_text()
    assert f"- Packet: full, not incremental: the last round of this stage, r2, reviewed head {h2}" in summary


def _project(text: str):
    return check_project(locate_toml("spar.toml", text))


def test_packet_table_is_checked_and_only_a_set_one_enters_the_digest():
    """Issue 24 point 2: `[packet]` takes the stage keys of `[caps]` and `full`/`incremental`;
    a configuration without it keeps its digest."""
    assert _project('[packet]\ncode = "incremental"\n').packet == {"plan": "full", "plan_delta": "full",
                                                                    "code": "incremental"}
    for bad, words in (('[packet]\ncode = "half"\n', "packet.code must be one of full, incremental"),
                       ('[packet]\nreview = "full"\n', 'unknown key "packet.review"'),
                       ('packet = "incremental"\n', "packet must be a table")):
        with pytest.raises(ConfigError, match=words):
            _project(bad)
    plain = AppliedConfig(reviewers=[])
    assert "packet" not in plain.applied_values()
    chosen = AppliedConfig(reviewers=[], packet={"plan": "full", "plan_delta": "full", "code": "incremental"})
    assert chosen.applied_values()["packet"]["code"] == "incremental" and chosen.digest() != plain.digest()


def test_diff_parts_find_each_file_and_the_packet_lists_them():
    """Issue 24 point 2: each changed file with its lines and bytes in change.diff."""
    first = b"diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x\n+y\n"
    second = b"diff --git a/b.bin b/b.bin\nBinary files a/b.bin and b/b.bin differ\n"
    diff = first + second
    parts = diff_parts(diff, [("a.py", 1, 1), ("b.bin", None, None)])
    assert parts == [DiffPart("a.py", 1, 1, 1, 6, len(first)), DiffPart("b.bin", None, None, 7, 2, len(second))]
    assert diff_parts(diff, [("a.py", 1, 1)]) == []  # they disagree: no list at all
    docs = {"criteria": [], "rules": [], "subject": []}
    text = build_packet(PacketInput(stage="code", series="s", base="b" * 40, head="c" * 40, angles=["risk"],
                                    check_paths=[], documents=docs, diff=diff, kind="incremental",
                                    parts=parts, change_size=len(diff)))
    assert f"- `a.py`: +1 -1; `change.diff` lines 1-6 ({len(first)} bytes)" in text
    assert "- `b.bin`: binary; `change.diff` lines 7-8" in text
    assert "+y" not in text and f"({len(diff)} bytes, 2 changed files)" in text



# names git quotes, writes raw, or splits oddly in a `diff --git` header (issue 24 point 2)
ODD = {"with space.txt": "b\n", 'quote"d.txt': "c\n", "tab\there.txt": "d\n", "caf\udce9.txt": "e\n",
       "x b/y.txt": "f\n", "back\\slash.txt": "g\n", "\u00fcn\u00ef.txt": "h\n", "line\nbreak.txt": "i\n"}
RENAMED = "".join(f"line {n} of a file that moves\n" for n in range(40))


def _odd_change(tmp_path) -> tuple[Path, bytes, list]:
    """A change with every odd name, a rename into a name holding ` b/`, and a type change
    (a file made a symlink: two sections of one path, one numstat line)."""
    from spar import git as spar_git
    from tests.gitrepo import make_repo
    repo = make_repo(tmp_path / "odd", {"moves.txt": RENAMED, "kind": "a file\n", "with space.txt": "old\n"})
    base = git(repo, "rev-parse", "HEAD").strip()
    (repo / "renamed b").mkdir()
    git(repo, "mv", "moves.txt", "renamed b/moves too.txt")
    (repo / "kind").unlink()
    head = commit(repo, ODD, symlinks={"kind": "with space.txt"}, message="odd names")
    whole = spar_git.diff(repo, base, head)
    assert b"rename to renamed b/moves too.txt\n" in whole and whole.count(b"diff --git a/kind b/kind\n") == 2
    return repo, whole, spar_git.changed_files(repo, base, head)


def _parts_in_git_order(whole: bytes, files: list) -> list[DiffPart]:
    """What the parts must be, found without reading a path: sections in git's order, one
    file's sections in a row (the same header line) merged, paired with the files by place."""
    starts = [0] + [i + 1 for i in range(len(whole)) if whole.startswith(b"\ndiff --git ", i)]
    spans = [(whole[a:whole.index(b"\n", a)], a, b) for a, b in zip(starts, starts[1:] + [len(whole)], strict=True)]
    merged: list[list] = []
    for header, a, b in spans:
        if merged and merged[-1][0] == header:
            merged[-1][2] = b
        else:
            merged.append([header, a, b])
    assert len(merged) == len(files)
    return [DiffPart(f.path, f.added, f.removed, whole.count(b"\n", 0, a) + 1, whole.count(b"\n", a, b), b - a)
            for f, (_, a, b) in zip(files, merged, strict=True)]


def test_diff_parts_pair_odd_names_by_path_in_any_order(tmp_path):
    """Issue 24 point 2: parts found by the path each header names, so the packet's list (sources
    first for a cut diff) needs no second `git diff --numstat`: spaces, quotes, tabs, line breaks,
    backslashes, non-UTF-8 and non-ASCII names, ` b/` inside a name, a rename and a type change."""
    _, whole, files = _odd_change(tmp_path)
    assert {"caf\\xe9.txt", "tab\\x09here.txt", "renamed b/moves too.txt", "kind"} <= {f.path for f in files}
    expected = _parts_in_git_order(whole, files)
    as_tuples = [(f.path, f.added, f.removed) for f in files]
    assert diff_parts(whole, as_tuples) == expected
    assert diff_parts(whole, as_tuples[::-1]) == expected[::-1]
    moved = as_tuples[1:] + as_tuples[:1]
    assert diff_parts(whole, moved) == expected[1:] + expected[:1]


def test_diff_parts_fall_back_to_places_or_to_nothing():
    """Issue 24 point 2: a header no path can be read from pairs by place only when the list is in
    the diff's order; a list that does not match the diff's files gets no parts."""
    odd = b"diff --git x y\n@@ -1 +1 @@\n-a\n+b\n"
    plain = b"diff --git a/p.py b/p.py\n@@ -1 +1 @@\n-a\n+b\n"
    diff = odd + plain
    in_order = diff_parts(diff, [("x", 1, 1), ("p.py", 1, 1)])
    assert in_order == [DiffPart("x", 1, 1, 1, 4, len(odd)), DiffPart("p.py", 1, 1, 5, 4, len(plain))]
    assert diff_parts(diff, [("p.py", 1, 1), ("x", 1, 1)]) == []  # reordered: no place to trust
    assert diff_parts(plain + plain, [("p.py", 1, 1)]) != []  # one path's sections in a row: one part
    assert diff_parts(plain + odd + plain, [("p.py", 1, 1), ("x", 1, 1)]) == []
    assert diff_parts(plain, [("q.py", 1, 1)]) == []
    assert diff_parts(plain, [("p.py", 1, 1), ("q.py", 1, 1)]) == []


def test_an_incremental_packet_reuses_the_changed_files_listed(tmp_path, monkeypatch):
    """Issue 24 point 2: choosing the incremental packet runs `git diff` once for change.diff and
    no second `git diff --numstat`: the parts come from the files packet_input listed, in their
    order (sources first here)."""
    from spar import git as spar_git
    from spar.round.preparation import choose_packet
    from tests.spies import calls_to
    repo, whole, files = _odd_change(tmp_path)
    base, head = git(repo, "rev-parse", "HEAD~", "HEAD").split()
    listed = files[::-1]  # as a cut diff's sources-first order may have it
    packet = PacketInput(stage="code", series="s", base=base, head=head, angles=["risk"], check_paths=[],
                         documents={"criteria": [], "rules": [], "subject": []}, changed=listed,
                         since_round="r1", since_head=base, since_diff=b"")
    config = AppliedConfig(reviewers=[], packet={"plan": "full", "plan_delta": "full", "code": "incremental"})
    gits = calls_to(monkeypatch, spar_git, "run", lambda _repo, *args, **_kw: args)
    kind, change = choose_packet(repo, config, packet)
    assert [a for a in gits if "--numstat" in a] == [] and len(gits) == 1
    assert kind["kind"] == "incremental" and change == whole
    assert [p.path for p in packet.parts] == [f.path for f in listed]
    assert packet.parts == _parts_in_git_order(whole, files)[::-1]


BIG = "".join(f"generated row {n:07d}\n" for n in range(DIFF_LIMIT // 20))  # a diff past the packet limit


def _plan(tmp_path, monkeypatch, configured: str, files: dict[str, str]):
    """packet_input and choose_packet of a second round (the first at another head), in process,
    with every git call noted: (diff_with_stat's (from, to) pairs, git.run's arguments, packet,
    kind, change.diff)."""
    from spar import git as spar_git
    from spar.round.args import RunArgs
    from spar.round.preparation import RoundCommits, choose_packet, packet_input
    from tests.roundfactory import head_and_base, make_round, series_repo
    from tests.spies import calls_to
    repo, _ = series_repo(tmp_path)
    base, first = head_and_base(repo)
    series = repo / "reviews" / "s"
    make_round(series, "r1", repo=repo, base=base, head=first)
    head = commit(repo, files, message="more")
    config = AppliedConfig(reviewers=[], packet={"plan": "full", "plan_delta": "full", "code": configured})
    stats = calls_to(monkeypatch, spar_git, "diff_with_stat", lambda _repo, old, new, *_a, **_k: (old, new))
    runs = calls_to(monkeypatch, spar_git, "run", lambda _repo, *args, **_kw: args)
    packet = packet_input(RunArgs(stage="code", out=str(series / "r2")), repo, config, RoundCommits(base, head, None),
                          {"criteria": [], "rules": [], "subject": []}, {}, series)
    kind, whole = choose_packet(repo, config, packet)
    return (base, first, head), stats, runs, packet, kind, whole


def test_an_incremental_round_reads_the_whole_diff_once(tmp_path, monkeypatch):
    """Issue 24 point 2: the whole diff is read once, for change.diff and its parts; neither the
    packet's first 512 KiB of it nor its stat is read besides, and no file counts as inline:
    none of the change's diff is in the packet."""
    from spar.round.packet import inline_paths
    (base, first, head), stats, runs, packet, kind, whole = _plan(tmp_path, monkeypatch, "incremental",
                                                                   {"calc.py": FIX})
    assert kind["kind"] == "incremental" and whole
    assert stats == [(first, head)]  # the changes since round r1 only
    assert [a for a in runs if a[0] == "diff" and base in a and "--numstat" not in a] == [
        ("diff", "--no-color", "--no-ext-diff", "--no-textconv", "--no-relative", "--src-prefix=a/",
         "--dst-prefix=b/", base, head, "--")]
    assert packet.diff == b"" and packet.diff_stat == "" and inline_paths(packet.diff) == set()
    _, full_stats, _, full, full_kind, _ = _plan(tmp_path / "full", monkeypatch, "full", {"calc.py": FIX})
    assert full_kind["kind"] == "full" and full.diff and len(full_stats) == 2


def test_a_packet_that_cannot_be_incremental_after_all_is_the_full_one(tmp_path, monkeypatch):
    """Issue 24 point 2: when change.diff's files cannot be told apart, the round gets exactly
    the packet a full round gets (a cut diff: the files sources first, the diff spent so), from
    the diff read once."""
    from spar.round import preparation
    files = {"app.min.js": BIG, "src/a.py": "a = 1\n"}
    *_, full, full_kind, _ = _plan(tmp_path / "full", monkeypatch, "full", files)
    monkeypatch.setattr(preparation, "diff_parts", lambda _diff, _files: [])
    *_, packet, kind, whole = _plan(tmp_path / "fallback", monkeypatch, "incremental", files)
    assert whole is None and kind["kind"] == "full" and "could not tell the files" in kind["reason"]
    assert not full.diff_complete and [f.path for f in full.changed][-1] == "app.min.js"  # first in git's order
    assert build_packet(packet) == build_packet(full)
