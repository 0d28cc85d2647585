"""G11: which shell command lines an agy reviewer may run.

A line is accepted when it only joins read-only programs (and `sed -n`) with
`|`, `&&`, `||` and `;`.  `2>/dev/null` and `2>&1` (exactly so written, as a
word of their own) are removed before checking.  Quoting (`'…'`, `"…"`) and
`\\` escapes work as in bash: operator characters inside quotes or after `\\`
are not operators.

`check_command(line)` returns None for an accepted line, else the *first
problem* as text.  Order: a newline first; then a shell construct anywhere
in the line (the leftmost one); else the first part, from the left, that
breaks the rule (a command's program, then its arguments left to right).

Shell constructs (reported as shown):
  operators other than `|` `&&` `||` `;`: `&`, `|&`, `;;`, `;&`, `;;&`, `(`,
  `((`, `)`; redirections `<` `>` `>>` `<<` `<<<` `<<-` `<>` `>|` `>&` `<&`
  `&>` `&>>` (an fd number in front is not shown: `ls 2> x` → `>`); process
  substitution `<(` `>(`; command substitution `$(` and `` ` ``; a `$` outside
  single quotes that starts an expansion (`$x`, `${…}`, `$[…]`, `$'…'`,
  `$"…"`, `$1`, `$?` …) → `$`; a `$` before anything else (`foo$`, `x$`,
  `"foo$"`) is literal; brace expansion outside quotes → `{` (an unquoted `{`
  with a later unquoted `}` in the same word and a `,` or `..` between; a bare
  `{}` as in `find … {} +` is not an expansion, and `{}` only means something
  after `-exec`, which is refused anyway); a reserved word in command
  position (`for`, `if`, `while`, `{`, `[[`, `!`, `time`, …); an operator
  with no command before, after or between it (the leftmost operator of the
  empty stretch: `ls &&` → `&&`, `ls ; ; ls` → `;`; a trailing `;` counts);
  a comment (`#` starting a word) → `#`; an unterminated quote → the quote.

Read-only programs (by name, or by a path whose folder is exactly /bin,
/usr/bin, /usr/local/bin or /opt/homebrew/bin) and their forbidden arguments;
see `docs/agy-commands.md` for the same table with reasons:

  ls cat head wc grep egrep fgrep nl cut tr pwd true echo stat
  basename dirname realpath readlink: no forbidden arguments
  tail: -f -F --follow (reads that never end; `+…f`, the obsolete form, too)
  diff: -l --paginate (runs pr)
  find: -delete -exec -execdir -ok -okdir -fprint -fprint0 -fprintf -fls
        (prefixes of the word: `-exec…` and `-ok…` all count)
  sort: -o -T --output --compress-program --temporary-directory
  rg: -z --search-zip --pre --hostname-bin
  file: -C -z -Z -p --compile --uncompress --preserve-date       tree: -o -R
  uniq: a second operand (uniq writes its output there), any word after the first
  sed:  see below

diff, sort, rg, file, tree and uniq are read the way each program reads its
arguments (`agy_options`: GNU getopt, rg's parser, tree's own loop in which
every value-taking letter of a cluster takes its own next word).  `--` ends the
options only where the program reads it as an option word (`tree -PI x -- -o
out` gives `--` to -I, so -o writes `out`), and never right after an option
word (another version may take a value there).  Every word before that end,
option values included, is checked: a forbidden short letter anywhere in a
cluster (`sort -uo x` → `-uo`), a forbidden long name or, for GNU programs, any
abbreviation of one (`sort --comp=sh`); an option the program does not know or
an ambiguous abbreviation is a problem too.  uniq takes one operand and
nothing after it (with POSIXLY_CORRECT every later word is an operand).
Globs: for programs with forbidden arguments and for sed, a word with an
unquoted `*`, `?` or `[` and nothing or `-…` before it is a problem (bash may
turn it into a file named `-o` or `--pre=sh`); for uniq any globbed word is
(it may become a second operand), for sed any globbed script.

sed: `-n`/`--quiet`/`--silent` is required (else the problem is the program
word, `sed`); scripts come from `-e`/`--expression` or, without them, the first
operand; `-i`/`--in-place`/`-f`/`--file`, unknown or ambiguous options, and any
option after the first operand (GNU sed permutes, so `sed -n 'w x' -e 1p f`
would make `w x` a file name) are problems shown as the word; so is `-l` with
a value that is not a number (BSD sed's `-l` takes none, so its next word
would be the script there).  Scripts may
use addresses and only the commands `p P l = d D n N q Q g G h H x z F y { }
! : b t T #` and `s` with flags `g p i I m M` and numbers; `e w W r R a i c
v` and the `s` flags `e w W` make the whole script the problem (`e id`).
A regex whose bracket expression holds the delimiter is refused, because GNU
and BSD sed end such a regex at different places.

A blank line runs nothing and is accepted.
"""

