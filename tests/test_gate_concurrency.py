"""spar gate never locks and never crashes on what it reads (G33): a real
second process triages while the gate reads; another writes rounds the way
`spar run` does, and even tears round.json on purpose."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from spar.cli import main as spar_main
from tests import roundfactory as rf

pytestmark = pytest.mark.slow  # real writer processes beside the gate

N = 12


def _gate_doc(capsys, series, names, out):
    code = spar_main(["gate", *[str(series / n) for n in names], "--out", str(out)])
    captured = capsys.readouterr()
    assert code in (0, 1), captured.err  # never 65/70, never a traceback
    assert "Traceback" not in captured.err
    doc = json.loads(out.read_text())
    assert doc["state"] == ("passed" if code == 0 else "blocked")
    return doc


def test_triage_in_another_process_while_gate_reads(repo, capsys):
    series = rf.fresh_series(repo)
    rf.make_round(series, "r1", repo=repo, findings=[rf.finding("claude", n) for n in range(1, N + 1)])
    # one real `spar triage` process per finding, one after the other
    script = textwrap.dedent(f"""
        import subprocess, sys
        for n in range(1, {N} + 1):
            code = subprocess.call([sys.executable, "-m", "spar", "triage", {str(series / "r1")!r}, f"claude-F{{n}}",
                                    "--to", "rejected", "--evidence", f"wrong {{n}}"])
            if code != 0:
                sys.exit(code)
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out = repo / "gates" / f"{series.name}.json"
    seen_open = []
    while proc.poll() is None:
        doc = _gate_doc(capsys, series, ["r1"], out)
        seen_open.append(len(doc["open"]))
        # every blocked reason is about an open finding, never an unreadable record
        assert all("has no standing disposition" in r for r in doc["reasons"]), doc["reasons"]
    _stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 0, stderr
    # the ledger only grows, so what is open only shrinks
    assert seen_open == sorted(seen_open, reverse=True)
    assert len(set(seen_open)) >= 2, "the gate never ran while triage was writing"
    final = _gate_doc(capsys, series, ["r1"], out)
    assert final["state"] == "passed" and final["open"] == []
    assert len(rf.read_jsonl(series / "r1" / "ledger.jsonl")) == N


def test_rounds_written_while_gate_reads(repo, capsys):
    """A writer creates rounds step by step as spar run does (round.json pending,
    then findings, ledger, round.json finished) and also tears a round.json with
    a plain non-atomic write; the gate only ever reports blocked reasons."""
    series = rf.fresh_series(repo)
    rf.make_round(series, "r1", repo=repo)
    template = json.loads((series / "r1" / "round.json").read_text())
    script = textwrap.dedent(f"""
        import json, os, time
        from pathlib import Path
        from spar.records import atomic, jsonl
        series = Path({str(series)!r})
        template = json.loads({json.dumps(json.dumps(template))})
        for n in range(2, 14):
            folder = series / f"w{{n}}"
            folder.mkdir()
            pending = dict(template, name=folder.name, started_at=f"2024-02-01T00:00:{{n:02d}}.000Z")
            pending.pop("finished_at", None); pending.pop("recorded_at", None)
            pending["reviewers"] = [dict(r, status="pending") for r in template["reviewers"]]
            atomic.write_json(folder / "round.json", pending)
            time.sleep(0.02)
            atomic.write_json(folder / "findings.json", [])
            atomic.write_bytes(folder / "ledger.jsonl", b"")
            done = dict(template, name=folder.name, started_at=pending["started_at"])
            if n % 3 == 0:
                # a torn, non-atomic write: readers may see half a file
                with open(folder / "round.json", "w") as fh:
                    text = json.dumps(done)
                    fh.write(text[: len(text) // 2]); fh.flush(); time.sleep(0.05)
                    fh.write(text[len(text) // 2:])
            else:
                atomic.write_json(folder / "round.json", done)
            time.sleep(0.02)
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out = repo / "gates" / f"{series.name}.json"
    runs = 0
    while proc.poll() is None or runs == 0:
        listed = sorted(p.name for p in series.iterdir() if p.is_dir())
        doc = _gate_doc(capsys, series, listed, out)
        runs += 1
        for reason in doc["reasons"]:
            assert ("cannot be read" in reason or "was not finished" in reason
                    or "not in the gate list" in reason or "required reviewer" in reason), reason
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 0, stderr
    names = sorted(p.name for p in series.iterdir() if p.is_dir())
    assert len(names) == 13
    assert _gate_doc(capsys, series, names, out)["state"] == "passed"
    assert runs >= 1


def test_torn_round_json_is_a_reason_not_a_crash(repo, capsys):
    series = rf.fresh_series(repo)
    r1 = rf.make_round(series, "r1", repo=repo)
    text = (r1 / "round.json").read_text()
    out = repo / "gates" / f"{series.name}.json"
    for cut in (0, 1, len(text) // 3, len(text) - 2):
        (r1 / "round.json").write_text(text[:cut])
        doc = _gate_doc(capsys, series, ["r1"], out)
        assert doc["state"] == "blocked"
        assert doc["reasons"][0].startswith(f"round {r1} cannot be read: ")
    (r1 / "round.json").write_text(text)
    assert _gate_doc(capsys, series, ["r1"], out)["state"] == "passed"
