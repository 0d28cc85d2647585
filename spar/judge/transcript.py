"""G15: what a Claude Code subagent transcript shows about a native review.

Pure: the caller reads the transcript file and hands its lines over.  Each
line is a JSON object (reviewer-clis.md, "claude transcripts"); lines that are
not JSON objects are skipped, and a transcript with none at all is refused.

Warnings are `{"kind", "tool"}` only, never a path or content, de-duplicated,
in the order first seen (`prompt_not_read` last):

- `tool_not_allowed`: an assistant `tool_use` whose name is outside
  `allowed_tools` (tool = that name).
- `host_added` (tools or context the host added):
  * a `system` line with a `tools` list (the init line of stream-json
    output): every listed tool outside `allowed_tools` (tool = its name);
  * any other `system` line that carries `content` text, and any
    `attachment` line (tool = "");
  * a `user` line after the prompt whose content is text rather than only
    tool results, a text block beside tool results (system reminders), or a
    `user` line marked `isMeta` (tool = "").  The prompt is the first `user`
    line with text content.
- `prompt_not_read`: no `Read` whose `file_path` resolves to `prompt_path`
  (tool = "Read").
- `read_outside_workspace`: a `Read` `file_path`, or a `Grep`/`Glob` `path`,
  that resolves outside `workspace` and is not `prompt_path` (tool = the
  tool's name).  A relative or missing path is joined to that line's `cwd`;
  with no `cwd` it is warned.  Resolution is lexical (normpath, no file
  system access), and a path starting with `~` is warned (the tools expand
  it).  For `Glob`, the fixed leading part of `pattern` (up to the first
  component with `*?[{`) is joined to the path too, so `../../**` or
  `/etc/*` is caught.

Result: the input of the last `StructuredOutput` tool_use that is an object;
else the last assistant text block read by G1's one answer rule
(`spar.judge.answer`: the whole text is one JSON object, nothing around it);
else None, with `result_problem` saying why. A line nested too deeply for the
parser leaves no result (`result_problem` names the line): it might have held
a tool use or the answer.  observed_model: the last assistant `message.model` other
than `<synthetic>` (a locally made error), else a system line's `model`.
"""

from __future__ import annotations

import json
import os
import posixpath
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from spar.errors import Refused
from spar.jsonvalue import object_at
from spar.judge.answer import parse_answer

DEFAULT_ALLOWED = ("Read", "Grep", "Glob", "StructuredOutput")
SYNTHETIC_MODEL = "<synthetic>"

_GLOB_CHARS = set("*?[{")


@dataclass
class TranscriptAnalysis:
    """What a Claude Code transcript yields: the result, warnings, the model."""

    result: dict[str, Any] | None
    warnings: list[dict[str, Any]] = field(default_factory=list)
    observed_model: str | None = None
    # why there is no usable result (recorded as invalid_output), None when result is set
    result_problem: str | None = None


def _entries(lines: Iterable[str]) -> tuple[list[dict[str, Any]], int | None]:
    """The JSON-object lines, and the number of the first line too deeply nested to read
    (it might hold a tool use or the answer: the analysis cannot vouch for the transcript)."""
    out = []
    too_deep = None
    for number, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line:
            continue
        try:
            value = json.loads(line)
        except RecursionError:
            too_deep = too_deep or number
            continue
        except ValueError:
            continue
        if isinstance(value, dict):
            out.append(value)
    return out, too_deep


def _content_blocks(entry: dict[str, Any]) -> list[Any]:
    message = entry.get("message")
    if not isinstance(message, dict):
        return []
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return content if isinstance(content, list) else []


def _has_text(blocks: list[Any]) -> bool:
    return any(isinstance(b, dict) and b.get("type") == "text" and str(b.get("text") or "").strip() for b in blocks)


def _is_inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _glob_prefix(pattern: str) -> str:
    fixed = []
    for part in pattern.split("/"):
        if any(ch in _GLOB_CHARS for ch in part):
            break
        fixed.append(part)
    prefix = "/".join(fixed)
    return "/" if pattern.startswith("/") and not prefix else prefix


def _resolve(path: object, cwd: object) -> str | None:
    """An absolute normalized path, or None when it cannot be placed (no cwd, `~`)."""
    if path is not None and not isinstance(path, str):
        return None
    given = path or ""
    if given.startswith("~"):
        return None
    if posixpath.isabs(given):
        return posixpath.normpath(given)
    if not isinstance(cwd, str) or not posixpath.isabs(cwd):
        return None
    return posixpath.normpath(posixpath.join(cwd, given))


