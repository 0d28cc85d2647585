"""The CLI surface: help, version, exit codes, never exit 2 (issue 2 items 1 and 2)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from spar import __version__, cli

COMMANDS = ["run", "record", "triage", "extend", "waive", "gate", "cap-report", "config"]


def _spar(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "spar", *args], capture_output=True, text=True, cwd=cwd, timeout=60)


def test_help_lists_every_command():
    proc = _spar("--help")
    assert proc.returncode == 0
    for name in COMMANDS:
        assert f"  {name} " in proc.stdout


def test_version():
    proc = _spar("--version")
    assert (proc.returncode, proc.stdout.strip()) == (0, f"spar {__version__}")


@pytest.mark.parametrize("name", COMMANDS)
def test_each_command_has_help(name, capsys):
    assert cli.main([name, "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: spar {name}")


@pytest.mark.parametrize("name", COMMANDS)
def test_unknown_option_is_64_never_2(name, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert cli.main([name, "--no-such-option"]) == 64
    err = capsys.readouterr().err
    assert err.startswith("spar: ") and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("argv", [[], ["--bogus"], ["bogus"], ["run"], ["gate"], ["triage", "r"],
                                  ["extend", "s", "--stage"], ["cap-report", "s", "--format", "yaml"],
                                  ["config", "--format", "xml"]])
def test_usage_errors_exit_64(argv, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert cli.main(argv) == 64
    assert capsys.readouterr().err.startswith(("spar: ", "usage: spar"))


@pytest.mark.parametrize(("typed", "meant"), [("rn", "run"), ("gat", "gate"), ("cap_report", "cap-report"),
                                               ("trage", "triage")])
def test_a_mistyped_command_is_told_the_close_one(typed, meant, capsys):
    """Issue 22 point 8: `spar rn` is a usage error that says "did you mean `spar run`?"."""
    assert cli.main([typed]) == 64
    assert f"did you mean `spar {meant}`?" in capsys.readouterr().err


def test_a_command_like_none_gets_no_guess(capsys):
    """Issue 22 point 8: a word close to no command gets no guess, only the pointer to --help."""
    assert cli.main(["zzz"]) == 64
    err = capsys.readouterr().err
    assert "did you mean" not in err and "see spar --help" in err


def test_command_without_entry_point_is_70(monkeypatch, capsys):
    # a command whose module has no main() yet must never look like success
    monkeypatch.setitem(cli.COMMANDS, "gate", ("__init__", "placeholder"))
    assert cli.main(["gate"]) == 70
    assert "spar: internal error: AttributeError" in capsys.readouterr().err


def test_unexpected_exception_is_70(monkeypatch, capsys):
    import spar.commands.config as config_cmd

    def boom(argv):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(config_cmd, "main", boom)
    assert cli.main(["config"]) == 70
    assert "spar: internal error: RuntimeError: disk on fire" in capsys.readouterr().err


def test_run_and_config_share_the_selection_options(capsys):
    """`spar config` shows what `spar run` would use, so it reads the same options alike."""

    def option_help(command: str) -> list[str]:
        assert cli.main([command, "--help"]) == 0
        lines = capsys.readouterr().out.splitlines()
        return [line.strip() for line in lines
                if line.strip().startswith(("--reviewers", "--model", "--effort", "--check-path"))]

    shown = option_help("run")
    assert len(shown) == 4
    assert option_help("config") == shown


def test_help_keeps_the_epilog_lines(capsys):
    assert cli.main(["gate", "--help"]) == 0
    out = capsys.readouterr().out
    assert "\nBlocked reasons, all that apply, in this order: an unreadable, unfinished,\n" in out


def test_entry_leaves_with_mains_code(monkeypatch, capsys):
    """`spar` and `python -m spar` run `main` and exit with its code."""
    monkeypatch.setattr(sys, "argv", ["spar", "--version"])
    with pytest.raises(SystemExit) as left:
        cli.entry()
    assert left.value.code == 0
    monkeypatch.setattr(sys, "argv", ["spar", "no-such-command"])
    with pytest.raises(SystemExit) as left:
        cli.entry()
    out = capsys.readouterr()
    assert left.value.code == 64 and out.out.startswith("spar ") and "no-such-command" in out.err


def test_an_interruption_is_mapped_once_to_its_signals_exit_code(monkeypatch, capsys):
    import signal

    import spar.commands.config as config_cmd
    from spar.errors import Interrupted

    def stopped(argv):
        raise Interrupted(signal.SIGTERM, "every reviewer was stopped")

    monkeypatch.setattr(config_cmd, "main", stopped)
    assert cli.main(["config"]) == 143
    assert capsys.readouterr().err == "spar: interrupted by SIGTERM: every reviewer was stopped\n"


def test_a_signal_while_working_raises_interrupted_saying_what_it_left():
    """The signal is seen by the watcher of work_until_signal: the work is cancelled and
    Interrupted carries the signal, its exit code and what the caller said it leaves."""
    import os
    import signal

    import anyio

    from spar.errors import Interrupted
    from spar.round.interrupt import work_until_signal

    cancelled = []

    async def work():
        os.kill(os.getpid(), signal.SIGINT)
        try:
            with anyio.fail_after(60):  # a signal never seen fails the test instead of hanging it
                await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            cancelled.append(True)
            raise

    # a test worker may have SIGINT ignored, which the watcher leaves ignored: heard here
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(Interrupted) as caught:
            work_until_signal(work, "asyncio", "nothing was written")
    finally:
        signal.signal(signal.SIGINT, before)
    assert cancelled == [True]
    assert (caught.value.signum, caught.value.exit_code) == (signal.SIGINT, 130)
    assert str(caught.value) == "interrupted by SIGINT: nothing was written"

    async def quick():
        return "done"

    assert work_until_signal(quick, "asyncio", "unused") == "done"


@pytest.mark.parametrize("command", ["init", "doctor", "config"])
def test_a_start_folder_that_is_empty_missing_or_a_file_is_a_usage_error(command, tmp_path, monkeypatch, capsys):
    """`-C DIR` names the folder to work from: an empty one was read as the current folder
    (init wrote there and exited 0); a missing one or a file is named as such. Nothing is written."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SPAR_CONFIG", str(tmp_path / "user.toml"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "file").write_text("")
    for value, says in (("", "-C needs a folder (it is empty)"), (str(tmp_path / "nonexistent"), "does not exist"),
                        (str(tmp_path / "file"), "is not a folder")):
        assert cli.main([command, "-C", value]) == 64
        err = capsys.readouterr().err
        assert err.startswith(f"spar: {command}: -C ") and says in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]
