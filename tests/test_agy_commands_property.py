"""G11 property tests: no line check_command accepts can write or run something.

Lines come from a small grammar that mixes allowed programs, allowed and
forbidden arguments, operators, redirections, substitutions, quoting tricks
(`-ex\\ec`, `"-exec"`, `-e''xec`, `l"s"`), globs and `--` placed where an
option takes it as its value. Three independent judges say whether a line is
dangerous:

- a text detector written here (quote-aware scan, shlex, and a getopt model
  of each program: which options take a value, what `--` ends),
- bash with logging shims: the line runs in a temporary folder holding files
  named like options (`-o`, `-i`, `--pre=sh`, `-exec`, …) with PATH holding
  only shims; afterwards no file may have changed and every logged program
  call must be harmless by the getopt model,
- bash with the real programs (ls, cat, grep, find, sort, uniq, sed, diff,
  file, …) in the same kind of folder, and shims for everything that must
  never run (sh, touch, python3, …): no file may change and no shim may run.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spar.judge.agy_commands import check_command

# --- the grammar -------------------------------------------------------------

SAFE_PROGRAMS = ["ls", "cat", "grep", "head", "wc", "find", "sort", "rg", "uniq", "true", "pwd", "file",
                 "tree", "/bin/ls", "/usr/bin/grep", "/usr/bin/sort"]
OTHER_PROGRAMS = ["diff"]  # allowed, but `-la` holds its forbidden -l: not in the safe grammar
# quoting that bash removes before the program is looked up
TRICK_PROGRAMS = ["\\ls", 'l"s"', "'sort'", "s''ort", "\\find", '"uniq"']
BAD_PROGRAMS = ["rm", "touch", "python3", "sh", "tee", "cp", "xargs", "head/bin/ls", "./cat", "/tmp/x/cat", "X=1",
                "'sh'", "t\\ouch", "*"]
SAFE_ARGS = ["-la", "-n", "-rn", "-c", "head", "head/a.go", "base/a.go", "'*.go'", '"a b"', "'a > b'",
             '"x | y"', "'$(id)'", "x$", '"foo$"', "-20", "'{a,b}'", "-name", "-u", "a\\;b", '"\\$x"',
             "head/*", "~", "-t ,"]
BAD_ARGS = ["-exec", "-execdir", "-delete", "-fprint", "-i", "--in-place", "-o", "--output=x", "--out=x",
            "--compress-program=sh", "--pre=sh", "-z", "-C", "-l", "-R", "out.txt"]
# the same dangers spelled so that only quote removal shows them
TRICK_ARGS = ["-ex\\ec", '"-exec"', "-e''xec", '"-"exec', "--ou\\tput=x", "'--pre'=sh", "-\\o", "'-i'",
              "--in''-place"]
# options that take the next word as their value, then `--`: the word after is still an option
VALUE_ARGS = ["--random-source --", "-e --", "-P --", "-I --", "-F --", "-k --", "--"]
# globs bash may replace by the folder's option-like file names
GLOB_ARGS = ["*", "-*", "[-]exec", "--out*", "head/*.go", "?o", "[-]i"]
CONSTRUCTS = ["$(id)", "`id`", "<(ls)", "$HOME", "${X}", "{a,b}", '"$(touch p)"', "> out", ">> out",
              "2> out", "< head/a.go", "$'-exec'", "{-exec,}", "<<< x", ">| out", "&> out", "2>/dev/nullx",
              "-{exec,}", "$'\\x2dexec'"]
REMOVED = ["2>/dev/null", "2>&1"]
SAFE_SEPARATORS = [" | ", " && ", " || ", "; ", " ; "]
BAD_SEPARATORS = [" & ", " |& ", " ;; ", "\n"]
SED_SAFE_SCRIPTS = ["'1p'", "'1,20p'", "'/a/,/b/p'", "'s/a/b/p'", "'$p'"]
SED_BAD_SCRIPTS = ["'w out'", "'e touch p'", "'s/a/b/w out'", "'s/a/b/e'", "'1r head/a.go'", "/a*/p"]

# files with option-like names in the folder where the lines run
HOSTILE_NAMES = ["-o", "-i", "--pre=sh", "-exec", "-delete", "--output=x", "-C", "-l"]


# options these programs know (check_command refuses options a program does not know)
KNOWN_OPTIONS = {"sort": ["-n", "-rn", "-c", "-u", "-t ,"], "rg": ["-la", "-n", "-c", "-u"],
                 "file": ["-b", "-L", "-i"], "tree": ["-la", "-n", "-u", "-c"]}
OPERAND_ARGS = [a for a in SAFE_ARGS if not a.startswith("-")]


def _plain_args(program: str) -> st.SearchStrategy[list[str]]:
    base = program.rsplit("/", 1)[-1].replace("'", "").replace('"', "").replace("\\", "")
    words = KNOWN_OPTIONS[base] + OPERAND_ARGS if base in KNOWN_OPTIONS else SAFE_ARGS
    return st.lists(st.sampled_from(words + REMOVED), max_size=4)


def _safe_command() -> st.SearchStrategy[str]:
    plain = st.sampled_from([p for p in SAFE_PROGRAMS if p != "uniq"] + TRICK_PROGRAMS[:-1]).flatmap(
        lambda program: st.tuples(st.just(program), _plain_args(program)))
    sed = st.tuples(st.sampled_from(["sed -n", "\\sed -n", "s\"ed\" -n"]),
                    st.lists(st.sampled_from(SED_SAFE_SCRIPTS), min_size=1, max_size=1))
    uniq = st.tuples(st.just("uniq"), st.lists(st.sampled_from(["-c", "head/a.go"]), max_size=1))
    return st.one_of(plain, sed, uniq).map(lambda t: " ".join([t[0], *t[1]]))


def _any_command() -> st.SearchStrategy[str]:
    program = st.sampled_from(SAFE_PROGRAMS + OTHER_PROGRAMS + TRICK_PROGRAMS + BAD_PROGRAMS + ["sed", "sed -n"])
    word = st.sampled_from(SAFE_ARGS + BAD_ARGS + TRICK_ARGS + VALUE_ARGS + GLOB_ARGS + CONSTRUCTS + REMOVED
                           + SED_SAFE_SCRIPTS + SED_BAD_SCRIPTS)
    return st.tuples(program, st.lists(word, max_size=5)).map(lambda t: " ".join([t[0], *t[1]]))


def _join(commands: st.SearchStrategy[str], separators: list[str]) -> st.SearchStrategy[str]:
    @st.composite
    def build(draw):
        parts = draw(st.lists(commands, min_size=1, max_size=4))
        line = parts[0]
        for part in parts[1:]:
            line += draw(st.sampled_from(separators)) + part
        return line

    return build()


def _attack_command() -> st.SearchStrategy[str]:
    """Programs whose options matter, with the words that may smuggle an option in."""
    program = st.sampled_from(["sort", "uniq", "sed -n", "sed -n 1p", "find head", "file", "diff", "rg x", "tree"])
    word = st.sampled_from(VALUE_ARGS + GLOB_ARGS + TRICK_ARGS + ["-o", "-i", "-C", "head/a.go", "head/b.go", "out"])
    return st.tuples(program, st.lists(word, min_size=1, max_size=4)).map(lambda t: " ".join([t[0], *t[1]]))


SAFE_LINES = _join(_safe_command(), SAFE_SEPARATORS)
ATTACK_LINES = _join(_attack_command(), SAFE_SEPARATORS)
ANY_LINES = _join(st.one_of(_safe_command(), _any_command()), SAFE_SEPARATORS + BAD_SEPARATORS)


# --- the getopt model: what options a program really sees ---------------------

# (short letters taking a value, long names taking a value); GNU tools also take
# unique abbreviations of long names, rg and tree only whole names
VALUE_OPTIONS = {
    "sort": ("kStTo", ("key", "buffer-size", "field-separator", "temporary-directory", "output",
                       "random-source", "files0-from", "batch-size", "parallel", "compress-program", "sort")),
    "rg": ("efgmABCEjMtT", ("regexp", "file", "glob", "pre", "hostname-bin", "max-count", "type", "type-not")),
    "uniq": ("fsw", ("skip-fields", "skip-chars", "check-chars")),
    "diff": ("CDFILSUWxX", ("ifdef", "label", "exclude", "exclude-from", "from-file", "to-file",
                           "ignore-matching-lines", "show-function-line", "starting-file", "width")),
    "file": ("eFfmP", ("exclude", "separator", "files-from", "magic-file", "parameter")),
    "tree": ("LPIHTo", ()),
    "sed": ("efl", ("expression", "file", "line-length")),
}
FORBIDDEN_OPTIONS = {
    "sort": ("oT", ("output", "compress-program", "temporary-directory")),
    "rg": ("z", ("pre", "hostname-bin", "search-zip")),
    "file": ("CzZ", ("compile", "uncompress", "uncompress-noreport")),
    "tree": ("oR", ()),
    "diff": ("l", ("paginate",)),
    "sed": ("if", ("in-place", "file")),
}
WHOLE_NAMES_ONLY = {"rg", "tree"}


def _long_is(name: str, full: str, program: str) -> bool:
    if program in WHOLE_NAMES_ONLY:
        return name == full
    return bool(name) and full.startswith(name)


def getopt(program: str, args: list[str]) -> tuple[list[tuple[str, str | None]], list[str]]:
    """(options with their values, operands) as GNU getopt_long (permuting) reads args."""
    short_v, long_v = VALUE_OPTIONS.get(program, ("", ()))
    options: list[tuple[str, str | None]] = []
    operands: list[str] = []
    k = 0
    while k < len(args):
        a = args[k]
        k += 1
        if a == "--":
            operands += args[k:]
            break
        if a.startswith("--"):
            name, eq, value = a[2:].partition("=")
            if not eq and any(_long_is(name, full, program) for full in long_v) and k < len(args):
                value = args[k]
                k += 1
            options.append(("--" + name, value if (eq or value) else None))
        elif a.startswith("-") and len(a) > 1:
            for pos, ch in enumerate(a[1:], start=1):
                if ch in short_v:
                    value = a[pos + 1:]
                    if not value and k < len(args):
                        value = args[k]
                        k += 1
                    options.append(("-" + ch, value))
                    break
                options.append(("-" + ch, None))
        else:
            operands.append(a)
    return options, operands


WRITING_SED = ("w ", "e ", "/w ", "/e", "r ")


def dangerous_argv(argv: list[str]) -> bool:
    """Does one program call (argv after shell expansion) write or run something?"""
    name, args = argv[0], argv[1:]
    base = name.rsplit("/", 1)[-1]
    if "/" in name and name.rsplit("/", 1)[0] not in ("/bin", "/usr/bin"):
        return True
    if base not in {p.rsplit("/", 1)[-1] for p in SAFE_PROGRAMS + OTHER_PROGRAMS} | {"sed"}:
        return True
    if base == "find":  # no getopt: every word is part of the expression
        return any(a.startswith(("-exec", "-ok", "-delete", "-fprint", "-fls")) for a in args)
    options, operands = getopt(base, args)
    if base == "uniq":
        return len(operands) > 1
    short_f, long_f = FORBIDDEN_OPTIONS.get(base, ("", ()))
    for opt, _ in options:
        if opt.startswith("--"):
            if any(_long_is(opt[2:], full, base) for full in long_f):
                return True
        elif opt[1] in short_f:
            return True
    if base == "sed":
        scripts = [v or "" for o, v in options if o == "-e" or (o.startswith("--") and "expression".startswith(o[2:]))]
        if not scripts and operands:
            scripts = [operands[0]]
        return any(s in script for script in scripts for s in WRITING_SED) or any(
            script.startswith(("w", "e", "r")) for script in scripts)
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
        # $'...' and $"..." quote only outside quotes: inside "...", `$'` is a literal $ and '
        if ch == "`" or (ch == "$" and after and (after.isalnum() or after in "_{([?#@*!$-" or
                                                 (after in "'\"" and quote is None))):
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
    for a, b in itertools.pairwise(cut):
        words = shlex.split(line[a + 1:b])
        if words and dangerous_argv(words):
            return True
    return False


def test_getopt_model():
    # the judge's own model, checked on the cases this file is about
    assert getopt("sort", ["--random-source", "--", "-o", "x"]) == ([("--random-source", "--"), ("-o", "x")], [])
    assert getopt("sort", ["--", "-o"]) == ([], ["-o"])
    assert getopt("sort", ["-t", ",", "--", "-o"]) == ([("-t", ",")], ["-o"])
    assert getopt("rg", ["-e", "--", "--pre=sh", "x"]) == ([("-e", "--"), ("--pre", "sh")], ["x"])
    assert dangerous_argv(["sort", "--random-so", "--", "-o", "x"])
    assert not dangerous_argv(["sort", "--", "-o", "x"])
    assert dangerous_argv(["uniq", "head/a.go", "head/b.go"])
    assert dangerous_argv(["sed", "-n", "--in-pl", "1p"])
    assert not dangerous_argv(["rg", "--pr=sh", "x"])  # rg takes whole names only


def test_oracle_quotes():
    # $'...' is ANSI-C quoting (it can spell any byte) only outside quotes; inside "..." it is literal text
    assert dangerous_text("ls $'\\x3b' head")
    assert not dangerous_text('ls -la "a $\'-exec\' b"')
    assert check_command('ls -la "a $\'-exec\' b"') is None  # the checker agrees: one literal word
    assert dangerous_text('ls "$HOME"') and dangerous_text("ls $\"x\"")


# --- the properties ------------------------------------------------------------

PROPERTY = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.slow
@PROPERTY
@given(SAFE_LINES)
def test_safe_grammar_is_accepted(line):
    # keeps the other properties honest: plenty of generated lines are accepted
    assert check_command(line) is None
    assert not dangerous_text(line)


@pytest.mark.slow
@PROPERTY
@given(ANY_LINES)
def test_accepted_lines_are_not_dangerous(line):
    if check_command(line) is None:
        assert not dangerous_text(line), line
    else:
        assert check_command(line)  # a problem is never empty text


@pytest.mark.slow
@PROPERTY
@given(SAFE_LINES, st.sampled_from(BAD_ARGS[:-1] + TRICK_ARGS + CONSTRUCTS + SED_BAD_SCRIPTS), st.data())
def test_one_dangerous_piece_is_refused(line, piece, data):
    words = line.split(" ")
    at = data.draw(st.integers(min_value=1, max_value=len(words)))
    mutated = " ".join(words[:at] + [piece] + words[at:])
    if dangerous_text(mutated):
        assert check_command(mutated) is not None, mutated


@pytest.mark.slow
@PROPERTY
@given(st.sampled_from(["sort", "rg x", "tree", "file", "diff"]), st.sampled_from(VALUE_ARGS[:-1]),
       st.sampled_from(["-o out", "--pre=sh", "-C", "-l", "-R", "--output=x"]))
def test_a_value_taking_option_before_dashdash_does_not_end_the_options(program, value_arg, bad):
    line = f"{program} {value_arg} {bad} head/a.go"
    if dangerous_text(line):
        assert check_command(line) is not None, line


@pytest.mark.slow
@PROPERTY
@given(SAFE_LINES, st.sampled_from(BAD_PROGRAMS + ["sed -i -n '1p' head/a.go", "find head -delete", "cat > out",
                                                   "uniq head/*.go", "sort *", "sed -n 1p *"]),
       st.sampled_from(SAFE_SEPARATORS + ["&& "]))
def test_appending_a_bad_command_is_refused(line, bad, sep):
    assert check_command(line + sep + bad) is not None


# --- judges 2 and 3: bash -------------------------------------------------------

# one write per call, so calls running side by side in a pipeline do not interleave
SHIM = '#!/bin/sh\ns=${0##*/}\nfor a in "$@"; do s="$s\t$a"; done\nprintf "%s\\n" "$s" >> "$SHIM_LOG"\n'

# real programs the third judge may run; the rest of what a line could name are shims
REAL_PROGRAMS = ["ls", "cat", "grep", "egrep", "fgrep", "head", "tail", "wc", "nl", "cut", "tr", "stat",
                 "basename", "dirname", "realpath", "readlink", "find", "sort", "uniq", "sed", "diff", "file"]
NEVER_RUN = ["rm", "touch", "python3", "sh", "tee", "cp", "xargs", "id", "pr", "gzip", "env"]
# allowed programs this machine may lack: logging shims judged like the second judge's calls
SHIMMED = ["rg", "tree"]


def _work_folder(root: Path) -> Path:
    work = root / "work"
    for rel in ("head/a.go", "head/b.go", "base/a.go"):
        (work / rel).parent.mkdir(parents=True, exist_ok=True)
        (work / rel).write_text(f"package {rel[5]}\n// a > b\n")  # a.go and b.go differ
    for name in HOSTILE_NAMES:
        (work / name).write_text("0\tstring\tx\tx\n")  # also a valid magic file for `file -C -m`
    return work


def _shims(folder: Path, names) -> None:
    folder.mkdir()
    for name in names:
        path = folder / name
        path.write_text(SHIM)
        path.chmod(0o755)


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory):
    root = tmp_path_factory.mktemp("g11")
    names = {p.rsplit("/", 1)[-1] for p in SAFE_PROGRAMS + OTHER_PROGRAMS + BAD_PROGRAMS if "=" not in p and "'" not in p
             and "\\" not in p and p != "*"} | {"sed", "id"}
    _shims(root / "shims", names)
    return root, root / "shims", _work_folder(root)


@pytest.fixture(scope="module")
def real_sandbox(tmp_path_factory):
    root = tmp_path_factory.mktemp("g11real")
    _shims(root / "bin", NEVER_RUN + SHIMMED)
    for name in REAL_PROGRAMS:
        found = shutil.which(name, path="/usr/bin:/bin")
        assert found, f"{name} is needed on this machine for the real-program judge"
        (root / "bin" / name).symlink_to(found)
    return root, root / "bin", _work_folder(root)


def _snapshot(folder: Path) -> dict[str, str]:
    out = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        for n in dirnames + filenames:
            p = Path(dirpath) / n
            out[str(p.relative_to(folder))] = hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
    return out


def _run(line: str, root: Path, path: Path, work: Path) -> list[str]:
    log = root / "calls.log"
    log.write_text("")
    subprocess.run(["/bin/bash", "--norc", "--noprofile", "-c", line], cwd=work, stdin=subprocess.DEVNULL,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=10,
                   env={"PATH": str(path), "SHIM_LOG": str(log), "HOME": str(root), "LC_ALL": "C"})
    return log.read_text().splitlines()


BASH = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                         HealthCheck.function_scoped_fixture])


@pytest.mark.slow
@BASH
@given(st.one_of(SAFE_LINES, ANY_LINES, ATTACK_LINES))  # SAFE_LINES: so that plenty of lines get to run
def test_accepted_lines_do_nothing_harmful_in_bash(sandbox, line):
    if check_command(line) is not None:
        return
    root, shims, work = sandbox
    before = _snapshot(root / "work")
    calls = _run(line, root, shims, work)
    assert _snapshot(root / "work") == before, line
    for call in calls:
        assert not dangerous_argv(call.split("\t")), (line, call)


@pytest.mark.slow
@BASH
@given(st.one_of(SAFE_LINES, ANY_LINES, ATTACK_LINES))
def test_accepted_lines_change_nothing_with_the_real_programs(real_sandbox, line):
    if check_command(line) is not None:
        return
    root, path, work = real_sandbox
    before = _snapshot(root)
    calls = _run(line, root, path, work)
    (root / "calls.log").unlink()
    assert _snapshot(root) == before, line
    for call in calls:
        argv = call.split("\t")
        assert argv[0] in SHIMMED and not dangerous_argv(argv), (line, call)


@pytest.mark.parametrize("line", [
    "sort --random-source -- -o out head/a.go", "uniq head/*.go", "sed -n 1p [-]i head/a.go",
    "sort -[o] head/a.go", "file -F -- -C -m -o", "find head [-]exec touch p \\;",
])
def test_the_real_judge_sees_the_attacks_it_guards_against(real_sandbox, line):
    """Each line writes or runs something with the real programs in the hostile folder,
    so the real-program judge would catch it; check_command refuses it."""
    root, path, work = real_sandbox
    scratch = root / "scratch"
    shutil.rmtree(scratch, ignore_errors=True)
    shutil.copytree(work, scratch, symlinks=True)
    before = _snapshot(scratch)
    calls = _run(line, root, path, scratch)
    assert _snapshot(scratch) != before or calls, line
    assert check_command(line) is not None
    shutil.rmtree(scratch)
