"""The kernel sandbox's choice and each reviewer's jail (spar/round/sandboxing.py,
spar/proc/sandbox.py): `[sandbox] mode`, what a jail shows and hides, and how `spar run`
and `spar doctor` say it. The attacks themselves: tests/test_sandbox_hostile.py."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from spar.commands.doctor import sandbox_check
from spar.config.load import load_config
from spar.errors import ConfigError, Refused
from spar.presets import get_preset
from spar.proc.sandbox import JAIL_UID, Jail, jail_argv, jail_user, probe
from spar.round.interface import RunPaths
from spar.round.sandboxing import HOME_INSIDE, choose_sandbox, confined
from tests.reviewerround import bwrap_or_skip
from tests.runsetup import make_setup, result

FAILING_BWRAP = "#!/bin/sh\necho 'bwrap: No permissions to create a new namespace' >&2\nexit 1\n"


def _load(tmp_path: Path, text: str):
    path = tmp_path / "user.toml"
    path.write_text(text, encoding="utf-8")
    return load_config(None, env={"SPAR_CONFIG": str(path)}, home=tmp_path / "home")


def test_sandbox_mode_is_checked_and_enters_the_digest_only_when_not_auto(tmp_path):
    assert _load(tmp_path, "").sandbox == "auto"
    assert "sandbox" not in _load(tmp_path, '[sandbox]\nmode = "auto"\n').applied_values()
    cfg = _load(tmp_path, '[sandbox]\nmode = "required"\n')
    assert cfg.sandbox == "required" and cfg.applied_values()["sandbox"] == {"mode": "required"}
    for text, line, message in (('[sandbox]\nmode = "on"\n', 2, 'sandbox.mode must be one of "auto"'),
                                ('[sandbox]\nkind = "bwrap"\n', 2, 'unknown key "sandbox.kind"'),
                                ('sandbox = "off"\n', 1, "sandbox must be a table")):
        with pytest.raises(ConfigError) as err:
            _load(tmp_path, text)
        assert err.value.line == line and message in err.value.message


def _bin(tmp_path: Path, bwrap: str | None) -> str:
    folder = tmp_path / "bin"
    folder.mkdir(parents=True, exist_ok=True)
    if bwrap is not None:
        (folder / "bwrap").write_text(bwrap)
        (folder / "bwrap").chmod(0o755)
    return str(folder)


def test_each_mode_where_bwrap_is_missing_or_cannot_start(tmp_path):
    missing = _bin(tmp_path / "a", None)
    failing = _bin(tmp_path / "b", FAILING_BWRAP)
    assert choose_sandbox("auto", missing).why == "bwrap (bubblewrap) is not installed"
    why = choose_sandbox("auto", failing).why
    assert "cannot make a sandbox here (exit 1): bwrap: No permissions to create a new namespace" in why
    assert choose_sandbox("off", failing).bwrap is None
    with pytest.raises(Refused) as err:
        choose_sandbox("required", missing)
    assert "bwrap (bubblewrap) is not installed" in err.value.message and "apt-get install bubblewrap" in err.value.message


# programs named bwrap that make no jail: one runs the command as it is, one only says yes
SHIM_RUNS_COMMAND = '#!/bin/sh\nwhile [ "$#" -gt 0 ] && [ "$1" != "--" ]; do shift; done\nshift\nexec "$@"\n'
SHIM_TRUE = "#!/bin/sh\nexit 0\n"


@pytest.mark.parametrize("shim", [SHIM_RUNS_COMMAND, SHIM_TRUE])
def test_a_bwrap_that_makes_no_jail_is_refused_and_never_reported_as_a_sandbox(tmp_path, shim):
    """The probe checks from inside (a PID namespace of its own, a planted host file absent),
    not bwrap's exit code: `required` refuses, `auto` runs without, doctor says it is a problem."""
    shims = _bin(tmp_path / "shim", shim)
    why = choose_sandbox("auto", shims).why
    assert choose_sandbox("auto", shims).bwrap is None and "does not make a jail that holds" in why, why
    with pytest.raises(Refused) as err:
        choose_sandbox("required", shims)
    assert "does not make a jail that holds" in err.value.message
    check, choice = sandbox_check("required", {"PATH": shims})
    assert check.status == "problem" and choice is None
    check, choice = sandbox_check("auto", {"PATH": shims})
    assert check.status == "warning" and choice is not None and choice.bwrap is None


