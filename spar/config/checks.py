"""Checks of parsed configuration files (G17, G19–G24), without I/O.

Each check walks a `LocatedDoc` in file order and raises `ConfigError` at the
offending key's own line for the first problem. Rule documents are only
checked here as text (G23 shape); whether they are readable files inside the
repository is `load.py`'s job, since that needs the disk.
"""

from __future__ import annotations

import math
import posixpath
import re
import unicodedata
import urllib.parse
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from spar.config.model import (
    ANGLES,
    DEFAULT_CAPS,
    DEFAULT_MAX_COPY_BYTES,
    DEFAULT_MAX_FINDINGS,
    DEFAULT_PACKET,
    DEFAULT_REVIEWERS,
    DEFAULT_TIMEOUT,
    ENDPOINT,
    PACKET_KINDS,
    PRESETS,
    ReviewerConfig,
    VerifyConfig,
    plain_http_elsewhere,
)
from spar.config.toml_positions import KeyPath, LocatedDoc
from spar.errors import ConfigError, quote
from spar.globs import glob_problem, normalize_glob
from spar.hostlist import entry_problem

# a reviewer entry's error for one of its keys; a project key's error
KeyedError = Callable[[str, str], ConfigError]
MessageError = Callable[[str], ConfigError]

# --- names (G20) and values (G25) -------------------------------------------

NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_ROUND_FILES = ("round.json", "packet.md", "schema.json", "findings.json", "ledger.jsonl",
                "summary.md", "waivers.jsonl", "workspace", "verifications.json", "verify")
RESERVED_NAMES = frozenset(_ROUND_FILES + tuple(n + ".tmp" for n in _ROUND_FILES))


def name_problem(name: str) -> str | None:
    """Why `name` cannot be a reviewer name (G20), or None."""
    if NAME_RE.fullmatch(name) is None:
        return "is not a valid reviewer name (letters, digits, '.', '_', '-'; first a letter or digit; at most 64)"
    if name.lower() in RESERVED_NAMES:
        return "is reserved (spar writes a file or folder of that name in the round folder)"
    return None


def value_problem(value: str) -> str | None:
    """Why `value` cannot be passed as a model or effort (G25 value format), or None."""
    if value == "":
        return "is empty"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "is not valid UTF-8"
    if value.startswith("-"):
        return "starts with '-'"
    for ch in value:
        if ch.isspace() or unicodedata.category(ch) == "Cc":
            return "holds whitespace or a control character"
    return None


# --- keys ---------------------------------------------------------------------

USER_KEYS = ("timeout_seconds", "max_findings", "max_copy_bytes", "reviewers", "env_passthrough", "verify",
             "sandbox")
SANDBOX_MODES = ("auto", "required", "off")
VERIFY_KEYS = ("reviewers", "max_findings", "max_cost_usd")
ENV_ITEM = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\*?")  # a variable name, or a prefix ending in *
PROJECT_KEYS = ("rules", "check_paths", "angles", "caps", "packet")
CAP_NAMES = tuple(DEFAULT_CAPS)  # plan, plan_delta, code
FORBIDDEN_PROJECT_KEYS = frozenset({
    "reviewers", "preset", "name", "binary", "argv", "model", "fallback_model", "effort",
    "allowed_models", "allowed_efforts", "timeout_seconds", "max_budget_usd", "max_findings",
    "unreachable_seconds", "base_url", "api_key_env", "input_usd_per_million", "output_usd_per_million", "vendor",
    "allow_hosts",
    "allow_plain_http",
})
_COMMON = frozenset({"name", "preset", "timeout_seconds", "max_findings", "allow_hosts"})
_CLI = _COMMON | {"model", "fallback_model", "binary", "allowed_models"}
PRESET_KEYS: dict[str, frozenset[str]] = {
    "claude": _CLI | {"effort", "allowed_efforts", "max_budget_usd", "unreachable_seconds"},
    "codex": _CLI | {"effort", "allowed_efforts", "unreachable_seconds"},
    "agy": _CLI,  # agy has no effort
    "native": _COMMON - {"allow_hosts"},  # it runs nothing
    "command": _COMMON | {"argv"},
    ENDPOINT: (_CLI - {"binary"}) | {"effort", "allowed_efforts", "base_url", "api_key_env",
                                     "input_usd_per_million", "output_usd_per_million", "vendor",
                                     "allow_plain_http"},
}
REVIEWER_KEYS = frozenset().union(*PRESET_KEYS.values())