from __future__ import annotations

from dataclasses import dataclass

from spar.errors import quote
from spar.judge.agy_options import TABLES, Parsed, parse_options
from spar.judge.bash_lexer import RESERVED_WORDS, Word, scan
from spar.judge.sed_parser import SedArguments, sed_script_prints_only

ALLOWED_DIRS = ("/bin", "/usr/bin", "/usr/local/bin", "/opt/homebrew/bin")


@dataclass(frozen=True)
class ProgramRule:
    """Forbidden arguments of one read-only program."""

    short: str = ""  # forbidden letters of single-dash option clusters
    long: tuple[str, ...] = ()  # forbidden long option names (without `--`)
    prefixes: tuple[str, ...] = ()  # a word starting with one of these is forbidden
    abbreviations: bool = True  # GNU getopt_long accepts unique prefixes of long names
    dashdash: bool = True  # `--` ends the options
    plus_clusters: bool = False  # a `+…` word is read as a cluster too (tail's obsolete `+5f`)

    @property
    def guards_options(self) -> bool:
        """Whether some option of this program is forbidden (so words becoming options matter)."""
        return bool(self.short or self.long or self.prefixes)


PROGRAMS: dict[str, ProgramRule] = {
    **{name: ProgramRule() for name in (
        "ls", "cat", "head", "wc", "grep", "egrep", "fgrep", "nl", "cut", "tr",
        "pwd", "true", "echo", "stat", "basename", "dirname", "realpath", "readlink",
    )},
    # -l/--paginate pipes the output through the `pr` program
    "diff": ProgramRule(short="l", long=("paginate",)),
    # -exec… and -ok… run programs, -delete removes, -fprint…/-fls write files
    "find": ProgramRule(
        prefixes=("-delete", "-exec", "-ok", "-fprint", "-fls"), abbreviations=False, dashdash=False
    ),
    # -o writes a file; --compress-program runs a program; -T puts temporary files in a folder
    "sort": ProgramRule(short="oT", long=("output", "compress-program", "temporary-directory")),
    # --pre and --hostname-bin run programs; -z runs decompressors
    "rg": ProgramRule(short="z", long=("pre", "hostname-bin", "search-zip"), abbreviations=False),
    # -C writes a compiled magic file; -z/-Z may run decompressors; -p sets file times back
    "file": ProgramRule(short="CzZp", long=("compile", "uncompress", "uncompress-noreport", "preserve-date")),
    # -o writes a file; -R runs tree again writing 00Tree.html files
    "tree": ProgramRule(short="oR", abbreviations=False),
    # -f/-F/--follow read on forever, so the reviewer's turn would never end
    "tail": ProgramRule(short="fF", long=("follow",), plus_clusters=True),
    "uniq": ProgramRule(),  # second operand checked separately
    "sed": ProgramRule(),  # checked separately
}


# ---------------------------------------------------------------------------
# parts


def _shown(word: Word) -> str:
    return word.value if word.value else word.raw


def _program_problem(word: Word) -> tuple[str | None, str | None]:
    """(program name, problem) for the first word of a command."""
    value = word.value
    if "/" in value:
        folder, name = value.rsplit("/", 1)
        if folder not in ALLOWED_DIRS or name not in PROGRAMS:
            return None, _shown(word)
        return name, None
    if value not in PROGRAMS:
        return None, _shown(word)
    return value, None


def _long_matches(name: str, forbidden: tuple[str, ...], abbreviations: bool) -> bool:
    if not name:
        return False
    return any(name == f or (abbreviations and f.startswith(name)) for f in forbidden)


def _is_option(value: str) -> bool:
    return value.startswith("-") and len(value) > 1


