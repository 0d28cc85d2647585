"""examples/quickstart.sh end to end with no AI CLI, and the example reviewer's answers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from spar.judge.result import validate_result

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def clean_env(tmp_path: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPAR_", "XDG_", "GIT_"))}
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    # the venv's spar and python first, then only the system folders: no AI CLI, no fakes
    env.update(HOME=str(home), PATH=os.pathsep.join([str(Path(sys.executable).parent), "/usr/bin", "/bin"]),
               PYTHONDONTWRITEBYTECODE="1")
    return env


def test_quickstart_runs_end_to_end(tmp_path):
    work = tmp_path / "qs"
    proc = subprocess.run(["bash", str(EXAMPLES / "quickstart.sh"), str(work)], env=clean_env(tmp_path),
                          capture_output=True, timeout=300)
    err = proc.stderr.decode()
    assert proc.returncode == 0, err
    reviews = work / "demo" / "reviews"
    round_json = json.loads((reviews / "code-1" / "round.json").read_text())
    assert round_json["finished_at"] and [r["status"] for r in round_json["reviewers"]] == ["completed"]
    findings = json.loads((reviews / "code-1" / "findings.json").read_text())
    assert [(f["id"], f["class"]) for f in findings] == [("example-F1", "defect"), ("example-F2", "hardening")]
    assert findings[0]["path"] == "calc.py" and findings[0]["link_kind"] == "criterion"
    assert "gate: blocked (expected here" in err and "gate: passed" in err
    assert json.loads((reviews / "gate.json").read_text())["state"] == "passed"
    ledger = [json.loads(x) for x in (reviews / "code-1" / "ledger.jsonl").read_text().splitlines()]
    assert ledger[-1]["user_quote"] == "ok to ship the demo without it"
    out = proc.stdout.decode()
    assert "## code" in out and "# Review round code-1" in out
    assert f"{reviews / 'code-1'}\n" in out


def test_demo_repo_has_two_commits(tmp_path):
    dest = tmp_path / "demo"
    subprocess.run(["bash", str(EXAMPLES / "demo-repo.sh"), str(dest)], env=clean_env(tmp_path), check=True)
    log = subprocess.run(["git", "-C", str(dest), "log", "--format=%s"], capture_output=True, check=True)
    assert log.stdout.decode().splitlines() == ["calculator: divide", "calculator: add"]
    for name in ("AGENTS.md", "docs/criteria.md", ".jaekit/spar.toml", "calc.py", "tests/test_calc.py"):
        assert (dest / name).is_file(), name
    criteria = (dest / "docs" / "criteria.md").read_text()
    assert "AC-1" in criteria and "AC-2" in criteria
    again = subprocess.run(["bash", str(EXAMPLES / "demo-repo.sh"), str(dest)], env=clean_env(tmp_path),
                           capture_output=True)
    assert again.returncode != 0 and b"already exists" in again.stderr


def run_example(prompt: Path) -> bytes:
    proc = subprocess.run([sys.executable, str(EXAMPLES / "example_reviewer.py"), str(prompt)],
                          capture_output=True, check=True)
    return proc.stdout


PACKET = """# Review packet

- Stage: `code` (code)
- Head commit: `{head}`

## Angles

- `criteria`: x
- `risk`: y

## Criteria

### docs/criteria.md

```
- AC-1: a
- AC-7: b
```

## Subject

### Diff

```diff
diff --git a/src/m.py b/src/m.py
+++ b/src/m.py
@@ -1,2 +1,4 @@
 import os
+
+def grow(x):
+    return x
diff --git a/tests/test_m.py b/tests/test_m.py
+++ b/tests/test_m.py
@@ -3,0 +4,1 @@
+def test_grow(): pass
```

## How to report
"""


def test_example_reviewer_is_deterministic_and_valid(tmp_path):
    head = "c0ffee" + "0" * 34
    prompt = tmp_path / "input.md"
    prompt.write_text(PACKET.format(head=head))
    first, second = run_example(prompt), run_example(prompt)
    assert first == second
    answer = json.loads(first)
    validate_result(answer, packet_head=head, requested_angles=["criteria", "risk"],
                    standpoints_active=False, assigned=False)
    assert answer["reviewed_head"] == head
    assert [a["angle"] for a in answer["angles_checked"]] == ["criteria", "risk"]
    locations = [(f["location"], f["proposed_class"], f["link"]) for f in answer["findings"]]
    assert locations == [("head/src/m.py:3", "defect", "AC-7"), ("head/tests/test_m.py:4", "hardening", "")]


def test_example_reviewer_in_a_standpoint_round(tmp_path):
    head = "ab" * 20
    prompt = tmp_path / "input.md"
    prompt.write_text(PACKET.format(head=head).replace(
        "## How to report", "## Standpoints for this round\n\n### Standpoint of `x`\n\n```\nrisk\n```\n\n## How to report"))
    answer = json.loads(run_example(prompt))
    validate_result(answer, packet_head=head, requested_angles=["criteria", "risk"],
                    standpoints_active=True, assigned=True)


def test_example_reviewer_without_a_head_cannot_review(tmp_path):
    prompt = tmp_path / "input.md"
    prompt.write_text("# Review packet\n\n## Angles\n\n- `risk`: y\n")
    answer = json.loads(run_example(prompt))
    assert answer["verdict"] == "could_not_review"
