"""G11 property tests: no line check_command accepts can write or run something.

Lines come from a small grammar that mixes allowed programs, allowed and
forbidden arguments, operators, redirections, substitutions and quotes.  Two
independent judges say whether a line is dangerous:

- a text detector written here (quote-aware scan plus shlex), and
- bash itself: the line runs in a temporary folder with PATH holding only
  logging shims, and afterwards no file may have changed and every logged
  program call must be harmless.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spar.judge.agy_commands import check_command

# --- the grammar -------------------------------------------------------------

SAFE_PROGRAMS = ["ls", "cat", "grep", "head", "wc", "find", "sort", "rg", "uniq", "true", "pwd", "/bin/ls", "/usr/bin/grep"]
BAD_PROGRAMS = ["rm", "touch", "python3", "sh", "tee", "cp", "xargs", "head/bin/ls", "./cat", "/tmp/x/cat", "X=1"]
SAFE_ARGS = ["-la", "-n", "-rn", "-c", "head", "head/a.go", "base/a.go", "'*.go'", '"a b"', "'a > b'",
             '"x | y"', "'$(id)'", "x$", '"foo$"', "-20", "'{a,b}'", "-name", "-u", "a\\;b", '"\\$x"']
BAD_ARGS = ["-exec", "-execdir", "-delete", "-fprint", "-i", "--in-place", "-o", "--output=x", "--out=x",
            "--compress-program=sh", "--pre=sh", "-z", "out.txt"]
CONSTRUCTS = ["$(id)", "`id`", "<(ls)", "$HOME", "${X}", "{a,b}", '"$(touch p)"', "> out", ">> out",
              "2> out", "< head/a.go", "$'-exec'", "{-exec,}"]
REMOVED = ["2>/dev/null", "2>&1"]
SAFE_SEPARATORS = [" | ", " && ", " || ", "; ", " ; "]
BAD_SEPARATORS = [" & ", " |& ", " ;; ", "\n"]
SED_SAFE_SCRIPTS = ["'1p'", "'1,20p'", "'/a/,/b/p'", "'s/a/b/p'", "'$p'"]
SED_BAD_SCRIPTS = ["'w out'", "'e touch p'", "'s/a/b/w out'", "'s/a/b/e'", "'1r head/a.go'"]


def _safe_command() -> st.SearchStrategy[str]:
    plain = st.tuples(st.sampled_from([p for p in SAFE_PROGRAMS if p != "uniq"]),
                      st.lists(st.sampled_from(SAFE_ARGS + REMOVED), max_size=4))
    sed = st.tuples(st.just("sed -n"), st.lists(st.sampled_from(SED_SAFE_SCRIPTS), min_size=1, max_size=1))
    uniq = st.tuples(st.just("uniq"), st.lists(st.sampled_from(["-c", "head/a.go"]), max_size=1))
    return st.one_of(plain, sed, uniq).map(lambda t: " ".join([t[0], *t[1]]))


def _any_command() -> st.SearchStrategy[str]:
    program = st.sampled_from(SAFE_PROGRAMS + BAD_PROGRAMS + ["sed", "sed -n"])
    word = st.sampled_from(SAFE_ARGS + BAD_ARGS + CONSTRUCTS + REMOVED + SED_SAFE_SCRIPTS + SED_BAD_SCRIPTS)
    return st.tuples(program, st.lists(word, max_size=4)).map(lambda t: " ".join([t[0], *t[1]]))


def _join(commands: st.SearchStrategy[str], separators: list[str]) -> st.SearchStrategy[str]:
    @st.composite
    def build(draw):
        parts = draw(st.lists(commands, min_size=1, max_size=4))
        line = parts[0]
        for part in parts[1:]:
            line += draw(st.sampled_from(separators)) + part
        return line

    return build()


SAFE_LINES = _join(_safe_command(), SAFE_SEPARATORS)
ANY_LINES = _join(st.one_of(_safe_command(), _any_command()), SAFE_SEPARATORS + BAD_SEPARATORS)


# --- judge 1: a text detector -------------------------------------------------

WRITING_SED = ("w ", "e ", "/w ", "/e", "r ")


def dangerous_argv(argv: list[str]) -> bool:
    """Does one program call (argv after shell expansion) write or run something?

    Judged only for this file's vocabulary, program by program.
    """
    name = argv[0]
    args = argv[1:]
    base = name.rsplit("/", 1)[-1]
    if "/" in name and name.rsplit("/", 1)[0] not in ("/bin", "/usr/bin"):
        return True
    if base not in {p.rsplit("/", 1)[-1] for p in SAFE_PROGRAMS} | {"sed"}:
        return True
    options = [a for a in args if a.startswith("-")]
    if base == "find":
        return any(a.startswith(("-exec", "-ok", "-delete", "-fprint", "-fls")) for a in args)
    if base == "sort":
        return any(a.startswith(("--out", "--compress")) or (not a.startswith("--") and "o" in a) for a in options)
    if base == "rg":
        return any(a.startswith(("--pre=", "--search-zip", "--hostname")) or (not a.startswith("--") and "z" in a)
                   for a in options)
    if base == "uniq":
        return len([a for a in args if not a.startswith("-")]) > 1
    if base == "sed":
        operands = [a for a in args if not a.startswith("-")]
        script = operands[0] if operands else ""  # this vocabulary has no -e
        return ("-n" not in args or any(a == "-i" or a.startswith("--in") for a in options)
                or any(s in script for s in WRITING_SED))
    return False


def dangerous_text(line: str) -> bool:
    """Quote-aware: redirections, substitutions, expansions, then each command's words."""
    if "\n" in line:
        return True
    for r in REMOVED:
        line = line.replace(" " + r, " ")
    quote = None
    escaped = False
    cut: list[int] = [-1]
    for k, ch in enumerate(line):
        if escaped:
            escaped = False
            continue
        if quote == "'":
            if ch == "'":
                quote = None
            continue
        if ch == "\\":
            escaped = True
            continue
        after = line[k + 1:k + 2]
        if ch == "`" or (ch == "$" and after and (after.isalnum() or after in "_{([?#@*!$-'" or
                                                 (after == '"' and quote is None))):
            return True  # substitution or expansion (could hide anything)
        if quote == '"':
            if ch == '"':
                quote = None
            continue
        if ch in "'\"":
            quote = ch
        elif ch in "<>{":
            return True
        elif ch in "|;&":
            cut.append(k)
    cut.append(len(line))
    for a, b in zip(cut, cut[1:]):
        words = shlex.split(line[a + 1:b])
        if words and dangerous_argv(words):
            return True
    return False


