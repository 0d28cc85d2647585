"""The stop hook entries `spar init --agent NAME` adds to an agent's project settings, merged
into what the file holds (pure: text in, text out).

Claude Code (`.claude/settings.json`) and Codex (`.codex/hooks.json`) share one shape:
`{"hooks": {EVENT: [{"hooks": [{"type": "command", "command": ..., "timeout": ...}]}]}}`;
Cursor (`.cursor/hooks.json`): `{"version": 1, "hooks": {"stop": [{"command": ...}]}}`.
Every key and entry already there stays; an entry that already runs `spar hook` for the
event is kept as it is (init run again changes nothing).
"""

from __future__ import annotations

import json
from typing import Any

from spar.config.scaffold import CannotEdit

SETTINGS = {"claude": ".claude/settings.json", "codex": ".codex/hooks.json", "cursor": ".cursor/hooks.json"}
HOOK_TIMEOUT = 60  # seconds the agent gives the hook; the hook decides from records in well under one
MARK = "spar hook "  # an entry whose command holds this is Spar's


def hook_command(agent: str, event: str, series: str) -> str:
    extra = "" if series == "reviews" else f" --series {json.dumps(series)}"
    return f"spar hook {event} --agent {agent}{extra}"


def wanted(agent: str, series: str) -> dict[str, dict[str, Any]]:
    """Event -> the entry Spar adds for it."""
    if agent == "cursor":
        return {"stop": {"command": hook_command(agent, "stop", series)}}
    entries = {"Stop": _entry(hook_command(agent, "stop", series))}
    if agent == "claude":
        entries["SubagentStop"] = _entry(hook_command(agent, "subagent-stop", series))
    return entries


def _entry(command: str) -> dict[str, Any]:
    return {"hooks": [{"type": "command", "command": command, "timeout": HOOK_TIMEOUT}]}


def merged(agent: str, existing: str | None, series: str) -> tuple[str, list[str]]:
    """(the file's new text, the events added); the text unchanged when nothing is added.
    CannotEdit when the file is not what the agent reads (not a JSON object, `hooks` or an
    event's list of another type): then nothing is written and these lines are shown."""
    lines = json.dumps({"hooks": {event: [entry] for event, entry in wanted(agent, series).items()}}, indent=2)
    if existing is None or not existing.strip():
        doc: dict[str, Any] = {"version": 1} if agent == "cursor" else {}
    else:
        try:
            value = json.loads(existing)
        except ValueError as exc:
            raise CannotEdit(f"it is not JSON ({exc})", lines) from None
        if not isinstance(value, dict):
            raise CannotEdit("it is not a JSON object", lines)
        doc = value
    hooks = doc.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise CannotEdit('its "hooks" is not an object', lines)
    added = []
    for event, entry in wanted(agent, series).items():
        listed = hooks.setdefault(event, [])
        if not isinstance(listed, list):
            raise CannotEdit(f'its "hooks"."{event}" is not a list', lines)
        if any(MARK in json.dumps(item) for item in listed):
            continue
        listed.append(entry)
        added.append(event)
    if not added and existing is not None:
        return existing, []
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n", added
