"""The openai-compatible client behind an HTTP proxy, as the environment names it (the
variables curl and the reviewer CLIs read): an https endpoint through a CONNECT tunnel with
its certificate still checked, an http one with the whole URL as target, the proxy's
credentials from its URL and never shown, no_proxy honoured, a loopback endpoint always
reached directly. A loopback proxy, and a loopback TLS endpoint named `endpoint.test`, a name
only the proxy resolves (to 127.0.0.1) and the client never looks up (a test CA from
trustme): nothing leaves the machine."""

from __future__ import annotations

import base64
import json
import ssl
import time
from urllib.parse import urlsplit

import pytest
import trustme

from spar.endpoint import client
from spar.endpoint.proxy import Proxy, UnusableProxy, proxy_for
from spar.records.model import ReviewerStatus as S
from tests.endpointfake import FakeEndpoint, Reply, answer_chunks
from tests.proctools import HANG
from tests.proxyfake import FakeProxy
from tests.reviewerround import Round, bwrap_or_skip

GOOD = json.dumps({"x": "fine"})
BASIC = "Basic " + base64.b64encode(b"me@corp:p:ss").decode()
NAME = "endpoint.test"  # the test endpoint's name: the proxy resolves it, nobody else
PROXY_VARIABLES = ("https_proxy", "HTTPS_PROXY", "http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY",
                   "no_proxy", "NO_PROXY")

# (endpoint URL, environment, the proxy expected: None for a direct connection)
SETTINGS = [
    ("https://api.example.com/v1", {}, None),
    ("https://api.example.com/v1", {"HTTPS_PROXY": "http://proxy.corp:3128"}, Proxy("proxy.corp", 3128)),
    ("https://api.example.com/v1", {"https_proxy": "proxy.corp:8080", "HTTPS_PROXY": "http://other:1"},
     Proxy("proxy.corp", 8080)),  # the lower-case name first; a bare host:port is an http:// proxy
    ("https://api.example.com/v1", {"HTTP_PROXY": "http://proxy.corp:3128"}, None),  # http's, not https's
    ("http://gateway.lan:4000/v1", {"HTTP_PROXY": "http://proxy.corp:3128"}, Proxy("proxy.corp", 3128)),
    ("https://api.example.com/v1", {"ALL_PROXY": "http://proxy.corp"}, Proxy("proxy.corp", 80)),
    ("https://api.example.com/v1", {"HTTPS_PROXY": "http://me%40corp:p%3Ass@proxy.corp:3128"},
     Proxy("proxy.corp", 3128, BASIC)),
    ("https://api.example.com/v1", {"HTTPS_PROXY": "http://proxy.corp:3128", "NO_PROXY": "example.com"}, None),
    ("https://api.example.com/v1", {"HTTPS_PROXY": "http://proxy.corp:3128", "no_proxy": ".example.com"}, None),
    ("https://api.example.com/v1", {"HTTPS_PROXY": "http://proxy.corp:3128", "no_proxy": "*"}, None),
    ("https://notexample.com/v1", {"HTTPS_PROXY": "http://proxy.corp:3128", "no_proxy": "example.com"},
     Proxy("proxy.corp", 3128)),  # a suffix is a domain only at a dot
    ("https://10.0.0.5:8443/v1", {"HTTPS_PROXY": "http://proxy.corp:3128", "no_proxy": "10.0.0.5:8443"}, None),
    ("https://10.0.0.5/v1", {"HTTPS_PROXY": "http://proxy.corp:3128", "no_proxy": "10.0.0.5:8443"},
     Proxy("proxy.corp", 3128)),  # another port than the one listed
    ("https://10.1.2.3/v1", {"HTTPS_PROXY": "http://proxy.corp:3128", "no_proxy": "192.168.0.0/16, 10.0.0.0/8"},
     None),  # an IP network, as curl reads CIDR
    ("https://11.1.2.3/v1", {"HTTPS_PROXY": "http://proxy.corp:3128", "no_proxy": "10.0.0.0/8"},
     Proxy("proxy.corp", 3128)),
    ("https://[fd00::5]:8443/v1", {"HTTPS_PROXY": "http://proxy.corp:3128", "no_proxy": "[fd00::5]:8443"}, None),
    ("https://[fd00::5]/v1", {"HTTPS_PROXY": "http://proxy.corp:3128", "no_proxy": "fd00::5"}, None),
    ("http://localhost:11434/v1", {"HTTP_PROXY": "http://proxy.corp:3128"}, None),  # loopback: always direct
    ("http://127.0.0.2:4000/v1", {"ALL_PROXY": "http://proxy.corp:3128"}, None),
    ("https://[::1]:4000/v1", {"HTTPS_PROXY": "http://proxy.corp:3128"}, None),
]


