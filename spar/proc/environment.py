"""The environment a reviewer starts with (user configuration `env_passthrough`).

A reviewer always gets:

- the variables always passed (`ALWAYS`): `PATH`, `HOME`, `USER`, `LOGNAME`,
  `SHELL`, `TMPDIR`, `TZ`, `LANG` and every `LC_*` — what any CLI needs to run
  and nothing that is a secret;
- the reviewer's own vendor's credentials and settings, which its CLI needs
  (`Preset.vendor_env`: claude `ANTHROPIC_*` `CLAUDE_*`, codex `OPENAI_*`
  `CODEX_*`, agy `GEMINI_*` `GOOGLE_*`; none for command and native), and
  never another vendor's.

Without `env_passthrough` (the default) it also gets `NETWORK`: the proxy and
certificate settings any CLI needs to reach its service through the user's
network. With the list, it gets the variables the list names instead: an exact
name (`HTTPS_PROXY`), or a prefix ending in `*` (`CLAUDE_CODE_*`).

Everything else is withheld: spar's own `SPAR_*` variables, the caller's
unrelated secrets (a CI job's tokens, cloud keys), `GIT_*` settings. Pure
function; `spar run` applies it per reviewer and `spar doctor` checks each CLI
with what its reviewer would get.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

ALWAYS = ("PATH", "HOME", "USER", "LOGNAME", "SHELL", "TMPDIR", "TZ", "LANG", "LC_*")
# how a CLI reaches its service through the user's network: proxies and certificate bundles
# (upper and lower case: curl, node, python and go each read their own spelling)
NETWORK = ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "NO_PROXY", "https_proxy", "http_proxy", "all_proxy",
           "no_proxy", "SSL_CERT_FILE", "SSL_CERT_DIR", "NODE_EXTRA_CA_CERTS", "REQUESTS_CA_BUNDLE",
           "CURL_CA_BUNDLE")
# of NETWORK, the variables that name a file or folder (bound into a sandbox read-only)
NETWORK_FILES = ("SSL_CERT_FILE", "SSL_CERT_DIR", "NODE_EXTRA_CA_CERTS", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE")


def matches(name: str, patterns: Iterable[str]) -> bool:
    """Whether `patterns` (exact names, or prefixes ending in *) name the variable `name`."""
    return any(name.startswith(p[:-1]) if p.endswith("*") else name == p for p in patterns)


def reviewer_env(env: Mapping[str, str], passthrough: list[str] | None,
                 vendor: Iterable[str] = ()) -> dict[str, str]:
    """What a reviewer inherits from `env` under the configured `passthrough` (None: the
    network settings), `vendor` being its preset's own variables (`Preset.vendor_env`)."""
    listed = NETWORK if passthrough is None else tuple(passthrough)
    keep = (*ALWAYS, *listed, *vendor)
    return {k: v for k, v in env.items() if matches(k, keep)}


def vendor_values(env: Mapping[str, str], vendor: Iterable[str]) -> dict[str, str]:
    """The variables of `env` that `vendor` patterns name (a preset's credentials)."""
    patterns = tuple(vendor)
    return {k: v for k, v in env.items() if matches(k, patterns)}


__all__ = ["ALWAYS", "NETWORK", "NETWORK_FILES", "matches", "reviewer_env", "vendor_values"]
