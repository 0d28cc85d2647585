"""A loopback HTTP forward proxy for the openai-compatible client's tests: CONNECT tunnels
(an https endpoint) and absolute-form requests (an http one), each relayed byte for byte to
a loopback target (it resolves the names it is given itself, as a proxy resolves the
endpoint's name in the client's stead); it keeps each request line and the Proxy-Authorization it was given,
and answers 407 without the credentials it requires."""

from __future__ import annotations

import contextlib
import socket
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.loopserver import LoopbackServer


def _pipe(source: socket.socket, sink: socket.socket) -> None:
    try:
        while chunk := source.recv(65536):
            sink.sendall(chunk)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)


def _relay(client: socket.socket, upstream: socket.socket) -> None:
    back = threading.Thread(target=_pipe, args=(upstream, client), daemon=True)
    back.start()
    _pipe(client, upstream)
    back.join()


class FakeProxy(LoopbackServer):
    """`with FakeProxy() as proxy:` listens on 127.0.0.1; `proxy.url` is http://127.0.0.1:PORT."""

    def __init__(self, require: str | None = None, names: dict[str, str] | None = None) -> None:
        self.require = require  # the Proxy-Authorization value it wants, None for none
        self.names = names or {}  # what it resolves itself (a test's endpoint name -> 127.0.0.1)
        self.lines: list[str] = []  # every request line, in order
        self.authorizations: list[str | None] = []
        super().__init__(self._handler())

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _allowed(self) -> bool:
                given = self.headers.get("Proxy-Authorization")
                proxy.lines.append(self.requestline)
                proxy.authorizations.append(given)
                if proxy.require is None or given == proxy.require:
                    return True
                self.send_response(407)
                self.send_header("Proxy-Authenticate", 'Basic realm="test"')
                self.send_header("Content-Length", "0")
                self.end_headers()
                return False

            def do_CONNECT(self) -> None:
                if not self._allowed():
                    return
                host, _, port = self.path.rpartition(":")
                upstream = socket.create_connection((proxy.names.get(host, host), int(port)))
                self.send_response(200, "Connection established")
                self.end_headers()
                self.wfile.flush()
                _relay(self.connection, upstream)
                upstream.close()
                self.close_connection = True

            def _forward(self) -> None:
                if not self._allowed():
                    return
                url = urllib.parse.urlsplit(self.path)
                host = url.hostname or ""
                upstream = socket.create_connection((proxy.names.get(host, host), url.port or 80))
                target = (url.path or "/") + (f"?{url.query}" if url.query else "")
                head = [f"{self.command} {target} {self.request_version}"]
                head += [f"{k}: {v}" for k, v in self.headers.items()
                         if k.lower() not in ("proxy-authorization", "connection")]
                head += ["Connection: close", "", ""]
                upstream.sendall("\r\n".join(head).encode("latin-1"))
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    upstream.sendall(self.rfile.read(length))
                _pipe(upstream, self.connection)
                upstream.close()
                self.close_connection = True

            do_GET = do_POST = _forward

        return Handler
