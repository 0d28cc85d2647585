"""The egress proxy (spar/proc/egress.py) and its host lists (spar/hostlist.py): what it
decides (private and link-local addresses only on the decision, never with traffic) and
what it does with traffic to servers on this machine's 127.0.0.1 only."""

from __future__ import annotations

import contextlib
import socket
import threading
from pathlib import Path

import pytest

from spar.config.load import load_config
from spar.config.model import ReviewerConfig
from spar.errors import ConfigError
from spar.hostlist import entry_problem, host_listed, url_entry
from spar.presets import get_preset
from spar.proc.egress import EgressProxy, Limits, Rule, address_problem, refusal_reason
from spar.round.sandboxing import egress_rule
from tests.echoserver import Echo
from tests.proxyfake import FakeProxy


@pytest.mark.parametrize("address", [
    "127.0.0.1", "127.5.5.5", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254", "0.0.0.0", "224.0.0.1",
    "100.64.0.1", "255.255.255.255", "::1", "::", "fe80::1", "fd00::1", "ff02::1", "::ffff:127.0.0.1",
    "::ffff:169.254.169.254", "fe80::1%eth0", "64:ff9b::a9fe:a9fe", "64:ff9b::7f00:1", "2002:a9fe:a9fe::1",
    "2002:7f00:1::1"])
def test_local_and_private_addresses_are_refused(address):
    assert address_problem(address) is not None


@pytest.mark.parametrize("address", ["93.184.215.14", "160.79.104.10", "2606:4700::6810:84e5"])
def test_public_addresses_pass(address):
    assert address_problem(address) is None


def test_a_host_off_the_list_is_refused_whatever_it_resolves_to():
    rule = Rule(hosts=("api.anthropic.com",))
    assert refusal_reason("evil.example", 443, ["93.184.215.14"], rule) == "not on the reviewer's list of hosts"
    assert refusal_reason("api.anthropic.com", 443, ["160.79.104.10"], rule) is None
    assert refusal_reason("API.Anthropic.COM.", 443, ["160.79.104.10"], rule) is None  # case and final dot
    assert refusal_reason("api.anthropic.com", 22, ["160.79.104.10"], rule) is not None  # not a listed port


@pytest.mark.parametrize("address", ["127.0.0.1", "169.254.169.254", "10.0.0.5", "::1"])
def test_a_listed_name_leading_to_a_local_address_is_refused(address):
    rule = Rule(hosts=("api.anthropic.com",))
    why = refusal_reason("api.anthropic.com", 443, ["160.79.104.10", address], rule)
    assert why is not None and address in why


def test_the_configured_service_may_be_local():
    rule = Rule(hosts=("127.0.0.1:8080", "models.lan:443"), services=("127.0.0.1:8080", "models.lan:443"))
    assert refusal_reason("127.0.0.1", 8080, ["127.0.0.1"], rule) is None
    assert refusal_reason("models.lan", 443, ["10.0.0.7"], rule) is None
    assert refusal_reason("127.0.0.1", 8081, ["127.0.0.1"], rule) is not None  # another port of the same host
    assert refusal_reason("169.254.169.254", 80, ["169.254.169.254"], rule) is not None


def test_list_entries():
    assert host_listed("a.b.example.com", 443, ["*.example.com"])
    assert not host_listed("example.com", 443, ["*.example.com"])
    assert not host_listed("badexample.com", 443, ["*.example.com"])
    assert host_listed("h", 80, ["h"]) and not host_listed("h", 8080, ["h"]) and host_listed("h", 8080, ["h:8080"])
    assert host_listed("::1", 8080, ["[::1]:8080"])
    assert url_entry("http://127.0.0.1:9/v1") == "127.0.0.1:9" and url_entry("https://API.x.com/") == "api.x.com:443"
    assert url_entry("http://[::1]:5/") == "[::1]:5" and url_entry("ftp://x/") is None
    for bad in ("https://x.com", "x.com/path", "x.com:http", "x.com:70000", "*x.com", "", "a b"):
        assert entry_problem(bad) is not None, bad
    for good in ("x.com", "x.com:8443", "*.x.com", "127.0.0.1:80", "[::1]:80"):
        assert entry_problem(good) is None, good


# ---------------------------------------------------------------- traffic (127.0.0.1 only)


@pytest.fixture
def echo():
    server = Echo()
    yield server
    server.close()


