"""argparse that never exits 2: usage problems become UsageError (exit 64)."""

from __future__ import annotations

import argparse
import shutil
from typing import Any, NoReturn

from spar.errors import UsageError


class Parser(argparse.ArgumentParser):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:  # argparse would print usage and exit 2
        raise UsageError(f"{self.prog.removeprefix('spar ')}: {message}")


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """argparse's help formatter, keeping the description's line breaks."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                 width: int | None = None) -> None:
        super().__init__(prog, indent_increment, max_help_position,
                         shutil.get_terminal_size().columns - 2 if width is None else width)


def command_parser(name: str, description: str, epilog: str | None = None) -> Parser:
    """The parser of `spar NAME`; the description and epilog keep their line breaks."""
    return Parser(prog=f"spar {name}", description=description, epilog=epilog, formatter_class=_Formatter)


# options that take a value, added by add_selection_options
SELECTION_VALUE_OPTIONS = ("--reviewers", "--model", "--effort", "--check-path")


def add_selection_options(p: argparse.ArgumentParser) -> None:
    """The run arguments that change the applied configuration (G25), shared by
    `spar run` and `spar config` so both read them alike."""
    p.add_argument("--reviewers", metavar="LIST", help="comma-separated reviewer names for this run")
    p.add_argument("--model", dest="models", action="append", default=[], metavar="NAME=MODEL",
                   help="model for one reviewer whose configuration writes none; repeatable")
    p.add_argument("--effort", dest="efforts", action="append", default=[], metavar="NAME=EFFORT",
                   help="effort for one claude/codex reviewer; repeatable")
    p.add_argument("--check-path", dest="check_paths", action="append", default=[], metavar="GLOB",
                   help="where checks (tests) live, added to the configured ones; repeatable")
