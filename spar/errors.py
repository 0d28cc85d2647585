"""Errors that carry their exit code.

Only `spar.cli` turns these into exit codes and stderr lines; everything else
raises. Exit codes: 0 ok, 1 recorded-but-not-clean (run) / blocked (gate),
64 usage, 65 refused or configuration error (nothing written), 70 internal
error or a write that may have been applied, 128 + N ended by signal N.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_NOT_CLEAN = 1
EXIT_USAGE = 64
EXIT_REFUSED = 65
EXIT_INTERNAL = 70
EXIT_SIGNAL = 128  # plus the signal's number: 130 SIGINT, 143 SIGTERM
EXIT_NOT_STARTED = 127  # a reviewer the guard could not start (as a shell reports a command it cannot run)


class SparError(Exception):
    """Base class: `str(err)` is the one-line message (without `spar: `)."""

    exit_code = EXIT_INTERNAL

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class UsageError(SparError):
    """Bad command line shape: unknown option, missing value, bad `--model` form."""

    exit_code = EXIT_USAGE


class Refused(SparError):
    """Input is well formed but not acceptable; nothing was written."""

    exit_code = EXIT_REFUSED


class ConfigError(Refused):
    """A configuration problem, reported as `<file>:<line>: <message>`."""

    def __init__(self, file: str, line: int | None, message: str):
        self.file = str(file)
        self.line = line
        self.detail = message
        where = f"{self.file}:{line}" if line is not None else self.file
        super().__init__(f"{where}: {message}")


class RecordError(Refused):
    """A record read back is unreadable (G32). Readers that must refuse raise this;
    `spar gate` turns it into a blocked reason instead."""


class WriteFailed(SparError):
    """A write failed part-way or may have been applied (exit 70)."""

    exit_code = EXIT_INTERNAL


class Terminated(BaseException):
    """SIGTERM arrived while Spar waited on a program of its own (`spar.git`), raised there so
    that the program is ended on the way out; `spar.cli` exits 143 for it. A BaseException,
    as KeyboardInterrupt is: no `except Exception` may swallow it."""

    signum = 15  # SIGTERM


def exit_for_signal(signum: int) -> int:
    """The shell's exit code for a process ended by signal `signum`."""
    return EXIT_SIGNAL + signum


_GO_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r", "\a": "\\a", "\b": "\\b",
               "\f": "\\f", "\v": "\\v"}


def quote(value: str) -> str:
    """Go-style %q quoting, used wherever the contract says values are shown with %q."""
    out = ['"']
    for ch in value:
        code = ord(ch)
        if ch in _GO_ESCAPES:
            out.append(_GO_ESCAPES[ch])
        elif 0xDC80 <= code <= 0xDCFF:
            # surrogateescape byte from undecodable input: Go prints invalid bytes as \xNN
            out.append(f"\\x{code - 0xDC00:02x}")
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\x{code:02x}")
        elif not ch.isprintable():
            out.append(f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)
