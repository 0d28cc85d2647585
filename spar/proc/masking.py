"""Credentials replaced by one mask, wherever Spar reads what a reviewer or a tool printed.

One function per medium: `Masker` for a byte stream (as it streams: whatever reads the
stream after the mask, log files, tails, monitors and every record built from them, never
holds a credential), `mask_text` for a decoded string, `mask_value` for a decoded JSON value
(every string in it, keys included). The stream is masked where it enters Spar, and the
decoded values again before anything is written or shown: a value can reach a record
through decoding the stream never did (an answer that is JSON inside a JSON string).

What is matched, for each credential (`secrets_of`: MIN_SECRET characters or more):

- the value itself, reversed, in hex (lower and upper case), and the part of its base64
  (standard and URL-safe) that does not depend on what surrounds it, at the three
  alignments a value can have inside a longer base64 text, and likewise of its base32
  (RFC 4648's alphabet and its "extended hex" one, upper and lower case) at the five;
  a value holding spaces also as a query string writes it (`+` for each);
- each of these through what hides text from a plain search: JSON escapes (`\\u0073`, with
  up to 16 backslashes, each maybe itself escaped as `\\u005c`, as nested JSON strings write
  them, and `\\/`), zero-width characters (U+200B-U+200D, U+2060, U+FEFF, U+00AD; raw or escaped) and ANSI
  escape sequences (CSI and two-byte ones; raw or `\\u001b`-escaped) anywhere between its
  characters;
- and, read through those, URL encoding (`%73`, any byte, either case of each digit, so
  every byte encoded, only some as `quote` does, or a mix) and line breaks inside base64,
  base32 or hex (MIME's 76 columns, PEM's 64, any width of 16 or more: `\\n` or `\\r\\n`,
  raw or JSON-escaped with up to 16 backslashes). A line break counts only after 16
  characters of those alphabets (those passed on before a chunk count too): so text's own
  line breaks cost nothing, and a value wrapped at fewer than 16 columns is not matched.

The whole span is replaced, so the hiding goes with it.

Not matched: other encodings (base85, gzip, a cipher), and a value printed in pieces with
other text between them, such as split over several JSON strings (`["sk-ant-", "api03…"]`)
or over several events of a stream. No rule can close that soundly: the pieces may be cut
anywhere and joined by anything (`", "`, `" + "`, `","b":"`, a number, another event), so
dropping a few separators would only move the hole, and matching a value's characters
with any text between them would mask ordinary text.

A string cut between two chunks is still found: the end of a chunk that could be the
start of one is held back until the next chunk (or the end) decides (a line break ending
a chunk only with such a start before it: other lines are passed on whole). Memory stays
bounded (HOLD_LIMIT).
"""

from __future__ import annotations

import base64
import bisect
import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

MASK = b"[masked by spar]"
MIN_SECRET = 8  # shorter values (flags such as "1", "true") are no secrets and would mask ordinary text

# what hides a credential from a plain search, dropped (or decoded) before matching
_ZERO_WIDTH = frozenset("\u200b\u200c\u200d\u2060\ufeff\u00ad")
_ESCAPE_TAIL = rb"(?:\[[0-?]{0,32}[ -/]{0,8}[@-~]|[@-Z\\-_])"  # of an ANSI escape sequence, after ESC
# one escape's backslashes, however deeply nested, each maybe escaped itself (\u005c); starting
# with a plain byte, so the regex engine skips the text between escapes fast
_BACKSLASHES = rb"\\(?:u005[cC])?(?:\\(?:u005[cC])?){0,15}"
# the start of such a sequence at the very end of a chunk: held back until the next one
_OPEN_TOKEN = re.compile(
    rb"(?:" + _BACKSLASHES + rb"(?:u(?:0(?:0(?:1(?:[bB](?:\[[0-?]{0,32}[ -/]{0,8})?)?)?)?|[0-9a-fA-F]{0,3})?)?"
    rb"|\x1b(?:\[[0-?]{0,32}[ -/]{0,8})?|\xe2[\x80\x81]?|\xef\xbb?|\xc2)\Z")
