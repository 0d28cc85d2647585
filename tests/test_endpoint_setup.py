"""Where users meet the openai-compatible preset: `spar doctor` checks the endpoint
(reachable, key accepted, model listed), `spar init` offers entries for the OpenAI
variables and local servers answering on loopback, and the verifier's vendor."""

from __future__ import annotations

import socket
import threading
import time
import tomllib
from http.server import BaseHTTPRequestHandler

import pytest

from spar.commands.doctor import ENDPOINT_TIMEOUT, endpoint_check
from spar.commands.init import endpoint_offers
from spar.config.model import ReviewerConfig
from spar.endpoint.client import Endpoint, NetworkError, list_models
from spar.endpoint.discover import PROBE_TIMEOUT, from_environment, local_servers
from spar.errors import ConfigError
from tests.endpointfake import FakeEndpoint, Reply
from tests.loopserver import LoopbackServer

pytestmark = pytest.mark.anyio


def _cfg(base_url: str, **kw) -> ReviewerConfig:
    return ReviewerConfig(name="ep", preset="openai-compatible", base_url=base_url, model=kw.pop("model", "fake-model"),
                          **kw)


async def test_doctor_says_reachable_key_accepted_and_model_listed():
    with FakeEndpoint([Reply()]) as fake:
        check = await endpoint_check(_cfg(fake.base_url, api_key_env="K"), {"K": "right"})
    assert check.status == "ok" and "key accepted, model fake-model listed" in check.detail


async def test_doctor_warns_when_the_model_is_not_listed():
    with FakeEndpoint([Reply()], models=("a", "b")) as fake:
        check = await endpoint_check(_cfg(fake.base_url), {})
    assert check.status == "warning" and "does not list model fake-model (it lists a, b)" in check.detail


async def test_doctor_reports_a_refused_key_and_a_missing_variable():
    with FakeEndpoint([Reply()]) as fake:
        refused = await endpoint_check(_cfg(fake.base_url, api_key_env="K"), {"K": "wrong"})
        missing = await endpoint_check(_cfg(fake.base_url, api_key_env="K"), {})
    assert refused.status == "problem" and "refused the key: HTTP 401 invalid_api_key" in refused.detail
    assert missing.status == "problem" and "K (api_key_env) is not set" in missing.detail


async def test_doctor_reports_an_endpoint_it_cannot_reach():
    with FakeEndpoint([Reply()]) as fake:
        url = fake.base_url
    check = await endpoint_check(_cfg(url), {})
    assert check.status == "problem" and "cannot connect to 127.0.0.1" in check.detail


def test_init_offers_a_local_server_answering_on_loopback_with_its_models():
    with FakeEndpoint([Reply()], models=("qwen3-coder:30b",)) as fake:
        port = int(fake.base_url.split(":")[2].split("/")[0])
        with FakeEndpoint([Reply()]) as gone:
            closed = int(gone.base_url.split(":")[2].split("/")[0])
        found = local_servers((("ollama", port), ("vllm", closed)))
    assert [(f.name, f.models) for f in found] == [("ollama", ["qwen3-coder:30b"])]
    text = endpoint_offers(found, "/home/u/.config/jaekit/spar.toml")
    entry = tomllib.loads(text.split("\n", 3)[3])["reviewers"][0]
    assert entry == {"name": "ollama", "preset": "openai-compatible", "base_url": fake.base_url,
                     "allowed_models": ["qwen3-coder:30b"]}


def test_init_offers_the_openai_variables_without_probing_them():
    assert from_environment({}) == []
    [found] = from_environment({"OPENAI_API_KEY": "sk-x", "OPENAI_BASE_URL": "https://gw.example/v1/"})
    assert (found.base_url, found.api_key_env) == ("https://gw.example/v1", "OPENAI_API_KEY")
    text = endpoint_offers([found], "spar.toml")
    assert 'api_key_env = "OPENAI_API_KEY"' in text and "sk-x" not in text


def test_the_verifier_vendor_is_the_endpoints_host_or_the_name_given():
    assert _cfg("https://API.openai.com/v1").vendor_name() == "api.openai.com"
    assert _cfg("http://127.0.0.1:11434/v1", vendor="local").vendor_name() == "local"
    assert ReviewerConfig(name="c", preset="claude").vendor_name() == "claude"


def test_repeat_checks_pick_verifiers_by_vendor_as_verification_does():
    """Two endpoint reviewers on different hosts are two vendors, for the repeat checks too:
    one may be asked about the other's repeat (a preset alone would call them one vendor)."""
    from spar.config.model import VerifyConfig
    from spar.judge.repeat_plan import Candidate, plan_repeat_checks
    from spar.verify.verification import vendors

    a = _cfg("https://api.openai.com/v1")
    b = ReviewerConfig(name="local", preset="openai-compatible", base_url="http://127.0.0.1:11434/v1",
                       model="m", vendor="local")
    round_json = {"reviewers": [{"name": "ep", "preset": "openai-compatible", "vendor": "api.openai.com"}]}
    authors, verifiers = vendors(round_json, VerifyConfig(reviewers=[a, b]))
    assert authors == {"ep": "api.openai.com"}
    finding = {"id": "F1", "reviewer": "ep", "proposed_class": "defect", "claim": "divide raises on zero"}
    earlier = {"id": "F1", "reviewer": "ep", "proposed_class": "defect", "claim": "divide raises on zero"}
    [call], left = plan_repeat_checks([Candidate(finding, "r1/F1", earlier, "rejected")], authors, verifiers, None)
    assert (call.verifier.name, left) == ("local", [])


