"""Hostile reviewers against Spar's kernel sandbox (spar/round/sandboxing.py): a `command`
reviewer and the fake claude, codex and agy each run the same attacks (a model steered by
the code it reviews would): read a planted ~/.ssh/id_rsa and ~/.aws/credentials, read
every /proc/*/environ (its own, Spar's), print the environment, write into the repository
and into another round's copy, write to the test's pseudo-terminal, signal Spar, leave a
process behind. Each attack's outcome comes back on the reviewer's stderr.log.

Under the sandbox each one fails. In `auto` without a sandbox (bwrap missing from PATH)
the environment is still closed, claude's key is still masked and the repository write is
caught. Both run as root and as an unprivileged user (`nobody`, through runuser), as
bwrap works differently for each (capabilities dropped as root; a user namespace
otherwise).
"""

from __future__ import annotations

import json
import os
import pty
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import pytest

from spar.proc.masking import MASK
from spar.round.sandboxing import choose_sandbox
from tests.proctools import wait_for
from tests.runsetup import FAKE_ENV, FAKES, ROOT, make_setup, result

pytestmark = pytest.mark.slow

MARKER = "spar-hostile-marker-7f3a"  # in Spar's environment only
LINGER = "spar-hostile-linger-7f3a"  # the argument of the process a reviewer leaves behind
KEY = "sk-ant-hostile-0123456789"  # claude's credential: masked wherever it shows
# a write to the repository's path lands in the jail's own throwaway folders (the files checked below)
ATTACKS = ("ssh", "aws", "other_round_write", "tty_write", "signal_spar")

# how a payload run in a jail notes each attack's outcome (its result, or the exception's name)
ATTEMPTS = '''report = {}

def attempt(name, fn):
    try:
        report[name] = fn()
    except Exception as exc:
        report[name] = "failed: " + type(exc).__name__
'''

HOSTILE = r'''
import json, os, signal, subprocess, sys
P = json.loads(PARAMS)
MARKER = P["marker"][::-1]  # spelled backwards here: this code itself is in the fakes' environment
''' + ATTEMPTS + r'''

def read(path):
    with open(path, "rb") as f:
        return "read %d bytes" % len(f.read())

def write(path):
    with open(path, "w") as f:
        f.write("owned\n")
    return "written"

def environs():
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open("/proc/%s/environ" % pid, "rb") as f:
                    if MARKER.encode() in f.read():
                        found.append(pid)
            except OSError:
                pass
    return found

def signal_spar():
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open("/proc/%s/cmdline" % pid, "rb") as f:
                    cmd = f.read()
            except OSError:
                continue
            if b"spar\x00run" in cmd:
                os.kill(int(pid), signal.SIGCONT)  # harmless, but SIGKILL would reach it as well
                return "signalled " + pid
    return "failed: no Spar in sight"

def linger():
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)", P["linger"]], start_new_session=True,
                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return "started"

attempt("ssh", lambda: read(P["home"] + "/.ssh/id_rsa"))
attempt("aws", lambda: read(P["home"] + "/.aws/credentials"))
attempt("environ_marker", environs)
report["env_marker"] = any(MARKER in v for v in os.environ.values())
sys.stderr.write("ENV " + json.dumps(dict(os.environ)) + "\n")
attempt("repo_write", lambda: write(P["repo"] + "/calc.py"))
attempt("other_round_write", lambda: write(P["other_round"]))
attempt("tty_write", lambda: write(P["tty"]))
attempt("signal_spar", signal_spar)
attempt("linger", linger)
sys.stderr.write("HOSTILE-REPORT " + json.dumps(report) + "\n")
sys.stderr.flush()
if sys.argv[1:] == ["answer"]:
    print(json.dumps(P["answer"]))
'''

REVIEWERS = ("house", "claude", "codex", "agy")
RUNUSER = shutil.which("runuser") or shutil.which("runuser", path="/usr/sbin:/sbin")