def show(value: object) -> str:
    """A TOML/JSON value as a message shows it: strings with %q, others by kind."""
    if isinstance(value, str):
        return quote(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "a table"
    return f"a {type(value).__name__} value"  # dates and times


def is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


# --- user file ----------------------------------------------------------------

@dataclass
class UserPart:
    """What the user configuration file gives."""

    timeout_seconds: int
    reviewers: list[ReviewerConfig]
    env_passthrough: list[str] | None = None  # None: the network settings instead of a list
    max_findings: int = DEFAULT_MAX_FINDINGS
    verify: VerifyConfig | None = None  # the [verify] table, when there is one
    max_copy_bytes: int = DEFAULT_MAX_COPY_BYTES
    sandbox: str = "auto"  # [sandbox] mode


def default_reviewers(timeout: int, names: Iterable[str] = DEFAULT_REVIEWERS,
                      source: str = "default") -> list[ReviewerConfig]:
    return [ReviewerConfig(name=n, preset=n, timeout_seconds=timeout, source=source) for n in names]


def check_user(doc: LocatedDoc) -> UserPart:
    data = doc.data
    for key in data:
        if key not in USER_KEYS:
            hint = " (it belongs in the project configuration .jaekit/spar.toml)" if key in PROJECT_KEYS else ""
            raise ConfigError(doc.file, doc.line((key,)), f"unknown key {quote(key)}{hint}")
    timeout = DEFAULT_TIMEOUT
    if "timeout_seconds" in data:
        timeout = _positive_int(doc, ("timeout_seconds",), data["timeout_seconds"], "timeout_seconds")
    passthrough = _env_passthrough(doc, data["env_passthrough"]) if "env_passthrough" in data else None
    cap = DEFAULT_MAX_FINDINGS
    if "max_findings" in data:
        cap = _positive_int(doc, ("max_findings",), data["max_findings"], "max_findings")
    part = _user_reviewers(doc, data, timeout)
    part.env_passthrough, part.max_findings = passthrough, cap
    for r in part.reviewers:  # the top-level cap, for every reviewer that sets none of its own
        if not r.max_findings_written:
            r.max_findings = cap
    if "verify" in data:
        part.verify = _verify(doc, data["verify"], part.reviewers)
    if "max_copy_bytes" in data:
        part.max_copy_bytes = _positive_int(doc, ("max_copy_bytes",), data["max_copy_bytes"], "max_copy_bytes")
    if "sandbox" in data:
        part.sandbox = _sandbox(doc, data["sandbox"])
    return part


def _sandbox(doc: LocatedDoc, value: object) -> str:
    """`[sandbox]`: `mode`, one of SANDBOX_MODES (the only key)."""
    if not isinstance(value, dict):
        raise ConfigError(doc.file, doc.line(("sandbox",)), f"sandbox must be a table ([sandbox]), got {show(value)}")
    for key in value:
        if key != "mode":
            raise ConfigError(doc.file, doc.line(("sandbox", key)),
                              f"unknown key {quote('sandbox.' + key)} (the key is mode)")
    mode = value.get("mode", "auto")
    if mode not in SANDBOX_MODES:
        raise ConfigError(doc.file, doc.line(("sandbox", "mode")),
                          f"sandbox.mode must be one of {', '.join(map(quote, SANDBOX_MODES))}, got {show(mode)}")
    return str(mode)


def _verify(doc: LocatedDoc, value: object, reviewers: list[ReviewerConfig]) -> VerifyConfig:
    """`[verify]`: `reviewers` names configured reviewers that run a program (each once);
    `max_findings` an integer > 0 and `max_cost_usd` a number >= 0, both optional."""
    if not isinstance(value, dict):
        raise ConfigError(doc.file, doc.line(("verify",)), f"verify must be a table ([verify]), got {show(value)}")
    for key in value:
        if key not in VERIFY_KEYS:
            raise ConfigError(doc.file, doc.line(("verify", key)),
                              f"unknown key {quote('verify.' + key)} (the keys are {', '.join(VERIFY_KEYS)})")
    if "reviewers" not in value:
        raise ConfigError(doc.file, doc.line(("verify",)), "verify.reviewers is required: the reviewers that verify")
    out = VerifyConfig(reviewers=_verifiers(doc, value["reviewers"], reviewers),
                       source=f"{doc.file}:{doc.line(('verify',))}")
    if "max_findings" in value:
        out.max_findings = _positive_int(doc, ("verify", "max_findings"), value["max_findings"],
                                         "verify.max_findings")
    if "max_cost_usd" in value:
        cost = value["max_cost_usd"]
        if isinstance(cost, bool) or not isinstance(cost, (int, float)) or not math.isfinite(cost) or cost < 0:
            raise ConfigError(doc.file, doc.line(("verify", "max_cost_usd")),
                              f"verify.max_cost_usd must be a number of US dollars, 0 or more, got {show(cost)}")
        out.max_cost_usd = cost
    return out


def _verifiers(doc: LocatedDoc, value: object, reviewers: list[ReviewerConfig]) -> list[ReviewerConfig]:
    def err(message: str) -> ConfigError:
        return ConfigError(doc.file, doc.line(("verify", "reviewers")), message)

    names = _str_list(err, "verify.reviewers", value)
    if not names:
        raise err("verify.reviewers must name at least one reviewer")
    by_name = {r.name: r for r in reviewers}
    out: list[ReviewerConfig] = []
    for n, name in enumerate(names, 1):
        r = by_name.get(name)
        if r is None:
            known = ", ".join(quote(k) for k in by_name) or "none"
            raise err(f"verify.reviewers item {n} {quote(name)} is not a configured reviewer (reviewers: {known})")
        if r.preset == "native":
            raise err(f"verify.reviewers item {n} {quote(name)} has preset \"native\", which runs no program "
                      "(a verifier must answer while the round runs)")
        if name in names[: n - 1]:
            raise err(f"verify.reviewers item {n} {quote(name)} is given twice")
        out.append(r)
    return out


def _env_passthrough(doc: LocatedDoc, value: object) -> list[str]:
    """An array of variable names, each exact or a prefix ending in `*`; no duplicates."""
    def err(message: str) -> ConfigError:
        return ConfigError(doc.file, doc.line(("env_passthrough",)), message)

    items = _str_list(err, "env_passthrough", value)
    for n, item in enumerate(items, 1):
        if not ENV_ITEM.fullmatch(item):
            raise err(f"env_passthrough item {n} {quote(item)} is not a variable name "
                      "(letters, digits, _; not starting with a digit; optionally ending in *)")
        if item in items[: n - 1]:
            raise err(f"env_passthrough item {n} {quote(item)} is given twice")
    return list(items)


def _user_reviewers(doc: LocatedDoc, data: dict[str, Any], timeout: int) -> UserPart:
    if "reviewers" not in data:
        return UserPart(timeout, default_reviewers(timeout))
    entries = data["reviewers"]
    if not isinstance(entries, list):
        raise ConfigError(doc.file, doc.line(("reviewers",)),
                          f"reviewers must be an array of tables ([[reviewers]]), got {show(entries)}")
    if not entries:  # `reviewers = []`: native alone, as for an empty list elsewhere (G18, G25)
        return UserPart(timeout, default_reviewers(timeout, ("native",), f"{doc.file}:{doc.line(('reviewers',))}"))
    reviewers: list[ReviewerConfig] = []
    seen: dict[str, int] = {}  # lower-case name -> entry number
    for index, entry in enumerate(entries):
        r = _check_reviewer(doc, index, entry, timeout)
        where = ("reviewers", index, "name") if "name" in entry else ("reviewers", index)
        first = seen.get(r.name.lower())
        if first is not None:
            implicit = "" if "name" in entry else " (the preset name; name is not set)"
            raise ConfigError(doc.file, doc.line(where),
                              f"reviewer name {quote(r.name)}{implicit} duplicates reviewer entry {first} "
                              f"(names are compared ignoring case)")
        seen[r.name.lower()] = index + 1
        reviewers.append(r)
    return UserPart(timeout, reviewers)


def _check_reviewer(doc: LocatedDoc, index: int, entry: object, timeout: int) -> ReviewerConfig:
    base = ("reviewers", index)
    label = f"reviewer entry {index + 1}"
    if not isinstance(entry, dict):
        raise ConfigError(doc.file, doc.line(base), f"{label} must be a table, got {show(entry)}")
    preset = _entry_preset(doc, base, label, entry)
    name = entry.get("name", preset)
    if isinstance(name, str) and name_problem(name) is None:
        label = f"reviewer {quote(name)}"  # messages about the other keys name the reviewer
    err = _entry_error(doc, base, label)
    r = ReviewerConfig(name=preset, preset=preset, timeout_seconds=timeout,
                       source=f"{doc.file}:{doc.line(base)}")
    for key, value in entry.items():
        if key not in REVIEWER_KEYS:
            raise err(key, f"unknown key {quote(key)}")
        if key not in PRESET_KEYS[preset]:
            raise err(key, f"key {quote(key)} is not used by preset {quote(preset)}")
        if key == "timeout_seconds":
            r.timeout_seconds = _positive_int(doc, base + (key,), value, f"{label}: timeout_seconds")
        elif key == "unreachable_seconds":
            r.unreachable_seconds = _positive_int(doc, base + (key,), value, f"{label}: unreachable_seconds")
        elif key == "max_findings":
            r.max_findings = _positive_int(doc, base + (key,), value, f"{label}: max_findings")
            r.max_findings_written = True
        else:
            _set_reviewer_key(err, r, key, value)
    _check_key_pairs(doc, base, label, entry)
    if r.preset == ENDPOINT and not r.model and r.allowed_models:
        r.model = r.allowed_models[0]  # an endpoint has no default model: the first allowed one, unless --model
    return r


def _entry_error(doc: LocatedDoc, base: KeyPath, label: str) -> KeyedError:
    """Errors about one key of a reviewer entry, at that key's line."""
    def err(key: str, message: str) -> ConfigError:
        return ConfigError(doc.file, doc.line(base + (key,)), f"{label}: {message}")

    return err


def _entry_preset(doc: LocatedDoc, base: KeyPath, label: str, entry: dict[str, Any]) -> str:
    """The entry's preset, which must be there and be one Spar knows."""
    if "preset" not in entry:
        raise ConfigError(doc.file, doc.line(base), f"{label}: preset is required (one of {', '.join(PRESETS)})")
    preset = entry["preset"]
    if not isinstance(preset, str) or preset not in PRESETS:
        err = _entry_error(doc, base, label)
        raise err("preset", f"preset must be one of {', '.join(PRESETS)}, got {show(preset)}")
    return preset


def _set_reviewer_key(err: KeyedError, r: ReviewerConfig, key: str, value: object) -> None:
    """Check one key's value (not preset or timeout_seconds) and set it on `r`."""
    if key == "name":
        if not isinstance(value, str):
            raise err(key, f"name must be a string, got {show(value)}")
        problem = name_problem(value)
        if problem:
            raise err(key, f"name {quote(value)} {problem}")
        r.name = value
    elif key == "model":
        model = _string(err, key, value)
        if model == "" and r.preset == ENDPOINT:
            raise err(key, f"model must not be empty: {ENDPOINT_MODEL}")
        if model == "":
            raise err(key, "model must not be empty (leave the key out for the CLI's default model)")
        r.model, r.model_written = model, True
    elif key == "effort":
        r.effort, r.effort_written = _string(err, key, value), True
    elif key in ("fallback_model", "binary"):
        setattr(r, key, _string(err, key, value))
    elif key == "argv":
        r.argv = _argv(err, value)
    elif key == "max_budget_usd":
        r.max_budget_usd = _budget(err, value)
    elif key in ("allowed_models", "allowed_efforts"):
        setattr(r, key, _allowed(err, key, value))
    elif key == "allow_hosts":
        r.allow_hosts = _hosts(err, key, value)
    else:
        _set_endpoint_key(err, r, key, value)


def _set_endpoint_key(err: KeyedError, r: ReviewerConfig, key: str, value: object) -> None:
    """The keys only openai-compatible takes: its endpoint, key variable, prices and vendor."""
    if key == "base_url":
        r.base_url = _base_url(err, _string(err, key, value))
    elif key == "api_key_env":
        name = _string(err, key, value)
        if not ENV_NAME.fullmatch(name):
            raise err(key, f"api_key_env {quote(name)} is not a variable name (the key itself never goes "
                      "in a file: name the environment variable that holds it)")
        r.api_key_env = name
    elif key in ("input_usd_per_million", "output_usd_per_million"):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            raise err(key, f"{key} must be a number of US dollars, 0 or more, got {show(value)}")
        setattr(r, key, value)
    elif key == "allow_plain_http":
        if not isinstance(value, bool):
            raise err(key, f"allow_plain_http must be true or false, got {show(value)}")
        r.allow_plain_http = value
    elif key == "vendor":
        vendor = _string(err, key, value)
        problem = value_problem(vendor)
        if problem:
            raise err(key, f"vendor {quote(vendor)} {problem}")
        r.vendor = vendor


# what an openai-compatible entry without a model must add (it has no default model)
ENDPOINT_MODEL = ('add model = "NAME" with the name of a model the endpoint serves (its GET /models lists them; '
                  'spar doctor checks it), or allowed_models = ["NAME", ...], from which --model picks')
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _base_url(err: KeyedError, url: str) -> str:
    """An http(s) URL with a host, no user or password in it, no query or fragment."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise err("base_url", f"base_url {quote(url)} must be an http:// or https:// URL with a host "
                  "(e.g. https://api.openai.com/v1 or http://127.0.0.1:11434/v1)")
    if parts.username is not None or parts.password is not None:
        raise err("base_url", f"base_url {quote(url)} holds a user or password: put the key in an "
                  "environment variable and name it in api_key_env")
    if parts.query or parts.fragment:
        raise err("base_url", f"base_url {quote(url)} must not have a query or fragment")
    try:
        parts.port  # noqa: B018 - raises on a port that is not a number
    except ValueError:
        raise err("base_url", f"base_url {quote(url)} has a port that is not a number") from None
    return url.rstrip("/")


def _check_key_pairs(doc: LocatedDoc, base: KeyPath, label: str, entry: dict[str, Any]) -> None:
    """Keys that need or exclude each other within one entry."""
    if entry["preset"] == "command" and "argv" not in entry:
        raise ConfigError(doc.file, doc.line(base), f"{label}: preset \"command\" needs argv")
    if entry["preset"] == ENDPOINT:
        for key in ("base_url", "model"):
            if key not in entry and not (key == "model" and "allowed_models" in entry):
                also = f": {ENDPOINT_MODEL}" if key == "model" else ""
                raise ConfigError(doc.file, doc.line(base), f"{label}: preset \"{ENDPOINT}\" needs {key}{also}")
    if (entry["preset"] == ENDPOINT and entry.get("api_key_env") and isinstance(entry.get("base_url"), str)
            and plain_http_elsewhere(entry["base_url"]) and entry.get("allow_plain_http") is not True):
        raise _entry_error(doc, base, label)("base_url", plain_http_refusal(entry["base_url"], entry["api_key_env"]))
    for one, many in (("model", "allowed_models"), ("effort", "allowed_efforts")):
        if one in entry and many in entry:
            later = max((one, many), key=lambda k: doc.line(base + (k,)))
            raise _entry_error(doc, base, label)(
                later, f"{one} and {many} cannot both be set (the allowed list is for --{one})")


def plain_http_refusal(url: str, key_env: object) -> str:
    return (f"base_url {quote(url)} would send the key in {quote(str(key_env))} unencrypted (http://) to a host "
            "that is not this machine, readable by anyone on the way: use https://, or, if that network is "
            "trusted, set allow_plain_http = true in this entry (each run then warns)")


def _string(err: KeyedError, key: str, value: object) -> str:
    if not isinstance(value, str):
        raise err(key, f"{key} must be a string, got {show(value)}")
    if "\x00" in value:  # every one of these ends up as a program argument, which cannot hold NUL
        raise err(key, f"{key} {quote(value)} holds a NUL character")
    return value


def _argv(err: KeyedError, value: object) -> list[str]:
    if not isinstance(value, list) or not value:
        got = show(value) if value != [] else "an empty array"
        raise err("argv", f"argv must be a non-empty array of strings, got {got}")
    for n, item in enumerate(value, 1):
        if not isinstance(item, str):
            raise err("argv", f"argv item {n} must be a string, got {show(item)}")
        if item == "":
            raise err("argv", f"argv item {n} is empty")
        if "\x00" in item:
            raise err("argv", f"argv item {n} {quote(item)} holds a NUL character")
    return list(value)


def _budget(err: KeyedError, value: object) -> int | float:
    """A positive, finite number of US dollars (TOML integer or float)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise err("max_budget_usd", f"max_budget_usd must be a positive number of US dollars, got {show(value)}")
    return value


def _allowed(err: KeyedError, key: str, value: object) -> list[str]:
    if not isinstance(value, list):
        raise err(key, f"{key} must be an array of strings, got {show(value)}")
    if not value:
        raise err(key, f"{key} must not be empty")
    for n, item in enumerate(value, 1):
        if not isinstance(item, str):
            raise err(key, f"{key} item {n} must be a string, got {show(item)}")
        problem = value_problem(item)
        if problem:
            raise err(key, f"{key} item {n} {quote(item)} {problem}")
    return list(value)


def _hosts(err: KeyedError, key: str, value: object) -> list[str]:
    """allow_hosts: host names (`name`, `name:PORT`, `*.domain`, an IP address), lower case."""
    hosts = _allowed(err, key, value)
    for n, item in enumerate(hosts, 1):
        problem = entry_problem(item)
        if problem:
            raise err(key, f"{key} item {n} {quote(item)} {problem}")
    return [h.strip().lower() for h in hosts]


def _positive_int(doc: LocatedDoc, path: KeyPath, value: object, what: str) -> int:
    if not is_int(value) or value <= 0:
        raise ConfigError(doc.file, doc.line(path), f"{what} must be a positive integer, got {show(value)}")
    return value


# --- project file ---------------------------------------------------------------

@dataclass
class ProjectPart:
    """What the project configuration file gives."""

    rules: list[str]
    check_paths: list[str]
    angles: list[str]
    caps: dict[str, int]
    packet: dict[str, str] = field(default_factory=lambda: dict(DEFAULT_PACKET))


def check_project(doc: LocatedDoc) -> ProjectPart:
    forbidden = _forbidden_keys(doc.data, ())
    if forbidden:
        path = min(forbidden, key=doc.line)
        raise ConfigError(doc.file, doc.line(path),
                          f"key {quote(str(path[-1]))} is not allowed in the project configuration "
                          f"(only the user configuration chooses reviewers, programs, models and timeouts)")
    data = doc.data
    for key in data:
        if key not in PROJECT_KEYS:
            hint = " (it belongs in the user configuration)" if key in USER_KEYS else ""
            raise ConfigError(doc.file, doc.line((key,)), f"unknown key {quote(key)}{hint}")
    part = ProjectPart(rules=[], check_paths=[], angles=list(ANGLES), caps=dict(DEFAULT_CAPS))
    for key, value in data.items():
        def err(message: str, key: str = key) -> ConfigError:
            return ConfigError(doc.file, doc.line((key,)), message)

        if key == "rules":
            part.rules = [_rule(err, n, item) for n, item in enumerate(_str_list(err, key, value), 1)]
        elif key == "check_paths":
            for n, item in enumerate(_str_list(err, key, value), 1):
                problem = glob_problem(item)
                if problem:
                    raise err(f"check_paths item {n} {quote(item)}: {problem}")
                part.check_paths.append(normalize_glob(item))
        elif key == "angles":
            part.angles = _angles(err, _str_list(err, key, value))
        elif key == "caps":
            part.caps = _caps(doc, value)
        elif key == "packet":
            part.packet = _packet(doc, value)
    return part


def _forbidden_keys(value: object, path: KeyPath) -> list[KeyPath]:
    found = []
    if isinstance(value, dict):
        for key, item in value.items():
            if key in FORBIDDEN_PROJECT_KEYS:
                found.append(path + (key,))
            found += _forbidden_keys(item, path + (key,))
    elif isinstance(value, list):
        for n, item in enumerate(value):
            found += _forbidden_keys(item, path + (n,))
    return found


def _str_list(err: MessageError, key: str, value: object) -> list[str]:
    if not isinstance(value, list):
        raise err(f"{key} must be an array of strings, got {show(value)}")
    for n, item in enumerate(value, 1):
        if not isinstance(item, str):
            raise err(f"{key} item {n} must be a string, got {show(item)}")
    return value


def _rule(err: MessageError, n: int, item: str) -> str:
    """G23 as text: relative, not leaving through `..`; normalized (`./a` is `a`)."""
    if item == "":
        raise err(f"rules item {n} is empty")
    if item.startswith("/"):
        raise err(f"rules item {n} {quote(item)} is an absolute path (rules are repository-relative)")
    norm = posixpath.normpath(item)
    if norm == ".." or norm.startswith("../"):
        raise err(f"rules item {n} {quote(item)} leaves the repository through '..'")
    if norm == ".":
        raise err(f"rules item {n} {quote(item)} is the repository folder, not a file")
    return norm


def _angles(err: MessageError, items: list[str]) -> list[str]:
    if not items:
        raise err("angles must name at least one angle")
    seen = set()
    for n, item in enumerate(items, 1):
        if item not in ANGLES:
            raise err(f"angles item {n} {quote(item)} is not an angle (one of {', '.join(ANGLES)})")
        if item in seen:
            raise err(f"angles item {n} {quote(item)} is a duplicate")
        seen.add(item)
    return [a for a in ANGLES if a in seen]  # the fixed order (G22)


def _caps(doc: LocatedDoc, value: object) -> dict[str, int]:
    if not isinstance(value, dict):
        raise ConfigError(doc.file, doc.line(("caps",)), f"caps must be a table, got {show(value)}")
    caps = dict(DEFAULT_CAPS)
    for key, item in value.items():
        line = doc.line(("caps", key))
        if key not in CAP_NAMES:
            raise ConfigError(doc.file, line, f"unknown key {quote('caps.' + key)} (caps are {', '.join(CAP_NAMES)})")
        if not is_int(item) or item < 0:
            raise ConfigError(doc.file, line, f"caps.{key} must be an integer of 0 or more, got {show(item)}")
        caps[key] = item
    return caps


def _packet(doc: LocatedDoc, value: object) -> dict[str, str]:
    """`[packet]`: per stage (the keys of `[caps]`), `full` or `incremental`."""
    if not isinstance(value, dict):
        raise ConfigError(doc.file, doc.line(("packet",)), f"packet must be a table, got {show(value)}")
    kinds = dict(DEFAULT_PACKET)
    for key, item in value.items():
        line = doc.line(("packet", key))
        if key not in CAP_NAMES:
            raise ConfigError(doc.file, line,
                              f"unknown key {quote('packet.' + key)} (the stages are {', '.join(CAP_NAMES)})")
        if item not in PACKET_KINDS:
            raise ConfigError(doc.file, line,
                              f"packet.{key} must be one of {', '.join(PACKET_KINDS)}, got {show(item)}")
        kinds[key] = item
    return kinds


__all__ = [
    "FORBIDDEN_PROJECT_KEYS",
    "NAME_RE",
    "PRESET_KEYS",
    "RESERVED_NAMES",
    "ProjectPart",
    "UserPart",
    "check_project",
    "check_user",
    "default_reviewers",
    "name_problem",
    "show",
    "value_problem",
]
