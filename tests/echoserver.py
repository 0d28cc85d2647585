"""An echo server for the egress tests (no tests here): on 127.0.0.1 or a host abstract socket."""

from __future__ import annotations

import contextlib
import socket
import threading


class Echo:
    """A server on 127.0.0.1 (or, named, on a host abstract Unix socket) that answers every
    connection with what it reads, and counts connections and bytes."""

    def __init__(self, abstract: str | None = None) -> None:
        if abstract is None:
            self.sock = socket.create_server(("127.0.0.1", 0))
            self.port = self.sock.getsockname()[1]
        else:
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.sock.bind("\0" + abstract)
            self.sock.listen(8)
            self.port = 0
        self.accepted = 0
        self.received = 0
        threading.Thread(target=self._loop, daemon=True).start()

    def _loop(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            threading.Thread(target=self._echo, args=(conn,), daemon=True).start()

    def _echo(self, conn: socket.socket) -> None:
        with conn, contextlib.suppress(OSError):
            while data := conn.recv(65536):
                self.received += len(data)
                conn.sendall(data)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)  # wakes the accepting thread
        self.sock.close()