@pytest.mark.parametrize(("url", "env", "expected"), SETTINGS)
def test_the_proxy_is_read_as_curl_reads_it(url, env, expected):
    assert proxy_for(urlsplit(url), env) == expected


@pytest.mark.parametrize("value", ["socks5://me:s3cret@proxy.corp:1080", "https://me:s3cret@proxy.corp",
                                   "http://me:s3cret@proxy.corp:notaport"])
def test_an_unusable_proxy_names_its_variable_never_its_value(value):
    with pytest.raises(UnusableProxy) as refused:
        proxy_for(urlsplit("https://api.example.com/v1"), {"HTTPS_PROXY": value})
    assert "HTTPS_PROXY" in str(refused.value) and "s3cret" not in str(refused.value)


def _proxy(require: str | None = None) -> FakeProxy:
    return FakeProxy(require=require, names={NAME: "127.0.0.1"})


@pytest.fixture
def clean_env(monkeypatch):
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


@pytest.fixture(scope="module")
def tls(tmp_path_factory):
    """A test CA (its certificate in a file, as SSL_CERT_FILE names it) and a server context
    for `endpoint.test` signed by it."""
    ca = trustme.CA()
    folder = tmp_path_factory.mktemp("ca")
    ca.cert_pem.write_to_path(str(folder / "ca.pem"))
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert(NAME).configure_cert(server)
    return server, folder / "ca.pem"


def test_an_https_endpoint_is_reached_through_a_connect_tunnel(clean_env, tls):
    server, ca_file = tls
    clean_env.setenv("SSL_CERT_FILE", str(ca_file))
    with FakeEndpoint([Reply()], tls=server, host=NAME) as fake, _proxy(require=BASIC) as proxy:
        clean_env.setenv("HTTPS_PROXY", proxy.url.replace("http://", "http://me%40corp:p%3Ass@"))
        status, models, _ = client.list_models(client.Endpoint(fake.base_url), 30)
    assert (status, models) == (200, ["fake-model"])
    port = urlsplit(fake.base_url).port
    assert [line.rsplit(" ", 1)[0] for line in proxy.lines] == [f"CONNECT {NAME}:{port}"]
    assert proxy.authorizations == [BASIC]


def test_the_endpoints_certificate_is_still_checked_through_the_tunnel(clean_env, tls):
    server, _ = tls  # no SSL_CERT_FILE: the test CA is unknown, so the endpoint is not trusted
    with FakeEndpoint([Reply()], tls=server, host=NAME) as fake, _proxy() as proxy:
        clean_env.setenv("HTTPS_PROXY", proxy.url)
        with pytest.raises(client.NetworkError, match=r"TLS with endpoint\.test:[0-9]+ through the proxy"):
            client.list_models(client.Endpoint(fake.base_url), 30)
    assert len(proxy.lines) == 1 and proxy.lines[0].startswith("CONNECT ")


def test_a_proxy_that_refuses_is_a_network_error_naming_it_without_the_password(clean_env, tls):
    server, ca_file = tls
    clean_env.setenv("SSL_CERT_FILE", str(ca_file))
    with FakeEndpoint([Reply()], tls=server, host=NAME) as fake, _proxy(require=BASIC) as proxy:
        clean_env.setenv("HTTPS_PROXY", proxy.url.replace("http://", "http://me:wrong@"))
        with pytest.raises(client.NetworkError) as refused:
            client.list_models(client.Endpoint(fake.base_url), 30)
    where = urlsplit(proxy.url).netloc
    assert f"through the proxy {where}" in str(refused.value) and "407" in str(refused.value)
    assert "wrong" not in str(refused.value)


def test_a_loopback_endpoint_is_reached_directly_whatever_the_proxy(clean_env):
    """A local server (ollama, a LiteLLM proxy on the same machine) is never sent to the
    proxy, which cannot reach the user's own machine."""
    with FakeEndpoint([Reply()]) as fake, FakeProxy() as proxy:
        clean_env.setenv("HTTP_PROXY", proxy.url)
        clean_env.setenv("ALL_PROXY", proxy.url)
        assert client.list_models(client.Endpoint(fake.base_url), 30)[:2] == (200, ["fake-model"])
    assert proxy.lines == []


