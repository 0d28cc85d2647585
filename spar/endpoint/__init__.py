"""Spar's only code that talks to a network: the `openai-compatible` reviewer's client."""
