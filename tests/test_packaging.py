"""Issue 22 point 8: a wheel built from the repository holds the commented configuration
example that the user configuration `spar init` writes points to, the baseline rules `spar init
--project` copies, and every file a command's help points to."""

from __future__ import annotations

import fnmatch
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

from spar import cli
from spar.config.scaffold import user_template

ROOT = Path(__file__).resolve().parent.parent
# a path inside the spar package, as the written configuration names one
_NAMED = re.compile(r"spar/[\w/]+\.example\.toml")


def named_examples() -> set[str]:
    """The example files the written user configuration points to, with or without CLIs found."""
    return set(_NAMED.findall(user_template(["claude", "codex"]) + user_template([])))


def test_the_written_configuration_points_to_package_data():
    """Issue 22 point 8: each example the user configuration names is a file of the spar package
    matched by its package data, so an installed Spar has it."""
    names = named_examples()
    assert names == {"spar/configs/user.example.toml"}
    globs = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["package-data"]
    for name in names:
        assert (ROOT / name).is_file(), name
        inside = name.removeprefix("spar/")
        assert any(fnmatch.fnmatch(inside, glob) for glob in globs["spar"]), (name, globs)


def test_the_baseline_rules_init_copies_are_package_data():
    """`spar init --project` reads the baseline rules from the installed package: the file is
    matched by the package data globs."""
    globs = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["package-data"]
    assert (ROOT / "spar" / "configs" / "baseline.md").is_file()
    assert any(fnmatch.fnmatch("configs/baseline.md", glob) for glob in globs["spar"])


# a file of Spar's a help text names: inside the package (spar/...) or the source tree's docs/
_HELP_PATH = re.compile(r"(?<![\w/.])((?:spar|docs)/[\w./-]+\.(?:md|toml))")


def help_texts(capsys) -> dict[str, str]:
    assert cli.main(["--help"]) == 0
    top = capsys.readouterr().out
    block = top.split("\ncommands:\n", 1)[1].split("\n\n", 1)[0]
    outputs = {"spar": top}
    for name in [line.split()[0] for line in block.splitlines() if line.startswith("  ")]:
        assert cli.main([name, "--help"]) == 0
        outputs[name] = capsys.readouterr().out
    return outputs


def test_help_points_only_to_files_an_installed_spar_has(capsys):
    """`--help` of every command names record formats and examples by files of the installed
    package (matched by its package data), never by the source tree's docs/ an installed Spar
    lacks."""
    globs = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["package-data"]
    named = {(command, path) for command, out in help_texts(capsys).items() for path in _HELP_PATH.findall(out)}
    assert ("gate", "spar/docs/records.md") in named and ("record", "spar/docs/records.md") in named
    assert sorted(n for n in named if not n[1].startswith("spar/")) == []
    for _command, path in named:
        assert (ROOT / path).is_file(), path
        assert any(fnmatch.fnmatch(path.removeprefix("spar/"), glob) for glob in globs["spar"]), path
    assert (ROOT / "spar" / "docs" / "records.md").read_bytes() == (ROOT / "docs" / "records.md").read_bytes()


@pytest.mark.slow
def test_a_wheel_built_from_the_repository_holds_the_examples(tmp_path):
    """Issue 22 point 8: `pip wheel` of the sources (copied, so the build writes nothing into
    the repository) gives a wheel whose files include every example the configuration names."""
    source = tmp_path / "src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    shutil.copytree(ROOT / "spar", source / "spar", ignore=shutil.ignore_patterns("__pycache__"))
    out = tmp_path / "wheel"
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
                           "-q", "-w", str(out), str(source)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    [wheel] = out.glob("spar-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        files = set(archive.namelist())
    assert named_examples() <= files
    assert "spar/configs/project.example.toml" in files
    assert "spar/configs/baseline.md" in files  # what `spar init --project` copies into a project
    with zipfile.ZipFile(wheel) as archive:  # the record formats the help texts point to, whole
        assert archive.read("spar/docs/records.md") == (ROOT / "docs" / "records.md").read_bytes()