class _Trickle(BaseHTTPRequestHandler):
    """Answers one byte at a time, each well within a socket timeout, never finishing the
    headers (it gives up after TRICKLE_SECONDS, so an unbounded probe ends too, late)."""

    def do_GET(self) -> None:
        end = time.monotonic() + TRICKLE_SECONDS
        data = b"HTTP/1.1 200 OK\r\nX-Slow: " + b"a" * 100_000
        for byte in data:
            if time.monotonic() > end:
                return
            try:
                self.wfile.write(bytes([byte]))
                self.wfile.flush()
            except OSError:
                return  # the client hung up
            time.sleep(0.05)

    def log_message(self, format: str, *args: object) -> None:
        pass


TRICKLE_SECONDS = 30.0


async def test_doctor_gives_up_on_a_server_that_trickles_within_its_deadline():
    with LoopbackServer(_Trickle) as slow:
        start = time.monotonic()
        check = await endpoint_check(_cfg(f"http://127.0.0.1:{slow.port}/v1"), {})
        took = time.monotonic() - start
    assert check.status == "problem" and f"within {ENDPOINT_TIMEOUT:g}s" in check.detail
    assert took < 3 * ENDPOINT_TIMEOUT


def test_init_probes_of_trickling_servers_end_within_their_deadlines():
    with LoopbackServer(_Trickle) as one, LoopbackServer(_Trickle) as two:
        start = time.monotonic()
        found = local_servers((("ollama", one.port), ("vllm", two.port)))
        took = time.monotonic() - start
    assert found == []
    assert took < 3 * 2 * PROBE_TIMEOUT


def test_init_offers_a_plain_http_remote_endpoint_saying_what_it_needs():
    [found] = from_environment({"OPENAI_API_KEY": "sk-x", "OPENAI_BASE_URL": "http://gw.example/v1"})
    text = endpoint_offers([found], "spar.toml")
    assert "# allow_plain_http = true  # http:// off this machine sends the key unencrypted" in text
    [local] = from_environment({"OPENAI_API_KEY": "sk-x", "OPENAI_BASE_URL": "http://127.0.0.1:4000/v1"})
    assert "allow_plain_http" not in endpoint_offers([local], "spar.toml")


def test_a_host_name_that_never_resolves_ends_the_probe_at_its_deadline(monkeypatch):
    """The name lookup has no timeout of its own; it is held here in-process (no traffic)."""
    release = threading.Event()

    def stuck(*args, **kw):
        release.wait(60)
        raise socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")

    monkeypatch.setattr(socket, "getaddrinfo", stuck)
    try:
        start = time.monotonic()
        with pytest.raises(NetworkError, match=r"within 0\.5s"):
            list_models(Endpoint("http://name.invalid/v1"), 0.5)
        took = time.monotonic() - start
    finally:
        release.set()
    assert took < 3 * (0.5 + 1.0)


async def test_doctor_warns_that_an_allowed_plain_http_key_travels_unencrypted(monkeypatch):
    import spar.commands.doctor as doctor
    monkeypatch.setattr(doctor, "list_models", lambda endpoint, timeout: (200, ["fake-model"], None))  # no traffic
    cfg = _cfg("http://gateway.example/v1", api_key_env="K", allow_plain_http=True)
    check = await endpoint_check(cfg, {"K": "sk-plain"})
    assert check.status == "warning" and "the key travels unencrypted" in check.detail
    safe = await endpoint_check(_cfg("https://gateway.example/v1", api_key_env="K"), {"K": "sk-tls"})
    assert safe.status == "ok"


def _pasted(tmp_path, text: str):
    """init's printed entries pasted, as printed, at the end of a user configuration, loaded."""
    from spar.config.load import load_config

    path = tmp_path / "spar.toml"
    path.write_text('timeout_seconds = 600\n\n[[reviewers]]\npreset = "claude"\n' + text, encoding="utf-8")
    return path, load_config(None, env={"SPAR_CONFIG": str(path), "HOME": str(tmp_path)})


def test_an_entry_init_prints_loads_as_pasted_or_says_what_to_add(tmp_path):
    """An endpoint that lists its models: the entry loads as printed. One that lists none:
    the printed entry holds the model line as a placeholder to fill, and loading it unfilled
    names that line's key and exactly what to write; filled as told, it loads."""
    from spar.endpoint.discover import Found

    listed = endpoint_offers([Found("ollama", "http://127.0.0.1:11434/v1", "", ["qwen3-coder:30b"])], "spar.toml")
    _path, cfg = _pasted(tmp_path, listed)
    ollama = cfg.reviewers[1]
    assert (ollama.name, ollama.preset, ollama.model) == ("ollama", "openai-compatible", "qwen3-coder:30b")

    bare = endpoint_offers([Found("vllm", "http://127.0.0.1:8000/v1")], "spar.toml")
    with pytest.raises(ConfigError) as raised:
        _pasted(tmp_path, bare)
    path = tmp_path / "spar.toml"
    entry_line = path.read_text().splitlines().index("[[reviewers]]", 4) + 1
    assert raised.value.message == (
        f'{path}:{entry_line}: reviewer "vllm": preset "openai-compatible" needs model: add model = "NAME" with '
        "the name of a model the endpoint serves (its GET /models lists them; spar doctor checks it), or "
        'allowed_models = ["NAME", ...], from which --model picks')
    filled = bare.replace('# model = "NAME"', 'model = "qwen2.5-coder"')
    assert filled != bare
    _path, cfg = _pasted(tmp_path, filled)
    assert cfg.reviewers[1].model == "qwen2.5-coder"
