"""Rounds of the real claude, codex and an openai-compatible reviewer against the scripted model
server (no tests here; tests/test_real_round.py, tests/test_real_failures.py).

`review_script` answers each request as a careful reviewer would: it first reads files through
the CLI's own tool (claude's Read, codex's exec_command), then gives the review; a verification
request (its schema names "refuted") gets the verdict. Stateless: each request's own tool
results say how far the turn is.

`real_setup` makes the test's world: the demo repository whose change adds `divide` without a
check for 0 (the planted defect) and a large file that the packet cannot hold inline (so that
observed coverage has something to observe), a HOME whose ~/.codex/config.toml sends codex to
the server (a `model_providers` entry: how a user points codex at a provider of their own; Spar
copies that file into the sandbox's scratch HOME), and claude's ANTHROPIC_BASE_URL and key. The
proxies point at a closed local port and claude's other traffic is off, so only the scripted
server on 127.0.0.1 is reached. With `user="nobody"` the world belongs to that user and
`run_spar` switches to it with runuser.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.gitrepo import git
from tests.modelserver import CHAT, MESSAGES, RESPONSES, ModelServer, Request, Step, Usage, structured, text, tool_call
from tests.realclis import RealCLIs
from tests.runsetup import ROOT, Setup, make_setup
from tests.test_sandbox_hostile import RUNUSER, _python_for

CLOSED_PROXY = "http://127.0.0.1:9"  # the discard port: nothing listens, connections fail at once
SECRETS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN", "OPENAI_API_KEY",
           "CODEX_API_KEY", "AWS_BEARER_TOKEN_BEDROCK", "CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX",
           "ANTHROPIC_BASE_URL", "OPENAI_BASE_URL", "CODEX_HOME", "CLAUDE_CONFIG_DIR")
SERVED = {MESSAGES: "claude-scripted-1", RESPONSES: "gpt-scripted-1", CHAT: "chat-scripted-1"}
BIG_FILE = "zz/table.txt"  # past the packet's 512 KiB: not inline, seen only when read
USAGE = {MESSAGES: Usage(1200, 80, 300), RESPONSES: Usage(2000, 150, 500, 40), CHAT: Usage(900, 60)}
CHAT_KEY = "SCRIPTED_ENDPOINT_KEY"


def _workspace(request: Request) -> str:
    """claude's working folder, as its system prompt names it."""
    m = re.search(r"Primary working directory: ([^\s\\]+)", json.dumps(request.body))
    assert m, "the request names no working directory"
    return m.group(1)


def _reads(request: Request) -> list[tuple[str, dict[str, Any]]]:
    """The tool calls a reviewer makes before answering: the changed source, and the large file."""
    if request.api == MESSAGES:
        ws = _workspace(request)
        return [("Read", {"file_path": f"{ws}/head/calc.py"}), ("Read", {"file_path": f"{ws}/head/{BIG_FILE}",
                                                                           "limit": 3})]
    if request.api == RESPONSES:
        return [("exec_command", {"cmd": "cat head/calc.py"}), ("exec_command", {"cmd": f"head -n 3 head/{BIG_FILE}"})]
    return []  # the openai-compatible reviewer has no tools


def with_head(answer: Any, request: Request) -> Any:
    """`answer` with HEAD_COMMIT replaced by the head commit the packet names."""
    head = re.search(r"Head commit: `([0-9a-f]+)`", json.dumps(request.body))
    return json.loads(json.dumps(answer).replace("HEAD_COMMIT", head.group(1) if head else "unknown"))


def is_verification(request: Request) -> bool:
    return '\\"refuted\\"' in json.dumps(request.body) or '"refuted"' in json.dumps(request.body)


