"""The jail holds as root as well as for an unprivileged user (spar/proc/sandbox.py,
spar/proc/keyring.py, spar/round/sandboxing.py), each route tried from inside a real jail:

- nothing under /proc that changes the host can be written (a `kernel.core_pattern` the
  kernel would run as host root, the host name, /proc/sysrq-trigger);
- the kernel keyrings of the user (session, user) and their System V shared memory are
  out of reach (the session keyring also for a program Spar starts without a jail);
- a CLI installed under the home shows its own install only, never ~/.local, ~/.cargo or
  an npm prefix whole, and still runs.

Each test runs a small driver as root and as `nobody` (through runuser): the driver builds
the jail with Spar's own functions and starts it through Spar's reviewer guard, as a round
does, and prints what the program inside found.
"""

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

from tests.runsetup import ROOT
from tests.test_sandbox_hostile import RUNUSER, _python_for
from tests.test_sandbox_hostile import user as user  # the fixture: root, and nobody through runuser

pytestmark = pytest.mark.slow

KEYCTL = shutil.which("keyctl", path="/usr/bin:/bin:/usr/sbin:/sbin")
IPCMK = shutil.which("ipcmk", path="/usr/bin:/bin")

# what the program inside a jail tries: $1 and $2 the planted keys' ids, $3 the segment's id,
# $4 the id of the user's keyring (listed in /proc/keys: linked by id, its keys are possessed)
ROUTES = r"""
cp=$(cat /proc/sys/kernel/core_pattern)
if printf '%s\n' "$cp" > /proc/sys/kernel/core_pattern 2>/dev/null; then echo core_pattern:written; fi
h=$(cat /proc/sys/kernel/hostname)
if printf '%s\n' "$h" > /proc/sys/kernel/hostname 2>/dev/null; then echo hostname:written; fi
if [ -w /proc/sysrq-trigger ]; then echo sysrq:writable; fi
keyctl print "$1" 2>/dev/null; keyctl print "$2" 2>/dev/null
keyctl link @u @s 2>/dev/null; keyctl print "$2" 2>/dev/null
keyctl link "$4" @s 2>/dev/null; keyctl print "$2" 2>/dev/null; keyctl print "$1" 2>/dev/null
keyctl request user spar-planted-session 2>/dev/null && echo key:found
keyctl request user spar-planted-user 2>/dev/null && echo key:found
ipcs -m | awk '{print "shm:" $2}' | grep -x "shm:$3"
echo inside:done
"""

JAIL_DRIVER = r"""
import json, os, subprocess, sys, tempfile
import anyio
from spar.proc.process import GuardedProcess, OutputHandling, reviewer_guard
from spar.proc.sandbox import Jail, find_bwrap, jail_argv, keyring_filter

routes, folder = sys.argv[1], sys.argv[2]
with open(os.path.join(folder, "filter"), "wb") as f:  # the jail a round gives, its seccomp filter too
    f.write(keyring_filter())

def run(*argv, data=None):
    return subprocess.run(argv, input=data, capture_output=True, check=True).stdout.decode().strip()

run("keyctl", "link", "@u", "@s")  # as pam_keyinit does at login
session = run("keyctl", "padd", "user", "spar-planted-session", "@s", data=b"SECRET-SESSION")
user = run("keyctl", "padd", "user", "spar-planted-user", "@u", data=b"SECRET-USER")
ring = run("keyctl", "id", "@u")
segment = run("ipcmk", "-M", "4096", "-p", "0600").split()[-1]
out = os.path.join(folder, "out")
try:
    print(json.dumps({"host_sees": [run("keyctl", "print", session), run("keyctl", "print", user),
                                    segment in run("ipcs", "-m")]}))
    argv = jail_argv(Jail(find_bwrap("/usr/bin:/bin"), cwd="/", private=("/tmp",),
                          seccomp=os.path.join(folder, "filter")),
                     ["/bin/sh", "-c", routes, "sh", session, user, segment, ring])

    # without a jail too, a program Spar starts has a session keyring of its own
    unjailed = ["/bin/sh", "-c", "keyctl print $0; keyctl request user spar-planted-session", session]

    async def main():
        for command, path in ((argv, out), (unjailed, out + ".unjailed")):
            async with GuardedProcess(command, cwd=folder, env={"PATH": "/usr/bin:/bin"},
                                      output=OutputHandling(stdout_path=path)) as running:
                with anyio.fail_after(120):
                    await running.wait()

    with reviewer_guard():
        anyio.run(main)
    print(open(out).read() + "UNJAILED " + json.dumps(open(out + ".unjailed").read()))
finally:
    subprocess.run(["keyctl", "unlink", user, "@u"], capture_output=True)
    subprocess.run(["ipcrm", "-m", segment], capture_output=True)
"""


def _as_user(user: str, folder: Path, argv: list[str], *, session: bool = False) -> subprocess.CompletedProcess:
    """`argv` (after the interpreter) run by `user`'s Python with Spar importable; in a
    session keyring of its own when asked (the keys the test plants stay in it)."""
    python = sys.executable if user == "root" else _python_for(user)
    if python is None:
        pytest.skip(f"no Python {sys.version_info.major}.{sys.version_info.minor} that {user} may run")
    env = {"PATH": "/usr/bin:/bin:/usr/sbin:/sbin",
           "PYTHONPATH": os.pathsep.join([str(ROOT), sysconfig.get_paths()["purelib"]])}
    command = [python, *argv]
    if session:
        command = [KEYCTL, "session", "-", *command]
    if user != "root":
        subprocess.run(["chown", "-R", user, str(folder)], check=True)
        command = [RUNUSER, "-u", user, "--", *command]
    return subprocess.run(command, cwd=folder, env=env, capture_output=True, timeout=300)


