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

  ls cat head tail wc grep egrep fgrep nl cut tr pwd true echo stat
  basename dirname realpath readlink: no forbidden arguments
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

from dataclasses import dataclass, field

from spar.errors import quote
from spar.judge.agy_options import TABLES, Parsed, parse_options

ALLOWED_DIRS = ("/bin", "/usr/bin", "/usr/local/bin", "/opt/homebrew/bin")

# `2>/dev/null` and `2>&1` are dropped before checking (G11)
_REMOVED = ("2>/dev/null", "2>&1")

_METACHARS = set(" \t|&;<>()")
_BLANKS = " \t"

# bash `compgen -k`; only special as the first word of a command
RESERVED_WORDS = frozenset(
    ["!", "case", "coproc", "do", "done", "elif", "else", "esac", "fi", "for", "function", "if", "in", "select",
     "then", "until", "while", "{", "}", "time", "[[", "]]"]
)


@dataclass(frozen=True)
class ProgramRule:
    """Forbidden arguments of one read-only program."""

    short: str = ""  # forbidden letters of single-dash option clusters
    long: tuple[str, ...] = ()  # forbidden long option names (without `--`)
    prefixes: tuple[str, ...] = ()  # a word starting with one of these is forbidden
    abbreviations: bool = True  # GNU getopt_long accepts unique prefixes of long names
    dashdash: bool = True  # `--` ends the options

    @property
    def guards_options(self) -> bool:
        """Whether some option of this program is forbidden (so words becoming options matter)."""
        return bool(self.short or self.long or self.prefixes)