def _python_for(user: str) -> str | None:
    """An interpreter of this Python version that `user` may run (the test's own may live in
    a home the user cannot enter), or None."""
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    for candidate in (os.path.realpath(sys.executable), f"/usr/bin/python{version}", f"/usr/local/bin/python{version}"):
        if not os.path.exists(candidate):
            continue
        probe = subprocess.run([RUNUSER, "-u", user, "--", candidate, "-c",
                                "import sys; print('%d.%d' % sys.version_info[:2])"],
                               capture_output=True, text=True, timeout=60)
        if probe.returncode == 0 and probe.stdout.strip() == version:
            return candidate
    return None


@pytest.fixture(params=["root", "nobody"])
def user(request):
    if os.geteuid() != 0:
        pytest.skip("running the scenario as root and as another user needs root (runuser)")
    if request.param != "root" and RUNUSER is None:
        pytest.skip("runuser is not installed: the unprivileged run cannot switch users")
    return request.param


def _world(user: str, *, bwrap_on_path: bool):
    """The test's world (owned by `user`): a repository, a HOME with planted secrets, another
    round's copy, a pseudo-terminal; every reviewer configured as hostile."""
    root = Path(tempfile.mkdtemp(prefix="spar-hostile-"))
    os.chmod(root, 0o755)
    s = make_setup(root)
    home = Path(s.env["HOME"])
    for name, text in ((".ssh/id_rsa", "PRIVATE KEY"), (".aws/credentials", "aws_secret_access_key = x")):
        (home / name).parent.mkdir(parents=True)
        (home / name).write_text(text)
        (home / name).chmod(0o600)
    other = s.repo / "reviews" / "r0" / "workspace" / "head" / "calc.py"
    other.parent.mkdir(parents=True)
    other.write_text("another round's copy\n")
    leader, follower = pty.openpty()
    python = sys.executable if user == "root" else _python_for(user)
    if python is None:
        pytest.skip(f"no Python {sys.version_info.major}.{sys.version_info.minor} that {user} may run")
    tools = root / "bin"  # what Spar needs on PATH besides the fakes; bwrap only when asked
    tools.mkdir()
    for name, target in (("git", shutil.which("git")), ("python3", python)) + (
            (("bwrap", shutil.which("bwrap")),) if bwrap_on_path else ()):
        (tools / name).symlink_to(target)
    params = {"home": str(home), "marker": MARKER[::-1], "repo": str(s.repo), "other_round": str(other),
              "tty": os.ttyname(follower), "linger": LINGER, "answer": result(head=s.head, findings=[])}
    code = HOSTILE.replace("PARAMS", repr(json.dumps(params)))
    s.configure([{"name": "house", "preset": "command", "argv": ["python3", "-c", code, "answer"]},
                 {"name": "claude", "preset": "claude"}, {"name": "codex", "preset": "codex"},
                 {"name": "agy", "preset": "agy"}], passthrough=FAKE_ENV, sandbox="auto")
    s.env.update(PATH=os.pathsep.join([str(FAKES), str(tools)]), SPAR_HOSTILE=MARKER, ANTHROPIC_API_KEY=KEY,
                 SPAR_FAKE_SCENARIO=json.dumps({"run": ["python3", "-c", code], "result": params["answer"]}))
    if user != "root":
        site = sysconfig.get_paths()["purelib"]
        s.env.update(PYTHONPATH=os.pathsep.join([str(ROOT), site]))
        subprocess.run(["chown", "-R", user, str(root)], check=True, env={"PATH": "/usr/bin:/bin"})
        shutil.chown(os.ttyname(follower), user)
    return s, python, (leader, follower)


def _run(s, user: str, python: str) -> subprocess.CompletedProcess:
    argv = [python, "-m", "spar", "run", "--stage", "code", "--out", "reviews/r1"]
    if user != "root":
        argv = [RUNUSER, "-u", user, "--", "/usr/bin/env", "-i", *(f"{k}={v}" for k, v in s.env.items()), *argv]
    return subprocess.run(argv, cwd=s.repo, env=s.env, capture_output=True, timeout=300)