@pytest.mark.anyio
@pytest.mark.parametrize("sandboxed", [False, True], ids=["plain", "bwrap"])
async def test_a_reviewer_gets_its_answer_through_the_proxy_the_user_set(tmp_path, tls, sandboxed):
    """The whole path: the user's HTTPS_PROXY and SSL_CERT_FILE reach the client (network
    settings pass to every reviewer), which streams its answer through the tunnel, in the
    sandbox too."""
    bwrap = bwrap_or_skip() if sandboxed else None
    server, ca_file = tls
    r = Round(tmp_path)
    answer = Reply(chunks=answer_chunks(GOOD))
    with FakeEndpoint([answer], tls=server, host=NAME) as fake, _proxy() as proxy:
        r.env.update(HTTPS_PROXY=proxy.url, SSL_CERT_FILE=str(ca_file))
        for name in PROXY_VARIABLES[2:]:
            r.env.pop(name, None)
        job = r.job("ep", "openai-compatible", base_url=fake.base_url, model="fake-model")
        [outcome] = await r.run([job], env_passthrough=None, sandbox=bwrap)
    assert outcome.status == S.COMPLETED and outcome.result == {"x": "fine"}, outcome.reason
    assert [line.split()[0] for line in proxy.lines] == ["CONNECT"]
    assert "Proxy-Authorization" not in fake.headers[0]


def test_an_http_endpoint_gets_the_whole_url_through_the_proxy_and_no_credentials(clean_env):
    with FakeEndpoint([Reply(chunks=answer_chunks(GOOD))], host=NAME) as fake, _proxy(require=BASIC) as proxy:
        clean_env.setenv("HTTP_PROXY", proxy.url.replace("http://", "http://me%40corp:p%3Ass@"))
        call = client.Call(client.Endpoint(fake.base_url), b'{"model": "m"}', deadline=time.monotonic() + HANG)
        got = client.chat_once(call)
    assert isinstance(got, client.Streamed) and got.text() == GOOD
    assert proxy.lines == [f"POST {fake.base_url}/chat/completions HTTP/1.1"]
    assert "Proxy-Authorization" not in fake.headers[0]  # the proxy's credentials stop at the proxy


@pytest.mark.anyio
async def test_in_a_jail_with_its_own_network_the_user_proxy_is_chained_by_spars(tmp_path, tls):
    """With a network of its own the client reaches the outside only through Spar's egress
    proxy, which hands the tunnel on to the proxy the user set (its password stays outside)."""
    bwrap = bwrap_or_skip()
    server, ca_file = tls
    r = Round(tmp_path)
    with FakeEndpoint([Reply(chunks=answer_chunks(GOOD))], tls=server, host=NAME) as fake, \
            _proxy(require=BASIC) as proxy:
        r.env.update(HTTPS_PROXY=proxy.url.replace("http://", "http://me%40corp:p%3Ass@"), SSL_CERT_FILE=str(ca_file))
        for name in PROXY_VARIABLES[2:]:
            r.env.pop(name, None)
        job = r.job("ep", "openai-compatible", base_url=fake.base_url, model="fake-model")
        [outcome] = await r.run([job], env_passthrough=None, sandbox=bwrap, egress=True)
    assert outcome.status == S.COMPLETED and outcome.result == {"x": "fine"}, outcome.reason
    assert proxy.lines == [f"CONNECT {NAME}:{urlsplit(fake.base_url).port} HTTP/1.1"]
    assert proxy.authorizations == [BASIC]


@pytest.mark.anyio
async def test_in_a_jail_with_its_own_network_a_loopback_endpoint_is_reached_through_spars_proxy(tmp_path):
    """The host's loopback is not the jail's: the client sends even a 127.0.0.1 endpoint
    through Spar's proxy, which lets it through as the reviewer's configured service."""
    bwrap = bwrap_or_skip()
    r = Round(tmp_path)
    for name in PROXY_VARIABLES:
        r.env.pop(name, None)
    with FakeEndpoint([Reply(chunks=answer_chunks(GOOD))]) as fake:
        job = r.job("ep", "openai-compatible", base_url=fake.base_url, model="fake-model")
        [outcome] = await r.run([job], env_passthrough=None, sandbox=bwrap, egress=True)
    assert outcome.status == S.COMPLETED and outcome.result == {"x": "fine"}, outcome.reason
    assert "egress_refused" not in outcome.attempts[-1]


def test_spars_egress_proxy_takes_every_host_a_loopback_one_included():
    env = {"SPAR_EGRESS_PROXY": "http://127.0.0.1:3128", "NO_PROXY": "*", "HTTPS_PROXY": "http://proxy.corp:1"}
    for url in ("http://127.0.0.1:4000/v1", "http://localhost:11434/v1", "https://api.example.com/v1"):
        assert proxy_for(urlsplit(url), env) == Proxy("127.0.0.1", 3128)
