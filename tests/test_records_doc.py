"""What docs/records.md says of an attempt's `exit_code` and of the files that do not go
through the atomic writer holds for a real round (issue 21 point 5: every claim of the
docs true of the code)."""

from __future__ import annotations

import json
import os
import stat

import pytest

from tests.runsetup import RECORDS_MD, make_setup, result

pytestmark = pytest.mark.slow


def test_attempt_exit_codes_are_as_records_md_says(tmp_path):
    """Issue 21 point 5: a found executable that cannot be started records 127 (the
    guard's word, with the reason in stderr.log), one never found records null, and one
    that ran records its own exit status."""
    s = make_setup(tmp_path)
    unstartable = tmp_path / "not-a-program"
    unstartable.write_bytes(b"\x00\x01 neither a binary nor a script")
    unstartable.chmod(0o755)
    exits_3 = s.answer_reviewer("exits", result(), exit_code=3, copy=False)
    s.configure([
        {"name": "unstartable", "preset": "command", "argv": [str(unstartable), "{prompt}"]},
        {"name": "missing", "preset": "command", "argv": [str(tmp_path / "nowhere"), "{prompt}"]},
        exits_3,
    ])
    proc = s.run()
    assert proc.returncode == 1, proc.stderr.decode()
    round_dir = s.repo / "reviews" / "r1"
    by = {r["name"]: r for r in json.loads((round_dir / "round.json").read_text())["reviewers"]}

    assert by["unstartable"]["status"] == "failed"
    assert [a["exit_code"] for a in by["unstartable"]["attempts"]] == [127]
    log = (round_dir / "unstartable" / "stderr.log").read_text()
    assert log.startswith(f"spar: cannot start {unstartable}")
    assert by["missing"]["status"] == "unavailable"
    assert [a["exit_code"] for a in by["missing"]["attempts"]] == [None]
    assert [a["exit_code"] for a in by["exits"]["attempts"]] == [3]

    doc = " ".join(RECORDS_MD.read_text(encoding="utf-8").split())
    assert "127 when its executable was found but could not be started" in doc
    assert "`null` when Spar killed it" in doc


def test_logs_and_workspace_copies_are_the_files_written_directly(tmp_path):
    """Issue 21 point 5: ARCHITECTURE.md says every file goes through the atomic writer
    except the reviewer logs and the workspace copies. A round leaves exactly those
    two kinds outside the records, and the copies read-only."""
    s = make_setup(tmp_path)
    s.configure([s.example_reviewer()])
    proc = s.run()
    assert proc.returncode in (0, 1), proc.stderr.decode()
    round_dir = s.repo / "reviews" / "r1"
    written = {p.relative_to(round_dir).as_posix() for p in round_dir.rglob("*")
               if p.is_file() and "workspace" not in p.relative_to(round_dir).parts}
    atomic = {"round.json", "packet.md", "schema.json", "findings.json", "ledger.jsonl", "summary.md"}
    assert written - atomic == {"example/stdout.log", "example/stderr.log"}
    copy = round_dir / "workspace" / "head" / "calc.py"
    assert copy.is_file() and not os.stat(copy).st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)

    doc = " ".join((RECORDS_MD.parent / "ARCHITECTURE.md").read_text(encoding="utf-8").split())
    rule = doc[doc.index("- Every file Spar writes goes through `spar/records/atomic.py`"):]
    rule = rule[:rule.index(" - ")]
    assert "except two kinds" in rule and "`stdout*.log`/`stderr*.log`" in rule and "workspace copies" in rule
