"""The one way out of a jail that has a network of its own: an HTTP proxy on the host side.

A jail made with `--unshare-net` has only its own loopback. Its program reaches the outside
through this proxy alone: it listens on a Unix socket that is bound into the jail, where a
small bridge (`egress_bridge.py`, run by the system's python3 before the program) carries
each connection from a loopback port inside to it. It serves `CONNECT host:port` (TLS end to
end) and plain HTTP requests in absolute form (`GET http://host:port/path`).

Every request is decided by `refusal_reason`: the host must be on the jail's list (`Rule`); the
proxy resolves the name itself (nothing inside can) and refuses a name that leads to a
loopback, private, link-local, unspecified, multicast or otherwise non-public address,
unless the host is one the user configured as the program's service (a local model
server). It connects to the address it checked (a second lookup could answer otherwise).
A name the user's own proxy takes is not looked up here: that proxy resolves it, as it
would for the program outside a jail (an IP address is still checked).
A user's own proxy (`upstream`) is chained for every host it covers (never a loopback
host, nor what the user's no_proxy lists: those are reached directly, as outside a jail).

Bounded: open connections at once, connections in all, bytes in all, idle seconds per
connection, bytes of a request head. Every refusal is counted per host and port
(`refusals`). `close` ends the listener and every connection; the owner calls it on every
way out.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import re
import selectors
import socket
import threading
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple, cast

from spar.hostlist import host_listed, normal_host

BRIDGE_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "egress_bridge.py")
SYSTEM_PYTHON = ("/usr/bin/python3", "/bin/python3")  # the bridge's interpreter: under the jail's /usr
HEAD_LIMIT = 64 * 1024
NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
MAX_KINDS = 100  # refused hosts kept apart; the rest are counted together
OTHERS = "(other hosts)"
HOST_NAME = re.compile(r"[a-z0-9_.-]{1,253}|[0-9a-f:.]{2,45}")  # a name, or an IP address's characters
REFUSED_HEADER = "X-Spar-Egress: refused"

# (scheme, host, port) -> the user's proxy for it: (host, port, extra headers), or None
Upstream = Callable[[str, str, int], "tuple[str, int, dict[str, str]] | None"]
Resolver = Callable[[str, int], list[str]]


class Count(NamedTuple):
    """Connections to one host and port, and (refused) why."""

    host: str
    port: int
    times: int
    why: str = ""


@dataclass(frozen=True)
class Rule:
    """Where a jail may connect: `hosts` entries are `name`, `name:port`, `*.domain` (any
    name below it) or an IP address (`[v6]:port` with a port); `services` are the entries
    the user configured as the program's own service, which may lead to a local address."""

    hosts: tuple[str, ...] = ()
    services: tuple[str, ...] = ()


@dataclass(frozen=True)
class Limits:
    """The proxy's bounds for one jail."""

    connections: int = 32  # open at once
    total_connections: int = 4096
    total_bytes: int = 2 * 1024 ** 3  # both ways, all connections
    idle_seconds: float = 600.0  # a model may think long between two streamed bytes
    connect_seconds: float = 30.0


