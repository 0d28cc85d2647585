"""openai-compatible preset: any OpenAI-compatible chat completions endpoint as a reviewer.

The reviewer is Spar's own client (spar/endpoint/client.py), run with this Python
like any reviewer CLI, the packet on stdin; its monitor reads the client's events.
It has no tools: it reviews the diffs inline in the packet, so its coverage is
exactly the packet's inline files (it opens nothing, and Spar sees that it does not).
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping
from typing import Any

import spar
from spar.config.model import ReviewerConfig
from spar.hostlist import url_entry
from spar.jsonvalue import object_at
from spar.judge.answer import parse_answer
from spar.judge.endpoint import prompt_cut, usage_counts
from spar.presets.input import instructed_packet
from spar.records.model import NotRun
from spar.records.usage import TOKEN_KEYS, add_counts, amount, reported
from spar.round.interface import (
    Answer,
    InputContext,
    InputSpec,
    Monitor,
    Preset,
    RunPaths,
    StreamInfo,
    as_text,
    join_parts,
)

CLIENT_MODULE = "spar.endpoint.client"
NO_TOOLS_NOTE = ("You have no tools and cannot open files: review the change from the diffs shown inline "
                 "in this packet; a file whose diff is not shown was not given to you.")
# what each error kind of the client makes of the attempt (the runner turns these into statuses)
UNAVAILABLE_KINDS = {"server": "server", "authentication": "authentication", "network": "network"}
NOT_RUN = {"server": NotRun.SERVICE, "authentication": NotRun.AUTHENTICATION, "network": NotRun.NETWORK}


class EndpointMonitor(Monitor):
    ANSWER_LINE = re.compile(r'\s*\{\s*"type"\s*:\s*"answer"')

    def __init__(self) -> None:
        super().__init__()
        self.answer: dict[str, Any] | None = None
        self.error: dict[str, Any] | None = None

    def event(self, event: dict[str, Any]) -> str | None:
        kind = event.get("type")
        if kind in ("retry", "answer", "error"):
            self._add_usage(event)  # every try's: a failed stream was paid for too
        if kind == "retry":
            self.notify(f"retry after {as_text(event.get('detail'))[:80]}")
        elif kind == "answer":
            self.answer = event
            self.model_output()
            if isinstance(event.get("model"), str) and event["model"]:
                self.observed_model = event["model"]
        elif kind == "error":
            self.error = event
            self._refusal(event)
        return None

    def _add_usage(self, event: dict[str, Any]) -> None:
        """Add the usage and cost one try reported to the attempt's (a try without them adds nothing)."""
        if not isinstance(event.get("usage"), dict):
            return
        prompt, cached, completion = usage_counts(object_at(event, "usage"))
        this = reported(input_tokens=prompt, cached_input_tokens=cached, output_tokens=completion,
                        cost_usd=amount(event.get("cost_usd")))
        before = self.usage or reported()
        summed = {k: add_counts(before[k], this[k]) for k in TOKEN_KEYS}
        cost = [c for c in (before["cost_usd"], this["cost_usd"]) if c is not None]
        self.usage = reported(**summed, cost_usd=round(sum(cost), 6) if cost else None)

    def _refusal(self, event: dict[str, Any]) -> None:
        """Quota and a rate limit that outlasted the retries are §5 refusals (the fallback
        model follows); the words put to the refusal search say which."""
        detail, tries = as_text(event.get("detail")), event.get("tries")
        if event.get("kind") == "quota":
            self.note_error(f"quota exhausted: {detail}")
        elif event.get("kind") == "rate_limit":
            self.note_error(f"rate limit: {detail} (still after {as_text(tries)} tries)")

    def finish(self, exit_code: int | None, stdout: StreamInfo) -> Answer:
        if self.answer is not None and exit_code == 0:
            return self._answered(self.answer)
        if self.error is None:
            return Answer(False, failure="the client printed neither an answer nor an error")
        kind, detail = as_text(self.error.get("kind")), as_text(self.error.get("detail"))
        tries = self.error.get("tries")
        after = f" (after {tries} tries)" if isinstance(tries, int) and tries > 1 else ""
        if kind in UNAVAILABLE_KINDS:
            return Answer(False, unavailable=f"{UNAVAILABLE_KINDS[kind]}: {detail}{after}",
                          unavailable_kind=NOT_RUN[kind])
        if kind == "too_long":
            return Answer(False, failure=f"the prompt is too long for the model: {detail}")
        if kind in ("quota", "rate_limit"):
            return Answer(False, failure=f"{kind}: {detail}", error_texts=self.error_texts)
        return Answer(False, failure=f"the server refused the request: {detail}")

    def _answered(self, event: dict[str, Any]) -> Answer:
        content = as_text(event.get("content"))
        cut = event.get("cut")
        if isinstance(cut, str) and cut:
            return Answer(True, output_error=f"the answer was cut: {cut}")
        if event.get("finish_reason") == "length":
            return Answer(True, output_error=f"the answer was cut after {len(content):,} characters: the server "
                          "stopped at its output token limit (finish_reason \"length\")")
        prompt_chars = event.get("prompt_chars")
        cut_prompt = prompt_cut(prompt_chars if isinstance(prompt_chars, int) else 0, self.usage.get("input_tokens"))
        if cut_prompt is not None:
            return Answer(False, failure=cut_prompt)
        result, error = parse_answer(content, "the server's answer (the message content)")
        return Answer(True, result=result, output_error=error)


