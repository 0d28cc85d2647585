"""Every failure of a model server as the real claude and codex show it (tests/realshapes.py):
the pinned CLIs run by Spar in its sandbox against the scripted server answering that way;
Spar records the outcome the shape names, with the CLI's own words as the reason: a fallback
at once on quota, one more try on a transient failure, `unavailable` at once on a refused key
(not after claude's ten retries), and the per-attempt limit ending the CLI's whole process tree.

With SPAR_REAL_CLI_CAPTURE=FOLDER each run's output is kept there as <shape>.stdout.log and
.stderr.log (the drift command compares them with tests/data/real-cli/server/).
"""

from __future__ import annotations

import os
import re
import shutil
import time
from pathlib import Path

import pytest

from tests.modelserver import ModelServer
from tests.proctools import wait_for
from tests.realclis import running_from
from tests.realround import entry, real_setup, run_spar
from tests.realshapes import FALLBACK, LIMIT, SHAPES, Shape

pytestmark = [pytest.mark.realcli, pytest.mark.slow]


def _keep(s, shape: Shape) -> None:
    folder = os.environ.get("SPAR_REAL_CLI_CAPTURE")
    if not folder:
        return
    Path(folder).mkdir(parents=True, exist_ok=True)
    for stream in ("stdout", "stderr"):
        text = (s.repo / "reviews" / "r1" / shape.cli / f"{stream}.log").read_text(encoding="utf-8", errors="replace")
        text = re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:PORT", text.replace(str(s.tmp), "/home/user"))
        text = text.replace(str(s.tmp).replace("/", "-"), "-home-user")  # claude's project folder name
        (Path(folder) / f"{shape.name}.{stream}.log").write_text(text, encoding="utf-8")


@pytest.mark.parametrize("shape", SHAPES, ids=[s.name for s in SHAPES])
def test_real_cli_failure_shape(world, npm_clis, shape):
    timeout = LIMIT if shape.ended_by_spar and shape.status == "timeout" else 120
    with ModelServer([], then=shape.answer) as server:
        s = real_setup(world, npm_clis, server, [{"name": shape.cli, "preset": shape.cli,
                                                   "fallback_model": FALLBACK, "timeout_seconds": timeout}])
        started = time.monotonic()
        proc = run_spar(s, "run", "--stage", "code", "--out", "reviews/r1")
        took = time.monotonic() - started
    assert proc.returncode in (0, 1), proc.stderr.decode()[-2000:]
    e = entry(s, shape.cli)
    assert e["status"] == shape.status, e["reason"]
    for words in shape.words:
        assert words in e["reason"], e["reason"]
    assert len(e["attempts"]) == shape.attempts, [a["reason"] for a in e["attempts"]]
    if shape.attempts == 2 and shape.status == "unavailable":
        assert e["attempts"][1]["model"] == FALLBACK  # quota: the fallback model at once
    if shape.status != "timeout":
        assert took < timeout  # never the whole limit
    # whatever ended it, nothing of the CLI's process tree is left running
    assert wait_for(lambda: running_from(npm_clis.prefix) == [], timeout=30), running_from(npm_clis.prefix)
    _keep(s, shape)


def test_codex_not_logged_in_is_unavailable_before_it_starts(world, npm_clis):
    """Without a login, a key or a provider of the user's own, `codex login status` says so in
    a fraction of a second; codex exec itself would retry for a minute."""
    with ModelServer([]) as server:
        s = real_setup(world, npm_clis, server, [{"name": "codex", "preset": "codex", "fallback_model": FALLBACK}])
        shutil.rmtree(Path(s.env["HOME"]) / ".codex")  # no config.toml: OpenAI's own service
        started = time.monotonic()
        proc = run_spar(s, "run", "--stage", "code", "--out", "reviews/r1")
        took = time.monotonic() - started
    assert proc.returncode == 1, proc.stderr.decode()[-2000:]
    e = entry(s, "codex")
    assert e["status"] == "unavailable"
    assert e["reason"] == 'authentication: not logged in: `codex login status` says "Not logged in"'
    (attempt,) = e["attempts"]  # a fallback model cannot fix a login
    assert attempt["argv"][1:3] == ["exec", "--json"]
    assert server.requests == [] and took < 60
