"""G7 finding locations and the §3 grammar, over real temporary git repositories.

`build_setup`/`setup_contexts` are shared with the other judge test files: a setup
(from tests/data/locations.json or links.json) describes a base commit, a head
commit (with removals, symbolic links, executables and submodule gitlinks) and the
round documents; it becomes a RoundContext through `context_from_git`.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spar.judge.context import RoundContext, RoundDoc
from spar.judge.criteria import ids_of_documents
from spar.judge.findings import build_finding
from spar.judge.locate import locate
from spar.judge.refs import G7_PREFIXES, G8_PREFIXES, parse_ref, split_prefix
from spar.round.context import context_from_git
from spar.whitespace import WHITESPACE, trim
from tests.gitrepo import commit, git, make_repo

DATA = Path(__file__).parent / "data"


def load(name: str) -> dict:
    return json.loads((DATA / name).read_text(encoding="utf-8"))


class Setup:
    def __init__(self, ctx: RoundContext, real: dict[str, str], repo: Path):
        self.ctx, self.real, self.repo = ctx, real, repo

    def fill(self, text: str) -> str:
        """Replace {real:NAME} by the real absolute path of round document NAME."""
        return re.sub(r"\{real:([^}]+)\}", lambda m: self.real[m.group(1)], text)


def build_setup(root: Path, setup: dict) -> Setup:
    base_part, head_part = setup["base"], setup["head"]
    repo = make_repo(root, base_part["files"], symlinks=base_part.get("symlinks"))
    base = git(repo, "rev-parse", "HEAD").strip()
    for path in head_part.get("gitlinks", []):
        # a submodule entry: any commit ID serves as the gitlink's target
        git(repo, "update-index", "--add", "--cacheinfo", f"160000,{base},{path}")
    head = commit(repo, head_part.get("files"), message="head", remove=head_part.get("remove", []),
                  symlinks=head_part.get("symlinks"))
    if head_part.get("executables"):
        for path in head_part["executables"]:
            os.chmod(repo / path, 0o755)
            git(repo, "update-index", "--chmod=+x", "--", path)
        head = commit(repo, message="executables")
    docs, real = [], {}
    for spec in setup["documents"]:
        if "repo_path" in spec:
            key, path, name = spec["repo_path"], repo / spec["repo_path"], spec["repo_path"]
        else:
            key = spec["outside"]
            path = root / "outside" / key
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(spec["text"], encoding="utf-8")
            name = path.name  # G26: the file name outside the repository
        real[key] = os.path.realpath(path)
        docs.append(RoundDoc(spec["kind"], name, real[key], path.name, path.read_bytes()))
    ids = setup.get("criteria_ids")
    if ids is None:
        ids = ids_of_documents(d.text for d in docs if d.kind == "criteria")
    ctx = context_from_git(repo, base, head, docs, setup["check_paths"], ids)
    return Setup(ctx, real, repo)


def setup_contexts(tmp_path_factory, *files: str) -> dict[str, Setup]:
    out = {}
    for file in files:
        for name, setup in load(file)["setups"].items():
            out[name] = build_setup(tmp_path_factory.mktemp(name), setup)
    return out


@pytest.fixture(scope="module")
def setups(tmp_path_factory):
    return setup_contexts(tmp_path_factory, "locations.json")


ROWS = load("locations.json")["rows"]


def _item(location: str) -> dict:
    return {"id": "r1", "proposed_class": "note", "angle": "correctness", "location": location,
            "claim": "c", "failure_scenario": "f", "evidence": "e", "link_kind": "none",
            "link": "", "introduced_by_change": "no", "regression": "no",
            "check_impact": "none", "confidence": "low"}


@pytest.mark.parametrize("row", ROWS, ids=[repr(r["location"]) for r in ROWS])
def test_location_rows(setups, row):
    s = setups[row.get("setup", "g7")]
    location = s.fill(row["location"])
    got = locate(location, s.ctx)
    entry = build_finding("rev", 1, _item(location), s.ctx)
    unreadable = row.get("unreadable", False)
    assert got.unreadable is unreadable
    assert entry["location_unreadable"] is unreadable
    if unreadable:
        # contract §4: path empty, not in check paths, class_reason names the why
        assert got.path == "" and entry["path"] == ""
        assert entry["in_check_paths"] is False
        assert row["why"] in got.why
        assert entry["class_reason"].startswith(f"unreadable location ({got.why}): ")
    else:
        assert got.path == row["path"] and entry["path"] == row["path"]
        assert got.why == ""
        assert got.target == row["target"]
        assert entry["in_check_paths"] is row["in_check_paths"]
    if "start" in row:
        assert got.start == row["start"]
    if "end" in row:
        assert got.end == row["end"]


def test_every_contract_form_is_a_row():
    # the §6 G7 table: 17 lines, several of which list two or more forms
    contract_rows = [r for r in ROWS if r["source"] == "contract"]
    assert len(contract_rows) == 25
    assert len({r["location"] for r in ROWS}) == len(ROWS)


def test_submodule_is_absent_from_the_copies(setups):
    ctx = setups["g7"].ctx
    assert "vendor/sub" not in ctx.head_files
    assert ctx.head_files["link-to-main"] == "120000"


# --- the grammar on its own (hypothesis) -------------------------------------------------

_word_chars = st.characters(blacklist_categories=("Cs",), blacklist_characters=":,;/" + "".join(WHITESPACE))
words = st.text(_word_chars, min_size=1, max_size=12)
# paths that do not themselves start with a prefix (those are tested apart)
paths = st.lists(words, min_size=1, max_size=4).map("/".join).filter(
    lambda p: split_prefix(p, G7_PREFIXES)[0] == "")
lines = st.integers(min_value=0, max_value=10**12)


def _never(_prefix: str, _path: str) -> bool:
    return False


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(paths, lines, lines)
def test_hyphen_and_en_dash_ranges_read_the_same(path, a, b):
    hyphen = parse_ref(f"head/{path}:{a}-{b} rest", G7_PREFIXES, _never)
    dash = parse_ref(f"head/{path}:{a}\u2013{b} rest", G7_PREFIXES, _never)
    assert (hyphen.path, hyphen.start, hyphen.end, hyphen.rest) == (dash.path, dash.start, dash.end, dash.rest)
    assert hyphen.path == path and (hyphen.start, hyphen.end) == (a, b) and hyphen.rest == "rest"


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(st.sampled_from(G7_PREFIXES), st.sampled_from(G7_PREFIXES), paths, lines)
def test_prefix_is_removed_once(first, second, path, n):
    parsed = parse_ref(f"{first}{second}{path}:{n}", G7_PREFIXES, _never)
    assert parsed.prefix == first
    assert parsed.path == second + path


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(paths, lines, lines, lines, lines)
def test_path_does_not_depend_on_line_values(path, a, b, c, d):
    one = parse_ref(f"{path}:{a}-{b}", G8_PREFIXES, _never)
    two = parse_ref(f"{path}:{c}-{d}", G8_PREFIXES, _never)
    assert one.path == two.path == path


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(st.text(st.sampled_from(sorted(WHITESPACE)), max_size=4),
       st.text(st.sampled_from(sorted(WHITESPACE)), max_size=4), paths, lines)
def test_surrounding_whitespace_is_trimmed(lead, tail, path, n):
    assert trim(f"{lead}{path}{tail}") == path
    parsed = parse_ref(f"{lead}./{path}:{n}{tail}", G7_PREFIXES, _never)
    assert (parsed.prefix, parsed.path, parsed.start) == ("./", path, n)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(paths, st.sampled_from(sorted(WHITESPACE)), words)
def test_without_a_line_whole_then_first_word(path, gap, tail):
    text = f"{path}{gap}{tail}"
    asked = []

    def only_whole(prefix, candidate):
        asked.append(candidate)
        return candidate == text

    whole = parse_ref(text, G8_PREFIXES, only_whole)
    assert (whole.form, whole.path, whole.start) == ("whole", text, None)
    word = parse_ref(text, G8_PREFIXES, _never)
    assert (word.form, word.path) == ("word", path)
    assert asked == [text]  # only the whole is asked about
