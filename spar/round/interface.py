"""The interface through which a round runs a reviewer; each preset implements it.

A preset turns a reviewer configuration into an input (text + files, decided
before anything runs, dry runs too), an argv, a version argv and a line-by-line
output monitor that watches tool use (G10/G11), the observed model (G12) and
the final answer. The round owns these shapes (the process layer fills
`StreamInfo`, the runner asks a `Preset` and its `Monitor`); `spar.presets`
implements them. Nothing here starts a process.
"""

from __future__ import annotations

import hashlib
import json
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from spar.config.model import ReviewerConfig
from spar.judge.refusal import RefusalScan
from spar.judge.unreachable import StallKind, notice_kind
from spar.proc.masking import mask_value
from spar.proc.process import StreamInfo as StreamInfo  # the process layer's; a Monitor's finish takes it
from spar.records.model import NotRun


@dataclass
class InputSpec:
    """What a reviewer receives; produced before anything runs (dry runs too)."""

    text: str  # exactly what the reviewer receives (stdin text, -p text, {prompt} file content, prompt.md)
    files: dict[str, str] = field(default_factory=dict)  # reviewer-folder-relative files to write
    # command preset only: the file `{prompt}` names (the reviewer's input.md, or the
    # round's packet.md when no input.md is written); None for other presets
    prompt_path: Path | None = None


@dataclass
class InputContext:
    """Arguments of `prepare_input`, bundled for the preset modules."""

    reviewer_dir: Path
    packet_text: str
    packet_path: Path
    standpoint: str | None  # this reviewer's standpoint text, None when it has none
    standpoints_active: bool  # the round has standpoints (for any reviewer)
    dry_run: bool
    has_memory: bool = False  # packet_text ends with the series memory (not in packet.md)

    @property
    def writes_input_md(self) -> bool:
        # contract: input.md in standpoint rounds and dry runs only, so that rounds
        # without standpoints keep their inputs byte for byte unchanged; the series
        # memory is not in packet.md, so a reviewer given it has an input.md too
        return self.standpoints_active or self.dry_run or self.has_memory

    @property
    def round_dir(self) -> Path:
        return self.reviewer_dir.parent


@dataclass
class RunPaths:
    """Where one reviewer run happens (all absolute)."""

    reviewer_dir: Path
    round_dir: Path
    workspace: Path
    schema_path: Path


# ---------------------------------------------------------------- monitors


@dataclass
class Answer:
    """How a finished run ended, as the output and exit code tell it."""

    completed: bool  # a final answer exists and the exit code agrees
    result: dict[str, Any] | None = None  # the raw result object (completed, parseable)
    output_error: str | None = None  # completed, but the answer is not one JSON object
    failure: str = ""  # not completed: what happened (without exit code / stderr)
    error_texts: list[str] = field(default_factory=list)  # output error messages (refusal detection)
    timed_out: bool = False  # not completed because the CLI's own time limit ended it: `timeout`
    # not completed because the service could not be used (unreachable, its key refused, its
    # servers in trouble past the retries): `unavailable` with this reason; "" otherwise
    unavailable: str = ""
    unavailable_kind: NotRun = NotRun.SERVICE  # what kind of trouble, when `unavailable` is set


NAMED_WORDS = 100_000  # tool-call words kept per attempt for coverage


@dataclass
class Stall:
    """The CLI's latest notice says it cannot reach its service or cannot authenticate."""

    kind: StallKind  # "network", "authentication" or "quota"
    message: str  # the CLI's own words (data: quoted wherever shown)
    # the service itself refused the credentials (an HTTP 401 or 403 the CLI shows): its
    # retries cannot change that, so there is no window to wait
    at_once: bool = False


KEPT_ERROR_TEXTS = 20  # the latest output error messages kept for reasons (all are scanned)


