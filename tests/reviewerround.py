"""A round folder for runner-level tests: reviewers whose binaries are named links to
the fake CLIs (tests/fakes), run in-process by `run_reviewers` (no tests here)."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import anyio
import pytest

from spar.config.model import ReviewerConfig
from spar.presets import get_preset, prepare_input
from spar.round.runner import ReviewerJob, run_reviewers
from tests.proctools import HANG
from tests.runsetup import FAKE_ENV

FAKES = Path(__file__).parent / "fakes"
STRICT_SCHEMA = {"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"],
                 "additionalProperties": False}
PACKET = "# Review packet\n\nhead: abc1234\n"


def bwrap_or_skip() -> str:
    """bwrap's path, for `Round.run(..., sandbox=)`; the test skips without it."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        pytest.skip("needs bwrap (bubblewrap; .ci/run installs it)")
    return bwrap


class Round:
    """A round folder with reviewers whose binaries are named symlinks to the fakes."""

    def __init__(self, tmp: Path):
        self.tmp = tmp
        self.dir = tmp / "ROUND"
        (self.dir / "workspace").mkdir(parents=True)
        (self.dir / "schema.json").write_text(json.dumps(STRICT_SCHEMA), encoding="utf-8")
        (self.dir / "packet.md").write_text(PACKET, encoding="utf-8")
        self.bin = tmp / "bin"
        self.bin.mkdir()
        self.scenarios: dict[str, dict] = {}
        self.record = tmp / "record.jsonl"
        self.env = dict(os.environ)
        self.env["PATH"] = os.pathsep.join([str(tmp), str(FAKES), os.path.dirname(sys.executable), "/usr/bin", "/bin"])
        self.env["SPAR_FAKE_SCENARIO"] = str(tmp / "scenario.json")
        self.env.pop("FAKE_NAME", None)

    def job(self, name: str, preset: str, scenario: dict | None = None, *, standpoint=None, active=False,
            **config) -> ReviewerJob:
        if preset in ("claude", "codex", "agy") and "binary" not in config:
            link = self.bin / name  # the fake reads its scenario under its own file name
            link.symlink_to(FAKES / preset)
            config["binary"] = str(link)
        config.setdefault("timeout_seconds", 60)  # only a hang reaches it, even with 38 reviewers on 2 cores
        cfg = ReviewerConfig(name=name, preset=preset, **config)
        self.scenarios[name] = {"record": str(self.record), **(scenario or {})}
        reviewer_dir = self.dir / name
        reviewer_dir.mkdir()
        spec = prepare_input(cfg, reviewer_dir=reviewer_dir, packet_text=PACKET, packet_path=self.dir / "packet.md",
                             standpoint=standpoint, standpoints_active=active, dry_run=False)
        for rel, text in spec.files.items():
            (reviewer_dir / rel).write_text(text, encoding="utf-8")
        return ReviewerJob(config=cfg, reviewer_dir=reviewer_dir, round_dir=self.dir,
                           workspace=self.dir / "workspace", schema_path=self.dir / "schema.json", input=spec,
                           preset=get_preset(preset))

    async def run(self, jobs, **kw):
        (self.tmp / "scenario.json").write_text(json.dumps(self.scenarios), encoding="utf-8")
        with anyio.fail_after(HANG):
            # the fakes read their scenario from the environment: passed on
            kw.setdefault("env_passthrough", FAKE_ENV)
            return await run_reviewers(jobs, env=self.env, **kw)

    def records(self) -> list[dict]:
        if not self.record.exists():
            return []
        return [json.loads(line) for line in self.record.read_text().splitlines()]
