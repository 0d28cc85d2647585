"""G11 differential test: generated lines that check_command accepts, run by the real
programs (tree, rg, file, diff, sort, uniq, sed, find, ...) under bash in a throwaway
folder, must not write a file or start a program (tests/g11_differential.py says how
that is watched; strace when installed)."""

from __future__ import annotations

import functools
import json
import re
import string
import subprocess
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spar.judge.agy_commands import check_command
from spar.judge.agy_options import TABLES
from tests import g11_differential as diff
from tests.innerloop import first_in_inner_loop

pytestmark = pytest.mark.skipif(bool(diff.missing_programs()),
                                reason=f"programs missing: {' '.join(diff.missing_programs())} (the differential "
                                       "test of agy's shell-line checker runs them for real; .ci/run installs them with apt-get)")

ATTACKS = [r for r in diff.DATA["violations"] if r["source"] == "issue 11"]


@pytest.fixture(scope="module")
def box():
    with tempfile.TemporaryDirectory(prefix="g11box-") as tmp:
        sandbox = diff.Sandbox(Path(tmp) / "box")
        sandbox.build()
        yield sandbox


@pytest.mark.slow
def test_accepted_generated_lines_write_and_run_nothing():
    result = diff.run_corpus(count=360, seed=11)
    assert result.accepted > 150  # plenty of lines get to run
    assert result.harmful == [], json.dumps(result.harmful[:5], indent=1)


SWEEP_PARTS = 4  # the sweep runs in parts so that pytest-xdist spreads it over the workers


def test_the_option_sweep_is_every_option_of_every_program_in_every_spelling():
    lines = diff.option_sweep(seed=11)
    assert len(lines) == len(set(diff._sweep_items(diff.program_options()))) > 3000
    assert sum(check_command(line) is None for line in lines) > 2000  # plenty of lines get to run


@pytest.mark.slow
@pytest.mark.parametrize("part", range(SWEEP_PARTS))
def test_every_option_of_every_program_in_every_spelling_writes_and_runs_nothing(part):
    """The whole option sweep once (each option of each allowed program alone, with a value
    in the next word, attached and after `=`), not a sample: every line the checker accepts
    runs for real."""
    lines = diff.option_sweep(seed=11)[part::SWEEP_PARTS]
    result = diff.run_lines(lines)
    assert result.tried == len(lines)
    assert result.harmful == [], json.dumps(result.harmful[:5], indent=1)


@pytest.mark.parametrize("line", sorted({
    "tree -PI x -- -o out head", "tree -LP 1 -- -o out head", "sort --random-sou -- -o out head/a.go",
    "rg -e -- --pre=sh x head", "file -p head/a.go", "uniq head/a.go -c"}))
def test_the_watch_sees_the_attacks(box, line):
    """The refused lines that write or run something: the runner sees each of them."""
    assert check_command(line) is not None
    assert diff.run_line(box, line, posix=line.startswith("uniq")), line


TAILS = {"tree": ["-o out head", "-R -L 1 -H . head"], "sort": ["-o out head/a.go"], "rg": ["--pre=sh x head"],
         "file": ["-C -m magic"], "diff": ["-l head/a.go head/b.go"], "uniq": ["head/a.go out"]}


@st.composite
def _value_options_then_dashdash(draw):
    """A program, value-taking options with one value word fewer than they take, `--`,
    a forbidden option; each word maybe quoted or escaped, words joined by blanks."""
    program = draw(st.sampled_from(sorted(TAILS)))
    table = TABLES[program]
    if draw(st.booleans()) and table.long_values:
        words = ["--" + draw(st.sampled_from(sorted(table.long_values)))]
    else:
        letters = draw(st.lists(st.sampled_from(table.values), min_size=1, max_size=4))
        flags = draw(st.lists(st.sampled_from(table.flags), max_size=2))
        cluster = "".join(flags[:1] + letters + flags[1:])
        # getopt and rg give the rest of a cluster to its first value letter; tree gives
        # each value letter its own next word
        values = len(letters) if program == "tree" else 1
        words = ["-" + cluster] + [draw(st.sampled_from(["x", "1", "head"])) for _ in range(values - 1)]
    words = [program, *words, "--", *draw(st.sampled_from(TAILS[program])).split()]
    k = draw(st.integers(0, len(words) - 1))
    cut = draw(st.integers(0, len(words[k])))
    words[k] = draw(st.sampled_from([words[k], f"'{words[k]}'", f'"{words[k]}"',
                                     words[k][:cut] + "\\" + words[k][cut:] if cut < len(words[k]) else words[k]]))
    return draw(st.sampled_from([" ", "\t", "  "])).join(words)


@pytest.mark.slow  # a long property test
@settings(max_examples=150, deadline=None)
@given(_value_options_then_dashdash(), st.sampled_from(["", "ls && ", "ls; ", "ls | ", "true || "]))
def test_dashdash_taken_as_a_value_never_ends_the_options(line, before):
    assert check_command(before + line) is not None, before + line


# the rows in which tree really writes (a value-taking -L given `--` stops tree first)
TREE_ROWS = [r["line"] for r in ATTACKS if r["line"].startswith("tree -") and "\t" not in r["line"]
             and ("L" not in r["line"].split()[1] or r["line"].startswith("tree -LP 1"))]


