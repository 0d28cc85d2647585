"""Spar configuration: sources (G16, G18), TOML with key lines (G17), checks
(G19–G24), run arguments (G25) and the applied values with their digest.

The names below are imported on first use (PEP 562): commands that need only
`spar.config.model` (the gate, cap-report and every record reader read STAGES
from it) would otherwise pay for the checks, loader and TOML positions at
start-up (about a third of `spar gate`'s import time)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from spar.config.checks import name_problem, value_problem
    from spar.config.load import load_config, rule_file_problem
    from spar.config.model import (
        ANGLES,
        CAP_KEYS,
        DEFAULT_CAPS,
        DEFAULT_REVIEWERS,
        DEFAULT_TIMEOUT,
        PRESETS,
        STAGES,
        AppliedConfig,
        ReviewerConfig,
        canonical_json,
        sha256_canonical,
    )
    from spar.config.select import (
        add_check_paths,
        apply_selection,
        parse_reviewers_list,
        select_reviewers,
        split_assignment,
    )

_HOME = {
    "spar.config.checks": ("name_problem", "value_problem"),
    "spar.config.load": ("load_config", "rule_file_problem"),
    "spar.config.model": ("ANGLES", "CAP_KEYS", "DEFAULT_CAPS", "DEFAULT_REVIEWERS", "DEFAULT_TIMEOUT", "PRESETS",
                          "STAGES", "AppliedConfig", "ReviewerConfig", "canonical_json", "sha256_canonical"),
    "spar.config.select": ("add_check_paths", "apply_selection", "parse_reviewers_list", "select_reviewers",
                           "split_assignment"),
}
_MODULE_OF = {name: module for module, names in _HOME.items() for name in names}


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later look-ups skip this function
    return value


__all__ = [
    "ANGLES",
    "CAP_KEYS",
    "DEFAULT_CAPS",
    "DEFAULT_REVIEWERS",
    "DEFAULT_TIMEOUT",
    "PRESETS",
    "STAGES",
    "AppliedConfig",
    "ReviewerConfig",
    "add_check_paths",
    "apply_selection",
    "canonical_json",
    "load_config",
    "name_problem",
    "parse_reviewers_list",
    "rule_file_problem",
    "select_reviewers",
    "sha256_canonical",
    "split_assignment",
    "value_problem",
]