class OpenAICompatiblePreset(Preset):
    name = "openai-compatible"
    observes_reads = True  # it has no tools: Spar sees every file it opened (none)
    version_args = None  # the client is Spar's own
    monitor_class = EndpointMonitor

    def env_names(self, cfg: ReviewerConfig) -> tuple[str, ...]:
        return (cfg.api_key_env,) if cfg.api_key_env else ()

    def prepare_input(self, cfg: ReviewerConfig, ctx: InputContext) -> InputSpec:
        text = join_parts(NO_TOOLS_NOTE, instructed_packet(ctx))
        return InputSpec(text=text, files={"input.md": text} if ctx.writes_input_md else {})

    def stdin_text(self, spec: InputSpec) -> str | None:
        return spec.text

    def sandbox_paths(self) -> list[str]:
        # the client is `python -m spar.endpoint.client`: an editable or source install keeps
        # the spar package outside the interpreter's prefix, which is all the sandbox shows
        return [os.path.dirname(os.path.realpath(spar.__file__))]

    def executable_name(self, cfg: ReviewerConfig, paths: RunPaths, spec: InputSpec) -> str:
        return sys.executable  # the Python running Spar runs its client

    def egress_hosts(self, cfg: ReviewerConfig, env: Mapping[str, str]) -> tuple[list[str], list[str]]:
        own = url_entry(cfg.base_url)
        return ([own], [own]) if own else ([], [])

    def argv(self, exe: str, cfg: ReviewerConfig, model: str, paths: RunPaths, spec: InputSpec) -> list[str]:
        # -I: neither PYTHONPATH nor the working folder (the reviewed code) can change what runs
        argv = [exe, "-I", "-m", CLIENT_MODULE, "--base-url", cfg.base_url, "--model", model,
                "--schema", str(paths.schema_path), "--time-limit", str(cfg.timeout_seconds)]
        if cfg.api_key_env:
            argv += ["--key-env", cfg.api_key_env]
        if cfg.effort:
            argv += ["--effort", cfg.effort]
        if cfg.input_usd_per_million is not None and cfg.output_usd_per_million is not None:
            argv += ["--input-price", str(cfg.input_usd_per_million),
                     "--output-price", str(cfg.output_usd_per_million)]
        return argv


PRESET = OpenAICompatiblePreset()