def _reports(s) -> dict[str, dict]:
    out = {}
    for name in REVIEWERS:
        log = (s.repo / "reviews" / "r1" / name / "stderr.log").read_text(errors="replace")
        (line,) = [x for x in log.splitlines() if x.startswith("HOSTILE-REPORT ")]
        out[name] = json.loads(line.split(" ", 1)[1])
    return out


def _lingering() -> list[str]:
    found = []
    for pid in os.listdir("/proc"):
        try:
            if pid.isdigit() and LINGER.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.append(pid)
        except OSError:
            pass
    return found


def _tty_received(leader: int) -> bytes:
    os.set_blocking(leader, False)
    try:
        return os.read(leader, 4096)
    except (BlockingIOError, OSError):
        return b""


def _claude_env_line(s) -> str:
    log = (s.repo / "reviews" / "r1" / "claude" / "stderr.log").read_text(errors="replace")
    (line,) = [x for x in log.splitlines() if x.startswith("ENV ")]
    return line


def test_under_the_sandbox_every_attack_fails(user):
    if choose_sandbox("auto", os.environ.get("PATH")).bwrap is None:
        pytest.skip("bwrap cannot make a sandbox here (.ci/run installs bubblewrap)")
    s, python, (leader, follower) = _world(user, bwrap_on_path=True)
    try:
        proc = _run(s, user, python)
        assert proc.returncode == 0, proc.stderr.decode()
        rj = json.loads((s.repo / "reviews" / "r1" / "round.json").read_text())
        assert rj["sandbox"] == {"kind": "bwrap", "network": "allowlist"}
        for name, report in _reports(s).items():
            for attack in ATTACKS:
                assert report[attack].startswith("failed"), (name, attack, report[attack])
            assert report["environ_marker"] == [], name  # no environment holds Spar's marker
            assert report["env_marker"] is False, name
            assert report["linger"] == "started", name
        assert wait_for(lambda: _lingering() == [], timeout=30), _lingering()
        assert (s.repo / "calc.py").read_text() == "def add(a, b):\n    return a + b\n\n\ndef divide(a, b):\n" \
            "    return a / b\n"
        assert "repository_changed" not in rj and b"repository changed" not in proc.stderr
        assert (s.repo / "reviews" / "r0" / "workspace" / "head" / "calc.py").read_text() == "another round's copy\n"
        assert _tty_received(leader) == b""
        env_line = _claude_env_line(s)
        assert KEY not in env_line and MASK.decode() in env_line
        assert rj["masked_secrets"] >= 1
    finally:
        os.close(leader)
        os.close(follower)
        shutil.rmtree(s.tmp, ignore_errors=True)


def test_without_bwrap_auto_runs_closed_masked_and_watched(user):
    s, python, (leader, follower) = _world(user, bwrap_on_path=False)
    try:
        proc = _run(s, user, python)
        stderr = proc.stderr.decode()
        assert proc.returncode == 0, stderr
        assert "no kernel sandbox for the reviewers: bwrap (bubblewrap) is not installed" in stderr
        rj = json.loads((s.repo / "reviews" / "r1" / "round.json").read_text())
        assert rj["sandbox"] == {"kind": None, "why": "bwrap (bubblewrap) is not installed"}
        for name, report in _reports(s).items():
            assert report["env_marker"] is False, name  # the environment is closed
            assert report["repo_write"] == "written", name  # nothing stops it here ...
        changed = rj["repository_changed"]  # ... but it is caught
        assert changed["paths"] == ["calc.py"] and changed["sandboxed"] is False
        assert "the repository changed while the reviewers ran" in stderr and "no sandbox was in place" in stderr
        env_line = _claude_env_line(s)
        assert KEY not in env_line and MASK.decode() in env_line
        for path in (s.repo / "reviews" / "r1").rglob("*"):
            if path.is_file() and "workspace" not in path.parts:
                assert KEY.encode() not in path.read_bytes(), path
        assert KEY.encode() not in proc.stderr + proc.stdout
    finally:
        os.close(leader)
        os.close(follower)
        shutil.rmtree(s.tmp, ignore_errors=True)
