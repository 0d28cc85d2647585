"""Unicode whitespace: the one set of characters Spar trims, and trimming with it.

Every text a user or reviewer gives (finding locations, triage options, globs,
record fields) is trimmed the same way, so "blank" means one thing everywhere.
Pure functions, no I/O.
"""

from __future__ import annotations

# Unicode White_Space property (what Go's unicode.IsSpace reports). Python's
# str.isspace() would also accept U+001C..U+001F, which are not whitespace here.
WHITESPACE = frozenset(
    "\t\n\v\f\r \x85\xa0\u1680"
    "\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)


_CHARACTERS = "".join(sorted(WHITESPACE))


def trim(text: str) -> str:
    """Remove leading and trailing Unicode whitespace."""
    return text.strip(_CHARACTERS)


def is_blank(text: str) -> bool:
    return not text.strip(_CHARACTERS)
