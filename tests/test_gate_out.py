"""spar gate --out: G28 refusals (nothing written) and previous_gate_digest."""

from __future__ import annotations

import hashlib
import json

import pytest

from spar.cli import main as spar_main
from tests import roundfactory as rf


@pytest.fixture
def series(series, repo):
    """The shared series (round r1) with a second round, r2."""
    rf.make_round(series, "r2", repo=repo, packet_text="second\n")
    return series


def _gate(capsys, series, out):
    code = spar_main(["gate", str(series / "r1"), str(series / "r2"), "--out", str(out)])
    return code, capsys.readouterr()


OUT_REFUSALS = [
    ("inside a listed round folder", lambda repo, s: s / "r2" / "gate.json", "is inside the round folder"),
    ("the round folder itself", lambda repo, s: s / "r1", "is inside the round folder"),
    ("deep inside a round folder", lambda repo, s: s / "r1" / "claude" / "gate.json", "is inside the round folder"),
    ("the series' extensions.jsonl (absent)", lambda repo, s: s / "extensions.jsonl", "extensions.jsonl"),
    ("not ignored by the repository", lambda repo, s: repo / "gate.json", "does not ignore it"),
    ("a tracked file", lambda repo, s: repo / "app" / "main.py", "tracked"),
    ("a folder that does not exist", lambda repo, s: repo / "gates" / "nope" / "gate.json", "does not exist"),
    ("a folder", lambda repo, s: repo / "gates", "is not a review-gate/v1 file"),
]


@pytest.mark.parametrize("name, where, message", OUT_REFUSALS, ids=[r[0] for r in OUT_REFUSALS])
def test_out_refused(repo, series, capsys, name, where, message):
    out = where(repo, series)
    before = rf.snapshot(repo)
    code, captured = _gate(capsys, series, out)
    assert code == 65, captured.err
    assert message in captured.err
    assert captured.out == ""
    assert rf.snapshot(repo) == before


def test_out_equal_to_existing_extensions_jsonl(repo, series, capsys):
    rf.add_extension(series, "plan", 1)
    before = rf.snapshot(repo)
    code, captured = _gate(capsys, series, series / "extensions.jsonl")
    assert code == 65 and "extensions.jsonl" in captured.err
    assert rf.snapshot(repo) == before


@pytest.mark.parametrize("content", [b"", b"not json", b"[]", b'{"schema": "review-round/v1"}', b'{"state": "passed"}'],
                         ids=["empty", "not json", "array", "round.json", "no schema"])
def test_existing_out_that_is_not_a_gate_file(repo, series, capsys, content):
    out = repo / "gates" / f"{series.name}.json"
    out.write_bytes(content)
    before = rf.snapshot(repo)
    code, captured = _gate(capsys, series, out)
    assert code == 65 and "is not a review-gate/v1 file" in captured.err
    assert rf.snapshot(repo) == before


def test_previous_gate_digest_chains(repo, series, capsys):
    out = repo / "gates" / f"{series.name}.json"
    assert _gate(capsys, series, out)[0] == 0
    first = out.read_bytes()
    assert json.loads(first)["previous_gate_digest"] is None
    assert _gate(capsys, series, out)[0] == 0
    second = out.read_bytes()
    assert json.loads(second)["previous_gate_digest"] == hashlib.sha256(first).hexdigest()
    # a blocked gate over the same file still chains
    rf.make_round(series, "r3", repo=repo, packet_text="third\n")
    assert _gate(capsys, series, out)[0] == 1
    third = json.loads(out.read_bytes())
    assert third["previous_gate_digest"] == hashlib.sha256(second).hexdigest()
    assert third["reasons"] == [f"{series}: round r3 of the series is not in the gate list: list it too, or gate "
                                f"the whole series (spar gate --series {series})"]
    assert not (out.parent / (out.name + ".tmp")).exists()


def test_out_in_the_series_folder_is_not_a_round(repo, series, capsys):
    out = series / "gate.json"
    code, captured = _gate(capsys, series, out)
    assert code == 0, captured.out
    # and a later gate does not take the gate file for a round
    code, captured = _gate(capsys, series, out)
    assert code == 0, captured.out


def test_out_inside_a_round_folder_of_the_series_that_is_not_listed(repo, series, capsys):
    """A gate file never lands in a round folder, listed or not."""
    rf.make_round(series, "r3", repo=repo, packet_text="third\n")
    before = rf.snapshot(repo)
    code, captured = _gate(capsys, series, series / "r3" / "gate.json")
    assert code == 65, captured.err
    assert f"is inside the round folder {series / 'r3'}" in captured.err.replace('"', "")
    assert rf.snapshot(repo) == before


def test_another_gate_writing_the_same_out_meanwhile(repo, series, capsys, monkeypatch):
    """The gate takes no lock, so two gates may write one --out at once. Here a
    second gate runs to the end just before the first puts its file in place:
    both succeed, and the file is whole (the first one's, written last)."""
    import os

    out = repo / "gates" / f"{series.name}.json"
    real_replace = os.replace
    inner: list[int] = []
    started = []

    def replace(src, dst, *args, **kwargs):
        if os.fspath(dst) == str(out) and not started:
            started.append(True)
            inner.append(spar_main(["gate", str(series / "r1"), str(series / "r2"), "--out", str(out)]))
            inner.append(json.loads(out.read_bytes()))
        return real_replace(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "replace", replace)
    code, captured = _gate(capsys, series, out)
    assert (code, inner[0]) == (0, 0), captured.err
    doc = json.loads(out.read_text())
    # the outer gate judged first and put its file in place last
    assert doc["state"] == "passed" and doc["generated_at"] < inner[1]["generated_at"]
    assert [p.name for p in out.parent.iterdir() if p.name.endswith(".tmp")] == []
