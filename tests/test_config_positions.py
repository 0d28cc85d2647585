"""G17: key lines in TOML files and syntax error lines."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from spar.config.toml_positions import TomlSyntaxError, key_lines, locate_toml

DATA = json.loads((Path(__file__).parent / "data" / "config_toml_positions.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("row", DATA["lines"], ids=lambda r: r["id"])
def test_key_lines(row):
    tomllib.loads(row["text"])  # the rows are valid TOML
    lines = key_lines(row["text"])
    for path, line in row["lines"]:
        assert lines.get(tuple(path)) == line, path
    for path in row.get("absent", []):
        assert tuple(path) not in lines


@pytest.mark.parametrize("row", DATA["syntax_errors"], ids=lambda r: r["id"])
def test_syntax_error_lines(row):
    with pytest.raises(TomlSyntaxError) as info:
        locate_toml("f.toml", row["text"])
    assert info.value.line == row["line"]
    assert info.value.message.startswith("TOML syntax error: ")
    assert "(at " not in info.value.message


@pytest.mark.parametrize("row", DATA["accepted"], ids=lambda r: r["id"])
def test_accepted(row):
    doc = locate_toml("f.toml", row["text"])
    assert doc.data == tomllib.loads(row["text"])


def test_line_falls_back_to_parent_then_one():
    doc = locate_toml("f.toml", "\n\n[caps]\nplan = 1\n")
    assert doc.line(("caps", "plan")) == 4
    assert doc.line(("caps", "nothing")) == 3
    assert doc.line(("other",)) == 1


# --- property: every key of any document is found on a line that writes it --------

import tomlkit  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

keys = st.text(st.sampled_from("ab_-. \"'#=[]\n"), min_size=1, max_size=4)
scalars = st.one_of(st.integers(-5, 5), st.booleans(), st.text(st.sampled_from("x#=[]{}\"'\\\n "), max_size=6))
documents = st.recursive(
    st.dictionaries(keys, scalars, max_size=3),
    lambda inner: st.dictionaries(keys, st.one_of(scalars, inner, st.lists(inner, min_size=1, max_size=2),
                                                  st.lists(scalars, max_size=3)), max_size=3),
    max_leaves=12,
)


def _paths(value, path=()):
    if isinstance(value, dict):
        for k, v in value.items():
            yield path + (k,)
            yield from _paths(v, path + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _paths(v, path + (i,))


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents)
def test_every_key_located(data):
    text = tomlkit.dumps(data)
    parsed = tomllib.loads(text)  # tomlkit may reorder; positions follow the text
    lines = key_lines(text)
    source = text.split("\n")
    for path in _paths(parsed):
        assert path in lines, (path, text)
        if isinstance(path[-1], str):
            written = source[lines[path] - 1]
            assert tomlkit.key(path[-1]).as_string().strip() in written or path[-1] in written, (path, text)
