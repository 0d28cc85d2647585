"""Layout rules of docs/ARCHITECTURE.md that code review alone would let slip."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

SPAR = Path(__file__).resolve().parent.parent / "spar"

# what a pure judgment may import: the standard library's pure parts and other pure modules
PURE_IMPORTS = {
    "__future__", "collections", "collections.abc", "dataclasses", "enum", "functools", "json", "posixpath", "re",
    "typing", "spar.errors", "spar.config.model", "spar.records.model", "math", "spar.round.usage", "operator",
}
# os only for os.path string handling; anything else of os is I/O
IO_NAMES = {"open", "print", "input"}


def _pure_modules() -> list[Path]:
    """spar/judge/ and the record types and usage arithmetic it may use."""
    return sorted((SPAR / "judge").glob("*.py")) + [SPAR / "records" / "model.py", SPAR / "round" / "usage.py"]


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


def _mentioned(doc: str) -> set[str]:
    """Module paths named in the module table: `spar/a/b.py`, or a bare `c.py` after
    one of its folder in the same cell, or a whole folder `spar/a/`."""
    named: set[str] = set()
    for line in doc.splitlines():
        if not line.startswith("| `spar/"):
            continue
        cell = line.split("|")[1]
        folder = ""
        for item in re.findall(r"`([^`]+)`", cell):
            if item.startswith("spar/"):
                folder = item if item.endswith("/") else item.rsplit("/", 1)[0] + "/"
                named.add(item)
            elif item.endswith(".py"):
                named.add(folder + item)
    return named


def test_every_module_is_in_the_architecture_doc():
    named = _mentioned((SPAR.parent / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8"))
    missing = []
    for path in sorted(SPAR.rglob("*.py")):
        rel = path.relative_to(SPAR.parent).as_posix()
        if path.name in ("__init__.py", "__main__.py") and rel != "spar/presets/__init__.py":
            continue
        folder = rel.rsplit("/", 1)[0] + "/"
        if rel in named or folder in named or (folder == "spar/commands/" and "spar/commands/*.py" in named):
            continue
        missing.append(rel)
    assert missing == []


def test_mentioned_reads_grouped_cells():
    doc = "| `spar/round/packet.py`, `schema.py` | round folder |\n| `spar/config/` | all of it |\nnot a row `spar/x.py`\n"
    assert _mentioned(doc) == {"spar/round/packet.py", "spar/round/schema.py", "spar/config/"}


EXITS = {"sys.exit", "os._exit"}


def literal_exit_codes(path: Path) -> list[str]:
    """Integer literals returned by a function returning int, or passed to sys.exit or os._exit."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and ast.unparse(node.returns or ast.Constant(None)) == "int":
            for inner in ast.walk(node):
                if (isinstance(inner, ast.Return) and isinstance(inner.value, ast.Constant)
                        and isinstance(inner.value.value, int)):
                    found.append(f"{node.name}: return {inner.value.value}")
        if (isinstance(node, ast.Call) and ast.unparse(node.func) in EXITS and node.args
                and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, int)):
            found.append(f"{ast.unparse(node.func)}({node.args[0].value})")
    return found


# every program Spar runs: its commands, its entry point and the reviewer guard (its own process)
PROGRAMS = sorted((SPAR / "commands").glob("*.py")) + [SPAR / "cli.py", SPAR / "round" / "guard.py"]


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.name)
def test_exit_codes_only_through_constants(path):
    assert literal_exit_codes(path) == []


def test_the_exit_code_rule_sees_a_literal(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("def main(argv) -> int:\n    if argv:\n        return 1\n    os._exit(0)\n    return EXIT_OK\n"
                   "sys.exit(2)\nsys.exit(main([]))\n")
    assert sorted(literal_exit_codes(bad)) == ["main: return 1", "os._exit(0)", "sys.exit(2)"]


def spar_imports(path: Path) -> set[str]:
    """Top-level modules and spar modules that a module imports."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return {name if name.startswith("spar.") else name.split(".")[0] for name in names}


def test_the_guard_needs_only_the_standard_library():
    """The guard is a fork of spar that must import nothing after the fork: it
    and every spar module it imports, transitively, import nothing but the standard
    library, so it stays small and all it runs is loaded with spar.round.process."""
    seen, todo, outside = set(), ["spar.round.guard"], set()
    while todo:
        module = todo.pop()
        seen.add(module)
        for name in spar_imports(SPAR.parent.joinpath(*module.split(".")).with_suffix(".py")):
            if name.startswith("spar."):
                todo += [] if name in seen else [name]
            elif name not in sys.stdlib_module_names:
                outside.add(f"{module}: {name}")
    assert outside == set()
    assert "spar.errors" in seen  # its exit codes


def test_the_package_says_it_is_typed():
    """PEP 561: the marker pyproject.toml ships, for a package mypy checks strictly."""
    assert (SPAR / "py.typed").is_file()
    assert 'spar = ["py.typed"]' in (SPAR.parent / "pyproject.toml").read_text(encoding="utf-8")
