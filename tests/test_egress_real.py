"""The real claude in a jail with a network of its own completes a round against a scripted
model server on the host's 127.0.0.1, reached only through Spar's egress proxy (its base URL
is its configured service, so the proxy lets that loopback host through); the same claude
pointed at a host its list does not hold is reported as blocked by the allowlist, not as an
authentication failure. Nothing leaves the machine: the model server listens on 127.0.0.1,
the refused name is never resolved, and Spar's own proxy variables name a closed local port.
"""

from __future__ import annotations

import json
import os
import pwd
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import pytest

from spar.round.sandboxing import choose_sandbox
from tests import test_real_cli_npm as npm_clis
from tests import test_sandbox_hostile as hostile
from tests.modelserver import ModelServer, structured, text
from tests.runsetup import ROOT, make_setup, result
from tests.test_egress_jail import _run as run_as
from tests.test_real_cli_npm import CLOSED_PROXY, SECRETS
from tests.test_sandbox_hostile import _python_for

real_clis = npm_clis.real_clis  # the fixture: the npm installs of the real CLIs
user = hostile.user  # the fixture: as root and as `nobody`

pytestmark = [pytest.mark.realcli, pytest.mark.slow]


def _setup(tmp_path, prefix, **reviewer):
    if not choose_sandbox("auto", None).egress:
        pytest.skip("bwrap cannot make a jail with a network namespace here")
    s = make_setup(tmp_path)
    s.user = "root"
    for key in (*SECRETS, "CODEX_HOME", "CLAUDE_CONFIG_DIR"):
        s.env.pop(key, None)
    s.env.update(ANTHROPIC_API_KEY="sk-ant-egress-test-0123456789",
                 HTTPS_PROXY=CLOSED_PROXY, HTTP_PROXY=CLOSED_PROXY, NO_PROXY="", no_proxy="")
    s.configure([{"name": "claude", "preset": "claude", "model": "claude-sonnet-4-5",
                  "binary": str(prefix / "node_modules" / ".bin" / "claude"), **reviewer}], timeout=120,
                passthrough=None, sandbox="required")
    return s


def _as(s, user: str):
    """`s`, run as `user` (its world handed over), or None when that user has no Python to run Spar."""
    s.python = sys.executable if user == "root" else _python_for(user)
    if s.python is None:
        pytest.skip(f"no Python {sys.version_info.major}.{sys.version_info.minor} that {user} may run")
    s.user = user
    if user != "root":
        os.chmod(s.tmp, 0o755)
        for parent in s.tmp.parents:  # pytest's own folders are 0700
            if parent == Path(tempfile.gettempdir()):
                break
            os.chmod(parent, os.stat(parent).st_mode | 0o711)
        s.env.update(PYTHONPATH=os.pathsep.join([str(ROOT), sysconfig.get_paths()["purelib"]]))
        subprocess.run(["chown", "-R", user, str(s.tmp)], check=True, env={"PATH": "/usr/bin:/bin"})
    return s


def _round(s) -> dict:
    return json.loads((s.repo / "reviews" / "r1" / "round.json").read_text(encoding="utf-8"))


def test_real_claude_reaches_its_local_service_through_the_proxy_only(tmp_path, real_clis, user):
    s = _as(_setup(tmp_path, real_clis), user)
    with ModelServer([structured(result(head=s.head, findings=[]))], then=text("done")) as server:
        s.env["ANTHROPIC_BASE_URL"] = server.base_url
        proc = run_as(s, s.user, s.python)
        rj = _round(s)
        (entry,) = rj["reviewers"]
        assert rj["sandbox"] == {"kind": "bwrap", "network": "allowlist"}
        assert entry["status"] == "completed", (entry["reason"], proc.stderr.decode()[-2000:])
        assert server.model_requests()  # it was reached: through the proxy, the jail has no other way
        assert (s.repo / "reviews" / "r1").stat().st_uid == pwd.getpwnam(user).pw_uid  # it ran as `user`
        assert "egress_refused" not in entry["attempts"][-1]  # no telemetry, no update check


def test_real_codex_reaches_the_provider_its_config_names_through_the_proxy_only(tmp_path, real_clis):
    s = _setup(tmp_path, real_clis, name="codex", preset="codex", model="gpt-scripted-1",
               binary=str(real_clis / "node_modules" / ".bin" / "codex"))
    with ModelServer([structured(result(head=s.head, findings=[]))]) as server:
        codex_home = Path(s.env["HOME"]) / ".codex"
        codex_home.mkdir(parents=True, exist_ok=True)
        (codex_home / "config.toml").write_text(
            'model_provider = "scripted"\n[model_providers.scripted]\nname = "scripted"\n'
            f'base_url = "{server.url("/v1")}"\nenv_key = "OPENAI_API_KEY"\nwire_api = "responses"\n',
            encoding="utf-8")
        s.env["OPENAI_API_KEY"] = "sk-egress-test-0123456789"
        proc = s.run()
        rj = _round(s)
        (entry,) = rj["reviewers"]
        assert rj["sandbox"] == {"kind": "bwrap", "network": "allowlist"}
        assert entry["status"] == "completed", (entry["reason"], proc.stderr.decode()[-2000:])
        assert server.model_requests()
        # its own service is never refused; measured with codex 0.171.0: github.com, api.github.com,
        # chatgpt.com and ab.chatgpt.com are each tried once, refused, and the review still completes
        refused = entry["attempts"][-1].get("egress_refused", [])
        assert all(r["host"] != "127.0.0.1" for r in refused), refused


def test_real_claude_refused_by_the_allowlist_is_told_as_such(tmp_path, real_clis):
    """The user's claude settings send it to another server than the one Spar was told of:
    the proxy refuses that host, and the reviewer is reported blocked, naming it."""
    s = _setup(tmp_path, real_clis)
    with ModelServer([structured({})]) as told, ModelServer([structured({})]) as elsewhere:
        s.env["ANTHROPIC_BASE_URL"] = told.base_url
        settings = Path(s.env["HOME"]) / ".claude" / "settings.json"
        settings.parent.mkdir(parents=True, exist_ok=True)
        settings.write_text(json.dumps({"env": {"ANTHROPIC_BASE_URL": elsewhere.base_url}}), encoding="utf-8")
        proc = s.run()
        (entry,) = _round(s)["reviewers"]
        assert told.requests == [] and elsewhere.requests == []
    assert proc.returncode == 1
    refused = entry["attempts"][0]["egress_refused"]
    assert {"host": "127.0.0.1", "port": elsewhere.port} == {k: refused[0][k] for k in ("host", "port")}
    assert entry["reason"].startswith(f"blocked by Spar's egress allowlist: it tried to reach 127.0.0.1:{elsewhere.port}"), \
        entry["reason"]
    assert f"127.0.0.1:{elsewhere.port}" in proc.stderr.decode()
