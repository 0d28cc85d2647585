"""Spar: parallel AI code review rounds with auditable records."""

__version__ = "0.1.0"
