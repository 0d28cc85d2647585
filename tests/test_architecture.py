"""Layout rules of docs/ARCHITECTURE.md that code review alone would let slip."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SPAR = Path(__file__).resolve().parent.parent / "spar"

# what a pure judgment may import: the standard library's pure parts and other pure modules
PURE_IMPORTS = {
    "__future__", "collections", "collections.abc", "dataclasses", "enum", "functools", "json", "posixpath", "re",
    "typing", "spar.errors", "spar.config.model", "spar.records.model",
}
# os only for os.path string handling; anything else of os is I/O
IO_NAMES = {"open", "print", "input"}


def _pure_modules() -> list[Path]:
    """spar/judge/ and the record types it may use."""
    return sorted((SPAR / "judge").glob("*.py")) + [SPAR / "records" / "model.py"]


def io_problems(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    problems = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""]
        else:
            names = []
        for name in names:
            if name != "os" and name not in PURE_IMPORTS and not name.startswith("spar.judge"):
                problems.append(f"imports {name}")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in IO_NAMES:
            problems.append(f"calls {node.func.id}()")
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "os"
                and node.attr != "path"):
            problems.append(f"uses os.{node.attr}")
    return problems


@pytest.mark.parametrize("path", _pure_modules(), ids=lambda p: p.name)
def test_judge_does_no_io(path):
    assert io_problems(path) == []


def test_the_rule_catches_io(tmp_path):
    """Control: the check above sees each kind of I/O."""
    bad = tmp_path / "bad.py"
    bad.write_text("import subprocess\nfrom spar import git\nimport os\nos.listdir('.')\nopen('x')\n")
    assert sorted(io_problems(bad)) == ["calls open()", "imports spar", "imports subprocess", "uses os.listdir"]
