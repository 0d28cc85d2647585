"""Run arguments that change the applied configuration: `--reviewers`,
`--model`, `--effort` (G25) and `--check-path` (G24). Pure: no I/O."""

from __future__ import annotations

from dataclasses import replace
from typing import Protocol

from spar.config.checks import name_problem, value_problem
from spar.config.model import PRESETS, AppliedConfig, ReviewerConfig
from spar.errors import ConfigError, Refused, UsageError, quote
from spar.globs import glob_problem, normalize_glob
from spar.whitespace import trim

# which presets take --model / --effort, and the allowed-list attribute for each
_KEY_PRESETS = {"model": ("claude", "codex", "agy", "openai-compatible"),
                "effort": ("claude", "codex", "openai-compatible")}


def parse_reviewers_list(text: str) -> list[str]:
    """Comma list, items trimmed, empties skipped; nothing left = native alone.

    Trimming is of Unicode whitespace as Go's strings.TrimSpace (clean-review's
    rule): U+001C..U+001F are not whitespace there, although str.strip() removes them."""
    names = [trim(item) for item in text.split(",")]
    names = [n for n in names if n]
    return names or ["native"]


def split_assignment(option: str, raw: str) -> tuple[str, str]:
    """`NAME=VALUE` split at the first `=`; a missing `=` or empty name is a usage error."""
    name, sep, value = raw.partition("=")
    if not sep:
        raise UsageError(f"{option} {quote(raw)}: expected NAME=VALUE")
    if name == "":
        raise UsageError(f"{option} {quote(raw)}: the reviewer name before '=' is empty")
    return name, value


def select_reviewers(cfg: AppliedConfig, reviewers_arg: str | None, models: list[str],
                     efforts: list[str]) -> AppliedConfig:
    """Apply `--reviewers`, then every `--model` and `--effort` (G25).

    Usage errors (64) for the shape of every `--model`/`--effort` come before
    any refusal (65)."""
    model_args = [split_assignment("--model", raw) for raw in models]
    effort_args = [split_assignment("--effort", raw) for raw in efforts]

    reviewers = list(cfg.reviewers)
    if reviewers_arg is not None:
        reviewers = _pick(cfg, parse_reviewers_list(reviewers_arg))

    for key, args in (("model", model_args), ("effort", effort_args)):
        done: set[str] = set()
        for name, value in args:
            where = f"--{key} {quote(name)}={quote(value)}"
            index = next((i for i, r in enumerate(reviewers) if r.name == name), None)
            if index is None:
                raise Refused(f"{where}: reviewer {quote(name)} is not in this run")
            r = reviewers[index]
            if r.preset not in _KEY_PRESETS[key]:
                raise Refused(f"{where}: preset {quote(r.preset)} has no {key}")
            written, allowed = _user_settings(r, key)
            if written:
                raise Refused(f"{where}: the user configuration already sets {key} for reviewer {quote(name)}")
            if name in done:
                raise Refused(f"{where}: --{key} given twice for reviewer {quote(name)}")
            done.add(name)
            problem = value_problem(value)
            if problem:
                raise Refused(f"{where}: the value {problem}")
            if allowed is not None and value not in allowed:
                raise Refused(f"{where}: not in allowed_{key}s ({', '.join(quote(a) for a in allowed)})")
            reviewers[index] = r.with_changes(**{key: value})
    return replace(cfg, reviewers=reviewers)


def _user_settings(r: ReviewerConfig, key: str) -> tuple[bool, list[str] | None]:
    """Whether the user file wrote `key` (model or effort) for the reviewer, and the values it allows."""
    if key == "model":
        return r.model_written, r.allowed_models
    return r.effort_written, r.allowed_efforts


def _pick(cfg: AppliedConfig, names: list[str]) -> list[ReviewerConfig]:
    picked: list[ReviewerConfig] = []
    seen: set[str] = set()
    for name in names:
        problem = name_problem(name)
        if problem:
            raise ConfigError("--reviewers", None, f"{quote(name)} {problem}")
        if name.lower() in seen:
            raise ConfigError("--reviewers", None, f"{quote(name)} is a duplicate (names are compared ignoring case)")
        seen.add(name.lower())
        configured = cfg.reviewer(name)  # literal match (G20)
        if configured is not None:
            picked.append(configured)
        elif name in PRESETS and name != "command":
            # a preset by name, with the user file's top-level timeout (G19)
            picked.append(ReviewerConfig(name=name, preset=name, timeout_seconds=cfg.timeout_seconds,
                                         max_findings=cfg.max_findings, source="--reviewers"))
        else:
            raise ConfigError("--reviewers", None,
                              f"{quote(name)} is neither a configured reviewer nor a preset "
                              f"(claude, codex, agy, native)")
    return picked


def add_check_paths(cfg: AppliedConfig, globs: list[str]) -> AppliedConfig:
    """`--check-path` globs appended to the configured ones (G24); a bad one is refused."""
    added = []
    for glob in globs:
        problem = glob_problem(glob)
        if problem:
            raise Refused(f"--check-path {quote(glob)}: {problem}")
        added.append(normalize_glob(glob))
    return replace(cfg, check_paths=list(cfg.check_paths) + added)


class Selection(Protocol):
    """The selection options of `spar run` and `spar config` (argparsing.add_selection_options)."""

    reviewers: str | None
    models: list[str]
    efforts: list[str]
    check_paths: list[str]


def apply_selection(cfg: AppliedConfig, args: Selection) -> AppliedConfig:
    """`--reviewers`, `--model`, `--effort`, then `--check-path`, in the one order both commands use."""
    cfg = select_reviewers(cfg, args.reviewers, args.models, args.efforts)
    return add_check_paths(cfg, args.check_paths)