def _forbidden_spelling(rule: ProgramRule, value: str) -> bool:
    """Whether a word reads as a forbidden option: a prefix, a forbidden letter anywhere
    in a single-dash cluster, a forbidden long name (or, for GNU programs, an abbreviation
    of one). Applied to every word before the end of the options, values included: a
    value in one version of a program may be an option in another."""
    if any(value.startswith(p) for p in rule.prefixes):
        return True
    if value.startswith("--"):
        return _long_matches(value[2:].split("=", 1)[0], rule.long, rule.abbreviations)
    cluster = value.startswith("-") or (rule.plus_clusters and value.startswith("+"))
    return cluster and any(ch in rule.short for ch in value[1:])


def _options_end(rule: ProgramRule, args: list[Word], parsed: Parsed | None) -> int:
    """Index of the `--` after which every word is surely an operand (len(args) when none).

    With an option table, only the `--` the program itself reads as the end counts
    (`tree -PI x --`: `--` is the value of -I). Conservatively, a `--` right after an
    option word does not count either: another version of the program may take it
    as that option's value."""
    if not rule.dashdash:
        return len(args)
    if parsed is not None:
        end = parsed.end
    else:
        end = next((i for i, w in enumerate(args) if w.value == "--"), None)
    if end is None or (end > 0 and _is_option(args[end - 1].value)):
        return len(args)
    return end


def _generic_problem(name: str, rule: ProgramRule, args: list[Word]) -> str | None:
    if not rule.guards_options:
        return None
    table = TABLES.get(name)
    parsed = parse_options(table, [w.value for w in args]) if table is not None else None
    for i, word in enumerate(args[:_options_end(rule, args, parsed)]):
        if word.may_become_option() or _forbidden_spelling(rule, word.value):
            return _shown(word)
        if parsed is not None and i in parsed.unknown:
            return _shown(word)  # an option this program does not know: refused, not guessed
    return None


def _uniq_problem(args: list[Word]) -> str | None:
    """uniq INPUT OUTPUT writes OUTPUT: one operand at most, and nothing after it
    (with POSIXLY_CORRECT set uniq reads every word after its first operand as one,
    `uniq a -c` writes `-c`)."""
    parsed = parse_options(TABLES["uniq"], [w.value for w in args])
    first = parsed.operands[0] if parsed.operands else None
    for i, word in enumerate(args):
        if word.glob is not None:
            return _shown(word)  # may expand to several operands (or options)
        if i in parsed.unknown or (first is not None and i > first):
            return _shown(word)
    return None


# sed -------------------------------------------------------------------------


def _sed_problem(prog: Word, args: list[Word]) -> str | None:
    call = SedArguments(args)
    bad = call.read()
    if bad is not None:
        return _shown(bad)
    if not call.quiet:
        return _shown(prog)
    scripts = call.scripts
    if not scripts:
        if not call.operands:
            return _shown(prog)
        scripts = [(call.operands[0].value, call.operands[0].glob is not None)]
    for script, globbed in scripts:
        # an unquoted glob would let bash replace the script by a file name
        if globbed or not sed_script_prints_only(script):
            return script
    return None


# ---------------------------------------------------------------------------


def _command_problem(words: list[Word]) -> str | None:
    if not words:
        return None
    name, problem = _program_problem(words[0])
    if name is None:
        return problem
    args = words[1:]
    if name == "sed":
        return _sed_problem(words[0], args)
    if name == "uniq":
        return _uniq_problem(args)
    return _generic_problem(name, PROGRAMS[name], args)


def check_command(line: str) -> str | None:
    """None when the line is accepted (G11), else its first problem as text."""
    if "\n" in line:
        return "\n"
    scanned = scan(line)
    if scanned.constructs:
        return min(scanned.constructs, key=lambda c: c[0])[1]
    for words in scanned.segments:
        problem = _command_problem(words)
        if problem is not None:
            return problem
    return None


def describe_problem(problem: str) -> str:
    return "a newline" if problem == "\n" else quote(problem)


def describe_violation(line: str) -> str:
    """The tool_violation reason: the line (%q) and its first problem."""
    problem = check_command(line)
    if problem is None:
        raise ValueError(f"agy command {quote(line)} is accepted")
    return f"agy command {quote(line)} is not a read-only command line: first problem {describe_problem(problem)}"


__all__ = [
    "ALLOWED_DIRS",
    "PROGRAMS",
    "RESERVED_WORDS",
    "ProgramRule",
    "check_command",
    "describe_problem",
    "describe_violation",
    "sed_script_prints_only",
]

