"""command preset: any program; `{prompt}` names its input file; stdout is one JSON object."""

from __future__ import annotations

import re
from pathlib import Path

from spar.config.model import ReviewerConfig
from spar.judge.answer import parse_answer
from spar.presets.input import instructed_packet
from spar.round.interface import Answer, InputContext, InputSpec, Monitor, Preset, RunPaths, StreamInfo

_PLACEHOLDER = re.compile(r"\{(prompt|workspace|schema)\}")


def substitute(arg: str, *, prompt: Path | str, workspace: Path | str, schema: Path | str) -> str:
    """Replace {prompt}, {workspace} and {schema} anywhere in one argument; other {…} stay."""
    values = {"prompt": str(prompt), "workspace": str(workspace), "schema": str(schema)}
    # one pass, so a replaced path that itself contains "{schema}" is never replaced again
    return _PLACEHOLDER.sub(lambda m: values[m.group(1)], arg)


class CommandMonitor(Monitor):
    """No tool monitoring; the whole stdout is the answer."""

    def feed(self, line: str) -> str | None:
        return None

    def long_line(self, prefix: str, length: int, limit: int, complete: bool, *, why: str = "") -> str | None:
        return None  # the whole stdout is the answer, read (and capped) as a whole

    def finish(self, exit_code: int | None, stdout: StreamInfo) -> Answer:
        if exit_code != 0:
            return Answer(False, failure="the command did not exit with code 0")
        if stdout.truncated:
            return Answer(True, output_error=f"stdout is longer than the {stdout.bytes_kept}-byte output cap")
        data = stdout.path.read_bytes() if stdout.path is not None else b""
        result, error = parse_answer(data, "stdout")
        return Answer(True, result=result, output_error=error)


class CommandPreset(Preset):
    name = "command"
    monitor_class = CommandMonitor
    version_args = None  # an arbitrary program has no version convention
    unset_model_text = "set by the command"  # Spar passes a command no model
    proxy_credentials = False  # any program: the proxy's address, not the user's password for it

    def prepare_input(self, cfg: ReviewerConfig, ctx: InputContext) -> InputSpec:
        if ctx.writes_input_md:
            text = instructed_packet(ctx)
            return InputSpec(text=text, files={"input.md": text},
                             prompt_path=(ctx.reviewer_dir / "input.md").absolute())
        # no input.md outside standpoint rounds and dry runs: {prompt} is the packet itself
        return InputSpec(text=ctx.packet_text, files={}, prompt_path=ctx.packet_path.absolute())

    def _prompt(self, paths: RunPaths, spec: InputSpec) -> Path:
        return spec.prompt_path if spec.prompt_path is not None else paths.round_dir / "packet.md"

    def argv(self, exe: str, cfg: ReviewerConfig, model: str, paths: RunPaths, spec: InputSpec) -> list[str]:
        prompt = self._prompt(paths, spec)
        args = [substitute(a, prompt=prompt, workspace=paths.workspace, schema=paths.schema_path)
                for a in cfg.argv]
        return [exe] + args[1:]

    def executable_name(self, cfg: ReviewerConfig, paths: RunPaths, spec: InputSpec) -> str:
        """argv[0] (placeholders replaced) is what G14 looks up."""
        prompt = self._prompt(paths, spec)
        return substitute(cfg.argv[0], prompt=prompt, workspace=paths.workspace, schema=paths.schema_path)


PRESET = CommandPreset()