@contextlib.contextmanager
def running(tmp_path: Path, rule: Rule, **kw):
    proxy = EgressProxy(str(tmp_path / "p.sock"), rule, **kw)
    with proxy:
        yield proxy


def _dial(proxy: EgressProxy) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(60)
    sock.connect(proxy.socket_path)
    return sock


def _head(sock: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(4096)
        if not chunk:
            break
        data += chunk
    return data


def _connect(proxy: EgressProxy, target: str) -> tuple[socket.socket, bytes]:
    sock = _dial(proxy)
    with contextlib.suppress(BrokenPipeError):  # a proxy that refuses at once may close first
        sock.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
    return sock, _head(sock)


def _read_all(sock: socket.socket) -> bytes:
    data = b""
    with contextlib.suppress(OSError):
        while chunk := sock.recv(65536):
            data += chunk
    return data


def test_a_tunnel_to_the_configured_local_service(tmp_path, echo):
    service = f"127.0.0.1:{echo.port}"
    with running(tmp_path, Rule(hosts=(service,), services=(service,))) as proxy:
        sock, head = _connect(proxy, service)
        assert head.startswith(b"HTTP/1.1 200")
        sock.sendall(b"ping")
        assert sock.recv(4) == b"ping"
        sock.close()
        assert [tuple(c[:3]) for c in proxy.allowed()] == [("127.0.0.1", echo.port, 1)]
        assert proxy.refusals() == []


def test_loopback_not_configured_as_the_service_is_refused_and_counted(tmp_path, echo):
    target = f"127.0.0.1:{echo.port}"
    with running(tmp_path, Rule(hosts=(target, "api.anthropic.com"))) as proxy:
        for _ in range(2):
            sock, head = _connect(proxy, target)
            assert head.startswith(b"HTTP/1.1 403") and b"X-Spar-Egress: refused" in head
            sock.close()
        sock, head = _connect(proxy, "unlisted.example:443")
        assert head.startswith(b"HTTP/1.1 403")
        sock.close()
        refused = {(c.host, c.port): c.times for c in proxy.refusals()}
    assert refused == {("127.0.0.1", echo.port): 2, ("unlisted.example", 443): 1}
    assert echo.accepted == 0


def test_an_unlisted_name_is_never_resolved(tmp_path):
    asked: list[str] = []

    def resolver(host: str, port: int) -> list[str]:
        asked.append(host)
        return ["93.184.215.14"]

    with running(tmp_path, Rule(hosts=("api.anthropic.com",)), resolver=resolver) as proxy:
        sock, head = _connect(proxy, "exfil.example:443")
        sock.close()
    assert head.startswith(b"HTTP/1.1 403") and asked == []


def test_a_listed_name_that_resolves_to_loopback_is_refused_without_a_connection(tmp_path, echo):
    with running(tmp_path, Rule(hosts=(f"api.test:{echo.port}",)), resolver=lambda h, p: ["127.0.0.1"]) as proxy:
        sock, head = _connect(proxy, f"api.test:{echo.port}")
        sock.close()
        (refusal,) = proxy.refusals()
    assert head.startswith(b"HTTP/1.1 403") and "127.0.0.1" in refusal.why and "loopback" in refusal.why
    assert echo.accepted == 0


def test_plain_http_in_absolute_form_goes_in_origin_form(tmp_path):
    seen: list[bytes] = []
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]

    def serve() -> None:
        conn, _ = server.accept()
        with conn:
            seen.append(_head(conn))
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    service = f"127.0.0.1:{port}"
    with running(tmp_path, Rule(hosts=(service,), services=(service,))) as proxy:
        sock = _dial(proxy)
        sock.sendall(f"POST http://{service}/v1/messages?beta=true HTTP/1.1\r\nHost: elsewhere.example\r\n"
                     "Proxy-Authorization: Basic c2VjcmV0\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n".encode())
        answer = _read_all(sock)
        sock.close()
    thread.join(timeout=60)
    server.close()
    assert answer.endswith(b"ok")
    assert seen[0].startswith(b"POST /v1/messages?beta=true HTTP/1.1\r\n") and b"Proxy-Authorization" not in seen[0]
    assert b"Connection: close\r\n" in seen[0] and b"keep-alive" not in seen[0]  # one request per connection
    assert f"Host: {service}\r\n".encode() in seen[0] and b"elsewhere" not in seen[0]  # the URL's host


