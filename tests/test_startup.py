"""What `spar run` does before its first useful step: which modules it imports, and what
it starts early. Speed itself is measured by bench/round_cost.py, never here."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

SPAR = Path(__file__).resolve().parent.parent / "spar"

# modules `spar run` has no use for: each would cost its import (and, without cached
# bytecode, its compilation) on every round
NOT_FOR_RUN = [
    "tempfile", "shutil", "bz2", "lzma", "random",  # tempfile's chain: only spar doctor and the Core query
    "trio",  # only with SPAR_ASYNC_BACKEND=trio
    "spar.commands.gate", "spar.commands.triage", "spar.commands.report", "spar.judge.gate",
    "spar.presets.claude", "spar.presets.codex", "spar.presets.agy",  # only the preset in use
]


def _modules_after(code: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", code + "\nimport json, sys; print(json.dumps(sorted(sys.modules)))"],
                         capture_output=True, text=True, check=True, cwd=SPAR.parent)
    return set(json.loads(out.stdout.splitlines()[-1]))


def test_spar_run_imports_only_what_it_needs():
    # parsing the arguments too: argparse's formatter would import shutil for the width
    loaded = _modules_after("import spar.cli, spar.commands.run\n"
                            "spar.commands.run.parse_run_args(['--stage', 'code', '--out', 'r1'])")
    assert "spar.commands.run" in loaded
    assert sorted(loaded & set(NOT_FOR_RUN)) == []


def test_the_event_loop_backend_is_imported_beside_the_checks():
    # spar run imports anyio's backend (asyncio and its helpers) in a thread while the
    # main thread waits on git and fsync; anyio.run then finds it loaded
    code = ("import spar.commands.run as r, sys\n"
            "assert 'anyio._backends._asyncio' not in sys.modules\n"
            "r.preload_backend('asyncio').join()")
    assert "anyio._backends._asyncio" in _modules_after(code)


def _dataclasses_without_docstring(path: Path) -> list[str]:
    """`file: class` for every class decorated with dataclass that has no docstring."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ClassDef):
            continue
        for deco in node.decorator_list:
            target = deco.func if isinstance(deco, ast.Call) else deco
            if isinstance(target, ast.Name) and target.id == "dataclass" and ast.get_docstring(node) is None:
                out.append(f"{path.name}: {node.name}")
    return out


def test_every_dataclass_has_a_docstring():
    # without one, dataclasses builds a docstring at import time through inspect.signature
    # (~0.2 ms a class, dozens of them on every start)
    missing = [name for path in sorted(SPAR.rglob("*.py")) for name in _dataclasses_without_docstring(path)]
    assert missing == []


