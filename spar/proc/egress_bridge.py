"""Inside a jail with a network of its own: listen on 127.0.0.1:PORT, carry each connection
to the egress proxy's Unix socket (bound into the jail), then become the reviewer's program.

    python3 -I -S egress_bridge.py SOCKET PORT -- PROGRAM ARGS...

Run by the system's python3 (standard library only, no Spar import: this file is bound into
the jail alone). The port listens before the program starts; the bridge runs in a child
process and ends with the jail's PID namespace when the program (the namespace's first
process) ends. At most MAX_OPEN connections are carried at once.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import threading

MAX_OPEN = 64
CHUNK = 65536


def _pipe(source: socket.socket, sink: socket.socket) -> None:
    try:
        while True:
            data = source.recv(CHUNK)
            if not data:
                break
            sink.sendall(data)
    except OSError:
        pass
    with contextlib.suppress(OSError):
        sink.shutdown(socket.SHUT_WR)


def _carry(client: socket.socket, path: str, slots: threading.BoundedSemaphore) -> None:
    try:
        upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            upstream.connect(path)
        except OSError:
            upstream.close()
            return
        back = threading.Thread(target=_pipe, args=(upstream, client), daemon=True)
        back.start()
        _pipe(client, upstream)
        back.join()
        upstream.close()
    finally:
        client.close()
        slots.release()


def _serve(listener: socket.socket, path: str) -> None:
    slots = threading.BoundedSemaphore(MAX_OPEN)
    while True:
        client, _ = listener.accept()
        if not slots.acquire(blocking=False):
            client.close()
            continue
        threading.Thread(target=_carry, args=(client, path, slots), daemon=True).start()


def main(argv: list[str]) -> int:
    if len(argv) < 4 or argv[2] != "--":
        sys.stderr.write("usage: egress_bridge.py SOCKET PORT -- PROGRAM ARGS...\n")
        return 2
    path, port, program = argv[0], int(argv[1]), argv[3:]
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(64)
    if os.fork() == 0:
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        try:
            _serve(listener, path)
        finally:
            os._exit(0)
    listener.close()
    try:
        os.execvp(program[0], program)
    except OSError as exc:
        sys.stderr.write(f"spar egress bridge: cannot start {program[0]}: {exc.strerror or exc}\n")
    return 127


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