PROGRAMS: dict[str, ProgramRule] = {
    **{name: ProgramRule() for name in (
        "ls", "cat", "head", "tail", "wc", "grep", "egrep", "fgrep", "nl", "cut", "tr",
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
    "uniq": ProgramRule(),  # second operand checked separately
    "sed": ProgramRule(),  # checked separately
}


# ---------------------------------------------------------------------------
# tokens


@dataclass
class _Word:
    """One shell word of a command."""

    value: str  # after quote removal
    raw: str  # as written
    start: int
    plain: bool  # no quoting or escaping at all (reserved words must be plain)
    # the value before the first unquoted glob character (`*`, `?`, `[`), or None
    # when the word has none: bash may replace such a word by file names
    glob: str | None = None


@dataclass
class _Op:
    """One shell operator of a command."""

    text: str
    start: int


@dataclass
class _Scan:
    """A command line split into simple commands, and the constructs found."""

    segments: list[list[_Word]] = field(default_factory=list)
    constructs: list[tuple[int, str]] = field(default_factory=list)


_SEPARATORS = {"|", "||", "&&", ";"}
_BAD_SEPARATORS = {"&", "|&", ";;", ";&", ";;&"}
_OPERATORS = (  # longest first
    ";;&", "&>>", "<<<", "<<-",
    "&&", "||", "|&", ";;", ";&", "&>", "<(", "<<", "<>", "<&", ">(", ">>", ">|", ">&", "((",
    "|", "&", ";", "<", ">", "(", ")",
)


def _is_word_end(line: str, i: int) -> bool:
    return i >= len(line) or line[i] in _METACHARS


def _dollar_problem(line: str, i: int, in_double: bool) -> str | None:
    """The construct a `$` at line[i] starts, or None when it is a literal `$`."""
    nxt = line[i + 1] if i + 1 < len(line) else ""
    if nxt == "(":
        return "$("
    if nxt in ("{", "["):
        return "$"
    if nxt in ("'", '"'):
        return None if in_double else "$"  # `$'…'` and `$"…"`; inside "…" a literal `$`
    if nxt and (nxt.isalnum() or nxt == "_" or nxt in "?#@*!$-"):
        return "$"
    return None


def _scan(line: str) -> _Scan:
    out = _Scan()
    n = len(line)
    segment: list[_Word] = []
    seg_has_tokens = False
    last_sep: _Op | None = None
    i = 0

    def separator(op: _Op) -> None:
        nonlocal segment, seg_has_tokens, last_sep
        if not seg_has_tokens:
            # an empty stretch: blame the operator before it (nothing after it),
            # or this one when the line starts with it (nothing before it)
            blame = last_sep if last_sep is not None else op
            out.constructs.append((blame.start, blame.text))
        out.segments.append(segment)
        segment, seg_has_tokens, last_sep = [], False, op

    while i < n:
        c = line[i]
        if c in _BLANKS:
            i += 1
            continue
        removed = next((r for r in _REMOVED if line.startswith(r, i) and _is_word_end(line, i + len(r))), None)
        if removed:
            i += len(removed)
            continue
        if c in _METACHARS:
            op = next(o for o in _OPERATORS if line.startswith(o, i))
            if op in _SEPARATORS or op in _BAD_SEPARATORS:
                if op in _BAD_SEPARATORS:
                    out.constructs.append((i, op))
                separator(_Op(op, i))
            else:
                out.constructs.append((i, op))  # redirection, substitution, parenthesis
                seg_has_tokens = True
            i += len(op)
            continue
        if c == "#":
            out.constructs.append((i, "#"))  # a comment hides the rest of the line
            break
        word, i, stop = _scan_word(line, i, out.constructs)
        if word.plain and not segment and word.value in RESERVED_WORDS:
            out.constructs.append((word.start, word.value))
        segment.append(word)
        seg_has_tokens = True
        if stop:
            break
    if not seg_has_tokens and last_sep is not None:
        out.constructs.append((last_sep.start, last_sep.text))
    if seg_has_tokens or last_sep is not None:
        out.segments.append(segment)
    return out


def _scan_word(line: str, i: int, constructs: list[tuple[int, str]]) -> tuple[_Word, int, bool]:
    """Scan one word from line[i]; returns (word, next index, stop scanning)."""
    n = len(line)
    start = i
    value: list[str] = []
    plain = True
    # unquoted brace characters: (position in line, char); `,`/`..` anywhere count
    braces: list[tuple[int, str]] = []
    sep_positions: list[int] = []
    glob: str | None = None
    while i < n and line[i] not in _METACHARS:
        c = line[i]
        if c in "'\"":
            plain = False
            quoted = _quoted(line, i, constructs)
            if quoted is None:  # unterminated: the rest of the line is this word
                return _Word("".join(value), line[start:], start, False), n, True
            text, after = quoted
            value.append(text)
            if "," in text or ".." in text:
                sep_positions.append(i)
            i = after
            continue
        if c == "\\":
            plain = False
            text, i = _escaped(line, i)
        elif c == "$":
            text, i = _unquoted_dollar(line, i, constructs)
        else:
            if c == "`":
                constructs.append((i, "`"))
            elif c in "*?[" and glob is None:
                glob = "".join(value)
            mark = _brace_mark(line, i)
            if mark:
                braces.append((i, mark))
            text, i = c, i + 1
        value.append(text)
    brace = _brace_expansion(braces, sep_positions)
    if brace is not None:
        constructs.append((brace, "{"))
    return _Word("".join(value), line[start:i], start, plain, glob), i, False


def _escaped(line: str, i: int) -> tuple[str, int]:
    """The character a `\\` at line[i] stands for, and the index after it (a `\\` ending the line is itself)."""
    if i + 1 < len(line):
        return line[i + 1], i + 2
    return "\\", i + 1


def _unquoted_dollar(line: str, i: int, constructs: list[tuple[int, str]]) -> tuple[str, int]:
    """The text a `$` outside quotes at line[i] adds to its word, and the index after it;
    the construct it starts, if any, goes to `constructs`."""
    problem = _dollar_problem(line, i, in_double=False)
    if problem:
        constructs.append((i, problem))
        if line[i + 1:i + 2] == "{":
            return "${", i + 2  # `${` opens a parameter, not a brace expansion
    return "$", i + 1


def _brace_mark(line: str, i: int) -> str | None:
    """What an unquoted character counts as in a brace expansion: `{`, `}` or `,` (a `..` counts as `,`)."""
    c = line[i]
    if c in "{},":
        return c
    if c == "." and line[i + 1:i + 2] == ".":
        return ","  # `..` of {1..3}
    return None


def _quoted(line: str, i: int, constructs: list[tuple[int, str]]) -> tuple[str, int] | None:
    """The text of the quoted part opening at line[i] and the index after its closing quote;
    None when the quote is never closed (the quote goes to `constructs`)."""
    if line[i] == "'":
        end = line.find("'", i + 1)
        if end < 0:
            constructs.append((i, "'"))
            return None
        return line[i + 1:end], end + 1
    return _double_quoted(line, i, constructs)


def _double_quoted(line: str, i: int, constructs: list[tuple[int, str]]) -> tuple[str, int] | None:
    """`"…"` opening at line[i]: inside, `\\` escapes only $ ` " \\, and `$`/`` ` `` still start constructs."""
    n = len(line)
    j = i + 1
    chunk: list[str] = []
    while j < n and line[j] != '"':
        d = line[j]
        if d == "\\" and j + 1 < n and line[j + 1] in '$`"\\':
            chunk.append(line[j + 1])
            j += 2
            continue
        if d == "$":
            problem = _dollar_problem(line, j, in_double=True)
            if problem:
                constructs.append((j, problem))
        elif d == "`":
            constructs.append((j, "`"))
        chunk.append(d)
        j += 1
    if j >= n:
        constructs.append((i, '"'))
        return None
    return "".join(chunk), j + 1


def _brace_expansion(braces: list[tuple[int, str]], quoted_seps: list[int]) -> int | None:
    """Position of an unquoted `{` that opens a brace expansion, if any.

    Conservative: any `,` or `..` (quoted or not) between an unquoted `{` and a
    later unquoted `}` makes it an expansion.
    """
    opens = [pos for pos, ch in braces if ch == "{" and pos >= 0]
    for open_pos in opens:
        closes = [pos for pos, ch in braces if ch == "}" and pos > open_pos]
        if not closes:
            continue
        close_pos = max(closes)
        if any(ch == "," and open_pos < pos < close_pos for pos, ch in braces) or any(
            open_pos < pos < close_pos for pos in quoted_seps
        ):
            return open_pos
    return None


# ---------------------------------------------------------------------------
# parts


def _shown(word: _Word) -> str:
    return word.value if word.value else word.raw


def _program_problem(word: _Word) -> tuple[str | None, str | None]:
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


def _may_become_option(word: _Word) -> bool:
    """Whether bash may replace `word` by file names starting with `-`: an unquoted
    glob with nothing or `-…` in front of it (`*`, `[-]exec`, `--out*`). Which names
    exist depends on the folder the command runs in, so such a word is refused
    wherever options matter."""
    return word.glob is not None and (word.glob == "" or word.glob.startswith("-"))


def _forbidden_spelling(rule: ProgramRule, value: str) -> bool:
    """Whether a word reads as a forbidden option: a prefix, a forbidden letter anywhere
    in a single-dash cluster, a forbidden long name (or, for GNU programs, an abbreviation
    of one). Applied to every word before the end of the options, values included: a
    value in one version of a program may be an option in another."""
    if any(value.startswith(p) for p in rule.prefixes):
        return True
    if value.startswith("--"):
        return _long_matches(value[2:].split("=", 1)[0], rule.long, rule.abbreviations)
    return value.startswith("-") and any(ch in rule.short for ch in value[1:])


def _options_end(rule: ProgramRule, args: list[_Word], parsed: Parsed | None) -> int:
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


def _generic_problem(name: str, rule: ProgramRule, args: list[_Word]) -> str | None:
    if not rule.guards_options:
        return None
    table = TABLES.get(name)
    parsed = parse_options(table, [w.value for w in args]) if table is not None else None
    for i, word in enumerate(args[:_options_end(rule, args, parsed)]):
        if _may_become_option(word) or _forbidden_spelling(rule, word.value):
            return _shown(word)
        if parsed is not None and i in parsed.unknown:
            return _shown(word)  # an option this program does not know: refused, not guessed
    return None


def _uniq_problem(args: list[_Word]) -> str | None:
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

_SED_LONG = {
    "quiet": "n", "silent": "n", "expression": "e", "file": "f", "in-place": "i",
    "line-length": "l", "null-data": "z", "zero-terminated": "z", "regexp-extended": "E",
    "separate": "s", "sandbox": "", "unbuffered": "u", "debug": "", "posix": "",
    "follow-symlinks": "", "binary": "", "help": "", "version": "",
}
_SED_FLAGS = set("nEsuzr")
_SED_FORBIDDEN = set("if")


def _resolve_long(name: str, table: dict[str, str]) -> str | None:
    """GNU getopt_long: an exact name, else a unique prefix; None when unknown or ambiguous."""
    if name in table:
        return name
    hits = [k for k in table if k.startswith(name)] if name else []
    return hits[0] if len(hits) == 1 else None


def _sed_problem(prog: _Word, args: list[_Word]) -> str | None:
    call = _SedArguments(args)
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


class _SedArguments:
    """sed's words read as GNU sed reads them: whether -n was given, the scripts, the operands."""

    def __init__(self, args: list[_Word]):
        self.args = args
        self.k = 0  # the next word to read
        self.quiet = False
        self.scripts: list[tuple[str, bool]] = []  # (script, from a word with an unquoted glob)
        self.operands: list[_Word] = []

    def read(self) -> _Word | None:
        """Read every word; the first one that is a problem, or None."""
        options_done = False
        while self.k < len(self.args):
            word = self.args[self.k]
            v = word.value
            self.k += 1
            if options_done or v == "-":
                self.operands.append(word)
            elif _may_become_option(word):
                return word  # a glob bash may turn into options (`*` next to a file named -i)
            elif not v.startswith("-"):
                self.operands.append(word)
            elif v == "--":
                options_done = True
            elif self.operands:
                return word  # an option after the first operand
            elif not (self.long_option(v[2:]) if v.startswith("--") else self.short_options(v[1:])):
                return word
        return None

    def long_option(self, text: str) -> bool:
        """`--name[=value]`; False when unknown, ambiguous, forbidden or missing its value."""
        name, eq, val = text.partition("=")
        full = _resolve_long(name, _SED_LONG)
        if full is None:
            return False
        letter = _SED_LONG[full]
        if letter in _SED_FORBIDDEN:
            return False
        if letter == "n":
            self.quiet = True
        elif letter in ("e", "l"):
            return self.take(letter, val if eq else None)
        return True

    def short_options(self, cluster: str) -> bool:
        """A `-…` cluster of letters; -e and -l take the rest of it, else the next word."""
        for pos, ch in enumerate(cluster):
            if ch in _SED_FORBIDDEN or (ch not in _SED_FLAGS and ch not in "el"):
                return False
            if ch == "n":
                self.quiet = True
            elif ch in "el":
                return self.take(ch, cluster[pos + 1:] or None)
        return True

    def take(self, letter: str, inline: str | None) -> bool:
        """The value of -e/-l (given inline, else the next word); False when it is missing
        or, for -l, not a number (BSD sed's -l takes no value: the next word would be the script)."""
        if inline is not None:
            value, globbed = inline, False
        elif self.k < len(self.args):
            value, globbed = self.args[self.k].value, self.args[self.k].glob is not None
            self.k += 1
        else:
            return False
        if letter == "e":
            self.scripts.append((value, globbed))
            return True
        return value.isdigit()


_SED_SIMPLE = set("pPl=dDnNqQgGhHxzF")
_SED_NUMBER_ARG = set("lqQL")
_S_FLAGS = set("gpiImM0123456789")


class _SedSyntax(Exception):
    pass


def sed_script_prints_only(script: str) -> bool:
    """True when a sed script only selects and prints (no e/w/W/r/R/a/i/c, no s///e or s///w)."""
    try:
        _SedParser(script).parse()
    except _SedSyntax:
        return False
    return True


class _SedParser:
    def __init__(self, text: str):
        self.t = text
        self.i = 0

    def peek(self) -> str:
        return self.t[self.i] if self.i < len(self.t) else ""

    def skip_blanks(self) -> None:
        while self.peek() and self.peek() in " \t":
            self.i += 1

    def parse(self) -> None:
        depth = 0
        while self.another_command():
            cmd = self.command_letter()
            if cmd == "{":
                depth += 1
                continue
            if cmd == "}":
                depth -= 1
                if depth < 0:
                    raise _SedSyntax
            else:
                self.command_rest(cmd)
            self.end_of_command()
        if depth != 0:
            raise _SedSyntax

    def another_command(self) -> bool:
        """Skip blanks and `;` before a command; False at the end of the script or at a
        comment (it runs to the end: scripts here have no newline)."""
        while self.peek() and self.peek() in " \t;":
            self.i += 1
        return self.peek() not in ("", "#")

    def command_letter(self) -> str:
        """Skip the command's address and any `!`; read its letter ("" at the end)."""
        if self.peek() != ":":
            self.address()
        self.skip_blanks()
        while self.peek() == "!":
            self.i += 1
            self.skip_blanks()
        cmd = self.peek()
        self.i += 1
        return cmd

    def command_rest(self, cmd: str) -> None:
        """What follows a command letter; a command that is not print-only is refused."""
        if cmd == ":":
            self.label()
        elif cmd and cmd in "btT":
            self.skip_blanks()
            self.label()
        elif cmd == "s":
            self.substitute()
        elif cmd == "y":
            delim = self.delimiter()
            self.regex(delim, brackets=False)
            self.regex(delim, brackets=False)
        elif cmd and cmd in _SED_SIMPLE:
            if cmd in _SED_NUMBER_ARG:
                self.skip_blanks()
                while self.peek().isdigit():
                    self.i += 1
        else:
            raise _SedSyntax  # e w W r R a i c v and anything unknown

    def end_of_command(self) -> None:
        self.skip_blanks()
        if self.peek() in ("", ";", "}", "#"):
            return
        raise _SedSyntax

    def label(self) -> None:
        # GNU sed ends a label at `;` or a blank
        while self.peek() and self.peek() not in " \t;}":
            self.i += 1

    def delimiter(self) -> str:
        d = self.peek()
        if not d or d in "\\\n":
            raise _SedSyntax
        self.i += 1
        return d

    def regex(self, delim: str, brackets: bool = True) -> None:
        """Skip a regex (or replacement: brackets=False) up to and past its unescaped delimiter."""
        while True:
            c = self.peek()
            if not c:
                raise _SedSyntax
            self.i += 1
            if c == "\\":
                if not self.peek():
                    raise _SedSyntax
                self.i += 1
            elif c == delim:
                return
            elif c == "[" and brackets:
                self.bracket(delim)

    def bracket(self, delim: str) -> None:
        """A bracket expression; the delimiter inside one is refused (GNU and BSD sed differ)."""
        start = self.i
        if self.peek() == "^":
            self.i += 1
        if self.peek() == "]":
            self.i += 1
        while True:
            c = self.peek()
            if not c:
                # no closing `]`: GNU reads `[` literally; re-scan from after it
                self.i = start
                return
            if c == delim:
                raise _SedSyntax
            self.i += 1
            if c == "[" and self.peek() in (":", ".", "="):
                kind = self.peek()
                close = self.t.find(kind + "]", self.i + 1)
                if close < 0:
                    raise _SedSyntax
                if delim in self.t[self.i:close]:
                    raise _SedSyntax
                self.i = close + 2
            elif c == "]":
                return

    def address(self) -> None:
        if not self.one_address():
            return
        self.skip_blanks()
        if self.peek() == ",":
            self.i += 1
            self.skip_blanks()
            if self.peek() in ("+", "~"):
                self.i += 1
                self.number(required=True)
            elif not self.one_address():
                raise _SedSyntax

    def one_address(self) -> bool:
        c = self.peek()
        if c.isdigit():
            self.number(required=True)
            if self.peek() == "~":
                self.i += 1
                self.number(required=True)
            return True
        if c == "$":
            self.i += 1
            return True
        if c in ("/", "\\"):
            self.i += 1
            delim = "/" if c == "/" else self.delimiter()
            self.regex(delim)
            while self.peek() in ("I", "M"):
                self.i += 1
            return True
        return False

    def number(self, required: bool) -> None:
        start = self.i
        while self.peek().isdigit():
            self.i += 1
        if required and self.i == start:
            raise _SedSyntax

    def substitute(self) -> None:
        delim = self.delimiter()
        self.regex(delim)
        self.regex(delim, brackets=False)
        while self.peek() and self.peek() in _S_FLAGS:
            self.i += 1
        # anything else here (e, w, W, unknown) is refused by end_of_command


# ---------------------------------------------------------------------------


def _command_problem(words: list[_Word]) -> str | None:
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
    scan = _scan(line)
    if scan.constructs:
        return min(scan.constructs, key=lambda c: c[0])[1]
    for words in scan.segments:
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
