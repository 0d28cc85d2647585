"""Lists of hosts a sandboxed reviewer may reach (`allow_hosts`, spar.proc.egress): an
entry is `name`, `name:PORT`, `*.domain` (any name below the domain) or an IP address
(`[v6]:PORT` with a port); without a port it covers ports 443 and 80 only (pure).
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Iterable

DEFAULT_PORTS = (443, 80)  # a listed host without a port: these only


def _split_entry(entry: str) -> tuple[str, int | None]:
    entry = entry.strip().lower()
    if entry.startswith("["):
        name, _, rest = entry[1:].partition("]")
        return name, int(rest[1:]) if rest.startswith(":") and rest[1:].isdigit() else None
    if entry.count(":") == 1:
        name, _, port = entry.partition(":")
        return name, int(port) if port.isdigit() else None
    return entry, None


def entry_problem(entry: str) -> str | None:
    """Why `entry` is not a host a list may hold (a scheme, a path, a bad port), or None."""
    name, port = _split_entry(entry)
    if not name or any(c in name for c in "/@?# \t") or "://" in entry:
        return "must be a host name, optionally with :PORT (no scheme or path)"
    if ":" in entry.strip("[]") and port is None and entry.count(":") == 1:
        return "has a port that is not a number"
    if port is not None and not 0 < port < 65536:
        return "has a port out of range"
    if name.startswith("*") and not name.startswith("*."):
        return "may start with `*.` only (a whole domain)"
    return None


def _matches(entry: str, host: str, port: int) -> bool:
    name, entry_port = _split_entry(entry)
    if port not in ((entry_port,) if entry_port is not None else DEFAULT_PORTS):
        return False
    if name.startswith("*."):
        return host.endswith(name[1:])
    return host == name


def normal_host(host: str) -> str:
    """A host as the decisions compare it: lower case, no brackets, no final dot."""
    return host.strip().strip("[]").lower().rstrip(".")


def url_entry(url: str) -> str | None:
    """The list entry (`host:port`) of an http(s) URL's host, or None."""
    parts = urllib.parse.urlsplit(url.strip())
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    host = normal_host(parts.hostname)
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def host_listed(host: str, port: int, entries: Iterable[str]) -> bool:
    """`host:port` is one of `entries`."""
    host = normal_host(host)
    return any(_matches(e, host, port) for e in entries)


__all__ = ["DEFAULT_PORTS", "entry_problem", "host_listed", "normal_host", "url_entry"]