def test_the_real_bwrap_passes_the_probe_from_inside():
    bwrap = bwrap_or_skip()
    assert probe(bwrap) is None


def _paths(tmp_path: Path) -> RunPaths:
    round_dir = tmp_path / "repo" / "reviews" / "r1"
    (round_dir / "workspace").mkdir(parents=True)
    (round_dir / "claude").mkdir()
    (round_dir / "schema.json").write_text("{}")
    return RunPaths(reviewer_dir=round_dir / "claude", round_dir=round_dir, workspace=round_dir / "workspace",
                    schema_path=round_dir / "schema.json")


def _shown(argv: list[str]) -> dict[str, str]:
    """target -> the bind option that shows it."""
    return {argv[i + 2]: argv[i] for i in range(len(argv) - 2) if argv[i] in ("--ro-bind", "--bind")}


def test_a_jail_shows_the_workspace_the_cli_and_its_login_and_nothing_of_the_home(tmp_path):
    paths = _paths(tmp_path)
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / ".credentials.json").write_text('{"token": "t"}')
    (home / ".claude.json").write_text('{"userID": "u"}')
    (home / ".ssh").mkdir()
    npm = tmp_path / "npm"
    package = npm / "lib" / "node_modules" / "@anthropic-ai" / "claude-code" / "bin"
    package.mkdir(parents=True)
    (package / "claude.exe").write_text("binary")
    (npm / "bin").mkdir()
    (npm / "bin" / "claude").symlink_to(package / "claude.exe")
    exe = str(npm / "bin" / "claude")
    env = {"HOME": str(home), "PATH": "/usr/bin", "SSL_CERT_FILE": str(tmp_path / "ca.pem")}
    (tmp_path / "ca.pem").write_text("cert")
    with confined(get_preset("claude"), paths, exe, [exe, "-p"], env, "/usr/bin/bwrap") as jail:
        argv = jail.argv([exe, "-p"])
        scratch = next(b.source for b in jail.jail.binds if b.target == HOME_INSIDE)
        assert Path(scratch, ".claude.json").read_text() == '{"userID": "u"}'  # a copy: claude rewrites it
    assert not os.path.exists(scratch)  # removed with the attempt
    shown = _shown(argv)
    assert shown[str(paths.workspace)] == "--ro-bind" and shown[str(paths.reviewer_dir)] == "--ro-bind"
    assert shown[str(npm)] == "--ro-bind"  # the bin folder's prefix: the package beside it
    # the login, refreshed in place; as root a copy the jail's uid can read, written back after
    assert shown.get(f"{HOME_INSIDE}/.claude/.credentials.json") == (None if jail_user() is not None else "--bind")
    assert shown[str(tmp_path / "ca.pem")] == "--ro-bind"
    assert not any(t == str(home) or t.startswith(str(home) + "/") for t in shown)
    assert not any(str(paths.round_dir).startswith(t + "/") for t in shown)  # no parent of the round
    assert jail.env["HOME"] == HOME_INSIDE and jail.env["TMPDIR"] == "/tmp"
    assert argv[argv.index("--chdir") + 1] == str(paths.workspace) and argv[-2:] == [exe, "-p"]
    for flag in ("--unshare-pid", "--unshare-ipc", "--seccomp", "--new-session", "--die-with-parent", "--cap-drop"):
        assert flag in argv


def test_a_program_in_a_folder_that_holds_the_round_is_shown_alone(tmp_path):
    """A `command` script beside the repository: its folder would show the repository, so
    only the file is bound; an argv file is shown, the home named in argv is not."""
    paths = _paths(tmp_path)
    script = tmp_path / "review.sh"
    script.write_text("#!/bin/sh\n")
    data = tmp_path / "data.txt"
    data.write_text("x")
    env = {"HOME": str(tmp_path / "home"), "PATH": "/usr/bin"}
    argv = [str(script), str(data), str(tmp_path), "{not a path}"]
    with confined(get_preset("command"), paths, str(script), argv, env, "/usr/bin/bwrap") as jail:
        shown = _shown(jail.argv(argv))
    assert shown[str(script)] == "--ro-bind" and shown[str(data)] == "--ro-bind"
    assert str(tmp_path) not in shown


