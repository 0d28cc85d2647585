"""A reviewer's answer is read with a cap on findings (issue 25, "a reviewer answering 20,000
findings"): more than the cap is invalid_output with the reason, counted before any finding
is checked or built; the cap is 500 unless the user configuration sets another, for every
reviewer or for one."""

from __future__ import annotations

import json

import pytest

from spar.cli import main as spar_main
from spar.config.load import load_config
from spar.config.model import DEFAULT_MAX_FINDINGS
from spar.errors import ConfigError
from spar.judge.result import InvalidOutput, validate_result
from tests import roundfactory as rf
from tests.gitrepo import git
from tests.runsetup import finding, result

HEAD = "a" * 40


def answer(count: int, item=None) -> dict:
    return result(head=HEAD, findings=[finding(id=f"f{n}") if item is None else item for n in range(count)])


def validate(obj, **kw):
    return validate_result(obj, packet_head=HEAD, requested_angles=["correctness"], standpoints_active=False,
                           assigned=False, **kw)


def test_501_findings_are_invalid_output_500_are_not():
    """issue 25 findings cap: the default cap is 500; 501 findings name the cap in the reason."""
    assert DEFAULT_MAX_FINDINGS == 500
    assert len(validate(answer(500))["findings"]) == 500
    with pytest.raises(InvalidOutput) as err:
        validate(answer(501))
    assert err.value.reason == ("findings: 501 findings, more than the 500 this reviewer may report "
                                "(max_findings); none is recorded")
    with pytest.raises(InvalidOutput, match="findings: 3 findings, more than the 2 "):
        validate(answer(3), max_findings=2)


def test_the_count_comes_before_any_finding_is_looked_at():
    """issue 25 findings cap: 501 entries that are not even objects are refused for their
    number, so no entry of an over-long answer is checked or built."""
    with pytest.raises(InvalidOutput) as err:
        validate(answer(501, item=None) | {"findings": [None] * 501})
    assert err.value.reason.startswith("findings: 501 findings, more than the 500")
    with pytest.raises(InvalidOutput, match=r"findings\[0\]: null, not an object"):
        validate(answer(500) | {"findings": [None] * 500})


def test_cap_is_configurable_for_every_reviewer_and_for_one(tmp_path):
    """issue 25 findings cap: top-level `max_findings` in the user file applies to every
    reviewer without its own; a reviewer's `max_findings` is its own; 0 or text is refused."""
    path = tmp_path / "spar.toml"
    path.write_text('max_findings = 40\n\n[[reviewers]]\npreset = "claude"\n\n'
                    '[[reviewers]]\npreset = "codex"\nmax_findings = 7\n')
    cfg = load_config(None, env={"SPAR_CONFIG": str(path)}, home=tmp_path)
    assert [(r.name, r.max_findings) for r in cfg.reviewers] == [("claude", 40), ("codex", 7)]
    assert cfg.applied_values()["max_findings"] == 40
    path.write_text('timeout_seconds = 60\n')
    plain = load_config(None, env={"SPAR_CONFIG": str(path)}, home=tmp_path)
    assert all(r.max_findings == 500 for r in plain.reviewers)
    assert "max_findings" not in plain.applied_values()  # configurations without it keep their digest
    for bad in ("max_findings = 0\n", 'max_findings = "many"\n',
                '[[reviewers]]\npreset = "claude"\nmax_findings = -1\n'):
        path.write_text(bad)
        with pytest.raises(ConfigError, match="max_findings"):
            load_config(None, env={"SPAR_CONFIG": str(path)}, home=tmp_path)


def test_spar_record_of_501_findings_records_invalid_output(tmp_path, capsys):
    """issue 25 findings cap, the way it was found: an answer of 501 findings handed to a
    round is recorded invalid_output with the reason, and no finding of it is written."""
    repo, series = rf.series_repo(tmp_path)
    r1 = rf.make_round(series, "r1", repo=repo, reviewers=[rf.reviewer("native", status="awaiting_record")])
    head = git(repo, "rev-parse", "HEAD").strip()
    many = result(head=head, findings=[finding(id=f"f{n}", location="head/app/main.py:1", link_kind="none", link="")
                                       for n in range(501)])
    path = tmp_path / "answer.json"
    path.write_text(json.dumps(many))
    assert spar_main(["record", str(r1), "--reviewer", "native", "--result", str(path)]) == 1
    assert "native invalid_output (findings: 501 findings, more than the 500" in capsys.readouterr().out
    (entry,) = json.loads((r1 / "round.json").read_text())["reviewers"]
    assert entry["status"] == "invalid_output"
    assert entry["reason"].startswith("findings: 501 findings, more than the 500 this reviewer may report")
    assert json.loads((r1 / "findings.json").read_text()) == []
