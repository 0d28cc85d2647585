"""The HTTP proxy a request to an endpoint goes through, read from the variables curl and
the reviewer CLIs read: `https_proxy` / `HTTPS_PROXY` for an https endpoint, `http_proxy` /
`HTTP_PROXY` for an http one, else `all_proxy` / `ALL_PROXY` (the lower-case name first);
`no_proxy` / `NO_PROXY` lists the hosts reached directly (`*` for all), and a loopback host
(`localhost`, 127.0.0.0/8, ::1) is always reached directly, as Go's HTTP clients do: a proxy
cannot reach the user's own machine's services, which a local server is. Only an `http://`
proxy is supported: an https endpoint is reached through it with CONNECT (TLS end to end,
the endpoint's certificate checked as without a proxy), an http one with the whole URL
as the request target. Standard library only (the client runs inside the sandbox).

In a sandbox with a network of its own, `SPAR_EGRESS_PROXY` names Spar's egress proxy:
then every request goes through it, a loopback host's too (the host's loopback is
reachable from inside only that way) and whatever no_proxy says.
"""

from __future__ import annotations

import base64
import ipaddress
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass

from spar.config.model import loopback_host


class UnusableProxy(Exception):
    """A proxy variable is set to something the client cannot use (it says which variable,
    never its value: a proxy URL may hold a password)."""


@dataclass(frozen=True)
class Proxy:
    host: str
    port: int
    authorization: str | None = None  # the Proxy-Authorization value, from the URL's user:password

    @property
    def where(self) -> str:
        return f"{self.host}:{self.port}"

    def headers(self) -> dict[str, str]:
        return {"Proxy-Authorization": self.authorization} if self.authorization else {}


def _setting(env: Mapping[str, str], names: tuple[str, ...]) -> tuple[str, str]:
    """The first of `names` set to a non-blank value: (name, value); ("", "") when none is."""
    for name in names:
        value = env.get(name, "").strip()
        if value:
            return name, value
    return "", ""


def _in_network(entry: str, host: str) -> bool:
    """An IP host inside a network written as CIDR (`10.0.0.0/8`), as curl reads one."""
    try:
        return ipaddress.ip_address(host) in ipaddress.ip_network(entry, strict=False)
    except ValueError:
        return False


def _listed(entry: str, host: str, port: int) -> bool:
    """`host:port` matches one no_proxy entry: `*`, the host itself or a domain it is in
    (`example.com` and `.example.com` both cover `api.example.com`), an IP network
    (`10.0.0.0/8`), with `:PORT` only that port."""
    entry = entry.strip().lower()
    if "/" in entry:
        return _in_network(entry, host)
    if entry.startswith("["):  # [IPv6] or [IPv6]:PORT
        name, _, rest = entry[1:].partition("]")
        entry_port = rest.removeprefix(":")
    elif entry.count(":") == 1:
        name, _, entry_port = entry.partition(":")
    else:
        name, entry_port = entry, ""
    if entry_port and entry_port != str(port):
        return False
    name = name.lstrip(".")
    return entry == "*" or (bool(name) and (host == name or host.endswith("." + name)))


def _bypassed(url: urllib.parse.SplitResult, env: Mapping[str, str]) -> bool:
    _, no_proxy = _setting(env, ("no_proxy", "NO_PROXY"))
    host = (url.hostname or "").lower()
    if loopback_host(host):
        return True
    port = url.port or (443 if url.scheme == "https" else 80)
    return any(_listed(entry, host, port) for entry in no_proxy.split(",") if entry.strip())


def proxy_for(url: urllib.parse.SplitResult, env: Mapping[str, str]) -> Proxy | None:
    """The proxy for a request to `url` under `env`, None to connect directly; UnusableProxy
    when the variable that applies cannot be used."""
    scheme = url.scheme.lower()
    name, value = _setting(env, ("SPAR_EGRESS_PROXY",))
    if not value:
        name, value = _setting(env, (f"{scheme}_proxy", f"{scheme.upper()}_PROXY", "all_proxy", "ALL_PROXY"))
        if not value or _bypassed(url, env):
            return None
    parsed = urllib.parse.urlsplit(value if "://" in value else f"http://{value}")
    if parsed.scheme.lower() != "http":
        raise UnusableProxy(f"{name} names a {parsed.scheme}:// proxy; the openai-compatible client "
                            "goes through an http:// proxy only")
    try:
        port = parsed.port or 80
    except ValueError:
        port = 0
    if not parsed.hostname or not port:
        raise UnusableProxy(f"{name} is not a proxy URL of the form http://HOST:PORT")
    authorization = None
    if parsed.username is not None:
        pair = f"{urllib.parse.unquote(parsed.username)}:{urllib.parse.unquote(parsed.password or '')}"
        authorization = "Basic " + base64.b64encode(pair.encode("utf-8")).decode("ascii")
    return Proxy(parsed.hostname, port, authorization)