def review_script(answer: Any, verdict: dict[str, Any] | None = None,
                  read: bool = True) -> Callable[[Request], Step]:
    """Read through the CLI's tools, then answer `answer` (or `verdict` to a verification)."""
    def step(request: Request) -> Step:
        api = request.api or CHAT
        if api == MESSAGES and not request.tool_names():  # claude's side request (a title)
            return text('{"title": "review"}', model=SERVED[api])
        if is_verification(request):
            return structured(verdict or {"verdict": "unsure", "evidence": "", "location": None}, model=SERVED[api])
        reads = _reads(request) if read else []
        done = len(request.tool_results())
        if done < len(reads):
            return tool_call(*reads[done], model=SERVED[api])
        usage = USAGE[api]
        if api == CHAT:  # about 4 characters a token, or Spar takes the prompt for cut by the server
            usage = Usage(len(json.dumps(request.body)) // 4, usage.output)
        return structured(with_head(answer, request), usage=usage, model=SERVED[api])
    return step


def _codex_config(server: ModelServer) -> str:
    return ('model = "gpt-scripted-1"\nmodel_provider = "scripted"\n\n[model_providers.scripted]\n'
            f'name = "scripted"\nbase_url = "{server.url("/v1")}"\nenv_key = "OPENAI_API_KEY"\n'
            'wire_api = "responses"\n')


@contextlib.contextmanager
def world_dir() -> Iterator[Path]:
    """A folder for the test's world that another user may enter (pytest's own are 0700)."""
    root = Path(tempfile.mkdtemp(prefix="spar-real-"))
    os.chmod(root, 0o755)
    yield root
    shutil.rmtree(root, ignore_errors=True)


def real_setup(root: Path, clis: RealCLIs, server: ModelServer, reviewers: list[dict[str, Any]], *,
               user: str = "root", verify: list[str] | None = None, timeout: int = 120) -> Setup:
    """The test's world in `root` (owned by `user`); the reviewers' binaries are the real ones
    unless given, an openai-compatible reviewer is sent to the server."""
    s = make_setup(root)
    big = s.repo / BIG_FILE
    big.parent.mkdir(parents=True)
    big.write_text("".join(f"row {n:06d} " + "x" * 60 + "\n" for n in range(9000)), encoding="utf-8")
    git(s.repo, "add", BIG_FILE)
    git(s.repo, "commit", "-q", "--amend", "--no-edit")
    s.head = git(s.repo, "rev-parse", "HEAD").strip()
    for key in SECRETS:
        s.env.pop(key, None)
    codex_home = Path(s.env["HOME"]) / ".codex"
    codex_home.mkdir()
    (codex_home / "config.toml").write_text(_codex_config(server), encoding="utf-8")
    s.env.update(HTTPS_PROXY=CLOSED_PROXY, HTTP_PROXY=CLOSED_PROXY, https_proxy=CLOSED_PROXY,
                 http_proxy=CLOSED_PROXY, NO_PROXY="127.0.0.1", no_proxy="127.0.0.1",
                 ANTHROPIC_BASE_URL=server.base_url, ANTHROPIC_API_KEY="sk-ant-scripted", OPENAI_API_KEY="sk-scripted",
                 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1", **{CHAT_KEY: "sk-endpoint"})
    for r in reviewers:
        if r["preset"] in ("claude", "codex"):
            r.setdefault("binary", clis.exe(r["preset"]))
        elif r["preset"] == "openai-compatible":
            r.update(base_url=server.url("/v1"), api_key_env=CHAT_KEY, input_usd_per_million=1,
                     output_usd_per_million=4)
            r.setdefault("model", "chat-scripted-1")
    s.configure(reviewers, timeout=timeout, passthrough=None, sandbox="required")
    if verify:
        with s.config.open("a", encoding="utf-8") as f:
            f.write(f"\n[verify]\nreviewers = {json.dumps(verify)}\n")
    if user != "root":
        _hand_over(s, user)
    s.user = user  # type: ignore[attr-defined]
    return s


def _hand_over(s: Setup, user: str) -> None:
    if os.geteuid() != 0 or RUNUSER is None:
        pytest.skip("running as another user needs root and runuser")
    python = _python_for(user)
    if python is None:
        pytest.skip(f"no Python that {user} may run")
    s.python = python  # type: ignore[attr-defined]
    s.env.update(PYTHONPATH=os.pathsep.join([str(ROOT), sysconfig.get_paths()["purelib"]]))
    subprocess.run(["chown", "-R", user, str(s.tmp)], check=True, env={"PATH": "/usr/bin:/bin"})


def run_spar(s: Setup, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[bytes]:
    """`spar ARGS` in the repository, as the world's user."""
    user = getattr(s, "user", "root")
    argv = [getattr(s, "python", None) or sys.executable, "-m", "spar", *args]
    if user != "root":
        argv = [str(RUNUSER), "-u", user, "--", "/usr/bin/env", "-i", *(f"{k}={v}" for k, v in s.env.items()), *argv]
    return subprocess.run(argv, cwd=s.repo, env=s.env, capture_output=True, timeout=timeout)


def as_user(s: Setup, argv: list[str]) -> subprocess.CompletedProcess[bytes]:
    """A git or other command in the repository as the world's user (the files stay theirs)."""
    user = getattr(s, "user", "root")
    if user != "root":
        argv = [str(RUNUSER), "-u", user, "--", *argv]
    return subprocess.run(argv, cwd=s.repo, env=s.env, capture_output=True, timeout=120, check=True)


def round_json(s: Setup, out: str = "reviews/r1") -> dict[str, Any]:
    return json.loads((s.repo / out / "round.json").read_text(encoding="utf-8"))


def entry(s: Setup, name: str, out: str = "reviews/r1") -> dict[str, Any]:
    (found,) = [r for r in round_json(s, out)["reviewers"] if r["name"] == name]
    return found
