"""argparse that never exits 2: usage problems become UsageError (exit 64)."""

from __future__ import annotations

import argparse
import difflib
import os
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from spar.errors import UsageError, quote


class Parser(argparse.ArgumentParser):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:  # argparse would print usage and exit 2
        raise UsageError(f"{self.prog.removeprefix('spar ')}: {message}")

    def parse_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                   namespace: argparse.Namespace | None = None) -> argparse.Namespace:
        """argparse's, but a misspelt option is named first: argparse reports a missing
        required option (`--stage`) before an unknown one (`--stag`), which hides the typo."""
        try:
            return super().parse_args(args, namespace)
        except UsageError:
            unknown = self.unknown_options(sys.argv[1:] if args is None else list(args))
            if not unknown:
                raise
            self.error(f"unrecognized arguments: {' '.join(unknown)}{self.suggestion(unknown[0])}")

    def unknown_options(self, args: list[str]) -> list[str]:
        """The arguments argparse takes for options it does not know (required ones not asked for)."""
        required = [action for action in self._actions if action.required]
        for action in required:
            action.required = False
        try:
            _namespace, extras = super().parse_known_args(args)
        except UsageError:
            return []
        finally:
            for action in required:
                action.required = True
        return [arg for arg in extras if arg.startswith("-") and arg != "-"]

    def suggestion(self, option: str) -> str:
        """" (did you mean --stage?)" for the closest known option, or ""."""
        name = option.split("=", 1)[0]
        close = difflib.get_close_matches(name, [o for o in self._option_string_actions if o.startswith("--")], n=1)
        return f" (did you mean {close[0]}?)" if close else ""


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


def start_folder(command: str, directory: str | None) -> Path:
    """`-C DIR`: the folder a command works as if started in (the current one without -C);
    an empty, missing or non-folder DIR is a usage error (Path("") would be the current folder)."""
    if directory is None:
        return Path.cwd()
    if not directory:
        raise UsageError(f"{command}: -C needs a folder (it is empty)")
    if not os.path.isdir(directory):
        why = "is not a folder" if os.path.lexists(directory) else "does not exist"
        raise UsageError(f"{command}: -C {quote(directory)} {why}")
    return Path(directory)
