"""native preset: spar runs nothing; the host's subagent reviews from prompt.md."""

from __future__ import annotations

from spar.config.model import ReviewerConfig
from spar.presets.input import standpoint_instruction
from spar.round.interface import InputContext, InputSpec, Preset, join_parts


def fixed_instructions(cfg: ReviewerConfig, ctx: InputContext) -> str:
    # real paths: the transcript check (G15) compares the subagent's reads with them
    round_dir = ctx.round_dir.resolve()
    workspace = round_dir / "workspace"
    result_path = ctx.reviewer_dir.resolve() / "result.json"
    return (
        f"# Spar review prompt for reviewer {cfg.name}\n"
        "\n"
        "For the host: give this whole file to a subagent with only the Read, Grep and Glob "
        "tools, working in the workspace below. Save its final answer, unchanged, to "
        f"`{result_path}`, then record it with\n"
        f"`spar record {round_dir} --reviewer {cfg.name} --result {result_path}` "
        "(add `--transcript <the subagent's transcript JSONL>` when you have it).\n"
        "\n"
        "For the reviewer:\n"
        "\n"
        f"- Review read-only. Read only inside `{workspace}`: `head/` is the commit under review, "
        "`base/` the commit it is compared with. Use only Read, Grep and Glob; change nothing, "
        "run nothing, and do not ask for other tools or context.\n"
        # no path to schema.json: it lies outside the workspace, and reading it would be
        # warned as a read outside the native workspace (G15); the packet describes the object
        "- Your final answer is one JSON object as the packet's \"How to report\" section "
        "describes it, with nothing before or after it.\n"
        "- The review packet follows this note.\n"
    )


class NativePreset(Preset):
    name = "native"
    runs_process = False
    version_args = None

    def prepare_input(self, cfg: ReviewerConfig, ctx: InputContext) -> InputSpec:
        instruction = standpoint_instruction(ctx.standpoint, ctx.standpoints_active)
        # the packet goes inside prompt.md: a native reviewer reads only prompt.md and the workspace (G15)
        text = join_parts(fixed_instructions(cfg, ctx), instruction, ctx.packet_text)
        files = {"prompt.md": text}
        if ctx.writes_input_md:
            files["input.md"] = text
        return InputSpec(text=text, files=files)


PRESET = NativePreset()
