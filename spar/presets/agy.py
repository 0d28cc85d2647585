"""agy (Antigravity CLI) preset: a prompt in `-p` naming the packet file, stream-json out, plan mode."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

from spar.config.model import ReviewerConfig
from spar.jsonvalue import object_at
from spar.judge import agy_commands  # G11 checker
from spar.judge.answer import parse_answer
from spar.judge.coverage import command_words
from spar.presets.input import standpoint_instruction
from spar.records.usage import add_counts, count, reported
from spar.round.interface import (
    Answer,
    HomeFile,
    InputContext,
    InputSpec,
    Monitor,
    Preset,
    RunPaths,
    StreamInfo,
    as_text,
    join_parts,
)

READ_TOOLS = ("view_file", "read_file", "grep_search", "list_dir")
SUCCESS_STATUSES = ("SUCCESS", "OK")  # OK: older versions
PRINT_TIMEOUT_MARGIN = 60  # seconds past timeout_seconds
# "[agy] print timeout after 5s with turn in progress; returning partial output"
_PRINT_TIMEOUT = re.compile(r"print timeout after .*partial output", re.IGNORECASE)
# "no output produced — a tool required the "read_file" permission that headless mode cannot prompt for"
_AUTO_DENIED = re.compile(r"no output produced\b.*\brequired the .*permission", re.IGNORECASE)
PACKET_FILE = "PACKET.md"  # the reviewer's input: its instruction and the packet


def packet_reference(path: str) -> str:
    """The -p text's pointer to the packet file (the only variable part of agy's command line)."""
    return (f"The review packet is in the file {path}, not in this prompt. Read all of it with view_file "
            "before you start: it holds your instructions, the change, the angles to check and how to report.\n")

def _command_note() -> str:
    """The G11 rule in one paragraph, so agy knows which shell commands it may run."""
    # the checker's own list keeps the note in step with G11
    programs = ", ".join(sorted(p for p in agy_commands.PROGRAMS if p != "sed"))
    return (
        "Shell commands: you may run only read-only command lines in run_command. Allowed "
        f"programs: {programs}, and `sed -n` to print lines; no option that runs a program, "
        "writes a file or never ends (such as find -exec or -delete, sort -o, tail -f). Join "
        "commands only with |, &&, || and ;. Anything else stops your review as a tool "
        "violation: other programs (cd, git, python3, …) or a program path outside /bin, /usr/bin, /usr/local/bin and "
        "/opt/homebrew/bin; redirection other than 2>/dev/null and 2>&1; command substitution; "
        "a $ outside single quotes; brace expansion; an unquoted glob (*, ?, [) where it "
        "could expand to an option (quote patterns: find head -name '*.go'); a line with a "
        "newline. Prefer the "
        "view_file, grep_search and list_dir tools.\n"
    )


COMMAND_NOTE = _command_note()


class AgyMonitor(Monitor):
    ANSWER_LINE = re.compile(r'\s*\{\s*"event"\s*:\s*"result"')

    def __init__(self) -> None:
        super().__init__()
        self.result_event: dict[str, Any] | None = None
        self.print_timeout: str | None = None  # agy's own time limit ended the run
        self.auto_denied: str | None = None  # headless mode denied a tool a permission

    def stderr_line(self, line: str) -> None:
        text = line.strip()
        if self.print_timeout is None and _PRINT_TIMEOUT.search(text):
            self.print_timeout = text[:300]
        elif self.auto_denied is None and _AUTO_DENIED.search(text):
            self.auto_denied = text[:500]

    def event(self, event: dict[str, Any]) -> str | None:
        kind = event.get("event")
        if kind == "init":
            init = object_at(event, "init")
            if isinstance(init.get("model"), str) and init["model"]:
                self.observed_model = init["model"]
        elif kind == "step_update":
            step = object_at(event, "step_update")
            if step.get("step_type") == "tool":
                return self._tool(step)
        elif kind == "result":
            self.result_event = object_at(event, "result")
            u = object_at(self.result_event, "usage")
            # agy counts thinking apart from output; Spar's output_tokens includes it (as codex's does)
            self.usage = reported(input_tokens=count(u.get("input_tokens")),
                                  cached_input_tokens=count(u.get("cache_read_tokens")),
                                  output_tokens=add_counts(count(u.get("output_tokens")),
                                                           count(u.get("thinking_tokens"))))
        elif kind == "error":
            self.note_error(as_text(event.get("error") or event.get("message")))
        return None

    def _tool(self, step: dict[str, Any]) -> str | None:
        name = step.get("tool_name")
        params = object_at(object_at(step, "tool_info"), "parameters")
        if name in READ_TOOLS:
            # AbsolutePath, DirectoryPath, SearchPath, …: the file or folder the call reads
            self.name_words([v for k, v in params.items() if "path" in k.lower() and isinstance(v, str)])
            return None
        if name == "run_command":
            line = params.get("CommandLine")
            if not isinstance(line, str):
                return "run_command without a CommandLine"
            if agy_commands.check_command(line) is None:
                self.name_words(command_words(line))
                return None
            return agy_commands.describe_violation(line)
        return (f"tool {as_text(name)} is not allowed (agy reviewers may use "
                f"{', '.join(READ_TOOLS)} and run_command with read-only commands)")

    def finish(self, exit_code: int | None, stdout: StreamInfo) -> Answer:
        texts = self.error_texts
        if self.print_timeout is not None:
            # 1.1.28+: partial output with exit 0 once --print-timeout passes; never an answer
            return Answer(False, failure=f"agy's own time limit ended the run: {self.print_timeout}",
                          timed_out=True)
        if exit_code == 3:
            # 3 = model/API failure; the reason (AGY_ERROR …) is on stderr
            return Answer(False, failure="agy reported a model or API failure", error_texts=texts)
        res = self.result_event
        if res is None and self.auto_denied is not None:
            return Answer(False, failure=self.auto_denied, error_texts=texts)
        if res is None:
            return Answer(False, failure="no result event in the output", error_texts=texts)
        status = as_text(res.get("status"))
        response = res.get("response")
        if status not in SUCCESS_STATUSES and "timeout waiting for response" in as_text(res.get("error")):
            # versions before 1.1.28 end at their own --print-timeout this way
            return Answer(False, failure=f"agy's own time limit ended the run: {as_text(res.get('error'))}",
                          timed_out=True)
        if status not in SUCCESS_STATUSES:
            detail = f": {as_text(response)}" if response else ""
            return Answer(False, failure=f"result status {status or '(none)'}{detail}",
                          error_texts=texts + ([as_text(response)] if response else []))
        denied = res.get("denied_actions")
        if denied:
            return Answer(False, failure=f"agy denied actions: {as_text(denied)}", error_texts=texts)
        if exit_code != 0:
            return Answer(False, failure="the result reports success but the exit code does not",
                          error_texts=texts)
        structured = res.get("structured_output")
        if isinstance(structured, dict):
            return Answer(True, result=structured)
        if structured is not None:
            return Answer(True, output_error="structured_output of the result is not a JSON object")
        if not isinstance(response, str) or not response.strip():
            return Answer(False, failure="the result has an empty response", error_texts=texts)
        result, error = parse_answer(response, "the result response")
        return Answer(True, result=result, output_error=error)


class AgyPreset(Preset):
    name = "agy"
    observes_reads = True
    monitor_class = AgyMonitor
    vendor_env = ("GEMINI_*", "GOOGLE_*")

    def egress_hosts(self, cfg: ReviewerConfig, env: Mapping[str, str]) -> tuple[list[str], list[str]]:
        # Google's model API, its code-assist service and the login's token refresh
        return ["generativelanguage.googleapis.com", "cloudcode-pa.googleapis.com", "oauth2.googleapis.com"], []

    def home_files(self, env: Mapping[str, str]) -> list[HomeFile]:
        # not measured (no agy installs from a public registry): the login and settings files
        # Google's CLIs keep in ~/.gemini
        folder = os.path.join(env.get("HOME", ""), ".gemini")
        return [HomeFile(os.path.join(folder, "oauth_creds.json"), ".gemini/oauth_creds.json", live=True),
                HomeFile(os.path.join(folder, "google_accounts.json"), ".gemini/google_accounts.json"),
                HomeFile(os.path.join(folder, "settings.json"), ".gemini/settings.json")]

    def prepare_input(self, cfg: ReviewerConfig, ctx: InputContext) -> InputSpec:
        # agy takes its prompt only in -p, and a command line is readable by every user of the
        # machine (/proc/PID/cmdline, agy's and bwrap's): the packet and the instruction go in
        # a file of the reviewer's own folder, and -p holds only fixed text and the file's name
        packet_file = (ctx.reviewer_dir / PACKET_FILE).absolute()
        text = join_parts(COMMAND_NOTE, packet_reference(str(packet_file)))
        instruction = standpoint_instruction(ctx.standpoint, ctx.standpoints_active)
        files = {PACKET_FILE: join_parts(instruction, ctx.packet_text)}
        if ctx.writes_input_md:
            files["input.md"] = text  # for agy: the -p text
        return InputSpec(text=text, files=files)

    def argv(self, exe: str, cfg: ReviewerConfig, model: str, paths: RunPaths, spec: InputSpec) -> list[str]:
        argv = [exe, "-p", spec.text, "--output-format", "stream-json", "--mode", "plan"]
        if model:
            argv += ["--model", model]
        argv += ["--json-schema", str(paths.schema_path)]
        # agy's own limit (default 5 minutes) would end a long review with a partial answer:
        # set it past Spar's timeout_seconds so that Spar's limit governs
        argv += ["--print-timeout", f"{cfg.timeout_seconds + PRINT_TIMEOUT_MARGIN}s"]
        return argv


PRESET = AgyPreset()
