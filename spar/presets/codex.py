"""codex (OpenAI Codex CLI) preset: `codex exec --json`, prompt on stdin via `-`."""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping
from typing import Any

from spar.config.model import ReviewerConfig
from spar.hostlist import url_entry
from spar.jsonvalue import object_at
from spar.judge.answer import parse_answer
from spar.judge.coverage import command_words
from spar.judge.refusal import RefusalScan
from spar.presets.input import StdinPreset
from spar.records.usage import add_counts, count, reported
from spar.round.interface import Answer, HomeFile, InputSpec, Monitor, RunPaths, StreamInfo, as_text

CONFIG_LIMIT = 1024 * 1024  # bytes of config.toml read for its provider
ALLOWED_ITEMS = ("agent_message", "reasoning", "command_execution", "todo_list", "error")
_REROUTED = re.compile(r"model rerouted:\s*(\S+)\s*->\s*(\S+)", re.IGNORECASE)


_RECONNECT = re.compile(r"reconnecting\.*\s*(\d+\s*/\s*\d+|waiting for network)", re.IGNORECASE)


def notice_text(message: str) -> str:
    """A short progress text for a transient notice: `reconnecting 3/5`."""
    m = _RECONNECT.match(message.strip())
    if m:
        what = m.group(1)
        return f"reconnecting {what.replace(' ', '')}" if what[0].isdigit() else f"reconnecting: {what}"
    first = message.strip().split(". ")[0]
    return first[:1].lower() + first[1:80]


class CodexMonitor(Monitor):
    ANSWER_LINE = re.compile(r'\s*\{\s*"type"\s*:\s*"item\.completed"\s*,\s*"item"\s*:\s*\{\s*"id"\s*:\s*"[^"\\]*"'
                             r'\s*,\s*"type"\s*:\s*"agent_message"')
    def __init__(self) -> None:
        super().__init__()
        self.last_message: str | None = None
        self.turn_completed = False
        self.turn_failed: str | None = None
        self.top_error: str | None = None
        self.transient = RefusalScan()  # refusal phrases in notices (count only without a completed turn)

    def event(self, event: dict[str, Any]) -> str | None:
        kind = event.get("type")
        if kind in ("item.started", "item.updated", "item.completed"):
            item = object_at(event, "item")
            item_kind = item.get("type")
            if item_kind != "error":
                self.model_output()
            if item_kind not in ALLOWED_ITEMS:
                return (f"item kind {as_text(item_kind)} is not allowed "
                        f"(codex reviewers may produce {', '.join(ALLOWED_ITEMS)})")
            if item_kind == "command_execution" and kind == "item.completed" and isinstance(item.get("command"), str):
                self.name_words(command_words(item["command"]))
            if item_kind == "agent_message" and kind == "item.completed" and isinstance(item.get("text"), str):
                self.last_message = item["text"]
            elif item_kind == "error" and kind == "item.completed":
                # a non-fatal warning ("Falling back from WebSockets to HTTPS transport. …")
                message = as_text(item.get("message"))
                self._error_text(message, transient=True)
                self.notify(notice_text(message))
                self.stall_notice(message)
        elif kind == "turn.completed":
            self.turn_completed = True
            self.model_output()
            u = object_at(event, "usage")
            # one exec normally has one turn; should there be more, their usage adds up
            before = self.usage or reported()
            self.usage = reported(**{k: add_counts(before[k], count(u.get(k)))
                                     for k in ("input_tokens", "cached_input_tokens", "output_tokens")})
        elif kind == "turn.failed":
            error = event.get("error")
            message = as_text(error.get("message")) if isinstance(error, dict) else as_text(error)
            self.turn_failed = message or "(no message)"
            self._error_text(message)
        elif kind == "error":
            # codex prints retry notices this way ("Reconnecting... 2/5 (…)") and may still
            # complete the turn: it is a failure only when no turn completes
            message = as_text(event.get("message"))
            self.top_error = message or "(no message)"
            self._error_text(message, transient=True)
            self.notify(notice_text(message))
            # offline or logged out, codex-cli 0.171.0 retries such notices for as long as it runs
            self.stall_notice(message)
        return None

    def _error_text(self, message: str, *, transient: bool = False) -> None:
        if not message:
            return
        if transient:
            # searched for refusal phrases only when no turn completes (see finish)
            self.transient.feed(message)
            self.error_texts.append(message)
            del self.error_texts[:-20]
        else:
            self.note_error(message)
        # the stream never names the model, except when the service reroutes it
        m = _REROUTED.search(message)
        if m:
            self.observed_model = m.group(2).rstrip(".,;")

    def finish(self, exit_code: int | None, stdout: StreamInfo) -> Answer:
        texts = self.error_texts
        if not self.turn_completed:
            # transient notices count only now: the turn never completed
            self.refusals = self.refusals.then(self.transient)
        if self.turn_failed is not None:
            return Answer(False, failure=f"turn failed: {self.turn_failed}", error_texts=texts)
        if not self.turn_completed:
            if self.top_error is not None:
                return Answer(False, failure=f"error: {self.top_error}", error_texts=texts)
            return Answer(False, failure="no turn.completed event in the output", error_texts=texts)
        if exit_code != 0:
            return Answer(False, failure="the turn completed but the exit code does not report success",
                          error_texts=texts)
        if self.last_message is None:
            return Answer(False, failure="the turn completed without an agent_message", error_texts=texts)
        result, error = parse_answer(self.last_message, "the last agent_message")
        return Answer(True, result=result, output_error=error)


