"""The baseline rules `spar init --project` gives a project: a defect linked to one of them
blocks the gate, the same claim with no link stays a note (classification unchanged), and the
packet tells reviewers how to link to them."""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from pathlib import Path

import pytest

from tests.gitrepo import commit, git, make_repo
from tests.runsetup import Setup, finding, make_setup, result

pytestmark = pytest.mark.slow

BASE = {
    "registry.py": "def load_named(name, token):\n    return fetch(name, token)\n",
    "tests/test_registry.py": "def test_load():\n    assert True\n",
}
CHANGE = {
    "registry.py": "import logging\n\n\ndef load_named(name, token):\n"
                   "    logging.info('loading %s with %s', name, token)\n    return fetch(name, token)\n",
}
# the link the baseline document itself tells reviewers to write
LINK = ".jaekit/rules/baseline.md BASE-SECRETS"


def project(tmp_path: Path) -> Setup:
    """A new repository with no Spar files, a user configuration holding the given command
    reviewer, and a PATH without any reviewer CLI (so `spar init` adds none)."""
    s = make_setup(tmp_path)
    repo = make_repo(tmp_path, BASE, name="project")
    base = git(repo, "rev-parse", "HEAD").strip()
    head = commit(repo, CHANGE, message="log the loading")
    s.env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), "/usr/bin", "/bin"])
    return dataclasses.replace(s, repo=repo, base=base, head=head)


def logs_the_token(**link: str) -> dict:
    return finding(location="head/registry.py:5", claim="load_named logs the registry token",
                   failure_scenario="anyone reading the application log gets the token",
                   evidence="logging.info('loading %s with %s', name, token)", regression="no",
                   check_impact="none", smallest_fix="log the name only", **link)


def round_after_init(s: Setup, item: dict, tmp_path: Path) -> tuple[dict, dict, str]:
    """`spar init --project`, one round whose reviewer reports `item`, the gate over it:
    (the finding as recorded, the gate file, the run's stderr)."""
    s.configure([s.answer_reviewer("alpha", result(findings=[item]))])
    init = s.spar("init", "--project")
    assert init.returncode == 0, init.stderr.decode()
    run = s.run("--base", s.base)
    assert run.returncode == 0, run.stderr.decode()
    [recorded] = json.loads((s.repo / "reviews" / "r1" / "findings.json").read_text(encoding="utf-8"))
    gate = s.spar("gate", "reviews/r1", "--out", str(tmp_path / "gate.json"))
    document = json.loads((tmp_path / "gate.json").read_text(encoding="utf-8"))
    assert gate.returncode == (0 if document["state"] == "passed" else 1), gate.stderr.decode()
    return recorded, document, run.stderr.decode()


def test_a_logged_token_linked_to_the_baseline_rule_blocks_the_gate(tmp_path):
    s = project(tmp_path)
    recorded, gate, _ = round_after_init(s, logs_the_token(link_kind="rule", link=LINK), tmp_path)
    assert (recorded["class"], recorded["link_kind"], recorded["link"]) == ("defect", "rule", LINK)
    assert recorded["class_reason"] == "rule 7: proposed defect"
    assert gate["state"] == "blocked"
    assert any(recorded["id"] in reason for reason in gate["reasons"]), gate["reasons"]
    # every reviewer had the rules and was told to link a defect to the rule it breaks
    packet = (s.repo / "reviews" / "r1" / "packet.md").read_text(encoding="utf-8")
    assert "### .jaekit/rules/baseline.md" in packet and "BASE-SECRETS" in packet
    assert "the rule it breaks" in packet


def test_the_same_claim_without_a_link_stays_a_note_and_passes(tmp_path):
    s = project(tmp_path)
    recorded, gate, _ = round_after_init(s, logs_the_token(link_kind="none", link=""), tmp_path)
    assert (recorded["class"], recorded["class_reason"]) == ("note", "rule 6: proposed defect without a confirmed link")
    assert gate["state"] == "passed", gate["reasons"]


def test_the_first_run_after_init_names_spars_own_uncommitted_files(tmp_path):
    """The files `spar init --project` wrote are uncommitted at the first round: the warning
    says which of the uncommitted files they are and to commit them."""
    s = project(tmp_path)
    (s.repo / "notes.txt").write_text("mine\n", encoding="utf-8")
    _, _, stderr = round_after_init(s, logs_the_token(link_kind="none", link=""), tmp_path)
    [warning] = [line for line in stderr.splitlines() if "working tree" in line]
    assert "0 changed tracked files and 4 untracked files" in warning
    own = warning.split("Spar's set-up files (where spar init writes): ", 1)[1]
    assert own.startswith("`.gitignore`, `.jaekit/rules/baseline.md`, `.jaekit/spar.toml`; commit them too")
    assert "notes.txt" not in warning
    rj = json.loads((s.repo / "reviews" / "r1" / "round.json").read_text(encoding="utf-8"))
    assert rj["uncommitted"]["spar_files"] == [".gitignore", ".jaekit/rules/baseline.md", ".jaekit/spar.toml"]


@pytest.mark.parametrize("link", ["BASE-SECRETS", "baseline.md#BASE-SECRETS", ".jaekit/rules/baseline.md: BASE-SECRETS",
                                  ".jaekit/rules/baseline.md BASE-SECRETS"])
def test_a_rule_cited_by_its_id_is_a_rule_found_however_the_path_is_spelled(tmp_path, link):
    """The issue's four spellings of one link: each confirms the baseline rule and blocks."""
    s = project(tmp_path)
    recorded, gate, stderr = round_after_init(s, logs_the_token(link_kind="rule", link=link), tmp_path)
    assert (recorded["class"], recorded["link"]) == ("defect", link)
    assert gate["state"] == "blocked" and gate["demoted"] == []
    assert "kept as a note" not in stderr


def test_a_defect_demoted_for_its_link_is_said_by_run_gate_report_and_hook(tmp_path):
    s = project(tmp_path)
    recorded, gate, stderr = round_after_init(s, logs_the_token(link_kind="rule", link="BASE-NOPE"), tmp_path)
    assert recorded["class"] == "note"
    said = f'{recorded["id"]} was proposed as a defect but is kept as a note: its rule link "BASE-NOPE"'
    assert f"spar: note: {said}" in stderr
    assert gate["state"] == "passed" and gate["demoted"] == [f"round reviews/r1: {said} names no rule document, "
                                                              "rule ID or contract file Spar found"]
    shown = s.spar("gate", "--series", "reviews", "--out", str(tmp_path / "g2.json"))
    assert f"note: round reviews/r1: {said}" in shown.stdout.decode()
    assert s.spar("report", "reviews", "--out", str(tmp_path / "r.html")).returncode == 0
    assert "BASE-NOPE" in (tmp_path / "r.html").read_text(encoding="utf-8")