def test_the_docstring_rule_sees_a_missing_one(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("from dataclasses import dataclass\n\n@dataclass(frozen=True)\nclass Bare:\n    x: int\n\n"
                      "@dataclass\nclass Told:\n    \"\"\"Has one.\"\"\"\n\n    y: int\n")
    assert _dataclasses_without_docstring(sample) == ["sample.py: Bare"]


def test_the_cyclic_collector_is_off_for_the_start_up():
    # spar and `python -m spar` (cli.entry) run every command with it off; main alone
    # (what the in-process tests call) leaves it as it is
    code = ("import gc, sys\nimport spar.cli as cli\n"
            "cli.main = lambda: print('collector on' if gc.isenabled() else 'collector off') or 0\n"
            "cli.entry()")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout == "collector off\n"


def test_spar_run_turns_the_collector_on_before_the_reviewers(monkeypatch):
    import gc
    from types import SimpleNamespace

    from spar.commands import run

    seen = []

    async def reviewers(jobs, **kw):
        seen.append((gc.isenabled(), gc.get_freeze_count() > 0))
        return []

    monkeypatch.setattr(run, "run_reviewers", reviewers)
    plan = SimpleNamespace(config=SimpleNamespace(env_passthrough=None), backend="asyncio")
    gc.disable()
    try:
        assert run._run_all(plan, [], SimpleNamespace()) == ([], None)
    finally:
        gc.unfreeze()
        gc.enable()
    # on, with what the start-up made frozen: no collection walks it again
    assert seen == [(True, True)]


def test_the_collector_left_on_is_not_frozen(monkeypatch):
    # in-process callers (the tests) keep the collector as they had it: nothing is frozen
    import gc
    from types import SimpleNamespace

    from spar.commands import run

    seen = []

    async def reviewers(jobs, **kw):
        seen.append(gc.get_freeze_count())
        return []

    monkeypatch.setattr(run, "run_reviewers", reviewers)
    plan = SimpleNamespace(config=SimpleNamespace(env_passthrough=None), backend="asyncio")
    assert gc.isenabled()
    assert run._run_all(plan, [], SimpleNamespace()) == ([], None)
    assert seen == [0]


def test_the_base_tree_and_the_diff_are_read_beside_the_head_tree(repo, tmp_path, monkeypatch):
    # the head's tree is read only once the base's tree and the diff have started: were
    # they read after it, as before, this would wait until the hang bound and fail
    import threading

    from spar.commands import run
    from spar.round.args import parse_run_args
    from tests.proctools import HANG

    started = {"base": threading.Event(), "diff": threading.Event()}
    real_plan, real_diff = run.plan_commit, run.git.diff_with_stat
    head = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()

    def plan(where, commit):
        if commit == head:
            assert all(event.wait(HANG) for event in started.values())
        else:
            started["base"].set()
        return real_plan(where, commit)

    def diff(*args):
        started["diff"].set()
        return real_diff(*args)

    monkeypatch.setattr(run, "plan_commit", plan)
    monkeypatch.setattr(run.git, "diff_with_stat", diff)
    config = tmp_path / "spar.toml"
    config.write_text('[[reviewers]]\nname = "a"\npreset = "command"\nargv = ["true", "{prompt}"]\n')
    args = parse_run_args(["--stage", "code", "--base", "HEAD~1", "--out", "reviews/beside/r1"])
    plan_ = run.prepare(args, cwd=str(repo), env={"SPAR_CONFIG": str(config), "XDG_CONFIG_HOME": str(tmp_path)})
    assert set(plan_.tree_plans) == {"head", "base"} and "print(2)" in plan_.packet_text


def test_the_repository_and_the_named_commits_take_one_git_process(repo, tmp_path, monkeypatch):
    # the work tree root, --base and --head from one `git rev-parse`, not one each
    from spar import git
    from spar.commands import run
    from spar.errors import Refused
    from spar.round.args import parse_run_args
    from tests.spies import calls_to

    calls = calls_to(monkeypatch, git, "run", lambda where, *args, **kw: args)
    config = tmp_path / "spar.toml"
    config.write_text('[[reviewers]]\nname = "a"\npreset = "command"\nargv = ["true", "{prompt}"]\n')
    env = {"SPAR_CONFIG": str(config), "XDG_CONFIG_HOME": str(tmp_path)}
    args = parse_run_args(["--stage", "code", "--base", "HEAD~1", "--out", "reviews/once/r1"])
    plan_ = run.prepare(args, cwd=str(repo), env=env)
    ids = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD", "HEAD~1"], capture_output=True,
                         text=True, check=True).stdout.split()
    assert (plan_.repo, plan_.head, plan_.base) == (repo.resolve(), *ids)
    reads = [a for a in calls if a[0] == "rev-parse" and any(x.endswith("^{commit}") for x in a)]
    assert reads == [("rev-parse", "--show-toplevel", "HEAD~1^{commit}", "HEAD^{commit}")]
    # a revision that is not plain (a range) goes the long way, which refuses it in its own words
    calls.clear()
    args = parse_run_args(["--stage", "code", "--base", "HEAD~1..HEAD", "--out", "reviews/once/r1"])
    with pytest.raises(Refused) as err:
        run.prepare(args, cwd=str(repo), env=env)
    assert str(err.value) == '--base "HEAD~1..HEAD" is not a commit'
    assert [a[1] for a in calls if a[0] == "rev-parse"] == ["--show-toplevel", "--show-toplevel", "--verify",
                                                              "--verify"]


def test_beside_hands_back_the_value_or_the_exception():
    import pytest

    from spar.commands import run

    assert run._beside(sum, [1, 2])() == 3
    with pytest.raises(ZeroDivisionError):
        run._beside(divmod, 1, 0)()


def test_the_guard_starts_before_the_checks_and_stops_on_a_refusal(monkeypatch):
    import pytest

    from spar.commands import run
    from spar.errors import Refused

    calls = []

    def refuse(args, **kw):
        calls.append("checks")
        raise Refused("no")

    monkeypatch.setattr(run, "start_guard", lambda: calls.append("start guard"))
    monkeypatch.setattr(run, "stop_guard", lambda: calls.append("stop guard"))
    monkeypatch.setattr(run, "prepare", refuse)
    with pytest.raises(Refused):
        run.main(["--stage", "code", "--out", "r1"])
    assert calls == ["start guard", "checks", "stop guard"]
    calls.clear()
    with pytest.raises(Refused):
        run.main(["--stage", "code", "--out", "r1", "--dry-run"])  # a dry run starts no reviewer
    assert calls == ["checks", "stop guard"]


