"""Command line entry point: the one place that maps errors to exit codes."""

from __future__ import annotations

import difflib
import importlib
import signal
import sys
import traceback
from typing import NoReturn

from spar import __version__
from spar.errors import EXIT_INTERNAL, EXIT_OK, EXIT_USAGE, SparError, Terminated, UsageError, exit_for_signal
from spar.textsafe import terminal_safe

# each command and its one-line summary, in help order; its module under spar.commands is the
# name with "_" for "-"
_SUMMARIES = """
init        write the user (and project) configuration and ignore the series folder
run         run one review round with every configured reviewer in parallel
record      record a result spar did not collect itself (native reviewer, transcript)
triage      give a finding a disposition (fixed, duplicate, rejected, deferred, answered)
extend      raise a stage's round cap for a series, with a cause
waive       accept a round without a required reviewer, with the user's words
verify      verify a recorded round's findings with reviewers of other vendors
gate        judge a list of rounds and write the review-gate/v1 file
hook        the review gate as a coding agent's stop hook (Claude Code, Codex, Cursor)
export      write findings as SARIF, GitLab Code Quality or reviewdog rdjsonl
report      write a self-contained HTML report of a series (timeline, chart, dispositions)
cap-report  summarize the caps, rounds and extensions of a series
doctor      say whether a round can run here (config, reviewer CLIs, git, series, Core)
config      print the applied configuration, its files and digest
"""
# command name -> (module under spar.commands, one-line summary)
COMMANDS: dict[str, tuple[str, str]] = {
    name: (name.replace("-", "_"), summary.strip())
    for name, summary in (line.split(" ", 1) for line in _SUMMARIES.strip().splitlines())
}

USAGE = "usage: spar [--version] [--help] <command> [<args>]"


def _help_text() -> str:
    lines = [USAGE, "", "Spar runs AI code reviewers in parallel and keeps auditable records.", "", "commands:"]
    for name, (_, summary) in COMMANDS.items():
        lines.append(f"  {name:<11} {summary}")
    lines += ["", "Run `spar <command> --help` for a command's options.",
              "Exit codes: 0 ok, 1 not clean (run), blocked (gate) or not ready (doctor), 64 usage,",
              "65 refused, 70 internal."]
    return "\n".join(lines)


def _dispatch(argv: list[str]) -> int:
    if not argv:
        print(_help_text(), file=sys.stderr)
        return EXIT_USAGE
    first = argv[0]
    if first in ("-h", "--help", "help"):
        print(_help_text())
        return EXIT_OK
    if first == "--version":
        print(f"spar {__version__}")
        return EXIT_OK
    if first.startswith("-"):
        raise UsageError(f"unknown option {first!r} (see spar --help)")
    if first not in COMMANDS:
        close = difflib.get_close_matches(first, COMMANDS, n=1)
        hint = f"did you mean `spar {close[0]}`? " if close else ""
        raise UsageError(f"unknown command {first!r} ({hint}see spar --help)")
    module_name, _ = COMMANDS[first]
    module = importlib.import_module(f"spar.commands.{module_name}")
    code: int = module.main(argv[1:])
    return code


def main(argv: list[str] | None = None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    try:
        return _dispatch(argv)
    except SystemExit as exc:  # argparse --help exits 0 through SystemExit
        code = exc.code
        return code if isinstance(code, int) else (EXIT_OK if code is None else EXIT_USAGE)
    except SparError as err:
        print(f"spar: {terminal_safe(err.message, multiline=True)}", file=sys.stderr)
        return err.exit_code
    except KeyboardInterrupt:
        print("spar: interrupted", file=sys.stderr)
        return exit_for_signal(signal.SIGINT)
    except Terminated as stop:
        print("spar: terminated (SIGTERM)", file=sys.stderr)
        return exit_for_signal(stop.signum)
    except BrokenPipeError:
        return EXIT_INTERNAL
    except Exception as exc:  # anything unexpected is an internal error, never a traceback-only exit 1
        traceback.print_exc(file=sys.stderr)
        print(f"spar: internal error: {type(exc).__name__}: {terminal_safe(str(exc), multiline=True)}", file=sys.stderr)
        return EXIT_INTERNAL


def entry() -> NoReturn:
    """`spar` and `python -m spar`."""
    sys.exit(main())


if __name__ == "__main__":
    entry()
