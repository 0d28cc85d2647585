"""Spar configuration: sources (G16, G18), TOML with key lines (G17), checks
(G19–G24), run arguments (G25) and the applied values with their digest; each in
its own module of this package."""