def test_codex_gets_a_home_of_its_own_outside_the_temp_folder(tmp_path):
    paths = _paths(tmp_path)
    codex_home = tmp_path / "codex-home"
    codex_home.mkdir()
    (codex_home / "auth.json").write_text("{}")
    (codex_home / "config.toml").write_text('model = "x"\n')
    env = {"HOME": str(tmp_path / "home"), "CODEX_HOME": str(codex_home), "PATH": "/usr/bin"}
    with confined(get_preset("codex"), paths, "/usr/bin/true", ["/usr/bin/true"], env, "/usr/bin/bwrap") as jail:
        assert jail.env["CODEX_HOME"] == f"{HOME_INSIDE}/.codex" and not HOME_INSIDE.startswith("/tmp")
        shown = _shown(jail.argv(["/usr/bin/true"]))
    assert shown.get(f"{HOME_INSIDE}/.codex/auth.json") == (None if jail_user() is not None else "--bind")
    assert str(codex_home) not in shown


def _root_jail_or_skip() -> str:
    bwrap = bwrap_or_skip()
    if jail_user() is None:
        pytest.skip("needs root and setpriv (util-linux): the jail changes uid only when Spar runs as root")
    return bwrap


# run inside the jail: who it is, its capabilities, then codex's own sandbox as codex 0.171.0
# starts it (a user namespace mapping its own uid, its PID, IPC and network namespaces), reading
# $1: without a /proc of its own, as codex retries when mounting one is refused (bwrap run by
# root covers /proc/sys, and the kernel then mounts no new /proc under it); then the login
# refreshed as codex writes it (a new file renamed over the old)
NESTED = r"""id -u; id -g; id -G
grep -E '^(CapInh|CapPrm|CapEff|CapAmb|NoNewPrivs):' /proc/self/status
bwrap --unshare-user --unshare-pid --unshare-ipc --unshare-net --ro-bind / / --dev /dev --cap-drop ALL \
  -- cat "$1" 2>&1
cat "$CODEX_HOME/auth.json"; echo
printf '{"token": "refreshed"}' > "$CODEX_HOME/auth.json.tmp" && mv "$CODEX_HOME/auth.json.tmp" "$CODEX_HOME/auth.json"
"""