class Monitor(ABC):
    """Fed stdout line by line while the reviewer runs; judges the end."""

    # the start of a stdout line that holds the final answer and so cannot hold a tool use
    # (a line that cannot be read is judged by it: monitoring fails closed); None: no such line
    ANSWER_LINE: re.Pattern[str] | None = None

    def __init__(self) -> None:
        self.observed_model: str | None = None
        self.violation: str | None = None
        # the latest error messages of the output; every one also went through `refusals`
        self.error_texts: list[str] = []
        self.refusals = RefusalScan()
        # what the CLI reported it used (spar.records.usage.reported keys); empty: nothing
        self.usage: dict[str, Any] = {}
        # the final answer's line could not be read: the run's answer is invalid_output
        self.unreadable_answer: str | None = None
        self.notice: str | None = None  # the latest transient notice (retries), for progress
        self.last_retry: str | None = None  # the CLI's own words of its latest retry (a timeout's reason)
        self.on_notice: Callable[[str], None] | None = None
        self.warnings: list[str] = []  # round warnings (e.g. the CLI ignored a value Spar passed)
        # told of every stall notice (a Stall) and of model output (None): spar/round/liveness.py
        # gives up on a reviewer whose stall lasts its unreachable_seconds
        self.on_stall: Callable[[Stall | None], None] | None = None
        # the path-like words of the reviewer's read and search calls (observed coverage)
        self.named_words: list[str] = []
        # credentials masked in every event as decoded (spar/proc/masking.py), and how many were
        self.masks: tuple[bytes, ...] = ()
        self.masked = 0

    def name_words(self, words: list[str]) -> None:
        """Words of one tool call that may name files; kept up to NAMED_WORDS in all."""
        room = NAMED_WORDS - len(self.named_words)
        self.named_words += [w for w in words if w][:max(room, 0)]

    def feed(self, line: str) -> str | None:
        """Look at one stdout line; return a violation reason the first time one is seen."""
        if self.violation is not None:
            return None
        try:
            event = parse_json_line(line)
        except RecursionError:
            return self.too_deep(line)
        if event is None:
            return None  # CLIs print banners and progress; skip what is not JSON
        event, masked = mask_value(event, self.masks)  # what the stream's masks could not see encoded
        self.masked += masked
        reason = self.event(event)
        if reason:
            self.violation = reason
            return reason
        return None

    def long_line(self, prefix: str, length: int, limit: int, complete: bool, *,
                  why: str = "") -> str | None:
        """A stdout line the monitor cannot read (longer than the line limit, or too deeply
        nested): a tool_violation reason, unless its start shows the final answer, which
        cannot hold a tool use (then the answer is invalid_output)."""
        why = why or f"is longer than the {limit}-byte line limit"
        size = f"{length} bytes" if complete else f"more than {length} bytes"
        if self.ANSWER_LINE is not None and self.ANSWER_LINE.match(prefix):
            self.unreadable_answer = f"the stdout line holding the final answer ({size}) {why}; it cannot be read"
            return None
        if self.violation is not None:
            return None
        self.violation = (f"a stdout line of {size} {why}, so it cannot be checked for tool use "
                          "(monitoring fails closed)")
        return self.violation

    def too_deep(self, line: str) -> str | None:
        """A stdout line nested too deeply for the parser: judged like an over-long line."""
        return self.long_line(line[:4096], len(line.encode("utf-8")), 0, True, why="is nested too deeply to read")

    def note_error(self, text: str) -> None:
        """An error message of the output: searched for refusal phrases, the latest kept."""
        if not text:
            return
        self.refusals.feed(text)
        self.error_texts.append(text)
        if len(self.error_texts) > KEPT_ERROR_TEXTS:
            del self.error_texts[0]

    def notify(self, text: str) -> None:
        """A transient notice (a retry): shown by progress, never a failure by itself."""
        self.notice = text
        if self.on_notice is not None:
            self.on_notice(text)

    def stalled(self, kind: StallKind, message: str, *, at_once: bool = False) -> None:
        """The CLI says it cannot reach its service or cannot authenticate (it may retry);
        `at_once`: the service's own answer says so, and no retry will change it."""
        if self.on_stall is not None:
            self.on_stall(Stall(kind, message, at_once))

    def stall_notice(self, message: str) -> None:
        """A notice that is a stall when its words say so (spar/judge/unreachable.py)."""
        kind = notice_kind(message)
        if kind is not None:
            self.stalled(kind, message)

    def model_output(self) -> None:
        """The model produced something: whatever stall there was is over."""
        if self.on_stall is not None:
            self.on_stall(None)

    def stderr_line(self, line: str) -> None:  # noqa: B027 - most presets read nothing there
        """One stderr line (presets that read stderr for warnings override this)."""

    def event(self, event: dict[str, Any]) -> str | None:  # pragma: no cover - overridden
        return None

    @abstractmethod
    def finish(self, exit_code: int | None, stdout: StreamInfo) -> Answer:
        """How the run ended, judged from the events seen and the exit code."""


def parse_json_line(line: str) -> dict[str, Any] | None:
    text = line.strip()
    if not text.startswith("{"):
        return None
    try:
        value = json.loads(text)
    except RecursionError:
        raise  # Monitor.feed fails closed on a line it cannot read
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def as_text(value: object) -> str:
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return json.dumps(value, ensure_ascii=False)


def recorded_argv(argv: list[str], spec: InputSpec) -> list[str]:
    """`argv` as round.json keeps it: an argument that is the prompt itself (agy's `-p`)
    replaced by `<prompt: N bytes, sha256 HEX>`, so the record stays small and says
    exactly which prompt ran (input.md holds it in dry runs and standpoint rounds)."""
    if not spec.text:
        return list(argv)
    data = spec.text.encode("utf-8")
    shown = f"<prompt: {len(data)} bytes, sha256 {hashlib.sha256(data).hexdigest()}>"
    return [shown if arg == spec.text else arg for arg in argv]


class HomeFile(NamedTuple):
    """A file of the user's that a preset's CLI needs in its sandbox (spar/round/sandboxing.py),
    shown at `inside`, relative to the sandbox's HOME: a copy (changes are dropped), or with
    `live` the file itself, writable (a login the CLI refreshes must stay refreshed; where the
    sandbox's user may not read it, a copy written back when changed)."""

    source: str  # absolute, on the real file system
    inside: str
    live: bool = False


