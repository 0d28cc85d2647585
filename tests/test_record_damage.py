"""Every record kind damaged every way, every command run on it (issue 12, G32).

The matrix is data (tests/data/record_damage.json): each row damages one record of
a series whose commands all succeed undamaged; each command then refuses (65,
naming the file and line, nothing written), blocks (the gate: a reason naming
them; `spar report` shows that blocked gate on its page), or ignores the record because it does not read it. docs/records.md lists
the same per command.
"""

from __future__ import annotations

import html
import json
import re
import sys
from pathlib import Path

import pytest

from spar.cli import main as spar_main
from tests import roundfactory as rf
from tests.gitrepo import git
from tests.innerloop import kept_in_inner_loop

DATA = json.loads((Path(__file__).parent / "data" / "record_damage.json").read_text(encoding="utf-8"))
COMMANDS = DATA["commands"]
CELLS = [(row, command) for row in DATA["rows"] for command in COMMANDS]


def _reaction(row: dict, command: str) -> str:
    given = row.get("reactions", {}).get(command)
    if given is not None:
        return given
    if row["record"] in DATA["reads"][command]:
        return "block" if command == "gate" else "refuse"
    if command in DATA["gate_on_page"] and row["record"] in DATA["reads"]["gate"]:
        return "page_" + _reaction(row, "gate")
    return "ignore"


def _series(repo: Path) -> Path:
    series = rf.fresh_series(repo)
    rf.make_round(series, "r1", repo=repo,
                  reviewers=[rf.reviewer("claude"), rf.reviewer("codex", status="failed")],
                  findings=[rf.finding("claude", 1, cls="defect"), rf.finding("claude", 2, cls="hardening")],
                  ledger=[rf.ledger_line("claude-F1", "rejected", evidence="not a bug: the input is checked")],
                  waivers=[{"reviewer": "codex", "preset": "codex", "user_quote": "ship it without codex",
                            "at": "2024-01-02T00:00:00.000Z"}])
    rf.add_extension(series, "code", 1, "churn")
    return series


def _damage(path: Path, spec: dict) -> None:
    if spec.get("delete"):
        path.unlink()
        return
    data = path.read_bytes()
    if spec.get("truncate"):
        data = data[: len(data) // 2]
    elif "drop_tail" in spec:
        data = data[: -spec["drop_tail"]]
    elif "append" in spec:
        data += spec["append"].encode()
    elif "replace_line" in spec:
        lines = data.split(b"\n")
        lines[spec["replace_line"] - 1] = spec["text"].encode()
        data = b"\n".join(lines)
    elif "json_patch" in spec:
        value = json.loads(data)
        (value[0] if isinstance(value, list) else value).update(spec["json_patch"])
        data = (json.dumps(value, indent=2) + "\n").encode()
    elif "json_drop" in spec:
        value = json.loads(data)
        for key in spec["json_drop"]:
            del value[key]
        data = (json.dumps(value, indent=2) + "\n").encode()
    else:
        data = spec["text"].encode()
    path.write_bytes(data)


def _argv(command: str, series: Path, repo: Path, tmp_path: Path) -> list[str]:
    r1 = str(series / "r1")
    if command == "run":
        return ["run", "--stage", "code", "--out", str(series / "r9"), "--dry-run"]
    if command == "record":
        head = git(repo, "rev-parse", "HEAD").strip()
        result = tmp_path / "codex-result.json"
        result.write_text(json.dumps({
            "reviewed_head": head, "verdict": "no_blocking_findings", "findings": [], "limits": "",
            "angles_checked": [{"angle": a, "result": "ok"}
                               for a in ("criteria", "correctness", "checks", "contracts", "risk")],
            "angles_unchecked": []}))
        return ["record", r1, "--reviewer", "codex", "--result", str(result)]
    if command == "triage":
        return ["triage", r1, "claude-F1", "--to", "rejected", "--evidence", "still not a bug"]
    if command == "waive":
        return ["waive", r1, "--reviewer", "codex", "--user-quote", "fine without codex"]
    if command == "extend":
        return ["extend", str(series), "--stage", "code", "--by", "1", "--cause", "churn"]
    if command == "gate":
        return ["gate", r1, "--out", str(repo / "gates" / f"{series.name}.json")]
    if command == "export":
        return ["export", r1, "--format", "sarif", "--out", str(tmp_path / "findings.sarif")]
    if command == "report":
        return ["report", str(series), "--out", str(tmp_path / "report.html")]
    return ["cap-report", str(series), "--format", "json"]


@pytest.fixture
def spar_env(repo, tmp_path, monkeypatch):
    """`spar run` needs a configuration: one `command` reviewer (a dry run starts none)."""
    config = tmp_path / "spar.toml"
    config.write_text(f'[[reviewers]]\nname = "house"\npreset = "command"\n'
                      f'argv = [{json.dumps(sys.executable)}, "-c", "pass", "{{prompt}}"]\n', encoding="utf-8")
    monkeypatch.setenv("SPAR_CONFIG", str(config))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "home" / ".config"))
    monkeypatch.chdir(repo)


