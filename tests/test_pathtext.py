"""pathtext: the one escaped text form of repository paths."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from spar.pathtext import needs_escape, path_text, text_bytes


def unescape(text: str) -> bytes:
    """The documented form read back (docs/records.md): \\xNN is a byte, \\\\ a backslash."""
    out = bytearray()
    i = 0
    while i < len(text):
        if text[i] == "\\":
            if text[i + 1] == "\\":
                out += b"\\"
                i += 2
            else:
                assert text[i + 1] == "x"
                out.append(int(text[i + 2:i + 4], 16))
                i += 4
        else:
            out += text[i].encode("utf-8")
            i += 1
    return bytes(out)


def test_examples():
    assert path_text("src/app.py") == "src/app.py"
    assert path_text("naïve/日本.md") == "naïve/日本.md"
    assert path_text(b"caf\xe9.txt") == "caf\\xe9.txt"
    assert path_text("caf\udce9.txt") == "caf\\xe9.txt"  # git's names as spar.git decodes them
    assert path_text("a\\b.txt") == "a\\\\b.txt"
    assert path_text("tab\there\n") == "tab\\x09here\\x0a"
    assert not needs_escape("naïve") and needs_escape(b"\xff") and needs_escape("a\\b")


@given(st.binary())
def test_reversible_and_printable(raw):
    text = path_text(raw)
    assert unescape(text) == raw
    assert text_bytes(text) == raw  # Spar's own inverse (SARIF URIs) agrees with this one
    text.encode("utf-8")  # always writable as UTF-8: raises on a lone surrogate
    assert not any(ord(c) < 0x20 or ord(c) == 0x7F for c in text)


def test_a_location_in_the_escaped_form_is_located(tmp_path):
    """G7 looks paths up in the one text form: `head/caf\\xe9.txt:2` is the file whose
    name is the bytes caf<E9>.txt, and a literal backslash name is told apart."""
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
    assert locate("head/back\\\\slash.txt:1", ctx).path == "back\\\\slash.txt"
    assert locate("head/caf\udce9.txt:1", ctx).unreadable  # only the escaped form names it
    assert check_link("contract", "caf\\xe9.txt:2", ctx).confirmed  # G8 reads the same form


@given(st.binary() | st.text(alphabet=st.characters(max_codepoint=0x7F)))
def test_str_names_read_as_their_bytes(raw):
    # git's names arrive as str (surrogateescape); the plain-ASCII shortcut agrees with the bytes
    raw = raw if isinstance(raw, bytes) else raw.encode("ascii")
    name = raw.decode("utf-8", "surrogateescape")
    assert path_text(name) == path_text(raw)
    assert needs_escape(name) == needs_escape(raw) == (path_text(raw) != name)