class Preset(ABC):
    """One preset: input, argv, version argv and output monitor."""

    name = ""
    runs_process = True  # native runs nothing
    observes_reads = False  # its monitor sees which files the reviewer reads (claude, codex, agy)
    version_args: tuple[str, ...] | None = ("--version",)  # None: no version check
    unset_model_text = "CLI default"  # what progress shows for a reviewer whose configuration sets no model
    monitor_class: type[Monitor] | None = None  # judges the output of presets that run a process
    # the vendor's own credentials and settings (patterns as in env_passthrough): its CLI
    # needs them, so they pass even when env_passthrough withholds the rest
    vendor_env: tuple[str, ...] = ()
    # whether its program reaches a service of its own through the user's proxy, and so gets
    # the proxy URLs' password (spar.proc.environment.reviewer_env)
    proxy_credentials = True
    # hosts its CLI reaches for at start that a review does not need (measured): their
    # refusals are recorded, never blamed for a failure
    incidental_hosts: tuple[str, ...] = ()

    # a cheap, harmless command that says whether the CLI is logged in (None: it has none);
    # `logged_in` reads its answer
    login_args: tuple[str, ...] | None = None

    def logged_in(self, exit_code: int | None, out: str, err: str) -> bool | None:
        """What the login check's exit code and output say: True, False, or None (unknown)."""
        return None

    def works_without_login(self, env: Mapping[str, str]) -> bool:
        """The CLI can run without a login in `env` (a key it reads, a provider of the user's own)."""
        return False

    @abstractmethod
    def prepare_input(self, cfg: ReviewerConfig, ctx: InputContext) -> InputSpec:
        """What this reviewer receives, and the files that hold it."""

    def argv(self, exe: str, cfg: ReviewerConfig, model: str, paths: RunPaths, spec: InputSpec) -> list[str]:
        # only presets that run a process (runs_process) are ever asked
        raise TypeError(f"preset {self.name} runs no process")

    def executable_name(self, cfg: ReviewerConfig, paths: RunPaths, spec: InputSpec) -> str:
        """What G14 looks up: `binary`, else the preset name."""
        return cfg.binary or self.name

    def stdin_text(self, spec: InputSpec) -> str | None:
        """Text written to the reviewer's stdin (then closed); None = no stdin."""
        return None

    def home_files(self, env: Mapping[str, str]) -> list[HomeFile]:
        """The CLI's own configuration and login files, for its sandbox (`env`: what the
        reviewer inherits); missing ones are left out."""
        return []

    def sandbox_env(self, env: Mapping[str, str], home: str) -> dict[str, str]:
        """Variables set anew in the sandbox whose HOME is `home` (a folder setting that
        named the user's own)."""
        return {}

    def sandbox_paths(self) -> list[str]:
        """Files or folders, beyond its executable's install, that its program reads: shown
        read-only at their own path in the sandbox."""
        return []

    def egress_hosts(self, cfg: ReviewerConfig, env: Mapping[str, str]) -> tuple[list[str], list[str]]:
        """Where its program connects for a review when its jail has a network of its own
        (entries of `spar.proc.egress.Rule`, `env`: what the reviewer inherits): the hosts,
        and of them the service the user configured (a local model server may be one).
        None by default: a `command` reaches only what its `allow_hosts` lists."""
        return [], []

    def env_names(self, cfg: ReviewerConfig) -> tuple[str, ...]:
        """The variables this reviewer needs whatever env_passthrough withholds: its vendor's
        (`vendor_env`), or what its configuration names."""
        return self.vendor_env

    def monitor(self) -> Monitor:
        """A fresh monitor for one attempt's stdout."""
        if self.monitor_class is None:
            raise TypeError(f"preset {self.name} runs no process")
        return self.monitor_class()


def join_parts(*parts: str) -> str:
    """Join non-empty parts with one blank line between them."""
    kept = [p if p.endswith("\n") else p + "\n" for p in parts if p]
    return "\n".join(kept)


def reviewer_input(preset: Preset, cfg: ReviewerConfig, *, reviewer_dir: Path, packet_text: str, packet_path: Path,
                  standpoint: str | None, standpoints_active: bool, dry_run: bool,
                  memory_text: str = "") -> InputSpec:
    """Decide what this reviewer (of `preset`) receives and which files go into its folder.

    The caller writes `spec.files` (reviewer-folder-relative) before the run.
    `reviewer_dir` and `packet_path` should be absolute: some inputs name them.
    `memory_text` (the series memory, spar.round.memory) follows the packet in
    every reviewer's input; it is never part of packet.md.
    """
    ctx = InputContext(
        reviewer_dir=Path(reviewer_dir),
        packet_text=join_parts(packet_text, memory_text) if memory_text else packet_text,
        packet_path=Path(packet_path),
        standpoint=standpoint,
        standpoints_active=standpoints_active,
        dry_run=dry_run,
        has_memory=bool(memory_text),
    )
    return preset.prepare_input(cfg, ctx)
