"""What Spar and its reviewer guard (`spar.proc.guard`) say to each other, defined once.

Two channels:

- **Requests**, Spar to the guard, over the control socket: one per reviewer, a 4-byte
  big-endian length then `marshal((argv, cwd, env))`, sent together with
  FDS_PER_REQUEST descriptors (the reviewer's stdin, stdout, stderr and its status pipe).
- **Status lines**, a keeper to Spar, over that reviewer's status pipe: one ASCII line per
  message, a letter naming its kind followed by a decimal number (`Kind`). The pipe's EOF
  says the keeper is gone.

Standard library only: the guard imports it, and the guard imports nothing that is not
(`tests/test_architecture.py`).
"""

from __future__ import annotations

import enum
import marshal
import struct
from typing import NamedTuple

HEADER = struct.Struct(">I")  # the length of the marshalled request that follows
FDS_PER_REQUEST = 4  # stdin, stdout, stderr, status pipe


class Request(NamedTuple):
    """One reviewer to start: its command line, folder and whole environment."""

    argv: list[str]
    cwd: str
    env: dict[str, str]


def encode_request(request: Request) -> bytes:
    payload = marshal.dumps((list(request.argv), request.cwd, dict(request.env)))
    return HEADER.pack(len(payload)) + payload


def take_requests(buf: bytearray) -> list[Request]:
    """Remove every complete request from the front of `buf` (bytes read from the control
    socket so far) and return them in order; a partial one stays for the next read."""
    found: list[Request] = []
    while len(buf) >= HEADER.size:
        size = HEADER.unpack_from(buf)[0]
        if len(buf) < HEADER.size + size:
            break
        argv, cwd, env = marshal.loads(bytes(buf[HEADER.size:HEADER.size + size]))
        del buf[:HEADER.size + size]
        found.append(Request(argv, cwd, env))
    return found


class Kind(enum.Enum):
    """The kinds of status line a keeper writes, with the letter that starts the line."""

    STARTED = "P"  # the keeper's pid: it leads the reviewer's process group
    NOT_STARTED = "N"  # the errno of the keeper's failed start of the program (EXITED 127 follows)
    EXITED = "X"  # the reviewer's exit code (negative: the signal that ended it), the keeper's last word


class Status(NamedTuple):
    kind: Kind
    value: int


def encode_status(kind: Kind, value: int) -> bytes:
    return f"{kind.value}{value}\n".encode("ascii")


def decode_status(line: bytes) -> Status | None:
    """The message of one line (without its newline); None when it is not one."""
    text = line.decode("ascii", errors="replace")
    try:
        kind = Kind(text[:1])
        return Status(kind, int(text[1:]))
    except ValueError:
        return None


class StatusReader:
    """Bytes read from a status pipe in, whole messages out (a line may come in pieces)."""

    def __init__(self) -> None:
        self._pending = b""

    def feed(self, chunk: bytes) -> list[Status]:
        lines = (self._pending + chunk).split(b"\n")
        self._pending = lines.pop()
        return [status for status in map(decode_status, lines) if status is not None]


__all__ = ["FDS_PER_REQUEST", "HEADER", "Kind", "Request", "Status", "StatusReader", "decode_status",
           "encode_request", "encode_status", "take_requests"]
