"""Preset registry and the one entry point for reviewer inputs."""

from __future__ import annotations

import importlib
from pathlib import Path

from spar.config.model import PRESETS, ReviewerConfig
from spar.errors import Refused
from spar.round.interface import InputSpec, Preset, reviewer_input

__all__ = ["InputSpec", "Preset", "get_preset", "prepare_input"]


def get_preset(name: str) -> Preset:
    """The preset object for a preset name (`claude`, `codex`, `agy`, `native`, `command`,
    `openai-compatible`)."""
    # only the preset asked for is imported: a round pays for the presets it uses (agy's
    # command grammar alone costs more than a round's own start-up), and no import cycle
    if name not in PRESETS:  # each one a module of this package
        # configuration checks reject unknown presets long before this; reaching here is a caller bug
        raise Refused(f"unknown preset {name!r}")
    # a module name cannot hold `-`: `openai-compatible` is spar/presets/openai_compatible.py
    preset: Preset = importlib.import_module(f"spar.presets.{name.replace('-', '_')}").PRESET
    return preset


def prepare_input(cfg: ReviewerConfig, *, reviewer_dir: Path, packet_text: str, packet_path: Path,
                  standpoint: str | None, standpoints_active: bool, dry_run: bool,
                  memory_text: str = "") -> InputSpec:
    """`reviewer_input` (spar.round.interface) with the preset the registry names for `cfg`."""
    return reviewer_input(get_preset(cfg.preset), cfg, reviewer_dir=reviewer_dir, packet_text=packet_text,
                          packet_path=packet_path, standpoint=standpoint, standpoints_active=standpoints_active,
                          dry_run=dry_run, memory_text=memory_text)
