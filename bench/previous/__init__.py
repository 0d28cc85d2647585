"""Code spar no longer runs, kept to measure before/after in the same run (see workspace_v0.py)."""
