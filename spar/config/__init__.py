"""Spar configuration: sources (G16, G18), TOML with key lines (G17), checks
(G19–G24), run arguments (G25) and the applied values with their digest."""

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
