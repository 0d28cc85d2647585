"""What a reviewer inherits from `spar run`: environment (env_passthrough), file
descriptors, and what its output can do to the user's terminal."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys

import pytest

from spar.proc.environment import reviewer_env
from tests.runsetup import result

# A command reviewer that reports what it inherited (environment, open descriptors and what
# they are), writes terminal control sequences to stderr, then answers or fails.
PROBE = r'''
import json, os, re, sys
report, prompt, fail = sys.argv[1], sys.argv[2], sys.argv[3] == "fail"
fds = {}
for fd in os.listdir("/proc/self/fd"):
    try:
        fds[fd] = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        pass  # the listing's own descriptor, closed by now
with open(report, "w") as f:
    json.dump({"env": dict(os.environ), "fds": fds}, f)
sys.stderr.write("rate limit reached \x1b[2J\x1b]52;c;cHduZWQ=\x07\x9b31mCLEARED\x1b[0m\rspoof\n")
sys.stderr.flush()
if fail:
    sys.exit(3)
head = re.search(r"^- Head commit: `([0-9a-f]+)`", open(prompt).read(), re.M).group(1)
print(open(sys.argv[4]).read().replace("HEAD_COMMIT", head))
'''

pytestmark = pytest.mark.slow


def probe_reviewer(s, name: str, *, fail: bool = False) -> tuple[dict, object]:
    script = s.answers / "probe.py"
    script.write_text(PROBE, encoding="utf-8")
    answer = s.answers / f"{name}.json"
    answer.write_text(json.dumps(result(findings=[])), encoding="utf-8")
    report = s.answers / f"{name}.report.json"
    argv = [sys.executable, str(script), str(report), "{prompt}", "fail" if fail else "ok", str(answer)]
    return {"name": name, "preset": "command", "argv": argv}, report


@pytest.fixture
def s(tmp_path):
    from tests.runsetup import make_setup

    setup = make_setup(tmp_path)
    setup.env.update(CALLER_SECRET="do-not-leak", VENDOR_KEY="sk-vendor", CLAUDE_CODE_FLAG="1", LC_TIME="C")
    return setup


def _configure(s, reviewers, passthrough: list[str] | None) -> None:
    s.configure(reviewers, passthrough=passthrough)


def test_default_environment_is_closed(s):
    """No env_passthrough: the variables always passed and the network settings, nothing else
    (a command reviewer has no vendor variables)."""
    s.env.update(HTTPS_PROXY="http://127.0.0.1:9", no_proxy="localhost", NODE_EXTRA_CA_CERTS="/etc/ssl/x.pem",
                 OPENAI_API_KEY="sk-other-vendor", GITHUB_TOKEN="ghp_secret")
    reviewer, report = probe_reviewer(s, "probe")
    _configure(s, [reviewer], None)
    proc = s.run()
    assert proc.returncode == 0, proc.stderr.decode()
    env = json.loads(report.read_text())["env"]
    for key in ("HTTPS_PROXY", "no_proxy", "NODE_EXTRA_CA_CERTS", "PATH", "LC_TIME"):
        assert env[key] == s.env[key], key
    for key in ("CALLER_SECRET", "VENDOR_KEY", "SPAR_CONFIG", "OPENAI_API_KEY", "GITHUB_TOKEN", "CLAUDE_CODE_FLAG",
                "GIT_CONFIG_GLOBAL"):
        assert key not in env, key


def test_env_passthrough_withholds_what_is_not_listed(s):
    reviewer, report = probe_reviewer(s, "probe")
    _configure(s, [reviewer], ["VENDOR_KEY", "CLAUDE_CODE_*"])
    proc = s.run()
    assert proc.returncode == 0, proc.stderr.decode()
    env = json.loads(report.read_text())["env"]
    assert env["VENDOR_KEY"] == "sk-vendor" and env["CLAUDE_CODE_FLAG"] == "1"
    assert env["HOME"] == s.env["HOME"] and env["PATH"] == s.env["PATH"] and env["LC_TIME"] == "C"
    for key in ("CALLER_SECRET", "SPAR_CONFIG", "SPAR_ASYNC_BACKEND", "GIT_CONFIG_GLOBAL",
                "PYTHONDONTWRITEBYTECODE"):
        assert key not in env, key
    rj = json.loads((s.repo / "reviews" / "r1" / "round.json").read_text())
    assert rj["config"]["env_passthrough"] == ["VENDOR_KEY", "CLAUDE_CODE_*"]  # names, never values


def test_reviewer_env_rule():
    env = {"PATH": "/bin", "HOME": "/h", "LC_ALL": "C", "SPAR_CONFIG": "x", "AWS_SECRET": "s",
           "OPENAI_API_KEY": "k", "OPENAI_BASE_URL": "u", "OPENAIX": "no"}
    # not set: the network settings, never the rest
    assert reviewer_env({**env, "NO_PROXY": "x", "https_proxy": "p"}, None) == {
        "PATH": "/bin", "HOME": "/h", "LC_ALL": "C", "NO_PROXY": "x", "https_proxy": "p"}
    assert reviewer_env(env, []) == {"PATH": "/bin", "HOME": "/h", "LC_ALL": "C"}
    assert set(reviewer_env(env, ["OPENAI_*"])) == {"PATH", "HOME", "LC_ALL", "OPENAI_API_KEY", "OPENAI_BASE_URL"}
    # a preset's own vendor variables pass under any list, and only with it
    assert set(reviewer_env(env, [], ("OPENAI_*",))) == {"PATH", "HOME", "LC_ALL", "OPENAI_API_KEY", "OPENAI_BASE_URL"}
    assert set(reviewer_env(env, None, ("OPENAI_*",))) == {"PATH", "HOME", "LC_ALL", "OPENAI_API_KEY",
                                                           "OPENAI_BASE_URL"}


def test_each_cli_preset_names_its_vendor_variables():
    from spar.presets import get_preset

    assert get_preset("claude").vendor_env == ("ANTHROPIC_*", "CLAUDE_*")
    assert get_preset("codex").vendor_env == ("OPENAI_*", "CODEX_*")
    assert get_preset("agy").vendor_env == ("GEMINI_*", "GOOGLE_*")
    assert get_preset("command").vendor_env == () and get_preset("native").vendor_env == ()


def test_no_terminal_descriptor_reaches_a_reviewer(s):
    """spar runs on a terminal (a pty on stdin, stderr and an extra inherited descriptor):
    the reviewer gets only 0, 1, 2, each a pipe or /dev/null."""
    reviewer, report = probe_reviewer(s, "probe")
    _configure(s, [reviewer], None)
    leader, follower = pty.openpty()
    extra = os.dup(follower)
    os.set_inheritable(extra, True)
    try:
        proc = subprocess.run([sys.executable, "-m", "spar", "run", "--stage", "code", "--out", "reviews/r1"],
                              cwd=s.repo, env=s.env, stdin=follower, stdout=subprocess.PIPE, stderr=follower,
                              pass_fds=(extra,), timeout=120)
    finally:
        for fd in (extra, follower, leader):
            os.close(fd)
    assert proc.returncode == 0
    fds = json.loads(report.read_text())["fds"]
    assert set(fds) == {"0", "1", "2"}, fds
    for fd, target in fds.items():
        assert target == "/dev/null" or target.startswith("pipe:"), (fd, target)


def test_reviewer_control_sequences_never_reach_the_terminal(s):
    reviewer, _report = probe_reviewer(s, "probe", fail=True)
    _configure(s, [reviewer], None)
    proc = s.run()
    assert proc.returncode == 1
    err = proc.stderr.decode("utf-8", "replace")
    assert "CLEARED" in err  # the reason (last stderr line) is shown ...
    for raw in ("\x1b", "\x07", "\x9b", "\r"):
        assert raw not in err, repr(raw)  # ... escaped
    assert "\\e]52;c;cHduZWQ=\\a" in err


# A stand-in `claude` binary that writes the environment it got beside itself, then
# becomes the fake claude CLI (its file name, `claude`, selects the fake's scenario).
ENV_WRAPPER = '''#!{python}
import json, os, sys
with open(__file__ + ".env.json", "w") as f:
    json.dump(dict(os.environ), f)
os.execv({python!r}, [{python!r}, {fake!r}, *sys.argv[1:]])
'''


def test_env_passthrough_still_gives_each_cli_its_own_vendor_variables(s):
    """Under env_passthrough, a claude reviewer keeps ANTHROPIC_* and CLAUDE_* (its CLI needs
    them) without listing them; it never gets another vendor's (OPENAI_*), and a command
    reviewer gets no vendor's at all."""
    from tests.runsetup import FAKES

    wrapper = s.answers / "bin" / "claude"
    wrapper.parent.mkdir()
    wrapper.write_text(ENV_WRAPPER.format(python=sys.executable, fake=str(FAKES / "claude")), encoding="utf-8")
    wrapper.chmod(0o755)
    s.scenario({"claude": {"result": result(head=s.head, findings=[])}})
    s.env.update(ANTHROPIC_API_KEY="sk-ant", CLAUDE_CONFIG_DIR="/claude-config", OPENAI_API_KEY="sk-oai",
                 CODEX_HOME="/codex-home")
    probe, report = probe_reviewer(s, "probe")
    _configure(s, [{"name": "claude", "preset": "claude", "binary": str(wrapper)}, probe], ["SPAR_FAKE_SCENARIO"])
    proc = s.run()
    assert proc.returncode == 0, proc.stderr.decode()
    claude_env = json.loads((wrapper.parent / "claude.env.json").read_text())
    assert claude_env["ANTHROPIC_API_KEY"] == "sk-ant" and claude_env["CLAUDE_CONFIG_DIR"] == "/claude-config"
    assert claude_env["CLAUDE_CODE_FLAG"] == "1" and claude_env["HOME"] == s.env["HOME"]
    for key in ("OPENAI_API_KEY", "CODEX_HOME", "VENDOR_KEY", "CALLER_SECRET", "SPAR_CONFIG"):
        assert key not in claude_env, key
    probe_env = json.loads(report.read_text())["env"]
    for key in ("ANTHROPIC_API_KEY", "CLAUDE_CONFIG_DIR", "OPENAI_API_KEY", "CODEX_HOME", "CALLER_SECRET"):
        assert key not in probe_env, key