class _Analyzer:
    def __init__(self, workspace: str, prompt_path: str, allowed: tuple[str, ...]):
        # relative folders are taken from the process's working folder (callers
        # should pass real absolute paths: the transcript's cwd is one)
        self.workspace = os.path.abspath(workspace)
        self.prompt = os.path.abspath(prompt_path)
        self.allowed = set(allowed)
        self.warnings: list[dict[str, Any]] = []
        self.prompt_read = False
        self.seen_prompt = False
        self.structured: dict[str, Any] | None = None
        self.last_text: str | None = None
        self.model: str | None = None
        self.system_model: str | None = None

    def warn(self, kind: str, tool: str) -> None:
        w = {"kind": kind, "tool": tool}
        if w not in self.warnings:
            self.warnings.append(w)

    def entry(self, e: dict[str, Any]) -> None:
        kind = e.get("type")
        if kind == "system":
            self.system(e)
        elif kind == "attachment":
            self.warn("host_added", "")
        elif kind == "user":
            self.user(e)
        elif kind == "assistant":
            self.assistant(e)

    def system(self, e: dict[str, Any]) -> None:
        if isinstance(e.get("model"), str) and e["model"]:
            self.system_model = e["model"]
        tools = e.get("tools")
        if isinstance(tools, list):
            for t in tools:
                name = t if isinstance(t, str) else str(t)
                if name not in self.allowed:
                    self.warn("host_added", name)
        elif isinstance(e.get("content"), str) and e["content"].strip():
            self.warn("host_added", "")

    def user(self, e: dict[str, Any]) -> None:
        blocks = _content_blocks(e)
        if e.get("isMeta"):
            self.warn("host_added", "")
            return
        has_result = any(isinstance(b, dict) and b.get("type") == "tool_result" for b in blocks)
        if not _has_text(blocks):
            return
        if has_result or self.seen_prompt:
            self.warn("host_added", "")  # text the host put beside results or after the prompt
        self.seen_prompt = True

    def assistant(self, e: dict[str, Any]) -> None:
        message = object_at(e, "message")
        model = message.get("model")
        if isinstance(model, str) and model and model != SYNTHETIC_MODEL:
            self.model = model
        for block in _content_blocks(e):
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text" and isinstance(block.get("text"), str):
                self.last_text = block["text"]
            elif block.get("type") == "tool_use":
                self.tool_use(block, e.get("cwd"))

    def tool_use(self, block: dict[str, Any], cwd: object) -> None:
        name = block.get("name")
        name = name if isinstance(name, str) else str(name)
        data = object_at(block, "input")
        if name not in self.allowed:
            self.warn("tool_not_allowed", name)
            return
        if name == "StructuredOutput":
            if isinstance(block.get("input"), dict):
                self.structured = block["input"]
            return
        if name == "Read":
            target = _resolve(data.get("file_path"), cwd)
            if target is not None and target == self.prompt:
                self.prompt_read = True
                return
            self.check_inside(name, target)
        elif name in ("Grep", "Glob"):
            target = _resolve(data.get("path"), cwd)
            self.check_inside(name, target)
            pattern = data.get("pattern")
            if name == "Glob" and target is not None and isinstance(pattern, str):
                prefix = _glob_prefix(pattern)
                if prefix:
                    self.check_inside(name, _resolve(prefix, target))

    def check_inside(self, tool: str, target: str | None) -> None:
        if target is None or not (_is_inside(target, self.workspace) or target == self.prompt):
            self.warn("read_outside_workspace", tool)

    def finish(self) -> TranscriptAnalysis:
        if not self.prompt_read:
            self.warn("prompt_not_read", "Read")
        result, problem = self.structured, None
        if result is None and self.last_text is not None:
            # G1: the same rule as every other answer (spar.judge.answer)
            result, problem = parse_answer(self.last_text, "the last assistant text of the transcript")
        elif result is None:
            problem = "no result object in the transcript"
        return TranscriptAnalysis(result, self.warnings, self.model or self.system_model, problem)


def analyze_transcript(
    lines: Iterable[str],
    *,
    workspace: str,
    prompt_path: str,
    allowed_tools: tuple[str, ...] = DEFAULT_ALLOWED,
    source: str = "transcript",
) -> TranscriptAnalysis:
    """Warnings, result and model of one transcript; Refused when no line is a JSON object."""
    entries, too_deep = _entries(lines)
    if not entries and too_deep is None:
        raise Refused(f"{source}: unreadable transcript: no line is a JSON object")
    analyzer = _Analyzer(workspace, prompt_path, tuple(allowed_tools))
    for e in entries:
        analyzer.entry(e)
    analysis = analyzer.finish()
    if too_deep is not None:
        analysis.result = None
        analysis.result_problem = f"transcript line {too_deep} is nested too deeply to read"
    return analysis


__all__ = ["DEFAULT_ALLOWED", "TranscriptAnalysis", "analyze_transcript"]
