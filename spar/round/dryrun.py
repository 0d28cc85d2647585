"""What `spar run --dry-run` prints: each reviewer's command lines, as shell lines a user can paste."""

from __future__ import annotations

import shlex
from pathlib import Path

from spar.round.interface import Preset
from spar.round.runner import ReviewerJob, command_line


def dry_run_lines(jobs: list[ReviewerJob], path_env: str | None) -> list[str]:
    """For each reviewer, the command line each attempt would run, as a shell line a user can
    paste: run in the workspace, the prompt from the reviewer's input.md (on stdin, or as
    agy's -p argument), claude's --json-schema from schema.json."""
    lines = []
    for job in jobs:
        cfg = job.config
        preset = job.preset
        if not preset.runs_process:
            lines.append(f"spar: dry run: {cfg.name} runs nothing: the host gives {job.reviewer_dir / 'prompt.md'} "
                         "to its subagent")
            continue
        models = [cfg.model] + ([cfg.fallback_model] if cfg.fallback_model else [])
        for number, model in enumerate(models, 1):
            lookup, argv = command_line(job, model, path_env)
            which = "would run" if number == 1 else "after a quota refusal would run"
            note = f" ({lookup.reason})" if lookup.status != "ok" else ""
            lines.append(f"spar: dry run: {cfg.name} {which}{note}: {shell_line(job, preset, argv)}")
    return lines


def shell_line(job: ReviewerJob, preset: Preset, argv: list[str]) -> str:
    """`argv` as one shell line run in the workspace, long texts read from their files."""
    prompt_file = shlex.quote(str(Path(job.reviewer_dir).absolute() / "input.md"))
    schema = Path(job.schema_path)
    schema_text = schema.read_text(encoding="utf-8") if schema.exists() else None
    words = []
    for arg in argv:
        if job.input.text and arg == job.input.text:
            words.append(f'"$(cat {prompt_file})"')
        elif schema_text is not None and arg == schema_text:
            words.append(f'"$(cat {shlex.quote(str(schema.absolute()))})"')
        else:
            words.append(shlex.quote(arg))
    line = f"cd {shlex.quote(str(Path(job.workspace).absolute()))} && " + " ".join(words)
    if preset.stdin_text(job.input) is not None:
        line += f" < {prompt_file}"
    return line
