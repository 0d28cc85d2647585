"""Shared set-up for the `spar run` end-to-end tests (no tests here).

Every test gets a real temporary git repository, a user configuration named
by SPAR_CONFIG, a HOME with nothing in it, the fake CLIs first on PATH, and
runs `python -m spar` as a real subprocess.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from tests.gitrepo import commit, git, make_repo

ROOT = Path(__file__).resolve().parent.parent
FAKES = ROOT / "tests" / "fakes"
EXAMPLE_REVIEWER = ROOT / "examples" / "example_reviewer.py"
RECORDS_MD = ROOT / "docs" / "records.md"
# what the fake CLIs read of the environment: a reviewer gets it only when listed
FAKE_ENV = ["SPAR_FAKE_*", "FAKE_NAME"]
BACKENDS = ("trio", "asyncio")  # for tests of what the backends do differently: processes, signals, kills

# a command reviewer: prints the JSON in ANSWER (HEAD replaced by the packet's head) and
# copies what it received through {prompt} to COPY (when given)
ANSWER_SCRIPT = r'''
import json, re, shutil, sys
answer_path, prompt = sys.argv[1], sys.argv[2]
copy = sys.argv[3] if len(sys.argv) > 3 else ""
text = open(prompt, encoding="utf-8").read()
if copy:
    shutil.copyfile(prompt, copy)
head = re.search(r"^- Head commit: `([0-9a-f]+)`", text, re.M).group(1)
raw = open(answer_path, encoding="utf-8").read()
sys.stdout.write(raw.replace("HEAD_COMMIT", head))
code = int(open(answer_path + ".exit").read()) if __import__("os").path.exists(answer_path + ".exit") else 0
sys.exit(code)
'''

DEMO_FILES = {
    ".gitignore": "reviews/\nother-series/\n",
    "AGENTS.md": "# Rules\n\n1. Raise ValueError for bad input.\n2. Test every function.\n",
    "docs/criteria.md": "# Criteria\n\n- AC-1: add works.\n- AC-2: divide refuses 0.\n",
    ".jaekit/spar.toml": 'rules = ["AGENTS.md"]\ncheck_paths = ["tests/**"]\n\n[caps]\nplan = 2\nplan_delta = 1\ncode = 2\n',
    "calc.py": "def add(a, b):\n    return a + b\n",
    "tests/test_calc.py": "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n",
}
DEMO_CHANGE = {
    "calc.py": "def add(a, b):\n    return a + b\n\n\ndef divide(a, b):\n    return a / b\n",
    "tests/test_calc.py": "from calc import add, divide\n\n\ndef test_add():\n    assert add(1, 2) == 3\n\n\n"
                          "def test_divide():\n    assert divide(4, 2) == 2\n",
}


def toml_str(value: str) -> str:
    return json.dumps(value)  # a JSON string is a valid TOML basic string for these values


@dataclass
class Setup:
    tmp: Path
    repo: Path
    base: str
    head: str
    env: dict
    config: Path
    record: Path  # the fakes' invocation log
    answers: Path
    reviewers: list[dict] = field(default_factory=list)

    # ---------------------------------------------------------------- configuration

    def configure(self, reviewers: list[dict], *, timeout: int = 60,
                  passthrough: list[str] | None = FAKE_ENV, sandbox: str | None = "off") -> None:
        """`passthrough`: the configuration's env_passthrough (None: not set); by default what
        the fakes read of the environment (their scenario). `sandbox`: [sandbox] mode (None:
        not set); off by default, as the fakes read and write the test's files (scenario,
        record, pid files), which a sandboxed reviewer cannot see."""
        lines = [f"timeout_seconds = {timeout}", ""]
        if passthrough is not None:
            lines[:0] = [f"env_passthrough = {json.dumps(passthrough)}"]
        for r in reviewers:
            lines.append("[[reviewers]]")
            for key, value in r.items():
                if isinstance(value, list):
                    lines.append(f"{key} = [{', '.join(toml_str(v) for v in value)}]")
                elif isinstance(value, int):
                    lines.append(f"{key} = {value}")
                else:
                    lines.append(f"{key} = {toml_str(value)}")
            lines.append("")
        if sandbox is not None:
            lines += ["[sandbox]", f"mode = {toml_str(sandbox)}", ""]
        self.config.write_text("\n".join(lines), encoding="utf-8")
        self.reviewers = reviewers

    def answer_reviewer(self, name: str, answer, *, exit_code: int = 0, copy: bool = True) -> dict:
        """A `command` reviewer that prints `answer` (dict with HEAD_COMMIT, or raw text)."""
        script = self.answers / "answer.py"
        script.write_text(ANSWER_SCRIPT, encoding="utf-8")
        path = self.answers / f"{name}.json"
        path.write_text(answer if isinstance(answer, str) else json.dumps(answer), encoding="utf-8")
        exit_path = Path(str(path) + ".exit")
        if exit_code:
            exit_path.write_text(str(exit_code))
        elif exit_path.exists():
            exit_path.unlink()
        argv = [sys.executable, str(script), str(path), "{prompt}"]
        if copy:
            argv.append(str(self.answers / f"{name}.received"))
        return {"name": name, "preset": "command", "argv": argv}

    def example_reviewer(self, name: str = "example") -> dict:
        return {"name": name, "preset": "command", "argv": [sys.executable, str(EXAMPLE_REVIEWER), "{prompt}"]}

    def scenario(self, data: dict) -> None:
        path = self.tmp / "scenario.json"
        for value in data.values():
            if isinstance(value, dict):
                value.setdefault("record", str(self.record))
        path.write_text(json.dumps(data), encoding="utf-8")
        self.env["SPAR_FAKE_SCENARIO"] = str(path)

    # ---------------------------------------------------------------- running

    def spar(self, *args: str, cwd: Path | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "spar", *args], cwd=cwd or self.repo, env=env or self.env,
            capture_output=True, timeout=120,
        )

    def run(self, *args: str, out: str = "reviews/r1", stage: str = "code", **kw) -> subprocess.CompletedProcess:
        return self.spar("run", "--stage", stage, "--out", out, *args, **kw)

    def fake_calls(self) -> list[dict]:
        if not self.record.exists():
            return []
        return [json.loads(line) for line in self.record.read_text().splitlines() if line.strip()]


_DEMO: list[tuple[Path, str, str]] = []  # (repository, base, head), built once per process


def _demo_repo(tmp_path: Path) -> tuple[Path, str, str]:
    """`tmp_path/repo`: DEMO_FILES committed (base), then DEMO_CHANGE (head). Built once per
    process and copied: the copy is the same repository (commit IDs included, identity and
    dates are fixed) for none of the git calls."""
    if not _DEMO:
        root = Path(tempfile.mkdtemp(prefix="spar-demo-repo-"))
        atexit.register(shutil.rmtree, root, True)
        repo = make_repo(root, DEMO_FILES)
        base = git(repo, "rev-parse", "HEAD").strip()
        _DEMO.append((repo, base, commit(repo, DEMO_CHANGE, message="divide")))
    template, base, head = _DEMO[0]
    repo = shutil.copytree(template, tmp_path / "repo", symlinks=True)
    return repo, base, head


def make_setup(tmp_path: Path, backend: str | None = None) -> Setup:
    """`backend` sets SPAR_ASYNC_BACKEND; None leaves spar's default."""
    repo, base, head = _demo_repo(tmp_path)
    home = tmp_path / "home"
    home.mkdir()
    answers = tmp_path / "answers"
    answers.mkdir()
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("SPAR_", "XDG_", "GIT_")) and k not in ("HOME",)}
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        SPAR_CONFIG=str(tmp_path / "spar.toml"),
        PATH=os.pathsep.join([str(FAKES), str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_CONFIG_NOSYSTEM="1",
        PYTHONDONTWRITEBYTECODE="1",
    )
    if backend is not None:
        env["SPAR_ASYNC_BACKEND"] = backend
    return Setup(tmp=tmp_path, repo=repo, base=base, head=head, env=env, config=tmp_path / "spar.toml",
                 record=tmp_path / "fake-calls.jsonl", answers=answers)


# ---------------------------------------------------------------- results


def finding(**kw) -> dict:
    item = {"id": "f1", "proposed_class": "defect", "angle": "correctness", "location": "head/calc.py:6",
            "claim": "divide by zero", "failure_scenario": "divide(1, 0) raises ZeroDivisionError",
            "evidence": "no check", "link_kind": "criterion", "link": "AC-2", "introduced_by_change": "yes",
            "regression": "no", "check_impact": "none", "confidence": "high", "smallest_fix": "check b"}
    item.update(kw)
    return item


def result(head: str = "HEAD_COMMIT", findings=None, **kw) -> dict:
    value = {"reviewed_head": head, "verdict": "blocking_findings",
             "angles_checked": [{"angle": a, "result": "ok"}
                                for a in ("criteria", "correctness", "checks", "contracts", "risk")],
             "angles_unchecked": [], "findings": [finding()] if findings is None else findings, "limits": ""}
    value.update(kw)
    return value


# ---------------------------------------------------------------- records


def sha256_file(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def nothing_written(setup: Setup, out: str = "reviews/r1") -> bool:
    series = (setup.repo / out).parent
    return not (setup.repo / out).exists() and not series.exists()


def _section(text: str, title: str) -> str:
    start = text.index(f"## {title}")
    end = text.find("\n## ", start + 3)
    return text[start:] if end < 0 else text[start:end]


NOT_KEYS = {"null", "none", "completed", "pending", "true", "false", "could_not_review", "failed", "invalid_output"}


def _ticked_words(text: str) -> list[str]:
    return [w for w in re.findall(r"`([a-z_0-9]+)`", text) if w not in NOT_KEYS]


def documented_round_keys() -> set[str]:
    """Keys of the round.json table in docs/records.md."""
    section = _section(RECORDS_MD.read_text(encoding="utf-8"), "round.json")
    keys: set[str] = set()
    for line in section.splitlines():
        if line.startswith("| `"):
            first = line.split("|")[1]
            keys.update(_ticked_words(first))
    return keys


def documented_reviewer_keys() -> tuple[set[str], set[str]]:
    """(keys of every reviewer entry, keys added when completed) per docs/records.md."""
    section = _section(RECORDS_MD.read_text(encoding="utf-8"), "round.json")
    para = section[section.index("Reviewer entry:"):].split("\n\n", 1)[0]
    always, _, completed = para.partition("when\n`completed`:") if "when\n`completed`:" in para else \
        para.partition("when `completed`:")
    return set(_ticked_words(always)), set(_ticked_words(completed))


def documented_attempt_keys() -> set[str]:
    section = _section(RECORDS_MD.read_text(encoding="utf-8"), "round.json")
    para = section[section.index("Attempt:"):].split("\n\n", 1)[0]
    return set(_ticked_words(para))


def documented_finding_keys() -> set[str]:
    section = _section(RECORDS_MD.read_text(encoding="utf-8"), "findings.json")
    return set(_ticked_words(section[section.index("Each finding:"):]))
