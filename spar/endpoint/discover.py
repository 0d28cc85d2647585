"""Endpoints `spar init` can offer as `openai-compatible` reviewers: the OpenAI variables of
the environment, and local servers answering `GET /v1/models` on their usual loopback port
(each probe a short, bounded request; nothing leaves the machine but a hosted endpoint's
variables, which are only read)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from spar.endpoint.client import Endpoint, NetworkError, list_models

LOCAL_SERVERS = (("ollama", 11434), ("llama.cpp", 8080), ("vllm", 8000), ("lm-studio", 1234))
PROBE_TIMEOUT = 0.5  # seconds per port: a local server answers at once
OPENAI_URL = "https://api.openai.com/v1"
Probe = Callable[[Endpoint, float], tuple[int, list[str], object]]


@dataclass
class Found:
    """An endpoint to offer: a reviewer name, its base URL, its key variable, models it lists."""

    name: str
    base_url: str
    api_key_env: str = ""
    models: list[str] = field(default_factory=list)


def from_environment(env: Mapping[str, str]) -> list[Found]:
    """OPENAI_API_KEY and/or OPENAI_BASE_URL, read only (a hosted API is not probed)."""
    if not env.get("OPENAI_API_KEY") and not env.get("OPENAI_BASE_URL"):
        return []
    key = "OPENAI_API_KEY" if env.get("OPENAI_API_KEY") else ""
    return [Found("openai", (env.get("OPENAI_BASE_URL") or OPENAI_URL).rstrip("/"), key)]


def local_servers(servers: tuple[tuple[str, int], ...] = LOCAL_SERVERS, probe: Probe = list_models) -> list[Found]:
    """The servers that answer `GET /v1/models` with 200 on 127.0.0.1."""
    out = []
    for name, port in servers:
        base = f"http://127.0.0.1:{port}/v1"
        try:
            status, models, _ = probe(Endpoint(base), PROBE_TIMEOUT)
        except NetworkError:
            continue
        if status == 200:
            out.append(Found(name, base, "", models))
    return out


__all__ = ["LOCAL_SERVERS", "Found", "from_environment", "local_servers"]
