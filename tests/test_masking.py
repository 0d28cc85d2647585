"""A reviewer's credentials (its vendor variables) never reach anything Spar writes: the
streams are masked where they enter Spar (spar/proc/masking.py)."""

from __future__ import annotations

import json

import pytest

from spar.proc.masking import MASK, Masker, secrets_of
from tests.runsetup import finding, make_setup, result

SECRET = "sk-ant-api03-TOPSECRETVALUE"


def _masked(secrets: tuple[bytes, ...], chunks: list[bytes]) -> tuple[bytes, int]:
    masker = Masker(secrets)
    out = b"".join(masker.feed(c) for c in chunks) + masker.flush()
    return out, masker.count


def test_a_secret_cut_anywhere_between_chunks_is_masked():
    text = b"before " + SECRET.encode() + b" middle " + SECRET.encode() + b" after"
    for cut in range(len(text)):
        for second in (cut, min(cut + 5, len(text))):
            out, count = _masked(secrets_of([SECRET]), [text[:cut], text[cut:second], text[second:]])
            assert out == b"before " + MASK + b" middle " + MASK + b" after"
            assert count == 2


def test_text_that_only_starts_like_a_secret_is_passed_on_whole():
    out, count = _masked(secrets_of([SECRET]), [b"sk-ant-api03-TOP", b"PUBLIC text"])
    assert (out, count) == (b"sk-ant-api03-TOPPUBLIC text", 0)
    out, count = _masked(secrets_of([SECRET]), [b"ends with sk-ant-"])
    assert (out, count) == (b"ends with sk-ant-", 0)


def test_short_values_are_no_secrets():
    assert secrets_of(["1", "true", "1234567", "12345678"]) == (b"12345678",)


@pytest.mark.slow
def test_a_claude_reviewer_printing_its_key_leaves_it_nowhere(tmp_path):
    """The fake claude prints its own ANTHROPIC_API_KEY on stderr and copies it into a
    finding's evidence: logs, round.json, findings.json, summary.md, the terminal and the
    exports hold the mask; round.json says how many were masked."""
    s = make_setup(tmp_path)
    s.env["ANTHROPIC_API_KEY"] = SECRET
    s.configure([{"name": "claude", "preset": "claude"}])
    s.scenario({"claude": {"stderr": f"debug: key={SECRET}\n",
                           "result": result(head=s.head, findings=[finding(evidence=f"the key is {SECRET}")])}})
    proc = s.run()
    assert proc.returncode == 0, proc.stderr.decode()
    round_dir = s.repo / "reviews" / "r1"
    sarif = s.spar("export", "--format", "sarif", str(round_dir))
    assert sarif.returncode == 0, sarif.stderr.decode()
    written = [p.read_bytes() for p in round_dir.rglob("*") if p.is_file() and "workspace" not in p.parts]
    for data in [*written, proc.stdout, proc.stderr, sarif.stdout]:
        assert SECRET.encode() not in data
    assert MASK in (round_dir / "claude" / "stderr.log").read_bytes()
    findings = json.loads((round_dir / "findings.json").read_text())
    assert MASK.decode() in findings[0]["evidence"]
    logs = sum((round_dir / "claude" / f"{name}.log").read_bytes().count(MASK) for name in ("stdout", "stderr"))
    assert logs >= 2  # stderr, and the answer (the fake prints it more than once)
    rj = json.loads((round_dir / "round.json").read_text())
    assert rj["masked_secrets"] == logs
    assert rj["reviewers"][0]["attempts"][0]["masked_secrets"] == logs
