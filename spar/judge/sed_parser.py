"""sed's command line and scripts as GNU sed reads them: which words are options
(-n, -e, -l, long names and their abbreviations), scripts and operands
(`SedArguments`), and whether a script only selects and prints
(`sed_script_prints_only`) (pure)."""

from __future__ import annotations

from spar.judge.bash_lexer import Word

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


class SedArguments:
    """sed's words read as GNU sed reads them: whether -n was given, the scripts, the operands."""

    def __init__(self, args: list[Word]):
        self.args = args
        self.k = 0  # the next word to read
        self.quiet = False
        self.scripts: list[tuple[str, bool]] = []  # (script, from a word with an unquoted glob)
        self.operands: list[Word] = []

    def read(self) -> Word | None:
        """Read every word; the first one that is a problem, or None."""
        options_done = False
        while self.k < len(self.args):
            word = self.args[self.k]
            v = word.value
            self.k += 1
            if options_done or v == "-":
                self.operands.append(word)
            elif word.may_become_option():
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