def address_problem(address: str) -> str | None:
    """Why a connection to `address` leaves no machine at all or reaches a local network
    (loopback, private, link-local such as 169.254.169.254, ...), or None for a public one."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return "not an IP address"
    if isinstance(ip, ipaddress.IPv6Address):  # an IPv4 address inside an IPv6 one is judged as itself
        if ip in NAT64:
            ip = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
        else:
            ip = ip.ipv4_mapped or ip.sixtofour or ip
    for kind, flag in (("loopback", ip.is_loopback), ("unspecified", ip.is_unspecified),
                       ("link-local", ip.is_link_local), ("multicast", ip.is_multicast),
                       ("private", ip.is_private), ("reserved", ip.is_reserved)):
        if flag:
            return f"a {kind} address"
    return None if ip.is_global else "not a public address"


def refusal_reason(host: str, port: int, addresses: list[str], rule: Rule) -> str | None:
    """None when `host:port`, resolved to `addresses`, may be reached under `rule`; else why not."""
    if not host_listed(host, port, rule.hosts):
        return "not on the reviewer's list of hosts"
    if host_listed(host, port, rule.services):
        return None  # the user's own service, a local server included
    if not addresses:
        return "no address"
    for address in addresses:
        problem = address_problem(address)
        if problem:
            return f"leads to {address}, {problem}"
    return None


def resolve(host: str, port: int) -> list[str]:
    """The addresses of `host` (an IP address is its own)."""
    try:
        return [str(ipaddress.ip_address(host))]
    except ValueError:
        pass
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def bridge_python() -> str | None:
    """The system python3 that runs the bridge inside a jail, or None."""
    return next((p for p in SYSTEM_PYTHON if os.access(p, os.X_OK)), None)


class _Refusal(Exception):
    def __init__(self, status: int, why: str) -> None:
        super().__init__(why)
        self.status = status
        self.why = why


@dataclass
class _Request:
    method: str
    scheme: str
    host: str
    port: int
    head: bytes  # what goes to the next hop (origin form, or absolute form to a chained proxy)
    rest: bytes  # bytes the client sent after its head
    target: str = ""  # an absolute-form request's URL
    addresses: list[str] = field(default_factory=list)  # what its host was checked as


@dataclass
class EgressProxy:
    """`start()` listens at `socket_path`; `close()` ends it all."""

    socket_path: str
    rule: Rule
    limits: Limits = field(default_factory=Limits)
    upstream: Upstream | None = None
    resolver: Resolver = resolve
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _refused: dict[tuple[str, int], tuple[int, str]] = field(default_factory=dict)
    _allowed: dict[tuple[str, int], int] = field(default_factory=dict)
    _open: set[socket.socket] = field(default_factory=set)
    _threads: list[threading.Thread] = field(default_factory=list)
    _listener: socket.socket | None = None
    _total: int = 0
    _active: int = 0
    _bytes: int = 0
    _closed: bool = False

    def start(self) -> None:
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            listener.bind(self.socket_path)
            listener.listen(64)
        except OSError:
            listener.close()
            raise
        self._listener = listener
        self._spawn(self._accept_loop)

    def __enter__(self) -> EgressProxy:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def refusals(self) -> list[Count]:
        """Every refused host and port: how often and why (the last reason), in first-seen order."""
        with self._lock:
            return [Count(h, p, c, w) for (h, p), (c, w) in self._refused.items()]

    def allowed(self) -> list[Count]:
        """Every host and port let through, and how often."""
        with self._lock:
            return [Count(h, p, c) for (h, p), c in self._allowed.items()]

    def close(self) -> None:
        with self._lock:
            self._closed = True
            listener, self._listener = self._listener, None
            sockets = list(self._open)
        if listener is not None:
            with contextlib.suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)
            listener.close()
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        deadline = time.monotonic() + self.limits.connect_seconds  # a lookup in progress cannot be stopped
        for thread in list(self._threads):
            thread.join(timeout=max(0.0, deadline - time.monotonic()))
        with contextlib.suppress(OSError):
            os.unlink(self.socket_path)

    def _spawn(self, target: Callable[..., None], *args: object) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True)
        with self._lock:
            self._threads = [t for t in self._threads if t.is_alive()]
            self._threads.append(thread)
        thread.start()

    def _track(self, sock: socket.socket) -> bool:
        with self._lock:
            if self._closed:
                return False
            self._open.add(sock)
            return True

    def _untrack(self, sock: socket.socket) -> None:
        with self._lock:
            self._open.discard(sock)
        sock.close()

    def _accept_loop(self) -> None:
        listener = self._listener
        while listener is not None:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            with self._lock:
                busy = self._active >= self.limits.connections or self._total >= self.limits.total_connections
                self._total += 1
                self._active += 0 if busy else 1
            if not busy and not self._track(client):
                with self._lock:
                    self._active -= 1
                busy = True
            if busy:
                _answer(client, 503, "too many connections through the egress proxy")
                client.close()
                continue
            self._spawn(self._serve, client)

    def _serve(self, client: socket.socket) -> None:
        try:
            self._tunnel(client)
        finally:
            self._untrack(client)  # whatever happened, the program's end is closed
            with self._lock:
                self._active -= 1

    def _tunnel(self, client: socket.socket) -> None:
        try:
            client.settimeout(self.limits.idle_seconds)
            request = _read_request(client)
            self._check(request)
            upstream = self._connect(request)
        except _Refusal as refusal:
            _answer(client, refusal.status, refusal.why)
            self._untrack(client)
            return
        except OSError:
            self._untrack(client)
            return
        try:
            if not self._track(upstream):
                return
            if request.method == "CONNECT":
                client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            else:
                upstream.sendall(request.head)
            if request.rest:
                upstream.sendall(request.rest)
            self._relay(client, upstream)
        except OSError:
            pass
        finally:
            self._untrack(upstream)
            self._untrack(client)

    def _check(self, request: _Request) -> None:
        """Raise _Refusal unless the request may go out; count either way."""
        why = self._verdict(request)
        key = (request.host, request.port)
        with self._lock:
            if why is not None:
                if key not in self._refused and len(self._refused) >= MAX_KINDS:
                    key, why = (OTHERS, 0), "refused"
                self._refused[key] = (self._refused.get(key, (0, ""))[0] + 1, why)
            else:
                self._allowed[key] = self._allowed.get(key, 0) + 1
        if why is not None:
            raise _Refusal(403, f"{request.host}:{request.port} is refused by Spar's egress rule: {why}")

    def _verdict(self, request: _Request) -> str | None:
        """`refusal_reason` for the request; its name resolved here unless the list alone settles it
        or the user's proxy takes it (that proxy resolves names, as it does outside a jail)."""
        host, port = request.host, request.port
        if not host_listed(host, port, self.rule.hosts) or host_listed(host, port, self.rule.services):
            return refusal_reason(host, port, [], self.rule)
        if not _is_address(host) and self._hop(request) is not None:
            return None
        try:
            request.addresses = [host] if _is_address(host) else self.resolver(host, port)
        except OSError:
            raise _Refusal(502, f"{host} cannot be resolved") from None
        return refusal_reason(host, port, request.addresses, self.rule)

    def _hop(self, request: _Request) -> tuple[str, int, dict[str, str]] | None:
        # as the program would outside a jail: the user's no_proxy and loopback hosts go direct
        return None if self.upstream is None else self.upstream(request.scheme, request.host, request.port)

    def _connect(self, request: _Request) -> socket.socket:
        """A connection to the request's next hop: the user's proxy, else the checked address."""
        hop = self._hop(request)
        if hop is None:
            address = (request.addresses or self.resolver(request.host, request.port))[0]
            return socket.create_connection((address, request.port), timeout=self.limits.connect_seconds)
        host, port, headers = hop
        sock = socket.create_connection((host, port), timeout=self.limits.connect_seconds)
        extra = "".join(f"{k}: {v}\r\n" for k, v in headers.items()).encode("latin-1")
        if request.method != "CONNECT":
            request.head = request.head.replace(b"\r\n\r\n", b"\r\n" + extra + b"\r\n", 1) if extra else request.head
            request.head = _absolute(request) + request.head.split(b"\r\n", 1)[1]
            return sock
        target = f"{request.host}:{request.port}".encode("ascii")
        sock.sendall(b"CONNECT " + target + b" HTTP/1.1\r\nHost: " + target + b"\r\n" + extra + b"\r\n")
        sock.settimeout(self.limits.connect_seconds)
        head, _ = _read_head(sock)
        if head.split(b"\r\n", 1)[0].split(b" ")[1:2] != [b"200"]:
            sock.close()
            raise _Refusal(502, "the chained proxy refused the tunnel")
        return sock

    def _relay(self, client: socket.socket, upstream: socket.socket) -> None:
        """Copy both ways until both ends close, the idle time passes or the byte budget ends."""
        peers = {client: upstream, upstream: client}
        open_reads = {client, upstream}
        with selectors.DefaultSelector() as sel:
            for sock in peers:
                sock.setblocking(False)
                sel.register(sock, selectors.EVENT_READ)
            while open_reads:
                ready = sel.select(self.limits.idle_seconds)
                if not ready:
                    return
                for key, _ in ready:
                    sock = cast(socket.socket, key.fileobj)
                    if not self._pass_on(sock, peers[sock]):
                        sel.unregister(sock)
                        open_reads.discard(sock)

    def _pass_on(self, source: socket.socket, sink: socket.socket) -> bool:
        try:
            data = source.recv(65536)
        except (BlockingIOError, InterruptedError):
            return True
        except OSError:
            data = b""
        with self._lock:
            self._bytes += len(data)
            over = self._bytes > self.limits.total_bytes or self._closed
        if over:
            raise OSError("egress byte budget spent")
        if not data:
            with contextlib.suppress(OSError):
                sink.shutdown(socket.SHUT_WR)
            return False
        sink.setblocking(True)
        sink.settimeout(self.limits.idle_seconds)
        try:
            sink.sendall(data)
        finally:
            sink.setblocking(False)
        return True


