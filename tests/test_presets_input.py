"""What each preset gives a reviewer (contract: standpoint delivery; design §5 presets)."""

from __future__ import annotations

from pathlib import Path

import pytest

from spar.config.model import ReviewerConfig
from spar.judge.agy_commands import PROGRAMS, check_command
from spar.presets import prepare_input
from spar.presets.agy import COMMAND_NOTE, PACKET_FILE
from spar.presets.input import standpoint_instruction

PACKET = "# Review packet\n\nstage: code\n\n## How to report\n\nOne JSON object.\n"
STANDPOINT = "Attack the cache invalidation: stale reads after a write."


def _cfg(preset: str, name: str | None = None) -> ReviewerConfig:
    argv = ["python3", "review.py", "{prompt}"] if preset == "command" else []
    return ReviewerConfig(name=name or preset, preset=preset, argv=argv)


def _prep(tmp_path: Path, preset: str, *, standpoint=None, active=False, dry=False, packet=PACKET):
    round_dir = tmp_path / "ROUND"
    return prepare_input(_cfg(preset), reviewer_dir=round_dir / preset, packet_text=packet,
                         packet_path=round_dir / "packet.md", standpoint=standpoint,
                         standpoints_active=active, dry_run=dry)


def _given(preset: str, spec) -> str:
    """What the reviewer reads: its input, or for agy the packet file its prompt names."""
    return spec.files[PACKET_FILE] if preset == "agy" else spec.text


@pytest.mark.parametrize("preset", ["claude", "codex"])
def test_stdin_presets_without_standpoints_receive_the_packet_unchanged(tmp_path, preset):
    spec = _prep(tmp_path, preset)
    assert spec.text == PACKET  # byte for byte: no instruction, no input.md
    assert spec.files == {}


@pytest.mark.parametrize("preset", ["claude", "codex", "agy", "command", "native"])
def test_dry_run_writes_input_md_holding_exactly_the_input(tmp_path, preset):
    spec = _prep(tmp_path, preset, dry=True)
    assert spec.files["input.md"] == spec.text
    if preset in ("claude", "codex", "command"):
        assert spec.text == PACKET


@pytest.mark.parametrize("preset", ["claude", "codex", "agy", "command", "native"])
@pytest.mark.parametrize("dry", [False, True])
def test_assigned_standpoint_instruction(tmp_path, preset, dry):
    spec = _prep(tmp_path, preset, standpoint=STANDPOINT, active=True, dry=dry)
    instruction = standpoint_instruction(STANDPOINT, True)
    assert STANDPOINT in instruction and "still checking every angle" in instruction
    assert spec.files["input.md"] == spec.text
    given = _given(preset, spec)
    assert instruction in given
    assert given.endswith(PACKET)
    assert given.index(instruction) < given.index(PACKET)
    if preset in ("claude", "codex", "command"):
        assert spec.text == instruction + "\n" + PACKET


@pytest.mark.parametrize("preset", ["claude", "codex", "agy", "command", "native"])
def test_unassigned_reviewer_in_standpoint_round_reviews_the_whole_change(tmp_path, preset):
    spec = _prep(tmp_path, preset, standpoint=None, active=True)
    assert "Review the whole change" in _given(preset, spec)
    assert STANDPOINT not in _given(preset, spec) + spec.text
    assert spec.files["input.md"] == spec.text


def test_agy_prompt_is_the_command_note_and_the_packet_file_s_name_only(tmp_path):
    """agy takes its prompt only in -p, which other users can read: no packet, no instruction in it."""
    spec = _prep(tmp_path, "agy", standpoint=STANDPOINT, active=True)
    packet_file = (tmp_path / "ROUND" / "agy" / PACKET_FILE).absolute()
    assert spec.text.startswith(COMMAND_NOTE) and str(packet_file) in spec.text
    assert STANDPOINT not in spec.text and "stage: code" not in spec.text
    assert spec.files[PACKET_FILE] == standpoint_instruction(STANDPOINT, True) + "\n" + PACKET
    plain = _prep(tmp_path, "agy")
    assert plain.text == spec.text and plain.files == {PACKET_FILE: PACKET}  # not dry: no input.md


def test_agy_command_note_names_only_programs_the_checker_accepts():
    for program in PROGRAMS:
        if program != "sed":
            assert program in COMMAND_NOTE
            assert check_command(f"{program} head") is None
    assert check_command("sed -n '1,5p' head/a.py") is None
    for forbidden in ("cd", "git", "python3"):
        assert check_command(f"{forbidden} head") is not None


def test_agy_large_packet_goes_to_packet_md_too(tmp_path):
    packet = "# Review packet\n" + ("diff line\n" * 20_000)  # more than Linux takes in one argument
    spec = _prep(tmp_path, "agy", packet=packet)
    assert spec.files[PACKET_FILE] == packet
    assert "diff line" not in spec.text and len(spec.text.encode()) < 4096


def test_command_without_input_md_gets_the_packet_path(tmp_path):
    spec = _prep(tmp_path, "command")
    assert spec.files == {}
    assert spec.prompt_path == (tmp_path / "ROUND" / "packet.md").absolute()
    assert spec.text == PACKET


@pytest.mark.parametrize("active,dry", [(True, False), (False, True)])
def test_command_with_input_md_gets_input_md(tmp_path, active, dry):
    spec = _prep(tmp_path, "command", standpoint=STANDPOINT if active else None, active=active, dry=dry)
    assert spec.prompt_path == (tmp_path / "ROUND" / "command" / "input.md").absolute()
    assert spec.files["input.md"] == spec.text


def test_native_prompt_md_holds_fixed_instructions_then_packet(tmp_path):
    spec = _prep(tmp_path, "native")
    round_dir = (tmp_path / "ROUND").resolve()
    assert set(spec.files) == {"prompt.md"}
    prompt = spec.files["prompt.md"]
    assert prompt == spec.text
    assert prompt.endswith(PACKET)
    assert str(round_dir / "workspace") in prompt
    # nothing outside the workspace and prompt.md is named for reading (G15 would warn)
    assert "schema.json" not in prompt
    assert f"spar record {round_dir} --reviewer native --result {round_dir / 'native' / 'result.json'}" in prompt
    assert "Read, Grep and Glob" in prompt


def test_native_standpoint_instruction_follows_fixed_instructions(tmp_path):
    spec = _prep(tmp_path, "native", standpoint=STANDPOINT, active=True)
    prompt = spec.files["prompt.md"]
    assert prompt.index("For the reviewer") < prompt.index(STANDPOINT) < prompt.index(PACKET)
    assert spec.files["input.md"] == prompt