def test_the_users_proxy_is_chained(tmp_path, echo):
    with FakeProxy(require="Basic dTpw", names={"api.test": "127.0.0.1"}) as upstream:
        def hop(scheme: str, host: str, port: int):
            return "127.0.0.1", upstream.port, {"Proxy-Authorization": "Basic dTpw"}

        def unknown(host: str, port: int) -> list[str]:
            raise socket.gaierror("not resolvable here")

        rule = Rule(hosts=(f"api.test:{echo.port}",))
        with running(tmp_path, rule, upstream=hop, resolver=unknown) as proxy:
            sock, head = _connect(proxy, f"api.test:{echo.port}")
            assert head.startswith(b"HTTP/1.1 200"), head
            sock.sendall(b"via")
            assert sock.recv(3) == b"via"
            sock.close()
        assert upstream.lines == [f"CONNECT api.test:{echo.port} HTTP/1.1"]
        assert upstream.authorizations == ["Basic dTpw"]


def test_a_name_the_users_proxy_takes_is_not_looked_up_here_but_an_address_is_checked(tmp_path):
    asked: list[str] = []

    def resolver(host: str, port: int) -> list[str]:
        asked.append(host)
        raise AssertionError("looked up")

    def hop(scheme: str, host: str, port: int):
        return "127.0.0.1", 9, {}  # the discard port: nothing listens

    rule = Rule(hosts=("api.openai.com", "169.254.169.254:80"))
    with running(tmp_path, rule, upstream=hop, resolver=resolver) as proxy:
        sock, head = _connect(proxy, "api.openai.com:443")
        sock.close()
        refused, head2 = _connect(proxy, "169.254.169.254:80")
        refused.close()
        assert [c.host for c in proxy.refusals()] == ["169.254.169.254"]
    assert asked == [] and not head.startswith(b"HTTP/1.1 200") and head2.startswith(b"HTTP/1.1 403")


def test_open_connections_are_bounded(tmp_path, echo):
    service = f"127.0.0.1:{echo.port}"
    with running(tmp_path, Rule(hosts=(service,), services=(service,)), limits=Limits(connections=1)) as proxy:
        first, head = _connect(proxy, service)
        assert head.startswith(b"HTTP/1.1 200")
        second, head = _connect(proxy, service)
        assert head.startswith(b"HTTP/1.1 503")
        first.close()
        second.close()


def test_connections_in_all_are_bounded(tmp_path, echo):
    service = f"127.0.0.1:{echo.port}"
    with running(tmp_path, Rule(hosts=(service,), services=(service,)), limits=Limits(total_connections=2)) as proxy:
        heads = []
        for _ in range(3):
            sock, head = _connect(proxy, service)
            heads.append(head.split(b"\r\n")[0])
            sock.close()
    assert heads == [b"HTTP/1.1 200 Connection established"] * 2 + [b"HTTP/1.1 503 Service Unavailable"]


def test_bytes_are_bounded(tmp_path, echo):
    service = f"127.0.0.1:{echo.port}"
    with running(tmp_path, Rule(hosts=(service,), services=(service,)), limits=Limits(total_bytes=4096)) as proxy:
        sock, head = _connect(proxy, service)
        with contextlib.suppress(OSError):
            for _ in range(64):
                sock.sendall(b"x" * 1024)
        _read_all(sock)  # the proxy ends the tunnel: this returns
        sock.close()
    assert echo.received <= 4096 + 65536


def test_an_idle_tunnel_is_ended(tmp_path, echo):
    service = f"127.0.0.1:{echo.port}"
    with running(tmp_path, Rule(hosts=(service,), services=(service,)), limits=Limits(idle_seconds=0.2)) as proxy:
        sock, head = _connect(proxy, service)
        assert head.startswith(b"HTTP/1.1 200")
        assert _read_all(sock) == b""  # nothing sent: ended after its idle time, not held open
        sock.close()


def test_close_ends_every_tunnel_and_the_socket(tmp_path, echo):
    service = f"127.0.0.1:{echo.port}"
    proxy = EgressProxy(str(tmp_path / "p.sock"), Rule(hosts=(service,), services=(service,)))
    proxy.start()
    sock, head = _connect(proxy, service)
    assert head.startswith(b"HTTP/1.1 200")
    proxy.close()
    assert _read_all(sock) == b""
    sock.close()
    assert not (tmp_path / "p.sock").exists()


