"""argparse that never exits 2: usage problems become UsageError (exit 64)."""

from __future__ import annotations

import argparse

from spar.errors import UsageError


class Parser(argparse.ArgumentParser):
    def __init__(self, *args, **kwargs):
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str):  # argparse would print usage and exit 2
        raise UsageError(f"{self.prog.removeprefix('spar ')}: {message}")


def command_parser(name: str, description: str) -> Parser:
    return Parser(prog=f"spar {name}", description=description)
