"""The applied configuration as plain data, shared by every command."""

from __future__ import annotations

import hashlib
import ipaddress
import json
import urllib.parse
from dataclasses import dataclass, field, replace
from typing import Any

PRESETS = ("claude", "codex", "agy", "native", "command", "openai-compatible")
ENDPOINT = "openai-compatible"  # the preset that talks to an endpoint itself, not through a CLI
ANGLES = ("criteria", "correctness", "checks", "contracts", "risk")
STAGES = ("plan", "plan-delta", "code")  # CLI / record spelling
CAP_KEYS = {"plan": "plan", "plan-delta": "plan_delta", "code": "code"}  # stage -> config key
DEFAULT_REVIEWERS = ("claude", "codex")
DEFAULT_TIMEOUT = 900
DEFAULT_UNREACHABLE = 60  # seconds a CLI may say it cannot reach its service before Spar gives up
# findings one answer may hold; an answer with more is invalid_output before any is built
DEFAULT_MAX_FINDINGS = 500
# one call per finding (a group's members each): twenty calls cover the defects and hardening
# of a busy round while bounding a round's verification to twenty verifier runs
DEFAULT_VERIFY_MAX_FINDINGS = 20
DEFAULT_CAPS = {"plan": 2, "plan_delta": 2, "code": 3}
# the largest file a round's workspace copies hold (`max_copy_bytes`); a larger one is a
# note saying its size. Source files are kilobytes; the largest ones people review
# (SQLite's 9 MB amalgamation, a bundled or generated file) stay below 16 MiB, while data
# a commit holds compressed (1 GiB of zeros is 1 MB in .git) would fill every round's copy
DEFAULT_MAX_COPY_BYTES = 16 * 1024 * 1024
# what a later round's packet carries per stage ([packet] of the project configuration):
# "full" the whole diff every round, "incremental" the diff since the last round inline
# and the whole diff as workspace/change.diff (spar.round.preparation)
PACKET_KINDS = ("full", "incremental")
DEFAULT_PACKET = {"plan": "full", "plan_delta": "full", "code": "full"}


@dataclass
class ReviewerConfig:
    """One configured reviewer."""

    name: str
    preset: str
    model: str = ""  # "" = the CLI's default model
    fallback_model: str = ""  # "" = no fallback
    effort: str = ""  # "" = not passed
    binary: str = ""  # "" = look up the preset name on PATH
    argv: list[str] = field(default_factory=list)  # command preset only
    timeout_seconds: int = DEFAULT_TIMEOUT
    max_findings: int = DEFAULT_MAX_FINDINGS
    max_budget_usd: int | float | None = None  # claude only: passed as --max-budget-usd
    # claude and codex: seconds of notices saying the CLI cannot reach its service or cannot
    # authenticate, with no model output, after which the attempt ends unavailable
    unreachable_seconds: int = DEFAULT_UNREACHABLE
    allowed_models: list[str] | None = None
    allowed_efforts: list[str] | None = None
    # openai-compatible only: the endpoint, the name of the variable holding its key ("" for
    # none), prices in USD per million tokens (None: cost unknown), and the vendor the
    # verification counts it as ("": the endpoint's host)
    base_url: str = ""
    api_key_env: str = ""
    input_usd_per_million: int | float | None = None
    output_usd_per_million: int | float | None = None
    vendor: str = ""
    # hosts its sandboxed program may reach besides its service (`name`, `name:PORT`, `*.domain`)
    allow_hosts: list[str] = field(default_factory=list)
    allow_plain_http: bool = False  # the key may go unencrypted to an http:// host that is not this machine
    model_written: bool = False  # the user file wrote `model` (so --model is refused)
    effort_written: bool = False
    max_findings_written: bool = False  # the entry set its own max_findings
    source: str = "default"  # "<file>:<line>" of the [[reviewers]] entry, or "default"

    def applied(self) -> dict[str, Any]:
        """Applied values only (what the digest covers)."""
        out = {
            "name": self.name,
            "preset": self.preset,
            "timeout_seconds": self.timeout_seconds,
        }
        if self.preset in ("claude", "codex", "agy"):
            out.update(model=self.model, fallback_model=self.fallback_model, binary=self.binary)
            if self.preset != "agy":
                out["effort"] = self.effort
        if self.preset == "command":
            out["argv"] = list(self.argv)
        if self.preset == ENDPOINT:
            out.update(model=self.model, fallback_model=self.fallback_model, effort=self.effort,
                       base_url=self.base_url, api_key_env=self.api_key_env)
            for key in ("input_usd_per_million", "output_usd_per_million", "vendor"):
                if getattr(self, key) not in (None, ""):
                    out[key] = getattr(self, key)
            if self.allow_plain_http:  # only when set: configurations without it keep their digest
                out["allow_plain_http"] = True
        if self.max_findings != DEFAULT_MAX_FINDINGS:  # only when set: older configurations keep their digest
            out["max_findings"] = self.max_findings
        if self.max_budget_usd is not None:  # only when set: configurations without it keep their digest
            out["max_budget_usd"] = self.max_budget_usd
        if self.unreachable_seconds != DEFAULT_UNREACHABLE:  # likewise: the default keeps every digest
            out["unreachable_seconds"] = self.unreachable_seconds
        if self.allow_hosts:  # only when set: configurations without it keep their digest
            out["allow_hosts"] = list(self.allow_hosts)
        if self.allowed_models is not None:
            out["allowed_models"] = list(self.allowed_models)
        if self.allowed_efforts is not None:
            out["allowed_efforts"] = list(self.allowed_efforts)
        return out

    def vendor_name(self) -> str:
        """The vendor cross-vendor verification counts this reviewer as: its preset, or for an
        openai-compatible endpoint its `vendor`, else the endpoint's host."""
        if self.preset != ENDPOINT:
            return self.preset
        return self.vendor or (urllib.parse.urlsplit(self.base_url).hostname or "").lower() or self.preset

    def key_in_clear(self) -> bool:
        """An endpoint whose key would travel unencrypted off this machine: a key variable
        named and an http:// base_url whose host is not a loopback one."""
        return self.preset == ENDPOINT and bool(self.api_key_env) and plain_http_elsewhere(self.base_url)

    def with_changes(self, **kw: Any) -> ReviewerConfig:
        return replace(self, **kw)


