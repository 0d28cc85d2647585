"""What the presets share beyond the round's interface: the input text they build
(the standpoint instruction, parts joined) and `StdinPreset` (the packet on stdin)."""

from __future__ import annotations

from spar.config.model import ReviewerConfig
from spar.round.interface import InputContext, InputSpec, Preset, join_parts


def standpoint_instruction(standpoint: str | None, standpoints_active: bool) -> str:
    """The per-reviewer instruction of a standpoint round ("" outside standpoint rounds)."""
    if not standpoints_active:
        return ""
    if standpoint is not None:
        return (
            "Your standpoint for this round (also listed under \"Standpoints for this round\" "
            "in the packet):\n\n"
            f"{standpoint}\n\n"
            "Attack this risk in particular, while still checking every angle the packet asks for. "
            "Report on it in `standpoint_report`: `checked: true` with what you checked, or "
            "`checked: false` with why you could not check it.\n"
        )
    return (
        "This round assigns standpoints to other reviewers (see \"Standpoints for this round\" "
        "in the packet); you have none. Review the whole change, checking every angle the "
        "packet asks for. You need not give a `standpoint_report`.\n"
    )


def instructed_packet(ctx: InputContext) -> str:
    """The packet, preceded by the standpoint instruction when there is one."""
    instruction = standpoint_instruction(ctx.standpoint, ctx.standpoints_active)
    return join_parts(instruction, ctx.packet_text) if instruction else ctx.packet_text


class StdinPreset(Preset):
    """claude and codex: the packet on stdin, preceded by the standpoint instruction
    (input.md holds the same text in standpoint rounds and dry runs)."""

    def prepare_input(self, cfg: ReviewerConfig, ctx: InputContext) -> InputSpec:
        text = instructed_packet(ctx)
        files = {"input.md": text} if ctx.writes_input_md else {}
        return InputSpec(text=text, files=files)

    def stdin_text(self, spec: InputSpec) -> str | None:
        return spec.text