def _answer(client: socket.socket, status: int, why: str) -> None:
    text = {403: "Forbidden", 400: "Bad Request", 502: "Bad Gateway", 503: "Service Unavailable"}.get(status, "Error")
    body = (why + "\n").encode("utf-8", errors="replace")
    head = (f"HTTP/1.1 {status} {text}\r\n{REFUSED_HEADER if status == 403 else 'X-Spar-Egress: error'}\r\n"
            f"Content-Type: text/plain\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n")
    with contextlib.suppress(OSError):
        client.sendall(head.encode("latin-1") + body)


def _read_head(sock: socket.socket) -> tuple[bytes, bytes]:
    """A request or response head (up to its blank line) and what came after it."""
    data = b""
    while b"\r\n\r\n" not in data:
        if len(data) > HEAD_LIMIT:
            raise _Refusal(400, "request head too large")
        chunk = sock.recv(65536)
        if not chunk:
            raise _Refusal(400, "connection closed before the request head ended")
        data += chunk
    end = data.index(b"\r\n\r\n") + 4
    return data[:end], data[end:]


def _host(name: str) -> str:
    host = normal_host(name)
    if not HOST_NAME.fullmatch(host):
        raise _Refusal(400, "not a host name")
    return host


def _read_request(client: socket.socket) -> _Request:
    head, rest = _read_head(client)
    line, _, headers = head.partition(b"\r\n")
    parts = line.decode("latin-1").split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/"):
        raise _Refusal(400, "not an HTTP request line")
    method, target, version = parts
    if method == "CONNECT":
        name, _, number = target.rpartition(":")
        if not name or not number.isdigit():
            raise _Refusal(400, "CONNECT needs host:port")
        return _Request(method, "https", _host(name), int(number), b"", rest)
    url = urllib.parse.urlsplit(target)
    if url.scheme != "http" or not url.hostname:
        raise _Refusal(400, "only CONNECT and absolute http:// requests go through the egress proxy")
    try:
        port = url.port or 80
    except ValueError:
        raise _Refusal(400, "bad port") from None
    # one request per connection: a second one on it could name another host
    # one request per connection (a second one could name another host), and the Host the
    # URL names (another would reach another site on the same server)
    kept = [h for h in headers.split(b"\r\n") if h and not h.lower().startswith((b"proxy-", b"connection:",
                                                                                 b"keep-alive:", b"host:"))]
    kept += [b"Host: " + url.netloc.rpartition("@")[2].encode("latin-1"), b"Connection: close"]
    origin = (url.path or "/") + (f"?{url.query}" if url.query else "")
    out = f"{method} {origin} {version}\r\n".encode("latin-1") + b"".join(h + b"\r\n" for h in kept) + b"\r\n"
    return _Request(method, "http", _host(url.hostname), port, out, rest, target)


def _absolute(request: _Request) -> bytes:
    method, version = request.head.split(b" ", 1)[0], request.head.split(b"\r\n", 1)[0].rsplit(b" ", 1)[1]
    return method + b" " + request.target.encode("latin-1") + b" " + version + b"\r\n"


__all__ = ["BRIDGE_SCRIPT", "Count", "EgressProxy", "Limits", "Rule", "Upstream", "address_problem", "bridge_python",
           "refusal_reason", "resolve"]
