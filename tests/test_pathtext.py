"""pathtext: the one escaped text form of repository paths."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from spar.pathtext import needs_escape, path_text, text_bytes


def unescape(text: str) -> bytes:
    """The documented form read back (docs/records.md), component by component: one that
    holds a backslash, x and two lower-case hex digits is escaped (\\xNN is a byte, \\\\ a
    backslash); any other is its own UTF-8 bytes."""
    parts = []
    for part in text.split("/"):
        if not re.search(r"\\x[0-9a-f]{2}", part):
            parts.append(part.encode("utf-8"))
            continue
        out = bytearray()
        i = 0
        while i < len(part):
            if part[i] == "\\":
                if part[i + 1] == "\\":
                    out += b"\\"
                    i += 2
                else:
                    assert part[i + 1] == "x"
                    out.append(int(part[i + 2:i + 4], 16))
                    i += 4
            else:
                out += part[i].encode("utf-8")
                i += 1
        parts.append(bytes(out))
    return b"/".join(parts)


def test_examples():
    assert path_text("src/app.py") == "src/app.py"
    assert path_text("naïve/日本.md") == "naïve/日本.md"
    assert path_text(b"caf\xe9.txt") == "caf\\xe9.txt"
    assert path_text("caf\udce9.txt") == "caf\\xe9.txt"  # git's names as spar.git decodes them
    assert path_text("a\\b.txt") == "a\\b.txt"  # a backslash in a UTF-8 name is itself (issue 22 point 9)
    assert path_text("caf\\xe9.txt") == "caf\\\\xe9.txt"  # ... unless it would read as an escape
    assert path_text(b"d\xe9/a\\b") == "d\\xe9/a\\b"  # each component on its own
    assert path_text("tab\there\n") == "tab\\x09here\\x0a"
    assert not needs_escape("naïve") and needs_escape(b"\xff") and not needs_escape("a\\b")
    assert needs_escape("caf\\xe9")


@given(st.binary())
def test_reversible_and_printable(raw):
    text = path_text(raw)
    assert unescape(text) == raw
    assert text_bytes(text) == raw  # Spar's own inverse (SARIF URIs) agrees with this one
    text.encode("utf-8")  # always writable as UTF-8: raises on a lone surrogate
    assert not any(ord(c) < 0x20 or ord(c) == 0x7F for c in text)


def test_a_location_in_the_escaped_form_is_located(tmp_path):
    """G7 looks paths up in the one text form: `head/caf\\xe9.txt:2` is the file whose
    name is the bytes caf<E9>.txt, and a backslash name is named as it is."""
    from spar.judge.locate import check_link, locate
    from spar.round.context import context_from_git
    from tests.crafted import FILE, crafted_commit
    from tests.gitrepo import git, make_repo

    repo = make_repo(tmp_path, {"a.txt": "x\n"})
    base = git(repo, "rev-parse", "HEAD").strip()
    head = crafted_commit(repo, {b"a.txt": (FILE, b"x\n"), b"caf\xe9.txt": (FILE, b"1\n2\n"),
                                 b"back\\slash.txt": (FILE, b"1\n")}, parent=base)
    ctx = context_from_git(repo, base, head, [], [], [])
    found = locate("head/caf\\xe9.txt:2 the second line", ctx)
    assert (found.path, found.unreadable, found.start) == ("caf\\xe9.txt", False, 2)
    assert locate("caf\\xe9.txt", ctx).path == "caf\\xe9.txt"
    assert locate("head/back\\slash.txt:1", ctx).path == "back\\slash.txt"
    assert locate("head/caf\udce9.txt:1", ctx).unreadable  # only the escaped form names it
    assert check_link("contract", "caf\\xe9.txt:2", ctx).confirmed  # G8 reads the same form


@given(st.binary() | st.text(alphabet=st.characters(max_codepoint=0x7F)))
def test_str_names_read_as_their_bytes(raw):
    # git's names arrive as str (surrogateescape); the plain-ASCII shortcut agrees with the bytes
    raw = raw if isinstance(raw, bytes) else raw.encode("ascii")
    name = raw.decode("utf-8", "surrogateescape")
    assert path_text(name) == path_text(raw)
    assert needs_escape(name) == needs_escape(raw) == (path_text(raw) != name)


def _backslash_context(tmp_path, names: dict[bytes, bytes]):
    from spar.round.context import context_from_git
    from tests.crafted import FILE, crafted_commit
    from tests.gitrepo import git, make_repo

    repo = make_repo(tmp_path, {"a.txt": "x\n"})
    base = git(repo, "rev-parse", "HEAD").strip()
    head = crafted_commit(repo, {b"a.txt": (FILE, b"x\n"), **{n: (FILE, c) for n, c in names.items()}}, parent=base)
    return context_from_git(repo, base, head, [], [], [])


def test_a_backslash_name_is_found_by_its_literal_path(tmp_path):
    """Issue 22 point 9: `app/back\\slash.go` (valid UTF-8) is named by its literal repository
    path, in a location (G7: readable, that path recorded) and in a contract link (G8)."""
    from spar.judge.locate import check_link, locate

    ctx = _backslash_context(tmp_path, {b"app/back\\slash.go": b"1\n2\n"})
    found = locate("head/app/back\\slash.go:2 the second line", ctx)
    assert (found.path, found.unreadable, found.start, found.target) == ("app/back\\slash.go", False, 2, "head")
    assert locate("app/back\\slash.go", ctx).path == "app/back\\slash.go"
    assert check_link("contract", "app/back\\slash.go:2", ctx).confirmed
    assert locate("head/app/back\\\\slash.go:1", ctx).unreadable  # the old escaped spelling names nothing now


def test_one_and_two_backslashes_are_each_reachable(tmp_path):
    """Issue 22 point 9: with both `a\\b.txt` and `a\\\\b.txt` in the commit, each literal path
    finds its own file (today `a\\\\b.txt` read as an escape and found `a\\b.txt`)."""
    from spar.judge.locate import locate

    ctx = _backslash_context(tmp_path, {b"a\\b.txt": b"1\n", b"a\\\\b.txt": b"1\n"})
    assert locate("head/a\\b.txt:1", ctx).path == "a\\b.txt"
    assert locate("head/a\\\\b.txt:1", ctx).path == "a\\\\b.txt"
    assert text_bytes("a\\b.txt") == b"a\\b.txt" and text_bytes("a\\\\b.txt") == b"a\\\\b.txt"


def test_a_name_that_spells_an_escape_is_told_from_the_byte_name(tmp_path):
    """Issue 22 point 9, the rule's one tie: the UTF-8 name `caf\\xe9.txt` and the byte name
    caf<E9>.txt. The text form `caf\\xe9.txt` is the byte name's; the UTF-8 one's text form is
    `caf\\\\xe9.txt`. Its literal spelling finds it whenever the byte name is not there."""
    from spar.judge.locate import locate

    both = _backslash_context(tmp_path / "both", {b"caf\xe9.txt": b"1\n", b"caf\\xe9.txt": b"1\n"})
    assert locate("head/caf\\xe9.txt:1", both).path == "caf\\xe9.txt"
    assert text_bytes(locate("head/caf\\xe9.txt:1", both).path) == b"caf\xe9.txt"
    assert text_bytes(locate("head/caf\\\\xe9.txt:1", both).path) == b"caf\\xe9.txt"
    alone = _backslash_context(tmp_path / "alone", {b"caf\\xe9.txt": b"1\n"})
    found = locate("head/caf\\xe9.txt:1", alone)
    assert not found.unreadable and text_bytes(found.path) == b"caf\\xe9.txt"
