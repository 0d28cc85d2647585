"""Issue 22 point 8: a test that skips for a missing program says so in the pytest summary,
and the README says what the tests need and that .ci/run installs it."""

from __future__ import annotations

import re
import shlex
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# what some tests run for real, as the README and .ci/run name them
PROGRAMS = ("rg", "tree", "file", "strace", "mkfs.xfs", "npm", "chromium")


def test_skipped_tests_are_named_in_the_summary():
    """Issue 22 point 8: `-rs` is in addopts, so every skip and its reason is in the summary."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    addopts = shlex.split(config["tool"]["pytest"]["ini_options"]["addopts"])
    assert any(opt.startswith("-r") and "s" in opt[2:] for opt in addopts), addopts


def test_the_readme_says_what_the_tests_need():
    """Issue 22 point 8: the README's Tests section names each program some tests run and says
    .ci/run installs them; .ci/run does install each."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    tests_section = readme.split("\n## Tests\n", 1)[1].split("\n## ", 1)[0]
    for program in PROGRAMS:
        assert f"`{program}`" in tests_section, program
    assert ".ci/run` installs" in tests_section
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    installed = set(re.findall(r"apt-get install -y -q ([\w .-]+)", ci))
    words = {word for line in installed for word in line.split()}
    assert {"tree", "ripgrep", "file", "strace", "xfsprogs", "npm", "chromium"} <= words, words
