"""Bash's lexing of one command line, as far as the agy checker needs it: words
after quote removal (with where an unquoted glob starts), simple commands split at
`|`, `&&`, `||` and `;`, and every shell construct found on the way (operators,
redirections, substitutions, expansions, reserved words in command position,
comments, unterminated quotes), each with its position (pure)."""

from __future__ import annotations

from dataclasses import dataclass, field

# `2>/dev/null` and `2>&1` are dropped before checking (G11)
_REMOVED = ("2>/dev/null", "2>&1")

_METACHARS = set(" \t|&;<>()")
_BLANKS = " \t"

# bash `compgen -k`; only special as the first word of a command
RESERVED_WORDS = frozenset(
    ["!", "case", "coproc", "do", "done", "elif", "else", "esac", "fi", "for", "function", "if", "in", "select",
     "then", "until", "while", "{", "}", "time", "[[", "]]"]
)


@dataclass
class Word:
    """One shell word of a command."""

    value: str  # after quote removal
    raw: str  # as written
    start: int
    plain: bool  # no quoting or escaping at all (reserved words must be plain)
    # the value before the first unquoted glob character (`*`, `?`, `[`), or None
    # when the word has none: bash may replace such a word by file names
    glob: str | None = None

    def may_become_option(self) -> bool:
        """Whether bash may replace this word by file names starting with `-`: an unquoted
        glob with nothing or `-…` in front of it (`*`, `[-]exec`, `--out*`). Which names
        exist depends on the folder the command runs in, so such a word is refused
        wherever options matter."""
        return self.glob is not None and (self.glob == "" or self.glob.startswith("-"))


@dataclass
class _Op:
    """One shell operator of a command."""

    text: str
    start: int


@dataclass
class Scan:
    """A command line split into simple commands, and the constructs found."""

    segments: list[list[Word]] = field(default_factory=list)
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


def scan(line: str) -> Scan:
    """`line` split into simple commands (words), with every shell construct found in it."""
    out = Scan()
    n = len(line)
    segment: list[Word] = []
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


def _scan_word(line: str, i: int, constructs: list[tuple[int, str]]) -> tuple[Word, int, bool]:
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
                return Word("".join(value), line[start:], start, False), n, True
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
    return Word("".join(value), line[start:i], start, plain, glob), i, False


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
