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

A reviewer whose preset reaches no service of its own (`command`) gets the
proxy variables of `NETWORK` without the `user:password@` of their URLs: the
proxy's address, never its credential. Named in `env_passthrough`, a proxy
variable reaches it whole.

Everything else is withheld: spar's own `SPAR_*` variables, the caller's
unrelated secrets (a CI job's tokens, cloud keys), `GIT_*` settings. Pure
function; `spar run` applies it per reviewer and `spar doctor` checks each CLI
with what its reviewer would get.

`credential_values` says which values of an environment are credentials, which
Spar masks in whatever a reviewer or a tool prints (spar/proc/masking.py).
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Iterable, Mapping

ALWAYS = ("PATH", "HOME", "USER", "LOGNAME", "SHELL", "TMPDIR", "TZ", "LANG", "LC_*")
# how a CLI reaches its service through the user's network: proxies and certificate bundles
# (upper and lower case: curl, node, python and go each read their own spelling)
NETWORK = ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "NO_PROXY", "https_proxy", "http_proxy", "all_proxy",
           "no_proxy", "SSL_CERT_FILE", "SSL_CERT_DIR", "NODE_EXTRA_CA_CERTS", "REQUESTS_CA_BUNDLE",
           "CURL_CA_BUNDLE")
# of NETWORK, the variables that name a file or folder (bound into a sandbox read-only)
NETWORK_FILES = ("SSL_CERT_FILE", "SSL_CERT_DIR", "NODE_EXTRA_CA_CERTS", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE")
# of NETWORK, the variables that hold a proxy URL (which may hold a user name and password)
PROXIES = ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "https_proxy", "http_proxy", "all_proxy")
# a variable whose name has one of these as a part (or as the end of a part: APIKEY, OAUTH;
# a plural too) holds a credential; any other (a model, a base URL) is a setting
CREDENTIAL_WORDS = ("key", "token", "secret", "password", "passwd", "credential", "auth")
_NAME_PARTS = re.compile(r"[^A-Za-z0-9]+|(?<=[a-z])(?=[A-Z])")  # FOO_BAR, foo-bar, fooBar
# the user:password@ of a URL (scheme-less too, as curl takes a proxy): (user, password)
_USERINFO = re.compile(r"(?:^|://)([^:/@\s]*):([^/@\s]+)@")


def matches(name: str, patterns: Iterable[str]) -> bool:
    """Whether `patterns` (exact names, or prefixes ending in *) name the variable `name`."""
    return any(name.startswith(p[:-1]) if p.endswith("*") else name == p for p in patterns)


def reviewer_env(env: Mapping[str, str], passthrough: list[str] | None,
                 vendor: Iterable[str] = (), *, proxy_credentials: bool = True) -> dict[str, str]:
    """What a reviewer inherits from `env` under the configured `passthrough` (None: the
    network settings), `vendor` being its preset's own variables (`Preset.vendor_env`);
    without `proxy_credentials`, the network settings' proxy URLs lose their password."""
    listed = NETWORK if passthrough is None else tuple(passthrough)
    keep = (*ALWAYS, *listed, *vendor)
    kept = {k: v for k, v in env.items() if matches(k, keep)}
    if passthrough is None and not proxy_credentials:
        kept.update({k: without_userinfo(v) for k, v in kept.items() if k in PROXIES})
    return kept


def without_userinfo(url: str) -> str:
    """`url` without its `user:password@`."""
    return _USERINFO.sub(lambda m: m.group(0)[:m.start(1) - m.start(0)], url)


def is_credential(name: str) -> bool:
    """Whether the variable `name` holds a credential by its name (CREDENTIAL_WORDS)."""
    parts = (p.lower().removesuffix("s") for p in _NAME_PARTS.split(name))
    return any(p.endswith(word) for p in parts for word in CREDENTIAL_WORDS)


def url_passwords(value: str) -> list[str]:
    """The passwords in the URLs of `value` (as written and percent-decoded), and each
    `user:password`."""
    found = []
    for m in _USERINFO.finditer(value):
        found += [m.group(2), urllib.parse.unquote(m.group(2)), f"{m.group(1)}:{m.group(2)}"]
    return found


def credential_values(env: Mapping[str, str], names: Iterable[str] = ()) -> list[str]:
    """The credentials `env` holds: the values of variables named as credentials
    (`is_credential`) or in `names` (an endpoint's api_key_env), and the password of any
    URL in any value (a proxy's)."""
    named = set(names)
    values = [v for k, v in env.items() if k in named or is_credential(k)]
    return values + [p for v in env.values() if "@" in v for p in url_passwords(v)]


__all__ = ["ALWAYS", "CREDENTIAL_WORDS", "NETWORK", "NETWORK_FILES", "PROXIES", "credential_values", "is_credential",
           "matches", "reviewer_env", "url_passwords", "without_userinfo"]