@pytest.mark.parametrize("request_line", [b"GET https://x.com/ HTTP/1.1", b"CONNECT x.com HTTP/1.1",
                                          b"CONNECT evil\x1b[31m.com:443 HTTP/1.1", b"garbage"])
def test_requests_it_does_not_serve(tmp_path, request_line):
    with running(tmp_path, Rule(hosts=("x.com",))) as proxy:
        sock = _dial(proxy)
        sock.sendall(request_line + b"\r\n\r\n")
        head = _head(sock)
        sock.close()
        assert head.startswith(b"HTTP/1.1 400") and proxy.refusals() == []


# ---------------------------------------------------------------- configuration


def _load(tmp_path: Path, reviewer: str):
    path = tmp_path / "user.toml"
    path.write_text(f'[[reviewers]]\nname = "house"\npreset = "command"\nargv = ["x"]\n{reviewer}\n', encoding="utf-8")
    return load_config(None, env={"SPAR_CONFIG": str(path)}, home=tmp_path / "home")


def test_allow_hosts_is_checked_and_enters_the_digest_only_when_set(tmp_path):
    (house,) = _load(tmp_path, 'allow_hosts = ["Pypi.org", "*.example.com", "127.0.0.1:8080"]').reviewers
    assert house.allow_hosts == ["pypi.org", "*.example.com", "127.0.0.1:8080"]
    assert house.applied()["allow_hosts"] == house.allow_hosts
    (plain,) = _load(tmp_path, "").reviewers
    assert plain.allow_hosts == [] and "allow_hosts" not in plain.applied()
    for value, message in (('["https://x.com"]', "must be a host name"), ('"x.com"', "must be an array"),
                           ('["x.com:99999"]', "port out of range"), ("[]", "must not be empty")):
        with pytest.raises(ConfigError) as err:
            _load(tmp_path, f"allow_hosts = {value}")
        assert message in err.value.message, err.value.message


def test_the_rule_of_each_preset(tmp_path):
    env = {"ANTHROPIC_BASE_URL": "http://127.0.0.1:4000"}
    claude = get_preset("claude")
    cfg = ReviewerConfig(name="c", preset="claude", allow_hosts=["pypi.org"])
    assert egress_rule(claude, cfg, env) == Rule(hosts=("127.0.0.1:4000", "pypi.org"),
                                                 services=("127.0.0.1:4000", "pypi.org"))
    assert egress_rule(claude, ReviewerConfig(name="c", preset="claude"), {}) == Rule(hosts=("api.anthropic.com",))
    codex = ReviewerConfig(name="x", preset="codex")
    assert egress_rule(get_preset("codex"), codex, {}).hosts == ("api.openai.com", "chatgpt.com")
    endpoint = ReviewerConfig(name="e", preset="openai-compatible", base_url="http://localhost:11434/v1")
    assert egress_rule(get_preset("openai-compatible"), endpoint, {}) == Rule(hosts=("localhost:11434",),
                                                                             services=("localhost:11434",))
    assert egress_rule(get_preset("command"), ReviewerConfig(name="h", preset="command"), {}) == Rule()
    assert claude.sandbox_env({}, "/home/reviewer")["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] == "1"


def test_codex_reaches_the_provider_its_config_selects(tmp_path):
    home = tmp_path / "home"
    (home / ".codex").mkdir(parents=True)
    config = home / ".codex" / "config.toml"
    codex, cfg = get_preset("codex"), ReviewerConfig(name="x", preset="codex")
    config.write_text('model_provider = "mine"\n[model_providers.mine]\nbase_url = "http://127.0.0.1:4000/v1"\n'
                      '[model_providers.other]\nbase_url = "https://other.example/v1"\n'
                      '[profiles.p]\nmodel_provider = "other"\n')
    assert egress_rule(codex, cfg, {"HOME": str(home)}) == Rule(hosts=("127.0.0.1:4000",), services=("127.0.0.1:4000",))
    config.write_text(config.read_text().replace('model_provider = "mine"\n', 'profile = "p"\n', 1))
    assert egress_rule(codex, cfg, {"HOME": str(home)}).hosts == ("other.example:443",)
    for broken in ('model_provider = ["x"]\n', "not toml [", 'profile = 3\n', ""):
        config.write_text(broken)
        assert egress_rule(codex, cfg, {"HOME": str(home)}).hosts == ("api.openai.com", "chatgpt.com"), broken
