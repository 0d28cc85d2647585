"""The review gate in the real codex 0.171.0's loop: `codex exec` runs the project's hook (from
`spar init --agent codex`) non-interactively with `--trust` (the project's .codex/ layer) and
`--dangerously-bypass-hook-trust` (hooks run only once reviewed in the TUI otherwise). An agent
that keeps saying "done" is sent back, and handed over at the bound; every answer of the hook
fits Codex's published Stop output schema."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from spar.judge import stop
from tests.modelserver import ModelServer, text
from tests.runsetup import make_setup
from tests.test_real_cli_npm import real_clis  # noqa: F401 (the fixture: the pinned npm CLIs)

# codex's stop.command.output schema (codex-rs hooks, generated schema): these keys only
# (additionalProperties false), each of this type; `decision` is "block" alone
STOP_OUTPUT = {"continue": bool, "decision": str, "reason": str, "stopReason": str, "suppressOutput": bool,
               "systemMessage": str}


@pytest.mark.parametrize("kind", ["allow", "block", "person"])
def test_each_answer_fits_codexs_stop_output_schema(kind):
    answer = json.loads(stop.hook_output("codex", stop.StopVerdict(kind, "spar: words\nmore")))
    assert set(answer) <= set(STOP_OUTPUT)
    assert all(isinstance(value, STOP_OUTPUT[key]) for key, value in answer.items())
    assert answer.get("decision", "block") == "block"
    assert ("reason" in answer) == (answer.get("decision") == "block")  # codex requires a reason with block


@pytest.mark.realcli
@pytest.mark.slow
def test_codex_exec_runs_the_hook_and_hands_over_at_the_bound(tmp_path, real_clis):  # noqa: F811
    s = make_setup(tmp_path)
    s.env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), "/usr/bin", "/bin"])
    s.configure([])
    assert s.spar("init", "--agent", "codex").returncode == 0
    calc = s.repo / "calc.py"
    calc.write_text(calc.read_text() + "\n\ndef mul(a, b):\n    return a * b\n")
    home = tmp_path / "codex-home"
    home.mkdir()
    with ModelServer([text("Done.")] * 6) as server:
        (home / "config.toml").write_text(
            'model = "gpt-scripted-1"\nmodel_provider = "scripted"\n\n[model_providers.scripted]\n'
            f'name = "scripted"\nbase_url = "{server.url("/v1")}"\nenv_key = "OPENAI_API_KEY"\n'
            'wire_api = "responses"\n', encoding="utf-8")
        env = {k: v for k, v in s.env.items() if "proxy" not in k.lower()}
        env.update(CODEX_HOME=str(home), OPENAI_API_KEY="sk-scripted",
                   PATH=os.pathsep.join([str(real_clis / "node_modules" / ".bin"), env["PATH"]]))
        proc = subprocess.run(["codex", "exec", "--trust", "--dangerously-bypass-hook-trust", "--json", "Add mul."],
                              cwd=s.repo, env=env, capture_output=True, timeout=300, stdin=subprocess.DEVNULL)
        requests = server.model_requests()
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    # "done" four times: three sends-back, then the fourth stop is handed to the person
    assert len(requests) == 4, proc.stdout.decode()[-2000:]
    for request in requests[1:]:
        assert "no finished review round covers this change" in json.dumps(request.body)
    state = json.loads((s.repo / "reviews" / ".spar-hook.json").read_text())
    assert state["sends"] == 0  # the count starts again once the person has it