def test_a_batch_names_the_lines_that_did_something(box):
    """Lines run in batches: a batch with harmful lines among harmless ones names exactly those."""
    harmful = ["tree -PI x -- -o out head", "sort -o out2 head/a.go"]
    lines = ["sort -r head/a.go", harmful[0], "rg -n x head", harmful[1], "wc -l head/a.go"]
    found = diff.run_batch(box, lines, posix=False)
    assert [line for line, _ in found] == harmful
    assert all(problems for _, problems in found)
    assert diff.run_batch(box, [lines[0], lines[2], lines[4]], posix=True) == []


# test_agy_commands refuses every row without running it; running each for real is the
# full suite's (the inner loop runs the first)
@pytest.mark.parametrize("line", first_in_inner_loop(TREE_ROWS))
def test_tree_attack_rows_really_write(box, line):
    assert diff.run_line(box, line, posix=False)


def test_harmless_lines_are_not_reported(box):
    for line in ["tree -L 1 -P '*.go' -- head", "sort -r head/a.go", "rg -n x head", "file head/a.go",
                 "diff -u base/a.go head/a.go", "egrep -n x head/a.go | uniq -c", "sed -n 1p head/a.go"]:
        assert check_command(line) is None
        assert diff.run_line(box, line, posix=False) == [], line


@functools.cache
def _rg_help() -> str:
    return subprocess.run(["rg", "--help"], capture_output=True, text=True).stdout


def _answer(program: str, arg: str, cwd: Path) -> str:
    """"value", "flag" or "unknown": what the installed program makes of one option
    (for rg, whether it takes a value is what its --help shows: `-A, --after-context <NUM>`)."""
    argv = [program, arg, "--", "x"] if program == "rg" else [program, arg]
    err = subprocess.run(argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, timeout=10).stderr.decode(errors="replace")
    if re.search(r"invalid option|unrecognized option|Invalid argument|is ambiguous|wasn't expected", err):
        return "unknown"
    if program == "rg":
        if re.search(rf"(?m)^\s+(?:-., )?{re.escape(arg)}(?:, --[a-z0-9-]+)? <", _rg_help()):
            return "value"
        # a hidden alias (--maxdepth): at the end of the line it asks for its value
        last = subprocess.run(["rg", "-e", "x", arg], cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, timeout=10).stderr.decode(errors="replace")
        return "value" if "requires a value" in last else "flag"
    if re.search(r"requires an argument|Missing argument", err):
        return "value"
    return "flag"


# rg options the tables know from ripgrep 14 and later, which rg 13 does not have
RG_NEWER = {"-d", "--generate", "--hostname-bin", "--hyperlink-format", "--ignore-nested-git",
            "--no-ignore-nested-git", "--no-byte-offset", "--no-include-zero", "--no-invert-match",
            "--stop-on-nonmatch"}


def _kind(table, arg: str) -> str:
    if arg.startswith("--"):
        kind = table.long_kind(arg[2:])
        return {"value": "value", None: "unknown"}.get(kind, "flag")
    letter = arg[1]
    return "value" if letter in table.values else "flag" if letter in table.flags + table.optional else "unknown"


@pytest.mark.slow
@pytest.mark.parametrize("program", ["sort", "uniq", "diff", "file", "tree", "rg"])
def test_option_tables_match_the_installed_programs(tmp_path, program):
    """Every letter, and every long name of the table, is what the installed program says:
    it asks for a value, does not know it, or takes it as it is."""
    table = TABLES[program]
    args = [f"-{c}" for c in string.ascii_letters + string.digits]
    args += [f"--{n}" for n in sorted(table.long_flags | table.long_values | table.long_optional)]
    rg13 = program == "rg" and subprocess.run(["rg", "--version"], capture_output=True,
                                               text=True).stdout.startswith("ripgrep 13.")
    answers = [(a, _kind(table, a), _answer(program, a, tmp_path)) for a in args]
    wrong = [w for w in answers if w[1] != w[2] and not (rg13 and w[0] in RG_NEWER and w[2] == "unknown")]
    assert wrong == []


def test_trace_parser_reads_a_foreign_start_and_a_write():
    log = "\n".join([
        '10 execve("/bin/bash", ["bash"], 0x1 /* 3 vars */) = 0',
        "10 clone(child_stack=NULL, flags=CLONE_CHILD_CLEARTID|SIGCHLD) = 11",
        '11 execve("/usr/bin/sort", ["sort"], 0x1 /* 3 vars */) = 0',
        "11 clone(child_stack=NULL, flags=SIGCHLD) = 12",
        '12 execve("/usr/bin/cat", ["cat"], 0x1 /* 3 vars */ <unfinished ...>',
        '12 <... execve resumed>) = 0',
        '11 openat(AT_FDCWD, "out", O_WRONLY|O_CREAT|O_TRUNC, 0666) = 3',
        '10 openat(AT_FDCWD, "/dev/null", O_WRONLY|O_CREAT|O_TRUNC, 0666) = 3',
    ])
    problems = diff.trace_problems(log, {"bash", "sort", "cat"})
    assert sorted(p.split(":")[0] for p in problems) == ["opens for writing", "sort starts cat"]


def test_trace_parser_waits_for_the_clone_result():
    """A child may start its program before the log says whose child it is."""
    log = "\n".join([
        '10 execve("/bin/bash", ["bash"], 0x1) = 0',
        "10 clone(child_stack=NULL, flags=SIGCHLD <unfinished ...>",
        "11 clone(child_stack=NULL, flags=SIGCHLD) = 12",
        '12 execve("/usr/bin/basename", ["basename"], 0x1) = 0',
        "10 <... clone resumed>) = 11",
    ])
    assert diff.trace_problems(log, {"bash", "basename"}) == []
