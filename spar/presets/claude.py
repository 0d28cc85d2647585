"""claude (Claude Code) preset: packet on stdin, stream-json out, structured output."""

from __future__ import annotations

import datetime as _dt
import json
import os
import re
from collections.abc import Mapping
from typing import Any

from spar.config.model import ReviewerConfig
from spar.hostlist import url_entry
from spar.jsonvalue import array_at, object_at
from spar.judge.answer import parse_answer
from spar.presets.input import StdinPreset
from spar.records.usage import add_counts, amount, count, reported
from spar.round.interface import Answer, HomeFile, InputSpec, Monitor, RunPaths, StreamInfo, as_text
from spar.round.schema import without_dialect

ALLOWED_TOOLS = ("Read", "Grep", "Glob", "StructuredOutput")
SYNTHETIC_MODEL = "<synthetic>"  # locally made error message, not a model
# 2.1.197: "Warning: Unknown --effort value 'minimal' — ignoring it and using the default effort."
_IGNORED = re.compile(r"Unknown (--[A-Za-z][\w-]*) value .*ignoring it", re.IGNORECASE)


class ClaudeMonitor(Monitor):
    ANSWER_LINE = re.compile(r'\s*\{\s*"type"\s*:\s*"result"')
    def __init__(self) -> None:
        super().__init__()
        self.init_model: str | None = None
        self.assistant_model: str | None = None
        self.result_event: dict[str, Any] | None = None

    def event(self, event: dict[str, Any]) -> str | None:
        kind = event.get("type")
        if kind == "system" and event.get("subtype") == "init":
            if isinstance(event.get("model"), str) and event["model"]:
                self.init_model = event["model"]
        elif kind == "system" and event.get("subtype") == "api_retry":
            # claude retries an unreachable API (10 times, ~3 minutes): progress, not a failure
            attempt, most = event.get("attempt"), event.get("max_retries")
            self.notify(f"API retry {as_text(attempt)}/{as_text(most)}" if attempt is not None else "API retry")
            self._retry_stall(event)
        elif kind == "assistant":
            return self._assistant(event)
        elif kind in ("user", "stream_event"):
            self.model_output()
        elif kind == "rate_limit_event":
            self._rate_limit(event)
        elif kind == "result":
            self.result_event = event
            self._usage(event)
        self._update_model()
        return None

    def _retry_stall(self, event: dict[str, Any]) -> None:
        """An api_retry that shows claude cannot reach the API (no HTTP status: the connection
        failed) or is refused its credentials (401, 403); other statuses are the service's
        own troubles, which claude's retries are for."""
        status, error = event.get("error_status"), as_text(event.get("error"))
        shown = "no HTTP status" if status is None else f"HTTP status {as_text(status)}"
        text = (f"api_retry {as_text(event.get('attempt'))}/{as_text(event.get('max_retries'))}: "
                f"error {error or '(none)'}, {shown}")
        if status in (401, 403) or error == "authentication_failed":
            self.stalled("authentication", text)
        elif status is None:
            self.stalled("network", text)

    def _assistant(self, event: dict[str, Any]) -> str | None:
        message = object_at(event, "message")
        model = message.get("model")
        if isinstance(model, str) and model and model != SYNTHETIC_MODEL:
            self.assistant_model = model
            self.model_output()
        content = array_at(message, "content")
        if event.get("error"):
            # e.g. "rate_limit" plus the message text "API Error: Rate limit reached"
            texts = [as_text(event["error"])]
            texts += [b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"]
            self.note_error(": ".join(t for t in texts if t))
        self._update_model()
        for block in content:
            if isinstance(block, dict) and block.get("type") == "tool_use":
                name = block.get("name")
                if name not in ALLOWED_TOOLS:
                    return f"tool {as_text(name)} is not allowed (claude reviewers may use {', '.join(ALLOWED_TOOLS)})"
                self.name_words(_tool_paths(name, object_at(block, "input")))
        return None

    def _usage(self, event: dict[str, Any]) -> None:
        # input_tokens counts cache reads and writes too (codex counts cached input inside input)
        u = object_at(event, "usage")
        fresh, written, read = (count(u.get(k)) for k in
                                ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"))
        self.usage = reported(input_tokens=add_counts(fresh, written, read), cached_input_tokens=read,
                              output_tokens=count(u.get("output_tokens")),
                              cost_usd=amount(event.get("total_cost_usd")))

    def _rate_limit(self, event: dict[str, Any]) -> None:
        info = object_at(event, "rate_limit_info")
        if info.get("status") != "rejected":
            return
        text = "rate_limit rejected"
        resets = info.get("resetsAt")
        if isinstance(resets, (int, float)) and not isinstance(resets, bool):
            try:
                when = _dt.datetime.fromtimestamp(resets, _dt.UTC)
                text += f"; resets at {when.strftime('%Y-%m-%dT%H:%M:%SZ')}"
            except (OverflowError, OSError, ValueError):
                pass
        self.note_error(text)

    def _update_model(self) -> None:
        # Decision (G12): only a model that answered is observed. The result's modelUsage,
        # when it names exactly one model, is the most reliable (it shows a fallback the CLI
        # made); else the last real assistant model; else the modelUsage model with most
        # output tokens; else the init model, but only when a model answered (a result that
        # is no error): the init event names the configured model even when no model is ever
        # reached (2.1.197 without login: init model, then a <synthetic> message).
        usage = object_at(self.result_event, "modelUsage") if self.result_event else {}
        keys = [k for k in usage if isinstance(k, str) and k and k != SYNTHETIC_MODEL]
        if len(keys) == 1:
            self.observed_model = keys[0]
        elif self.assistant_model:
            self.observed_model = self.assistant_model
        elif keys:
            self.observed_model = max(keys, key=lambda k: _output_tokens(usage[k]))
        elif self.init_model and self.result_event and self.result_event.get("is_error") is False:
            self.observed_model = self.init_model

    def too_deep(self, line: str) -> str | None:
        # An assistant line whose every `name` is an allowed tool and that names
        # StructuredOutput is the structured answer too deep to read (invalid_output), not a
        # hidden tool use; anything else fails closed as a violation.
        names = key_values(line, "name")
        if (_ASSISTANT_LINE.match(line) and names is not None
                and "StructuredOutput" in names and all(n in ALLOWED_TOOLS for n in names)):
            self.unreadable_answer = "the StructuredOutput answer is nested too deeply to read"
            return None
        return super().too_deep(line)

    def stderr_line(self, line: str) -> None:
        m = _IGNORED.search(line)
        if m and len(self.warnings) < 10:
            self.warnings.append(f"claude ignored the {m.group(1)} value Spar passed: {line.strip()[:300]}")

    def finish(self, exit_code: int | None, stdout: StreamInfo) -> Answer:
        self._update_model()
        res = self.result_event
        if res is None:
            return Answer(False, failure="no result event in the output", error_texts=self.error_texts)
        subtype = res.get("subtype")
        if subtype == "error_max_budget_usd":
            return Answer(False, failure="the cost budget was reached: claude stopped at max_budget_usd "
                          "(result subtype error_max_budget_usd)", error_texts=self.error_texts)
        if isinstance(subtype, str) and subtype.startswith("error"):
            # error_max_turns, error_during_execution, error_max_structured_output_retries, ...
            detail = "; ".join(t for t in [as_text(res.get("result"))] + [as_text(e) for e in res.get("errors") or []]
                               if t)
            return Answer(False, failure=f"claude ended with {subtype}" + (f": {detail}" if detail else ""),
                          error_texts=self.error_texts + ([detail] if detail else []))
        # API failures come as subtype "success" with is_error true: check is_error first
        if res.get("is_error") is True:
            message = as_text(res.get("result")) or "; ".join(as_text(e) for e in res.get("errors") or [])
            texts = self.error_texts + [message] + [as_text(e) for e in res.get("errors") or []]
            return Answer(False, failure=f"claude reported an error: {message or '(no message)'}",
                          error_texts=[t for t in texts if t])
        if exit_code != 0:
            return Answer(False, failure="the result event reports success but the exit code does not",
                          error_texts=self.error_texts)
        structured = res.get("structured_output")
        if isinstance(structured, dict):
            return Answer(True, result=structured)
        if structured is not None:
            return Answer(True, output_error="structured_output of the result event is not a JSON object")
        text = res.get("result")
        if not isinstance(text, str) or not text.strip():
            return Answer(False, failure="the result event has no structured_output and no result text",
                          error_texts=self.error_texts)
        result, error = parse_answer(text, "the result text (no structured_output)")
        return Answer(True, result=result, output_error=error)


_ASSISTANT_LINE = re.compile(r'\s*\{\s*"type"\s*:\s*"assistant"')
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)


def key_values(text: str, key: str) -> list[str] | None:
    """Every value of `key` in the JSON text, read without parsing it (for text too deeply
    nested to parse): the string literals in order, each key being a literal followed by
    `:`. None when a `key` has a value that is not a string (it cannot be vouched for)."""
    values: list[str] = []
    literals = list(_STRING.finditer(text))
    try:
        for n, m in enumerate(literals):
            rest = text[m.end():m.end() + 64].lstrip()
            if not rest.startswith(":") or json.loads(m.group(0)) != key:
                continue
            following = literals[n + 1] if n + 1 < len(literals) else None
            gap = text[m.end():following.start()] if following is not None else ""
            if following is None or gap.strip() != ":":
                return None
            values.append(json.loads(following.group(0)))
    except ValueError:  # a literal that is not a JSON string: nothing can be vouched for
        return None
    return values


def _tool_paths(name: object, tool_input: dict[str, Any]) -> list[str]:
    """What a Read, Grep or Glob call names: its file or folder, and a Glob's pattern below it."""
    words = [v for k in ("file_path", "path") if isinstance(v := tool_input.get(k), str)]
    pattern = tool_input.get("pattern")
    if name == "Glob" and isinstance(pattern, str):
        # a Glob pattern is a path (relative to `path` when given); a Grep pattern is a regex
        base = tool_input.get("path")
        words.append(f"{base.rstrip('/')}/{pattern}" if isinstance(base, str) and base else pattern)
    return words


def _output_tokens(entry: object) -> float:
    if isinstance(entry, dict):
        value = entry.get("outputTokens")
        if isinstance(value, (int, float)):
            return value
    return 0


class ClaudePreset(StdinPreset):
    name = "claude"
    observes_reads = True
    monitor_class = ClaudeMonitor
    vendor_env = ("ANTHROPIC_*", "CLAUDE_*")

    def home_files(self, env: Mapping[str, str]) -> list[HomeFile]:
        # the login (refreshed in place), the user's settings and the account state claude keeps
        # beside them (~/.claude.json, or inside CLAUDE_CONFIG_DIR when that is set)
        own = env.get("CLAUDE_CONFIG_DIR")
        folder = own or os.path.join(env.get("HOME", ""), ".claude")
        state = os.path.join(folder, ".claude.json") if own else os.path.join(env.get("HOME", ""), ".claude.json")
        return [HomeFile(os.path.join(folder, ".credentials.json"), ".claude/.credentials.json", live=True),
                HomeFile(os.path.join(folder, "settings.json"), ".claude/settings.json"),
                HomeFile(state, ".claude/.claude.json" if own else ".claude.json")]

    def egress_hosts(self, cfg: ReviewerConfig, env: Mapping[str, str]) -> tuple[list[str], list[str]]:
        # measured: one `-p` review opens api.anthropic.com:443 only (no telemetry with
        # CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC); a base URL replaces it
        own = url_entry(env.get("ANTHROPIC_BASE_URL", ""))
        return ([own], [own]) if own else (["api.anthropic.com"], [])

    def sandbox_env(self, env: Mapping[str, str], home: str) -> dict[str, str]:
        # no telemetry, error reports or update checks: the API call is all a review needs
        inside = {"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}
        if env.get("CLAUDE_CONFIG_DIR"):
            inside["CLAUDE_CONFIG_DIR"] = os.path.join(home, ".claude")
        return inside

    def argv(self, exe: str, cfg: ReviewerConfig, model: str, paths: RunPaths, spec: InputSpec) -> list[str]:
        # --json-schema takes the schema itself, not a path: this round's schema.json as one
        # string, without its "$schema" key (with it claude offers no StructuredOutput tool)
        schema = without_dialect(paths.schema_path.read_text(encoding="utf-8"))
        # --no-session-persistence: a review leaves no session file in the user's ~/.claude
        argv = [exe, "-p", "--output-format", "stream-json", "--verbose", "--json-schema", schema,
                "--tools", "Read,Grep,Glob", "--permission-mode", "dontAsk", "--no-session-persistence"]
        if model:
            argv += ["--model", model]
        if cfg.effort:
            argv += ["--effort", cfg.effort]
        if cfg.max_budget_usd is not None:
            argv += ["--max-budget-usd", str(cfg.max_budget_usd)]
        return argv


PRESET = ClaudePreset()