@dataclass
class VerifyConfig:
    """`[verify]` of the user configuration: which reviewers check other vendors' findings."""

    reviewers: list[ReviewerConfig]  # as the user file configures them (no run arguments apply)
    max_findings: int = DEFAULT_VERIFY_MAX_FINDINGS  # most verification calls of one round
    # no call starts once finished calls cost this much, or once one that ran reported no cost
    max_cost_usd: int | float | None = None
    source: str = "default"  # "<file>:<line>" of the table

    def applied(self) -> dict[str, Any]:
        out: dict[str, Any] = {"reviewers": [r.name for r in self.reviewers], "max_findings": self.max_findings}
        if self.max_cost_usd is not None:
            out["max_cost_usd"] = self.max_cost_usd
        return out


@dataclass
class AppliedConfig:
    """The configuration a command applies: every source merged, defaults filled in."""

    reviewers: list[ReviewerConfig]
    timeout_seconds: int = DEFAULT_TIMEOUT
    max_findings: int = DEFAULT_MAX_FINDINGS  # the user file's default for every reviewer
    max_copy_bytes: int = DEFAULT_MAX_COPY_BYTES  # the cap per file of a round's workspace copies
    rules: list[str] = field(default_factory=list)  # repository-relative paths
    check_paths: list[str] = field(default_factory=list)
    angles: list[str] = field(default_factory=lambda: list(ANGLES))
    caps: dict[str, int] = field(default_factory=lambda: dict(DEFAULT_CAPS))
    packet: dict[str, str] = field(default_factory=lambda: dict(DEFAULT_PACKET))
    env_passthrough: list[str] | None = None  # None: the variables always passed, the vendor's and the network settings
    verify: VerifyConfig | None = None  # None: no [verify] table, findings are not verified
    sandbox: str = "auto"  # [sandbox] mode: "auto", "required" or "off"
    files: list[dict[str, Any]] = field(default_factory=list)  # {"path", "sha256", "role": "user"|"project"}
    skipped: list[dict[str, Any]] = field(default_factory=list)  # {"path", "why"}

    def applied_values(self) -> dict[str, Any]:
        out = {
            "reviewers": [r.applied() for r in self.reviewers],
            "timeout_seconds": self.timeout_seconds,
            "rules": list(self.rules),
            "check_paths": list(self.check_paths),
            "angles": list(self.angles),
            "caps": dict(self.caps),
        }
        if self.max_findings != DEFAULT_MAX_FINDINGS:
            out["max_findings"] = self.max_findings
        if self.max_copy_bytes != DEFAULT_MAX_COPY_BYTES:  # likewise: the default keeps every digest
            out["max_copy_bytes"] = self.max_copy_bytes
        if self.packet != DEFAULT_PACKET:  # only when set: configurations without it keep their digest
            out["packet"] = dict(self.packet)
        if self.env_passthrough is not None:  # only when set: configurations without it keep their digest
            out["env_passthrough"] = list(self.env_passthrough)
        if self.verify is not None:  # only when set: configurations without it keep their digest
            out["verify"] = self.verify.applied()
        if self.sandbox != "auto":  # only when set otherwise: configurations without it keep their digest
            out["sandbox"] = {"mode": self.sandbox}
        return out

    def digest(self) -> str:
        return sha256_canonical(self.applied_values())

    def reviewer(self, name: str) -> ReviewerConfig | None:
        for r in self.reviewers:
            if r.name == name:
                return r
        return None


def loopback_host(host: str) -> bool:
    """`localhost` (and names under it) or a loopback address (127.0.0.0/8, ::1)."""
    host = host.lower().strip("[]")
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def plain_http_elsewhere(url: str) -> bool:
    """`url` is http:// (unencrypted) to a host that is not this machine's loopback."""
    parts = urllib.parse.urlsplit(url)
    return parts.scheme.lower() == "http" and not loopback_host(parts.hostname or "")


def canonical_json(value: object) -> bytes:
    """Sorted keys, no spaces, UTF-8: the form every digest in Spar hashes."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def sha256_canonical(value: object) -> str:
    return hashlib.sha256(canonical_json(value)).hexdigest()