# --- the properties ------------------------------------------------------------

PROPERTY = settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(SAFE_LINES)
def test_safe_grammar_is_accepted(line):
    # keeps the other properties honest: plenty of generated lines are accepted
    assert check_command(line) is None
    assert not dangerous_text(line)


@PROPERTY
@given(ANY_LINES)
def test_accepted_lines_are_not_dangerous(line):
    if check_command(line) is None:
        assert not dangerous_text(line), line
    else:
        assert check_command(line)  # a problem is never empty text


@PROPERTY
@given(SAFE_LINES, st.sampled_from(BAD_ARGS[:-1] + CONSTRUCTS + SED_BAD_SCRIPTS), st.data())
def test_one_dangerous_piece_is_refused(line, piece, data):
    words = line.split(" ")
    at = data.draw(st.integers(min_value=1, max_value=len(words)))
    mutated = " ".join(words[:at] + [piece] + words[at:])
    if dangerous_text(mutated):
        assert check_command(mutated) is not None, mutated


@PROPERTY
@given(SAFE_LINES, st.sampled_from(BAD_PROGRAMS + ["sed -i -n '1p' head/a.go", "find head -delete", "cat > out"]),
       st.sampled_from(SAFE_SEPARATORS + ["&& "]))
def test_appending_a_bad_command_is_refused(line, bad, sep):
    assert check_command(line + sep + bad) is not None


# --- judge 2: bash with logging shims -----------------------------------------

# one write per call, so calls running side by side in a pipeline do not interleave
SHIM = '#!/bin/sh\ns=${0##*/}\nfor a in "$@"; do s="$s\t$a"; done\nprintf "%s\\n" "$s" >> "$SHIM_LOG"\n'


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory):
    root = tmp_path_factory.mktemp("g11")
    shims = root / "shims"
    shims.mkdir()
    names = {p for p in SAFE_PROGRAMS + BAD_PROGRAMS if "/" not in p and "=" not in p} | {"sed", "id"}
    for name in names:
        path = shims / name
        path.write_text(SHIM)
        path.chmod(0o755)
    work = root / "work"
    for rel in ("head/a.go", "head/b.go", "base/a.go"):
        (work / rel).parent.mkdir(parents=True, exist_ok=True)
        (work / rel).write_text("package a\n// a > b\n")
    return root, shims, work


def _snapshot(folder: Path) -> dict[str, str]:
    out = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        for n in dirnames + filenames:
            p = Path(dirpath) / n
            out[str(p.relative_to(folder))] = hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
    return out


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                   HealthCheck.function_scoped_fixture])
@given(st.one_of(SAFE_LINES, ANY_LINES))  # SAFE_LINES: so that plenty of lines get to run
def test_accepted_lines_do_nothing_harmful_in_bash(sandbox, line):
    if check_command(line) is not None:
        return
    root, shims, work = sandbox
    log = root / "calls.log"
    log.write_text("")
    before = _snapshot(work)
    subprocess.run(["/bin/bash", "--norc", "--noprofile", "-c", line], cwd=work, stdin=subprocess.DEVNULL,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=10,
                   env={"PATH": str(shims), "SHIM_LOG": str(log), "HOME": str(root)})
    assert _snapshot(work) == before, line
    for call in log.read_text().splitlines():
        assert not dangerous_argv(call.split("\t")), (line, call)
