"""A series across rounds: caps, free reruns, extensions, the series lock (G33)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from spar.records.lock import series_lock
from tests.proctools import blocked_on_lock, wait_for
from tests.runsetup import make_setup, result

pytestmark = pytest.mark.slow


def load(path):
    return json.loads(path.read_text(encoding="utf-8"))


def test_cap_refusal_then_free_rerun_then_extension(tmp_path):
    s = make_setup(tmp_path)
    s.configure([s.answer_reviewer("house", result()), s.answer_reviewer("flaky", result(), exit_code=3)])
    series = s.repo / "reviews"

    first = s.run(out="reviews/r1")
    assert first.returncode == 1, first.stderr.decode()
    second = s.run("--criteria", "docs/criteria.md", out="reviews/r2")
    assert second.returncode == 1
    assert [load(series / n / "round.json")["counted"] for n in ("r1", "r2")] == [True, True]

    # project cap for code is 2: a third input is refused, naming the numbers and spar extend
    third = s.run("--rules", "docs/criteria.md", out="reviews/r3")
    assert third.returncode == 65
    message = third.stderr.decode().strip().splitlines()[-1]
    assert "2 counted rounds (r1, r2)" in message and "cap of 2" in message
    assert f"spar extend {series} --stage code --by N" in message
    assert not (series / "r3").exists() and not (series / "extensions.jsonl").exists()

    # a rerun of r1's input with only the unfinished reviewer is free
    s.configure([s.answer_reviewer("house", result()), s.answer_reviewer("flaky", result())])
    rerun = s.run("--reviewers", "flaky", out="reviews/r1-rerun")
    assert rerun.returncode == 0, rerun.stderr.decode()
    rj = load(series / "r1-rerun" / "round.json")
    assert rj["counted"] is False
    assert rj["packet_sha256"] == load(series / "r1" / "round.json")["packet_sha256"]
    assert [r["name"] for r in rj["reviewers"]] == ["flaky"]

    # a dry run at the cap is allowed and never counted
    dry = s.run("--rules", "docs/criteria.md", "--dry-run", out="reviews/dry")
    assert dry.returncode == 0 and load(series / "dry" / "round.json")["counted"] is False

    # an extension of the stage raises the cap by its `by`
    (series / "extensions.jsonl").write_text(json.dumps(
        {"stage": "code", "by": 1, "cause": "churn", "at": "2024-01-01T00:00:00.000Z"}) + "\n")
    fourth = s.run("--rules", "docs/criteria.md", out="reviews/r3")
    assert fourth.returncode == 0, fourth.stderr.decode()
    assert load(series / "r3" / "round.json")["counted"] is True
    fifth = s.run("--subject", "AGENTS.md", out="reviews/r4")
    assert fifth.returncode == 65 and "3 counted rounds (r1, r2, r3)" in fifth.stderr.decode()
    # other stages have their own cap
    plan = s.run(out="reviews/p1", stage="plan")
    assert plan.returncode == 0, plan.stderr.decode()


def test_waits_for_the_series_lock(tmp_path):
    s = make_setup(tmp_path)
    s.configure([s.answer_reviewer("house", result())])
    series = s.repo / "reviews"
    with series_lock(series):
        proc = subprocess.Popen([sys.executable, "-m", "spar", "run", "--stage", "code", "--out", "reviews/r1"],
                                cwd=s.repo, env=s.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        line = proc.stderr.readline().decode()
        assert line == f"spar: waiting for another write of {series} to finish\n"
        assert wait_for(lambda: blocked_on_lock(proc.pid) or proc.poll() is not None)
        assert not (series / "r1").exists() and proc.poll() is None
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err.decode()
    assert out.decode() == f"{series / 'r1'}\n"
    assert "finished_at" in load(series / "r1" / "round.json")


def test_cap_decision_waits_for_the_lock_and_reads_the_extension_again(tmp_path):
    """G33: at its cap, `spar run` takes the lock first; an extension recorded by the
    holder meanwhile is read again and decides."""
    s = make_setup(tmp_path)
    s.configure([s.answer_reviewer("house", result())])
    (s.repo / ".jaekit").mkdir(exist_ok=True)
    (s.repo / ".jaekit" / "spar.toml").write_text("[caps]\ncode = 0\n", encoding="utf-8")
    series = s.repo / "reviews"
    series.mkdir()
    with series_lock(series):
        proc = subprocess.Popen([sys.executable, "-m", "spar", "run", "--stage", "code", "--out", "reviews/r1"],
                                cwd=s.repo, env=s.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            line = proc.stderr.readline().decode()
            assert line == f"spar: waiting for another write of {series} to finish\n"
            # what `spar extend` appends while it holds the lock
            (series / "extensions.jsonl").write_text(json.dumps(
                {"stage": "code", "by": 1, "cause": "churn", "at": "2024-01-01T00:00:00.000Z"}) + "\n")
        except BaseException:
            proc.kill()
            raise
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err.decode()
    assert load(series / "r1" / "round.json")["counted"] is True


def test_series_lock_leaves_nothing_for_git_when_only_the_round_folder_is_ignored(tmp_path):
    """The lock is the series folder itself: with only `reviews/r1/` ignored, the
    series shows nothing untracked after a run (docs/records.md, series lock)."""
    from tests.gitrepo import commit, git

    s = make_setup(tmp_path)
    s.configure([s.answer_reviewer("house", result())])
    (s.repo / ".gitignore").write_text("reviews/r1/\n")
    head = commit(s.repo, {".gitignore": "reviews/r1/\n"}, message="ignore only the round")
    first = s.run("--head", head, out="reviews/r1")
    assert first.returncode == 0, first.stderr.decode()
    assert git(s.repo, "status", "--porcelain", "--untracked-files=all") == ""