_TAIL = 160  # longer than any open sequence _OPEN_TOKEN matches


# a value this common is a setting even under a credential's name (AUTH_MODE=disabled,
# TOKEN_TTL=86400000): one lower-case word or a number, shorter than 16 characters
_COMMON = re.compile(r"[a-z]{1,15}|[0-9]{1,15}")


def secrets_of(values: Iterable[str]) -> tuple[bytes, ...]:
    """The values worth masking, longest first, once each: MIN_SECRET characters or more,
    and not a common word or number (masking those would cut ordinary text)."""
    kept = {v.encode("utf-8", errors="surrogateescape") for v in values
            if len(v) >= MIN_SECRET and not _COMMON.fullmatch(v)}
    return tuple(sorted(kept, key=lambda s: (-len(s), s)))


def _cores(encoded: list[bytes], bits: int, size: int) -> list[bytes]:
    """The characters of each of `encoded` (a `size`-byte value behind 0, 1, ... zero bytes,
    `bits` bits a character) that encode only the value's bits."""
    return [text[-(-8 * skew // bits):8 * (skew + size) // bits] for skew, text in enumerate(encoded)]


def _base64_cores(secret: bytes) -> set[bytes]:
    """The base64 characters that encode only `secret`'s bits, at each of the 3 alignments."""
    cores = _cores([base64.b64encode(b"\0" * skew + secret) for skew in range(3)], 6, len(secret))
    return {*cores, *(core.translate(_URL_SAFE) for core in cores)}


def _base32_cores(secret: bytes) -> set[bytes]:
    """The base32 characters (RFC 4648 and its "extended hex" alphabet, upper and lower case)
    that encode only `secret`'s bits, at each of the 5 alignments."""
    cores: set[bytes] = set()
    for encode in (base64.b32encode, base64.b32hexencode):
        found = _cores([encode(b"\0" * skew + secret) for skew in range(5)], 5, len(secret))
        cores.update(found, (core.lower() for core in found))
    return cores


_URL_SAFE = bytes.maketrans(b"+/", b"-_")


def forms(secret: bytes) -> set[bytes]:
    """Every form of `secret` that is masked (each also through escapes and hiding)."""
    found = {secret, secret[::-1], secret.hex().encode(), secret.hex().upper().encode(),
             *_base64_cores(secret), *_base32_cores(secret)}
    if b" " in secret:  # as a query string writes it (quote_plus); the rest is percent-decoded
        found.add(secret.replace(b" ", b"+"))
    return found


_FIND_FROM = 2048  # bytes of text from which each form is looked for alone first (_Forms.found)
_SHORT_START = 128  # starts of a form kept whole up to this many bytes (_Forms.starts_a_form)


@dataclass(frozen=True)
class _Forms:
    every: tuple[bytes, ...]  # every form, longest first
    pattern: re.Pattern[bytes]  # any of them: the longest wins
    prefixes: frozenset[bytes]  # every proper start of a form, up to _SHORT_START bytes long
    long_starts: dict[bytes, tuple[bytes, ...]]  # the first _SHORT_START bytes of a longer form -> those forms
    longest: int
    shortest: int  # a text shorter than this holds no form, however it is read (reading only shortens)
    token: re.Pattern[bytes]  # a hiding sequence that matters to these forms (_token_pattern)

    def starts_a_form(self, tail: bytes) -> bool:
        """Whether `tail` is a proper start of a form. Kept as every start up to _SHORT_START
        bytes, and past that looked up by its first _SHORT_START bytes: every start of a
        long credential's forms would hold memory quadratic in its length (355 MB for a
        3.3 KB PEM key)."""
        if len(tail) <= _SHORT_START:
            return tail in self.prefixes
        return any(len(form) > len(tail) and form.startswith(tail)
                   for form in self.long_starts.get(tail[:_SHORT_START], ()))

    def found(self, text: bytes) -> bool:
        """Whether `text` holds a form. In a long text, a search for each alone: bytes.find
        skips along far faster than the regex engine tries its branches at nearly every
        byte (below ~2 KiB the searches' own cost is more than the regex's)."""
        if len(text) < _FIND_FROM:
            return self.pattern.search(text) is not None
        return any(form in text for form in self.every)

    def spans(self, text: bytes) -> list[tuple[int, int]]:
        """Where the forms are in `text`, as the regex finds them (from the left, the longest
        where several start, none inside another). In a long text, bytes.find looks for
        each: the regex engine would take ~7x as long."""
        if len(text) < _FIND_FROM:
            return [m.span() for m in self.pattern.finditer(text)]
        ends: dict[int, int] = {}  # start: the furthest end of a form starting there
        for form in self.every:
            at = text.find(form)
            while at >= 0:
                ends[at] = max(ends.get(at, 0), at + len(form))
                at = text.find(form, at + 1)
        found, after = [], 0
        for at in sorted(ends):
            if at >= after:
                found.append((at, ends[at]))
                after = ends[at]
        return found

    def view(self, data: bytes, context: int) -> _Layers:
        return _Layers(data, self.token, context)


@functools.lru_cache(maxsize=64)
def _compiled(secrets: tuple[bytes, ...]) -> _Forms:
    plain = {f for s in secrets for f in forms(s)}
    token = _token_pattern(frozenset(chr(min(b, 0x80)) for f in plain for b in f))
    # a credential that itself holds what looks like an escape (a password with "\/" or
    # "%40") is matched as it reads once decoded, as the text around it is
    every = sorted(plain | {_Layers(f, token, whole=True).text for f in plain}, key=lambda f: (-len(f), f))
    long_starts: dict[bytes, list[bytes]] = {}
    for form in every:
        if len(form) > _SHORT_START + 1:
            long_starts.setdefault(form[:_SHORT_START], []).append(form)
    return _Forms(tuple(every), _any_of(every),
                  frozenset(f[:k] for f in every for k in range(1, min(len(f), _SHORT_START + 1))),
                  {start: tuple(forms) for start, forms in long_starts.items()}, len(every[0]), len(every[-1]), token)


_Tree = dict[int, "_Tree"]  # byte: what follows it (-1: a form ends)
_DEEPEST = 64  # forks on one way through the tree, at most (each a nested group: the regex compiler recurses)


def _any_of(every: list[bytes]) -> re.Pattern[bytes]:
    """A regex matching any of `every`, the longest where several start at one place, as a
    tree of their common starts: the engine tries each first byte once at each place, not
    each form (twice as fast as one branch a form). Credentials that start one another many
    times over would nest too deep: then one branch a form, longest first."""
    tree: _Tree = {}
    for form in every:
        node = tree
        for byte in form:
            node = node.setdefault(byte, {})
        node[-1] = {}  # a form ends here
    todo, deepest = [(tree, 0)], 0
    while todo:
        node, forks = todo.pop()
        forks += len(node) > 1
        deepest = max(deepest, forks)
        todo += [(child, forks) for child in node.values()]
    if deepest > _DEEPEST:
        return re.compile(b"|".join(re.escape(f) for f in sorted(every, key=lambda f: (-len(f), f))))

    def written(node: _Tree) -> bytes:
        branches = []
        for first in sorted(b for b in node if b >= 0):
            child, run = node[first], bytes([first])
            while len(child) == 1 and -1 not in child:  # one way on: one literal
                (byte, child), = child.items()
                run += bytes([byte])
            branches.append(re.escape(run) + written(child))
        if -1 in node and branches:
            branches.append(b"")  # ends here, when no longer form does
        return branches[0] if len(branches) == 1 else b"(?:" + b"|".join(branches) + b")" if branches else b""

    return re.compile(written(tree))


def _token_pattern(alphabet: frozenset[str]) -> re.Pattern[bytes]:
    """What hides text, and the escapes that may stand for a character of `alphabet` (a
    non-ASCII one as "\\x80"): of any character when it holds a non-ASCII one, else of ASCII
    and zero-width ones; `\\/` only when it holds "/". An escape of another character cannot
    hide a form, so is not looked at (JSON output is full of them). One flat alternation,
    each branch starting with a plain byte: the regex engine skips other bytes fast."""
    hidden = rb"200[bBcCdD]|2060|[fF][eE][fF][fF]|00[aA][dD]"  # the zero-width characters
    codes = rb"[0-9a-fA-F]{4}" if "\x80" in alphabet else rb"00[0-7][0-9a-fA-F]|" + hidden
    slash = rb"|/" if "/" in alphabet else b""
    return re.compile(rb"\x1b" + _ESCAPE_TAIL + rb"|" + _BACKSLASHES + rb"(?:u001[bB]" + _ESCAPE_TAIL
                      + rb"|u(?P<hex>" + codes + rb")" + slash + rb")|\xe2\x80[\x8b-\x8d]|\xe2\x81\xa0|\xef\xbb\xbf"
                      + rb"|\xc2\xad")


class _View:
    """`data` with some spans replaced (`text`), and the way back to `data`."""

    def __init__(self, data: bytes, spans: Iterable[tuple[int, int, bytes]]) -> None:
        """`spans`: (start, end, what the bytes between stand for), in order; one that
        starts inside the one before is passed over."""
        self.data = data
        parts: list[bytes] = []
        self._starts: list[int] = []  # per piece of `text` that maps to one piece of data: its start in text
        self._pieces: list[tuple[int, int, bool]] = []  # (start in data, length in data, literal)
        raw = size = 0
        for begin, end, decoded in spans:
            if begin < raw:
                continue
            if begin > raw:
                self._add(size, raw, begin - raw, True)
                parts.append(data[raw:begin])
                size += begin - raw
            if decoded:
                self._add(size, begin, end - begin, False)
                parts.append(decoded)
                size += len(decoded)
            raw = end
        if not raw:
            self.text = data  # nothing hidden: the common case, no mapping needed
            return
        self._add(size, raw, len(data) - raw, True)
        parts.append(data[raw:])
        self.text = b"".join(parts)

    def _add(self, start: int, raw: int, length: int, literal: bool) -> None:
        self._starts.append(start)
        self._pieces.append((raw, length, literal))

    def start(self, pos: int) -> int:
        """Where in data the byte at `pos` of text starts (len(data) at the end)."""
        if not self._pieces or pos >= len(self.text):
            return pos if not self._pieces else len(self.data)
        i = bisect.bisect_right(self._starts, pos) - 1
        raw, _, literal = self._pieces[i]
        return raw + (pos - self._starts[i]) if literal else raw

    def end(self, pos: int) -> int:
        """Where in data the text up to `pos` (exclusive, > 0) ends."""
        if not self._pieces:
            return pos
        i = bisect.bisect_right(self._starts, pos - 1) - 1
        raw, length, literal = self._pieces[i]
        return raw + (pos - self._starts[i]) if literal else raw + length


def _hidden(data: bytes, token: re.Pattern[bytes]) -> Iterable[tuple[int, int, bytes]]:
    """The escapes and hiding sequences in `data` (`_View`'s spans)."""
    for m in token.finditer(data):
        decoded = _decoded(m)
        if decoded is not None:  # else not one (a surrogate escape): left as it stands
            yield m.start(), m.end(), decoded


def _decoded(m: re.Match[bytes]) -> bytes | None:
    """What one hiding sequence stands for: b"" when it hides, None when it is no sequence."""
    code = m.group("hex")
    if code is None:  # an escaped slash stands for itself; ANSI and zero-width sequences hide
        return b"/" if m.group().endswith(b"/") else b""
    char = chr(int(code, 16))
    if char in _ZERO_WIDTH:
        return b""
    if 0xD800 <= ord(char) <= 0xDFFF:
        return None
    return char.encode("utf-8")


# The second layer, read on the first one's text (so through JSON escapes and hiding): URL
# encoding (%XX, either case, any byte) and a line break inside a run of base64 (or base32,
# hex) characters, raw or as JSON writes it (\n, \r\n, nested: \\n). A line break counts
# only after 16 such characters (a wrapped line is longer; text seldom is, so the common
# line break costs nothing); at the start of the data, the run before it in what was
# passed on counts too (`context`).
_RUN = rb"[A-Za-z0-9+/_\\-]"  # of base64 (both alphabets), base32, hex; "\" for an escaped "/"
_WIDTH = 16
_RUN_END = re.compile(_RUN + rb"{0,%d}\Z" % _WIDTH)
# one flat alternation, each branch starting with a plain byte: the regex engine skips
# other bytes fast (a group around the line breaks would make it try every byte)
_WRAPPED = re.compile(
    rb"%(?P<hex>[0-9a-fA-F]{2})|\n(?<=" + _RUN + rb"{16}\n)(?=" + _RUN + rb")|\r(?<=" + _RUN + rb"{16}\r)\n(?="
    + _RUN + rb")|\\(?<=" + _RUN + rb"{16}\\)\\{0,15}(?:r\\{1,16})?n(?=" + _RUN + rb")")
_LEADING_BREAK = re.compile(_RUN + rb"{0,15}?(\r?\n|\\{1,16}(?:r\\{1,16})?n)(?=" + _RUN + rb")")
# the start of such a sequence at the very end of the text, that the next chunk decides
_OPEN_ESCAPE = re.compile(rb"%[0-9a-fA-F]?\Z")
_OPEN_BREAK = re.compile(rb"(?:\r\n?|\n|\\{1,16}(?:n|r(?:\\{1,16}n?)?)?)\Z")


def _run_before(data: bytes, end: int, context: int = 0) -> int:
    """How many base64 characters (up to 16) end at `end` of `data`, `context` more before it."""
    run = _RUN_END.search(data, max(0, end - _WIDTH), end)
    size = len(run.group()) if run else 0  # it always matches (maybe nothing)
    return min(_WIDTH, size + context if size == end else size)


def _unwrapped(text: bytes, context: int) -> Iterable[tuple[int, int, bytes]]:
    """The URL escapes and the line breaks inside base64 in `text` (`_View`'s spans)."""
    lead = _LEADING_BREAK.match(text) if context else None
    if lead and _run_before(text, lead.start(1), context) >= _WIDTH:
        yield lead.start(1), lead.end(1), b""
    for m in _WRAPPED.finditer(text):
        code = m.group("hex")
        yield m.start(), m.end(), bytes([int(code, 16)]) if code else b""


class _Layers:
    """`data` as the forms are matched in: escapes and hiding decoded (`_hidden`), then URL
    escapes and line breaks in base64 (`_unwrapped`; `context`: base64 characters passed on
    just before `data`). Unless `whole` (data is all there is), `text` leaves out a sequence
    that the end of `data` may cut: a URL escape, held back (`cut` says where it begins;
    len(data): none), and a line break after 16 base64 characters, held back only with a
    form's start before it (`Masker`), so a line ending a chunk is passed on whole."""

    def __init__(self, data: bytes, token: re.Pattern[bytes], context: int = 0, whole: bool = False) -> None:
        self._first = _View(data, _hidden(data, token))
        first = self._first.text
        end = self.cut = len(first)
        escape = None if whole else _OPEN_ESCAPE.search(first, max(0, end - 2))
        if escape:
            end = self.cut = escape.start()
        elif not whole:
            line_break = _OPEN_BREAK.search(first, max(0, end - 40))
            if line_break and _run_before(first, line_break.start(), context) >= _WIDTH:
                end = line_break.start()
        self._second = _View(first[:end], _unwrapped(first[:end], context))
        self.text = self._second.text
        self.cut = self._first.start(self.cut)

    def start(self, pos: int) -> int:
        """Where in data the byte at `pos` of text starts."""
        return self._first.start(self._second.start(pos))

    def end(self, pos: int) -> int:
        """Where in data the text up to `pos` (exclusive, > 0) ends."""
        return self._first.end(self._second.end(pos))


HOLD_LIMIT = 64 * 1024  # at most this much is held back (a start hidden among more is let go)


class Masker:
    """Feed chunks in, get the masked bytes that are safe to pass on; `flush` at the end."""

    def __init__(self, secrets: tuple[bytes, ...]) -> None:
        self._forms = _compiled(secrets)
        self._held = b""
        self._context = 0  # base64 characters passed on just before what is held (up to 16)
        self.count = 0  # strings replaced so far

    def feed(self, chunk: bytes) -> bytes:
        data = self._held + chunk
        cut = _open_start(data)  # a sequence cut at the end is matched once it is whole
        view = self._forms.view(data[:cut], self._context)
        out = bytearray()
        start = after = 0  # in data, and in view.text: after the last mask
        for first, last in self._forms.spans(view.text):
            begin = view.start(first)
            if begin < start:
                continue  # its first character was decoded from the sequence the last mask took
            out += data[start:begin]
            out += MASK
            self.count += 1
            start, after = view.end(last), last
        held = self._held_from(view.text, after)  # a form may start there
        begin = view.start(held) if held < len(view.text) else len(data)
        kept = max(start, min(begin, view.cut))
        hold = max(kept, len(data) - HOLD_LIMIT)
        out += data[start:hold]
        # what is passed on ends where text does before `held` (a line break left out of
        # text ends it as if dropped), unless too much was held (then a start is let go)
        self._context = _run_before(view.text, held, self._context) if hold == kept else 0
        self._held = data[hold:]
        return bytes(out)

    def _held_from(self, text: bytes, after: int) -> int:
        """Where the longest end of `text` (after `after`) that starts a form begins."""
        for size in range(min(len(text) - after, self._forms.longest - 1), 0, -1):
            if self._forms.starts_a_form(text[-size:]):
                return len(text) - size
        return len(text)

    def flush(self) -> bytes:
        held, self._held, self._context = self._held, b"", 0
        return held


def _open_start(data: bytes) -> int:
    """Where a hiding sequence begins that the end of `data` cuts (len(data): none)."""
    tail = data[-_TAIL:]
    m = _OPEN_TOKEN.search(tail)
    return len(data) - len(tail) + m.start() if m else len(data)


def mask_text(text: str, secrets: tuple[bytes, ...]) -> tuple[str, int]:
    """`text` with every form of `secrets` masked, and how many were."""
    if not secrets or not text:
        return text, 0
    data = text.encode("utf-8", "surrogatepass")
    compiled = _compiled(secrets)
    if len(data) < compiled.shortest:
        return text, 0  # most strings of an event (its type, ids, names)
    if not compiled.found(data) and compiled.token.search(data) is None and _WRAPPED.search(data) is None:
        return text, 0  # the common case, at the cost of a few searches
    masker = Masker(secrets)
    data = masker.feed(data) + masker.flush()
    if not masker.count:
        return text, 0
    return data.decode("utf-8", "surrogatepass"), masker.count


def mask_value(value: Any, secrets: tuple[bytes, ...]) -> tuple[Any, int]:
    """A decoded JSON value (or any nest of dicts, lists and tuples of strings) with every
    string masked: dicts and lists are changed in place, however deep (no recursion)."""
    if not secrets:
        return value, 0
    count = 0

    def one(item: Any) -> Any:
        nonlocal count
        if isinstance(item, str):
            item, n = mask_text(item, secrets)
            count += n
        elif isinstance(item, dict | list):
            todo.append(item)
        elif isinstance(item, tuple):
            item = tuple(one(x) for x in item)
        return item

    todo: list[dict[Any, Any] | list[Any]] = []
    top = one(value)
    while todo:
        box = todo.pop()
        if isinstance(box, list):
            box[:] = [one(x) for x in box]
        else:
            items = [(one(k), one(v)) for k, v in box.items()]
            box.clear()
            box.update(items)
    return top, count


__all__ = ["HOLD_LIMIT", "MASK", "MIN_SECRET", "Masker", "forms", "mask_text", "mask_value", "secrets_of"]