def _codex_home(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    codex_home = tmp_path / "codex-home"
    codex_home.mkdir(mode=0o700)
    login = codex_home / "auth.json"
    login.write_text('{"token": "old"}')
    login.chmod(0o600)
    return login, {"HOME": str(tmp_path / "home"), "CODEX_HOME": str(codex_home), "PATH": "/usr/bin:/bin"}


@pytest.mark.slow
def test_as_root_the_program_runs_as_a_uid_of_its_own_where_a_nested_sandbox_starts(tmp_path):
    """Started by root, the program is JAIL_UID with no capability (the kernel refuses it the
    sysctls), so codex's own bwrap can map its uid; the user's root-only login is read through
    a copy, and the login codex refreshes inside is written back over the user's file."""
    bwrap = _root_jail_or_skip()
    paths = _paths(tmp_path)
    (paths.workspace / "calc.py").write_text("def divide(a, b):\n")
    login, env = _codex_home(tmp_path)
    argv = ["/bin/sh", "-c", NESTED, "sh", str(paths.workspace / "calc.py")]
    with confined(get_preset("codex"), paths, "/bin/sh", argv, env, bwrap) as jail:
        proc = subprocess.run(jail.argv(argv), env=jail.env, capture_output=True, timeout=120)
    out = proc.stdout.decode().splitlines()
    assert proc.returncode == 0, (out, proc.stderr.decode())
    assert out[:3] == [str(JAIL_UID)] * 3  # uid, gid, and no other group
    caps = dict(line.split(":\t") for line in out[3:8])
    assert caps == {"CapInh": "0" * 16, "CapPrm": "0" * 16, "CapEff": "0" * 16, "CapAmb": "0" * 16, "NoNewPrivs": "1"}
    assert out[8:] == ["def divide(a, b):", '{"token": "old"}']
    assert login.read_text() == '{"token": "refreshed"}'
    st = login.stat()
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (0, 0, 0o600)
    assert sorted(os.listdir(login.parent)) == ["auth.json"]  # no temporary file left


@pytest.mark.slow
def test_as_root_a_file_others_may_not_read_is_shown_through_a_copy_the_jail_can_read(tmp_path):
    bwrap = _root_jail_or_skip()
    paths = _paths(tmp_path)
    data = tmp_path / "private" / "key.json"
    data.parent.mkdir(mode=0o700)
    data.write_text('{"key": "k"}')
    data.chmod(0o600)
    argv = ["/bin/cat", str(data)]
    env = {"HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin"}
    with confined(get_preset("command"), paths, "/bin/cat", argv, env, bwrap) as jail:
        assert jail.jail is not None and all(b.source != str(data) for b in jail.jail.binds)
        proc = subprocess.run(jail.argv(argv), env=jail.env, capture_output=True, timeout=120)
    assert (proc.returncode, proc.stdout) == (0, b'{"key": "k"}'), proc.stderr.decode()
    assert data.read_text() == '{"key": "k"}' and stat.S_IMODE(data.stat().st_mode) == 0o600


def test_a_login_changed_meanwhile_is_kept_and_the_reviewers_refresh_said(tmp_path, capsys):
    _root_jail_or_skip()
    login, env = _codex_home(tmp_path)
    with confined(get_preset("codex"), _paths(tmp_path), "/usr/bin/true", ["/usr/bin/true"], env,
                  "/usr/bin/bwrap") as jail:
        assert jail.jail is not None and jail.jail.user == JAIL_UID
        (home,) = [b.source for b in jail.jail.binds if b.target == HOME_INSIDE]
        copy = Path(home, ".codex", "auth.json")
        assert copy.read_text() == '{"token": "old"}' and copy.stat().st_uid == JAIL_UID
        copy.write_text('{"token": "refreshed inside"}')
        login.write_text('{"token": "refreshed by another program"}')
    assert login.read_text() == '{"token": "refreshed by another program"}'
    err = capsys.readouterr().err
    assert f"spar: warning: the reviewer refreshed its login, but {login} changed meanwhile: kept" in err


@pytest.mark.parametrize("link", ["file", "folder"])
def test_a_login_copy_the_reviewer_made_a_link_is_never_followed_back(tmp_path, link):
    """The copy is the jail's user's: a link it leaves there (to a file of root's, which
    Spar, root, could read) is not a refreshed login."""
    _root_jail_or_skip()
    login, env = _codex_home(tmp_path)
    secret = tmp_path / "secret" / "auth.json"
    secret.parent.mkdir(mode=0o700)
    secret.write_text('{"host": "secret"}')
    secret.chmod(0o600)
    with confined(get_preset("codex"), _paths(tmp_path), "/usr/bin/true", ["/usr/bin/true"], env,
                  "/usr/bin/bwrap") as jail:
        assert jail.jail is not None
        (home,) = [b.source for b in jail.jail.binds if b.target == HOME_INSIDE]
        if link == "file":
            os.unlink(os.path.join(home, ".codex", "auth.json"))
            os.symlink(secret, os.path.join(home, ".codex", "auth.json"))
        else:
            shutil.rmtree(os.path.join(home, ".codex"))
            os.symlink(secret.parent, os.path.join(home, ".codex"))
    assert login.read_text() == '{"token": "old"}'


@pytest.mark.parametrize("codex_home", ["missing", None], ids=["CODEX_HOME-without-folder", "no-CODEX_HOME"])
def test_codex_home_folder_exists_in_the_scratch_home_when_the_user_has_none(tmp_path, codex_home):
    # codex 0.171.0 stops at once when CODEX_HOME does not exist ("CODEX_HOME points to …,
    # but that path does not exist"): a user with an API key and no ~/.codex has no files to copy
    env = {"HOME": str(tmp_path / "home"), "PATH": "/usr/bin"}
    if codex_home:
        env["CODEX_HOME"] = str(tmp_path / codex_home)
    with confined(get_preset("codex"), _paths(tmp_path), "/usr/bin/true", ["/usr/bin/true"], env,
                  "/usr/bin/bwrap") as jail:
        assert jail.jail is not None
        (home,) = [b.source for b in jail.jail.binds if b.target == HOME_INSIDE]
        assert os.path.isdir(os.path.join(home, ".codex"))


def test_no_sandbox_changes_nothing(tmp_path):
    env = {"HOME": "/h", "PATH": "/usr/bin"}
    with confined(get_preset("claude"), _paths(tmp_path), "/usr/bin/true", ["x"], env, None) as jail:
        assert jail.jail is None and jail.argv(["x"]) == ["x"] and jail.env == env


def test_jail_argv_puts_private_folders_before_binds_and_links_last():
    argv = jail_argv(Jail("/usr/bin/bwrap", cwd="/w", private=("/tmp",), binds=(), links=(("t", "/tmp/l"),)),
                     ["prog"])
    last_link = len(argv) - 1 - argv[::-1].index("--symlink")  # the system's /bin links come first
    assert argv.index("--tmpfs") < last_link < argv.index("--chdir") and argv[last_link + 1:last_link + 3] == [
        "t", "/tmp/l"]
    assert argv[-2:] == ["--", "prog"] and argv[argv.index("--chdir") + 1] == "/w"


def _doctor_sandbox(s) -> dict:
    """spar doctor's one sandbox check, as its JSON gives it."""
    (check,) = [c for c in json.loads(s.spar("doctor", "--format", "json").stdout)["checks"] if c["check"] == "sandbox"]
    return check


@pytest.mark.slow
def test_required_refuses_the_round_before_it_is_counted_and_doctor_says_why(tmp_path):
    s = make_setup(tmp_path)
    s.configure([s.answer_reviewer("house", result(findings=[]))], sandbox="required")
    s.env["PATH"] = os.pathsep.join([_bin(tmp_path, FAILING_BWRAP), s.env["PATH"]])
    proc = s.run()
    stderr = proc.stderr.decode()
    assert proc.returncode == 65, stderr
    assert 'no kernel sandbox for the reviewers' in stderr and "No permissions to create a new namespace" in stderr
    assert not (s.repo / "reviews").exists()  # nothing written, nothing counted
    check = _doctor_sandbox(s)
    assert check["status"] == "problem" and "No permissions" in check["detail"]
    s.configure([s.answer_reviewer("house", result(findings=[]))], sandbox="auto")
    proc = s.run()
    assert proc.returncode == 0, proc.stderr.decode()
    assert "spar: warning: no kernel sandbox for the reviewers" in proc.stderr.decode()
    rj = json.loads((s.repo / "reviews" / "r1" / "round.json").read_text())
    assert rj["sandbox"]["kind"] is None and "No permissions" in rj["sandbox"]["why"]



def test_under_the_home_a_jail_shows_the_npm_package_its_dependencies_and_node_alone(tmp_path):
    """codex installed with an nvm node: its package, the packages it depends on (through
    another, optional ones too) and the node binary; not the rest of node_modules or ~/.nvm."""
    paths = _paths(tmp_path)
    home = tmp_path / "home"
    prefix = home / ".nvm" / "versions" / "node" / "v22.1.0"
    modules = prefix / "lib" / "node_modules"
    for name, deps in (("@openai/codex", {"optionalDependencies": {"@openai/codex-linux-x64": "1"}}),
                       ("@openai/codex-linux-x64", {"dependencies": {"helper": "1", "../escape": "1"}}),
                       ("helper", {}), ("unrelated", {})):
        (modules / name).mkdir(parents=True)
        (modules / name / "package.json").write_text(json.dumps({"name": name, **deps}))
    (modules / "@openai/codex/bin").mkdir()
    (modules / "@openai/codex/bin/codex.js").write_text("#!/usr/bin/env node\n")
    (prefix / "bin").mkdir()
    (prefix / "bin" / "node").write_text("binary")
    (prefix / "bin" / "node").chmod(0o755)
    (prefix / "bin" / "codex").symlink_to("../lib/node_modules/@openai/codex/bin/codex.js")
    exe = str(prefix / "bin" / "codex")
    env = {"HOME": str(home), "PATH": str(prefix / "bin")}
    with confined(get_preset("codex"), paths, exe, [exe], env, "/usr/bin/bwrap") as jail:
        shown = _shown(jail.argv([exe]))
    under_home = sorted(t for t in shown if t.startswith(str(home)))
    assert under_home == sorted([str(modules / "@openai/codex"), str(modules / "@openai/codex-linux-x64"),
                                 str(modules / "helper"), str(prefix / "bin" / "node")])


NO_NETNS_BWRAP = """#!/bin/sh
for a in "$@"; do
  if [ "$a" = "--unshare-net" ]; then
    echo "bwrap: loopback: Failed RTM_NEWADDR: Operation not permitted" >&2
    exit 1
  fi
done
exec REAL "$@"
"""


@pytest.mark.slow
def test_without_a_network_namespace_auto_says_why_and_required_refuses(tmp_path):
    real = choose_sandbox("auto", os.environ.get("PATH")).bwrap
    if real is None:
        pytest.skip("bwrap cannot make a sandbox here (.ci/run installs bubblewrap)")
    s = make_setup(tmp_path)
    s.configure([s.answer_reviewer("house", result(findings=[]))], sandbox="required")
    s.env["PATH"] = os.pathsep.join([_bin(tmp_path, NO_NETNS_BWRAP.replace("REAL", real)), s.env["PATH"]])
    proc = s.run()
    stderr = proc.stderr.decode()
    assert proc.returncode == 65, stderr
    assert "no network namespace for the reviewers' sandbox" in stderr and "RTM_NEWADDR" in stderr
    assert not (s.repo / "reviews").exists()  # nothing written, nothing counted
    check = _doctor_sandbox(s)
    assert check["status"] == "problem" and "RTM_NEWADDR" in check["detail"]
    s.configure([s.answer_reviewer("house", result(findings=[]))], sandbox="auto")
    proc = s.run()
    assert proc.returncode == 0, proc.stderr.decode()
    assert "spar: warning: the reviewers' sandbox keeps the host's network" in proc.stderr.decode()
    rj = json.loads((s.repo / "reviews" / "r1" / "round.json").read_text())
    assert rj["sandbox"]["kind"] == "bwrap" and rj["sandbox"]["network"] == "host"
    assert "RTM_NEWADDR" in rj["sandbox"]["network_why"]
    check = _doctor_sandbox(s)
    assert check["status"] == "warning" and "host's network" in check["detail"] and "RTM_NEWADDR" in check["detail"]


def test_doctor_says_the_network_is_limited_where_it_is(tmp_path):
    choice = choose_sandbox("auto", os.environ.get("PATH"))
    if not choice.egress:
        pytest.skip("bwrap cannot make a jail with a network namespace here")
    check, _ = sandbox_check("auto", {"PATH": os.environ.get("PATH", "")})
    assert check.status == "ok" and "network of its own" in check.detail and "allow_hosts" in check.detail


@pytest.mark.slow
def test_a_round_of_native_reviewers_records_no_sandbox(tmp_path):
    """A `native` reviewer is the host agent answering outside Spar: a round of only those
    ran nothing in a sandbox, so round.json says none was used (and why), whatever bwrap
    could do here."""
    s = make_setup(tmp_path)
    s.configure([{"name": "native", "preset": "native"}])
    proc = s.run()
    assert proc.returncode == 1, proc.stderr.decode()  # awaiting_record: the host agent answers later
    rj = json.loads((s.repo / "reviews" / "r1" / "round.json").read_text())
    assert rj["sandbox"] == {"kind": None, "why": "no reviewer of this round runs a program (native: the host agent "
                                                  "answers)"}


class _Alarm(Exception):
    pass


def test_a_probe_cut_short_by_its_callers_deadline_is_ended_with_its_children(tmp_path):
    """spar hook probes the sandbox under its own alarm: when the alarm lands while the probe
    runs, the probe's whole process group ends before the exception goes on."""
    import signal

    from spar.proc import sandbox
    from tests.proctools import wait_for
    pids = tmp_path / "pids"
    script = f"sleep 300 & echo $$ $! > {pids}.tmp && mv {pids}.tmp {pids}; wait"

    def ring(signum, frame):
        if pids.exists():  # the probe's children are there: the deadline lands in its wait
            raise _Alarm

    previous = signal.signal(signal.SIGALRM, ring)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.2, 0.2)  # again until it lands inside the wait
        with pytest.raises(_Alarm):
            sandbox._run_probe("sh", ["sh", "-c", script])
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert wait_for(pids.exists)
    shell, sleeper = (int(p) for p in pids.read_text().split())

    def ended(pid: int) -> bool:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        return Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"
    assert wait_for(lambda: ended(shell) and ended(sleeper))
