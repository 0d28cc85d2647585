"""G11: agy shell command lines, from the contract §6 list plus our own rows."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from spar.errors import quote
from spar.judge import agy_commands
from spar.judge.agy_commands import check_command, describe_violation, sed_script_prints_only

ROOT = Path(__file__).resolve().parent.parent
DATA = json.loads((ROOT / "tests/data/agy_commands.json").read_text(encoding="utf-8"))
ACCEPTED = DATA["accepted"]
VIOLATIONS = DATA["violations"]
CONTRACT = ROOT / "tests/data/contract/spar-input-excerpts.md"  # the contract's §6 G11 bullets, copied


def _id(row: dict) -> str:
    return quote(row["line"])[:60]


@pytest.mark.parametrize("row", ACCEPTED, ids=_id)
def test_accepted(row):
    assert check_command(row["line"]) is None


@pytest.mark.parametrize("row", VIOLATIONS, ids=_id)
def test_first_problem(row):
    assert check_command(row["line"]) == row["problem"]


@pytest.mark.parametrize("row", VIOLATIONS, ids=_id)
def test_reason_shows_line_and_problem(row):
    reason = describe_violation(row["line"])
    assert quote(row["line"]) in reason
    shown = "a newline" if row["problem"] == "\n" else quote(row["problem"])
    assert reason.endswith(f"first problem {shown}")
    assert "\n" not in reason


def test_reason_format():
    assert describe_violation("ls; touch x") == (
        'agy command "ls; touch x" is not a read-only command line: first problem "touch"'
    )
    assert describe_violation("ls\nrm -rf head") == (
        'agy command "ls\\nrm -rf head" is not a read-only command line: first problem a newline'
    )


def test_describe_accepted_line_is_a_caller_bug():
    with pytest.raises(ValueError):
        describe_violation("ls -la head")


def _contract_bullet(prefix: str) -> str:
    text = CONTRACT.read_text(encoding="utf-8")
    line = next(l for l in text.splitlines() if l.strip().startswith("• " + prefix))
    return line.split(":", 1)[1].strip()


def test_every_contract_form_is_in_the_data():
    """The §6 G11 lists, read from the contract itself, are exactly our contract rows."""
    accepted = _contract_bullet("Accepted (lines that join").split(", ") + _contract_bullet(
        "Accepted (lines accepted before)").split(", ")
    assert sorted(accepted) == sorted(r["line"] for r in ACCEPTED if r["source"] == "contract §6")
    # violation items are "line (problem)" joined by ", "
    items = _contract_bullet("Violations (the first problem").split("), ")
    pairs = sorted(f"{r['line']} ({r['problem']}" for r in VIOLATIONS
                   if r["source"] == "contract §6" and "\n" not in r["line"])
    assert sorted(i.removesuffix(")") for i in items) == pairs


def test_docs_table_lists_exactly_the_programs():
    doc = (ROOT / "docs/agy-commands.md").read_text(encoding="utf-8")
    section = doc.split("## Read-only programs", 1)[1].split("\n## ", 1)[0]
    names = re.findall(r"^\| `([a-z]+)` \|", section, flags=re.M)
    assert sorted(names) == sorted(agy_commands.PROGRAMS)
    # the module docstring names every program too
    for name in agy_commands.PROGRAMS:
        assert re.search(rf"\b{name}\b", agy_commands.__doc__)


@pytest.mark.parametrize("folder", agy_commands.ALLOWED_DIRS)
@pytest.mark.parametrize("program", sorted(agy_commands.PROGRAMS))
def test_every_program_by_name_and_by_allowed_path(folder, program):
    args = {"sed": " -n 1p head/a"}.get(program, " head/a")
    assert check_command(program + args) is None
    assert check_command(f"{folder}/{program}{args}") is None
    assert check_command(f"{folder}x/{program}{args}") == f"{folder}x/{program}"


@pytest.mark.parametrize(
    "script, ok",
    [
        ("1,20p", True), ("/func/,/^}/p", True), ("s/x/y/2p", True), ("$!N;P;D", True),
        ("n;p", True), ("h;G;p", True), ("/a/b end;p;:end", True), ("s/a/b/ ; p", True),
        ("e id", False), ("s/a/b/e", False), ("1w out", False), ("s/a/b/w out", False),
        ("r x", False), ("1~3e", False), ("s/a/b/pe", False), ("s/a/b/ w x", False),
        ("s/[[:alpha:]]/X/p", True), ("s/[[:/:]]/X/p", False), ("s/a", False), ("p;}", False),
    ],
)
def test_sed_scripts(script, ok):
    assert sed_script_prints_only(script) is ok