@pytest.mark.parametrize("command", COMMANDS)
def test_undamaged_series_every_command_succeeds(repo, tmp_path, capsys, spar_env, command):
    series = _series(repo)
    code = spar_main(_argv(command, series, repo, tmp_path))
    assert code == 0, capsys.readouterr().err


def _covering(cells: list[tuple[dict, str]]) -> set[int]:
    """The cells the inner loop runs: each command's first row of each (record, reaction)
    it has, so every command is seen refusing, blocking or ignoring each record it does;
    and each row once with a command that reads it (the commands taken in turn), so every
    damage is seen caught. The full suite runs every cell."""
    keep, seen, caught = set(), set(), set()
    for index, (row, command) in enumerate(cells):
        key = (command, row["record"], _reaction(row, command))
        if key not in seen:
            seen.add(key)
            keep.add(index)
    for number, row in enumerate(DATA["rows"]):
        turn = COMMANDS[number % len(COMMANDS):] + COMMANDS[:number % len(COMMANDS)]
        command = next((c for c in turn if _reaction(row, c) != "ignore"), None)
        if command is not None:
            caught.add(cells.index((row, command)))
    return keep | caught


_INNER = _covering(CELLS)


@pytest.mark.parametrize("row, command", kept_in_inner_loop(CELLS, lambda index, _cell: index in _INNER,
                                                             ids=[f"{r['record']}-{r['kind']}-{c}" for r, c in CELLS]))
def test_damage_matrix(repo, tmp_path, capsys, spar_env, row, command):
    series = _series(repo)
    where = series if row["record"] == "extensions.jsonl" else series / "r1"
    _damage(where / row["record"], row["damage"])
    before = rf.snapshot(series)
    code = spar_main(_argv(command, series, repo, tmp_path))
    captured = capsys.readouterr()
    reaction = _reaction(row, command)
    if reaction == "refuse":
        assert code == 65, captured.err
        assert row["says"] in captured.err, captured.err
        assert rf.snapshot(series) == before  # refused: nothing written
    elif reaction in ("block", "no_decision"):
        assert code == 1, captured.err
        reasons = json.loads((repo / "gates" / f"{series.name}.json").read_text())["reasons"]
        says = row["says"] if reaction == "block" else "required reviewer codex neither completed nor was waived"
        assert any(says in reason for reason in reasons), reasons
    elif reaction.startswith("page_"):  # spar report: written, its gate section blocked
        assert code == 0, captured.err
        page = (tmp_path / "report.html").read_text(encoding="utf-8")
        text = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())
        says = row["says"] if reaction == "page_block" else "required reviewer codex neither completed nor was waived"
        assert "Gate: blocked" in text and says in text, text
    elif reaction == "not_clean":  # spar export: written, but codex did not complete and is not waived
        assert code == 1, captured.err
        assert 'reviewer "codex" did not complete' in captured.err and "not clean" in captured.err
    elif reaction == "unfinished":
        assert code == 0, captured.err
        assert [u["name"] for u in json.loads(captured.out)["unfinished"]] == ["r1"]
    else:
        assert reaction == "ignore"
        assert code == 0, captured.err
