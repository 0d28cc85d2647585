"""`spar config`: print the applied configuration, the files it came from and its digest.

Runs the same configuration checks as `spar run` (G16–G25), with the same run
arguments that change the applied values, so a user can see what a run would use.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from spar import git
from spar.argparsing import add_selection_options, command_parser, start_folder
from spar.config.load import load_config
from spar.config.model import AppliedConfig
from spar.config.select import apply_selection
from spar.errors import EXIT_OK, Refused

DESCRIPTION = """\
Print the applied configuration: the user configuration (first found of
$SPAR_CONFIG, $XDG_CONFIG_HOME/jaekit/spar.toml, ~/.config/jaekit/spar.toml,
clean-review's config.json), the project configuration .jaekit/spar.toml of
the repository holding the current folder (or -C DIR), and the run arguments
given here. Checks are the same as spar run's.

Exit codes: 0 printed; 64 usage error; 65 configuration error or refused
argument (the message names <file>:<line> or the argument)."""

EPILOG = """\
--format json prints one object:
  "repository"  absolute path of the repository root, or null outside a repository
  "config"      the applied values (what round.json keeps as config):
                reviewers (name, preset, timeout_seconds, and by preset model,
                fallback_model, effort, binary, argv, allowed_models,
                allowed_efforts, max_budget_usd when set, unreachable_seconds
                when not 60), timeout_seconds, rules,
                check_paths, angles, caps; verify ({"reviewers": names,
                "max_findings" (default 20), "max_cost_usd" when set: no
                call starts once finished calls cost that much, or once
                one that ran reported no cost}) only when the user
                configuration has a [verify] table
  "digest"      sha256 of the canonical JSON of "config" (round.json config_digest)
  "files"       every configuration file read: {"path", "sha256", "role": "user"|"project"}
  "skipped"     user configuration paths looked at and absent: {"path", "why"}
In the text form, - stands for an empty value: the CLI's default model, no
fallback model, effort not passed, the preset name looked up on PATH."""


def _parser() -> argparse.ArgumentParser:
    p = command_parser("config", DESCRIPTION, EPILOG)
    p.add_argument("--format", choices=("text", "json"), default="text", help="text (default) or json")
    add_selection_options(p)
    p.add_argument("-C", dest="directory", metavar="DIR", help="look for the repository from DIR instead of here")
    return p


def _repository(directory: str | None) -> Path | None:
    start = start_folder("config", directory)
    try:
        return git.repo_root(start)
    except git.GitError as err:
        raise Refused(f"cannot find the repository of {os.path.abspath(start)}: {err}") from None


def applied_config(args: argparse.Namespace) -> tuple[Path | None, AppliedConfig]:
    root = _repository(args.directory)
    cfg = load_config(root)
    return root, apply_selection(cfg, args)


def as_json(root: Path | None, cfg: AppliedConfig) -> dict[str, Any]:
    return {
        "repository": str(root) if root is not None else None,
        "config": cfg.applied_values(),
        "digest": cfg.digest(),
        "files": [dict(f) for f in cfg.files],
        "skipped": [dict(s) for s in cfg.skipped],
    }


def config_text(root: Path | None, cfg: AppliedConfig) -> str:
    def show(value: object) -> str:
        if isinstance(value, list):
            return "[" + ", ".join(json.dumps(v, ensure_ascii=False) for v in value) + "]"
        if value == "":
            return "-"
        return str(value)

    lines = [f"repository       {root if root is not None else '(none: no project configuration)'}", "reviewers"]
    width = max((len(r.name) for r in cfg.reviewers), default=0)
    pwidth = max((len(r.preset) for r in cfg.reviewers), default=0)
    for r in cfg.reviewers:
        extra = [f"{k}={show(v)}" for k, v in r.applied().items() if k not in ("name", "preset")]
        lines.append(f"  {r.name:<{width}}  {r.preset:<{pwidth}}  {'  '.join(extra)}")
    lines += [
        f"timeout_seconds  {cfg.timeout_seconds}",
        f"max_copy_bytes   {cfg.max_copy_bytes} (a larger file of the commits is a note in the workspace copies)",
        f"rules            {', '.join(cfg.rules) or '-'}",
        f"check_paths      {', '.join(cfg.check_paths) or '-'}",
        f"angles           {', '.join(cfg.angles)}",
        "caps             " + "  ".join(f"{k}={v}" for k, v in cfg.caps.items()),
        "packet           " + "  ".join(f"{k}={v}" for k, v in cfg.packet.items()),
        "env_passthrough  " + ("(not set: those always passed, each CLI's vendor's and the network settings)"
                               if cfg.env_passthrough is None else ", ".join(cfg.env_passthrough)
                               or "(only the variables always passed and each CLI's vendor's)"),
        "verify           " + (_verify_text(cfg) or "(not set: findings are not verified)"),
        f"sandbox          mode={cfg.sandbox}",
        "files",
    ]
    lines += [f"  {f['role']:<7}  {f['path']}  sha256 {f['sha256']}" for f in cfg.files] or ["  - (defaults only)"]
    lines.append("skipped")
    lines += [f"  {s['path']}  ({s['why']})" for s in cfg.skipped] or ["  -"]
    lines.append(f"digest           {cfg.digest()}")
    return "\n".join(lines)


def _verify_text(cfg: AppliedConfig) -> str:
    if cfg.verify is None:
        return ""
    values = cfg.verify.applied()
    parts = ["reviewers=" + ", ".join(values.pop("reviewers"))]
    if "max_cost_usd" in values:  # what the bound does with a verifier that reports no cost (codex)
        values["max_cost_usd"] = f"{values['max_cost_usd']} (checked before each call; a call that reports no " \
                                 "cost counts as over it)"
    else:
        values["max_cost_usd"] = "none"
    return "  ".join(parts + [f"{k}={v}" for k, v in values.items()])


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    root, cfg = applied_config(args)
    if args.format == "json":
        sys.stdout.write(json.dumps(as_json(root, cfg), indent=2, ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(config_text(root, cfg) + "\n")
    return EXIT_OK