def test_the_base_is_resolved_beside_the_head(repo, monkeypatch):
    # the long way (a revision the one-process read left to resolve_commit)
    import threading

    from spar.commands import run
    from spar.round.args import parse_run_args
    from tests.proctools import HANG

    base_started = threading.Event()
    real = run.git.resolve_commit

    def resolve(where, rev, *, what="revision"):
        if what == "--head":
            assert base_started.wait(HANG)
        elif what == "--base":
            base_started.set()
        return real(where, rev, what=what)

    monkeypatch.setattr(run.git, "resolve_commit", resolve)
    args = parse_run_args(["--stage", "code", "--base", "HEAD~1", "--out", "r1"])
    base, head, _ = run._revisions(args, repo, {})
    assert (base, head) == (real(repo, "HEAD~1"), real(repo, "HEAD"))


def test_the_help_width_is_what_shutil_would_say(monkeypatch):
    import shutil

    from spar.argparsing import terminal_columns

    for columns in ("50", "0", "wide", None):
        if columns is None:
            monkeypatch.delenv("COLUMNS", raising=False)
        else:
            monkeypatch.setenv("COLUMNS", columns)
        assert terminal_columns() == shutil.get_terminal_size().columns


@pytest.mark.anyio
async def test_a_group_is_checked_again_soon_then_less_often(monkeypatch):
    # once its leader has exited, a group is looked at again after 1 ms, doubling up to
    # _POLL: the keeper leaving last is a zombie within a moment, and a first check only
    # after _POLL used to cost every reviewer whose keeper was caught on its way out 50 ms
    import anyio

    from spar.round import process

    alive = iter([True] * 8 + [False])
    pauses = []

    async def sleep(seconds):
        pauses.append(seconds)
        await anyio.lowlevel.checkpoint()

    monkeypatch.setattr(process, "_group_alive", lambda pgid: next(alive))
    monkeypatch.setattr(process.anyio, "sleep", sleep)
    exited = anyio.Event()
    exited.set()
    assert await process._wait_group_gone(12345, exited, 60)
    assert pauses == [0.001, 0.002, 0.004, 0.008, 0.016, 0.032, 0.05, 0.05]


@pytest.mark.anyio
async def test_a_finished_group_is_told_by_killpg_alone(monkeypatch):
    # after a keeper reports its reviewer's end, killpg looks first; /proc (every process
    # of the machine) is read only for a group still there after a few looks
    from spar.round import process

    scans = []
    real_table = process.process_table
    monkeypatch.setattr(process, "process_table", lambda: scans.append(1) or real_table())
    child = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        assert await process._group_outlives_keeper(child.pid) is True
        assert scans == [1]
    finally:
        child.kill()
        child.wait()
    assert await process._group_outlives_keeper(child.pid) is False
    assert scans == [1]


def test_a_new_rounds_records_are_synced_as_one_batch_before_round_json(repo, monkeypatch):
    # findings.json, ledger.jsonl (written whole: the lines the appends would have made) and
    # summary.md go through one atomic.write_files batch, in that order; round.json after it
    from spar.records import atomic, readers
    from spar.round import recording
    from tests import roundfactory as rf

    series = rf.fresh_series(repo)
    folder = rf.make_round(series, "r1", repo=repo, recorded=False)
    writes = []
    real_files, real_bytes = atomic.write_files, atomic.write_bytes
    monkeypatch.setattr(atomic, "write_files",
                        lambda files: writes.append([p.name for p, _ in files]) or real_files(files))
    monkeypatch.setattr(atomic, "write_bytes",
                        lambda path, data, **kw: writes.append(Path(path).name) or real_bytes(path, data, **kw))
    findings = [rf.finding("claude", 1, cls="hardening"), rf.finding("claude", 2, cls="note")]
    recording.write_round_outputs(folder, readers.read_round(folder), findings)
    assert writes == [["findings.json", "ledger.jsonl", "summary.md"], "round.json"]
    ledger = readers.read_ledger(folder, readers.read_findings(folder))
    assert [(line["finding"], line["disposition"], line["auto"]) for line in ledger] == [
        ("claude-F1", "deferred", True)]
    assert readers.read_round(folder)["recorded_at"]