@pytest.fixture
def folder():
    if shutil.which("bwrap") is None:
        pytest.skip("needs bwrap (bubblewrap; .ci/run installs it)")
    path = Path(tempfile.mkdtemp(prefix="spar-jail-holds-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _host(name: str) -> str:
    return Path("/proc/sys/kernel", name).read_text()


def test_proc_sysctls_the_users_keyrings_and_shared_memory_are_out_of_reach(user, folder):
    if KEYCTL is None or IPCMK is None:
        pytest.skip("needs keyctl (keyutils; .ci/run installs it) and ipcmk (util-linux)")
    before = (_host("core_pattern"), _host("hostname"))
    (folder / "driver.py").write_text(JAIL_DRIVER)
    proc = _as_user(user, folder, [str(folder / "driver.py"), ROUTES, str(folder)], session=True)
    out = proc.stdout.decode()
    assert proc.returncode == 0, proc.stderr.decode()
    first, rest = out.split("\n", 1)
    inside, unjailed = rest.split("UNJAILED ", 1)
    assert json.loads(unjailed) == ""  # neither the key's text nor its id
    assert json.loads(first)["host_sees"] == ["SECRET-SESSION", "SECRET-USER", True]  # planted for real
    assert "inside:done" in inside, out
    for route in ("core_pattern:written", "hostname:written", "sysrq:writable", "SECRET", "key:found", "shm:"):
        assert route not in inside, (user, route, inside)
    assert (_host("core_pattern"), _host("hostname")) == before


CLI = """#!/bin/sh
echo ran
for f in SECRETS; do if [ -e "$f" ]; then echo "seen:$f"; fi; done
DEPENDENCY
"""

INSTALL_DRIVER = r"""
import json, subprocess, sys
from pathlib import Path
from spar.presets import get_preset
from spar.proc.sandbox import find_bwrap
from spar.round.interface import RunPaths
from spar.round.sandboxing import confined

home, folder = sys.argv[1], Path(sys.argv[2])
round_dir = folder / "round"
paths = RunPaths(reviewer_dir=round_dir / "r", round_dir=round_dir, workspace=round_dir / "workspace",
                 schema_path=round_dir / "schema.json")
report = {}
for preset, exe in json.loads(sys.argv[3]):
    env = {"HOME": home, "PATH": "/usr/bin:/bin"}
    with confined(get_preset(preset), paths, exe, [exe], env, find_bwrap("/usr/bin:/bin")) as jail:
        proc = subprocess.run(jail.argv([exe]), env=jail.env, capture_output=True, timeout=120)
    report[exe] = proc.stdout.decode() + proc.stderr.decode()
print(json.dumps(report))
"""


def _write(path: Path, text: str, mode: int = 0o644) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(mode)
    return path


def _installs(home: Path) -> tuple[list[tuple[str, str]], list[Path]]:
    """claude installed the native way and through an npm prefix under the home, codex in
    ~/.cargo/bin; secrets beside each. (preset, executable) pairs, and the secrets."""
    secrets = [_write(home / ".local/share/keyrings/x", "keyring"), _write(home / ".bash_history", "token"),
               _write(home / ".cargo/credentials.toml", "[registry]\ntoken = 'x'\n"),
               _write(home / ".npm-global/lib/node_modules/unrelated/token", "npm token")]
    cli = CLI.replace("SECRETS", " ".join(str(s) for s in secrets))
    native = _write(home / ".local/share/claude/versions/2.1.197", cli.replace("DEPENDENCY", ""), 0o755)
    (home / ".local/bin").mkdir(parents=True)
    (home / ".local/bin/claude").symlink_to("../share/claude/versions/2.1.197")
    package = home / ".npm-global/lib/node_modules/@anthropic-ai/claude-code"
    dependency = home / ".npm-global/lib/node_modules/@anthropic-ai/claude-code-linux-x64/vendor/ok"
    _write(dependency, "dependency")
    _write(package / "package.json", json.dumps({"name": "@anthropic-ai/claude-code", "optionalDependencies": {
        "@anthropic-ai/claude-code-linux-x64": "2.1.197", "@anthropic-ai/claude-code-darwin-x64": "2.1.197"}}))
    _write(package / "bin/claude.exe", cli.replace("DEPENDENCY", f'cat "{dependency}"'), 0o755)
    (home / ".npm-global/bin").mkdir()
    (home / ".npm-global/bin/claude").symlink_to("../lib/node_modules/@anthropic-ai/claude-code/bin/claude.exe")
    codex = _write(home / ".cargo/bin/codex", cli.replace("DEPENDENCY", ""), 0o755)
    assert native.exists()
    return [("claude", str(home / ".local/bin/claude")), ("claude", str(home / ".npm-global/bin/claude")),
            ("codex", str(codex))], secrets


def test_a_cli_installed_under_the_home_shows_its_own_install_only(user, folder):
    home = folder / "home"
    clis, secrets = _installs(home)
    for sub in ("round/r", "round/workspace"):
        (folder / sub).mkdir(parents=True)
    (folder / "round/schema.json").write_text("{}")
    (folder / "driver.py").write_text(INSTALL_DRIVER)
    proc = _as_user(user, folder, [str(folder / "driver.py"), str(home), str(folder), json.dumps(clis)])
    assert proc.returncode == 0, proc.stderr.decode()
    report = json.loads(proc.stdout)
    for _preset, exe in clis:
        assert report[exe].startswith("ran\n"), (exe, report[exe])  # the CLI still runs
        assert "seen:" not in report[exe], (user, exe, report[exe])
    assert report[clis[1][1]].endswith("ran\ndependency"), report[clis[1][1]]  # what it depends on is shown
    assert all(s.exists() for s in secrets)
