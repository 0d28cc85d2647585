"""The environment a reviewer starts with (user configuration `env_passthrough`).

Without `env_passthrough` a reviewer inherits spar's whole environment, as
before. With it, a reviewer gets only:

- the variables always passed (`ALWAYS`): `PATH`, `HOME`, `USER`, `LOGNAME`,
  `SHELL`, `TMPDIR`, `TZ`, `LANG` and every `LC_*` — what any CLI needs to run
  and nothing that is a secret;
- the variables the list names: an exact name (`ANTHROPIC_API_KEY`), or a
  prefix ending in `*` (`CLAUDE_CODE_*`, `OPENAI_*`);
- the reviewer's own vendor's credentials and settings, which its CLI needs
  (`Preset.vendor_env`: claude `ANTHROPIC_*` `CLAUDE_*`, codex `OPENAI_*`
  `CODEX_*`, agy `GEMINI_*` `GOOGLE_*`; none for command and native), and
  never another vendor's.

Everything else is withheld: spar's own `SPAR_*` variables, the caller's
unrelated secrets, `GIT_*` settings. Pure function; `spar run` applies it per
reviewer and `spar doctor` checks each CLI with what its reviewer would get.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

ALWAYS = ("PATH", "HOME", "USER", "LOGNAME", "SHELL", "TMPDIR", "TZ", "LANG", "LC_*")


def _matches(name: str, patterns: Iterable[str]) -> bool:
    return any(name.startswith(p[:-1]) if p.endswith("*") else name == p for p in patterns)


def reviewer_env(env: Mapping[str, str], passthrough: list[str] | None,
                 vendor: Iterable[str] = ()) -> dict[str, str]:
    """What a reviewer inherits from `env` under the configured `passthrough` (None: all),
    `vendor` being its preset's own variables (`Preset.vendor_env`)."""
    if passthrough is None:
        return dict(env)
    keep = (*ALWAYS, *passthrough, *vendor)
    return {k: v for k, v in env.items() if _matches(k, keep)}


__all__ = ["ALWAYS", "reviewer_env"]