def provider_url(config_path: str) -> str:
    """The base URL of the provider codex's config.toml selects (`model_provider`, or the
    selected `profile`'s), "" when none is chosen or the file cannot be read."""
    try:
        with open(config_path, "rb") as f:
            doc = tomllib.loads(f.read(CONFIG_LIMIT).decode("utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return ""
    profile = _table(_table(doc, "profiles"), doc.get("profile"))
    chosen = profile.get("model_provider") or doc.get("model_provider")
    url = _table(_table(doc, "model_providers"), chosen).get("base_url")
    return url if isinstance(url, str) else ""


def _table(doc: dict[str, Any], key: object) -> dict[str, Any]:
    value = doc.get(key) if isinstance(key, str) else None
    return value if isinstance(value, dict) else {}


class CodexPreset(StdinPreset):
    name = "codex"
    observes_reads = True
    monitor_class = CodexMonitor
    vendor_env = ("OPENAI_*", "CODEX_*")

    def home_files(self, env: Mapping[str, str]) -> list[HomeFile]:
        # the login (a ChatGPT login refreshes its tokens in place) and the user's settings; codex
        # needs its home writable (the sandbox's own ~/.codex), the rest of the user's stays out
        folder = env.get("CODEX_HOME") or os.path.join(env.get("HOME", ""), ".codex")
        return [HomeFile(os.path.join(folder, "auth.json"), ".codex/auth.json", live=True),
                HomeFile(os.path.join(folder, "config.toml"), ".codex/config.toml")]

    def egress_hosts(self, cfg: ReviewerConfig, env: Mapping[str, str]) -> tuple[list[str], list[str]]:
        # measured: an `exec` review opens api.openai.com and chatgpt.com (its WebSocket and
        # HTTPS transports); the plugin listing on github.com is not needed for a review. A
        # provider of the user's own (config.toml's model_provider, or OPENAI_BASE_URL) replaces them
        own = url_entry(env.get("OPENAI_BASE_URL", "")) or url_entry(provider_url(self.home_files(env)[1].source))
        return ([own], [own]) if own else (["api.openai.com", "chatgpt.com"], [])

    def sandbox_env(self, env: Mapping[str, str], home: str) -> dict[str, str]:
        return {"CODEX_HOME": os.path.join(home, ".codex")} if env.get("CODEX_HOME") else {}

    def argv(self, exe: str, cfg: ReviewerConfig, model: str, paths: RunPaths, spec: InputSpec) -> list[str]:
        argv = [exe, "exec", "--json", "--sandbox", "read-only", "--skip-git-repo-check", "--ephemeral",
                "--output-schema", str(paths.schema_path)]
        if model:
            argv += ["-m", model]
        if cfg.effort:
            # -c takes TOML: the value is a quoted string
            argv += ["-c", f'model_reasoning_effort="{cfg.effort}"']
        argv += ["-C", str(paths.workspace), "-"]
        return argv


PRESET = CodexPreset()
