"""Layout rules of docs/ARCHITECTURE.md that code review alone would let slip."""

from __future__ import annotations

import ast
import functools
import re
import sys
import tomllib
from pathlib import Path

import pytest

from tests.gitrepo import write_tree
from tests.sourcetree import parsed

SPAR = Path(__file__).resolve().parent.parent / "spar"

# what a pure judgment may import: the standard library's pure parts and other pure modules
PURE_IMPORTS = {
    "__future__", "collections", "collections.abc", "dataclasses", "enum", "functools", "json", "posixpath", "re",
    "typing", "spar.errors", "spar.config.model", "spar.records.model", "math", "spar.records.usage", "operator",
    "spar.records.record_rules", "spar.jsonvalue", "spar.globs", "spar.whitespace", "spar.pathtext",
    "bisect", "shlex",
    "datetime",  # Unix times shown as UTC (spar/judge/refusal.py); never now()
}
# os only for os.path string handling; anything else of os is I/O
IO_NAMES = {"open", "print", "input"}


def _pure_modules() -> list[Path]:
    """spar/judge/ and what it may use: the record types, record rules and usage arithmetic,
    the JSON, glob, whitespace and path text helpers."""
    return sorted((SPAR / "judge").glob("*.py")) + [
        SPAR / "records" / "model.py", SPAR / "records" / "record_rules.py", SPAR / "records" / "usage.py",
        SPAR / "jsonvalue.py", SPAR / "globs.py", SPAR / "whitespace.py", SPAR / "pathtext.py"]


def io_problems(path: Path) -> list[str]:
    tree = parsed(path)
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
    tree = parsed(path)
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
PROGRAMS = sorted((SPAR / "commands").glob("*.py")) + [SPAR / "cli.py", SPAR / "proc" / "guard.py"]


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
    for node in ast.walk(parsed(path)):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return {name if name.startswith("spar.") else name.split(".")[0] for name in names}


def test_the_guard_needs_only_the_standard_library():
    """The guard is a fork of spar that must import nothing after the fork: it
    and every spar module it imports, transitively, import nothing but the standard
    library, so it stays small and all it runs is loaded with spar.proc.process."""
    seen, todo, outside = set(), ["spar.proc.guard"], set()
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
    config = tomllib.loads((SPAR.parent / "pyproject.toml").read_text(encoding="utf-8"))
    assert "py.typed" in config["tool"]["setuptools"]["package-data"]["spar"]


# ---------------------------------------------------------------- one direction of imports (issue 21, point 2)


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported(node: ast.Import | ast.ImportFrom, module: str, is_package: bool, root: Path) -> list[str]:
    """The spar modules one import statement names (at any depth of the module: an
    import inside a function or under TYPE_CHECKING is an import all the same)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    if node.level:  # relative: from the module's package, one level up per dot after the first
        package = module.split(".") if is_package else module.split(".")[:-1]
        base = ".".join(package[:len(package) - node.level + 1] + ([node.module] if node.module else []))
    found = [base]
    for alias in node.names:  # `from spar import git`: the module git, not only the package
        sub = root.parent.joinpath(*f"{base}.{alias.name}".split("."))
        if sub.with_suffix(".py").is_file() or sub.is_dir():
            found.append(f"{base}.{alias.name}")
    return found


@functools.cache
def _spar_imports() -> dict[str, set[str]]:
    """module_imports(SPAR), read once for the checks below (they only read it)."""
    return module_imports(SPAR)


def module_imports(root: Path) -> dict[str, set[str]]:
    """Every module under `root` (a package folder) -> the modules of that package it imports."""
    top = root.name
    out: dict[str, set[str]] = {}
    for path in sorted(root.rglob("*.py")):
        module = _module_name(path, root)
        names: set[str] = set()
        for node in ast.walk(parsed(path)):
            if isinstance(node, ast.Import | ast.ImportFrom):
                names |= {n for n in _imported(node, module, path.name == "__init__.py", root)
                          if n.startswith(top + ".")}
        out[module] = names
    return out


def package_of(module: str) -> str:
    """The node of the package graph: a subpackage (`spar.round`) or a top-level module
    (`spar.series`), each its own package."""
    return ".".join(module.split(".")[:2])


def package_graph(imports: dict[str, set[str]]) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {package_of(m): set() for m in imports}
    for module, names in imports.items():
        for name in names:
            if package_of(name) != package_of(module):
                graph[package_of(module)].add(package_of(name))
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle through each group of packages that reach each other (none: the graph
    is acyclic). Depth-first search; a node met again on the current path closes a cycle."""
    found: list[list[str]] = []
    done: set[str] = set()
    path: list[str] = []

    def visit(node: str) -> None:
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt in path:
                found.append(path[path.index(nxt):] + [nxt])
            elif nxt not in done:
                visit(nxt)
        path.pop()
        done.add(node)

    for node in sorted(graph):
        if node not in done:
            visit(node)
    return found


def command_imports(imports: dict[str, set[str]], top: str = "spar") -> list[str]:
    """`a -> b` for each command module importing another command module, and each module
    outside the command layer (and the entry point, which loads them by name) importing one."""
    commands = f"{top}.commands"
    out = []
    for module, names in sorted(imports.items()):
        for name in sorted(names):
            if package_of(name) == commands and name != commands and module not in (name, f"{top}.cli"):
                out.append(f"{module} -> {name}")
    return out


def test_no_two_packages_import_each_other_nor_any_circle():
    """Issue 21 point 2: the package graph of spar/ has no cycle of any length."""
    assert cycles(package_graph(_spar_imports())) == []


def test_no_command_imports_a_command():
    """Issue 21 point 2: what two commands share lives one layer down, never in a command."""
    assert command_imports(_spar_imports()) == []


def test_the_graph_check_catches_a_pair_a_circle_and_a_command_importing_a_command(tmp_path):
    """Control: the checks above fail on a tree that breaks each rule, whatever the import's
    spelling (a relative import, one inside a function, `from package import module`)."""
    spar = write_tree(tmp_path / "spar", {
        "__init__.py": "", "errors.py": "",
        "a/__init__.py": "", "a/x.py": "from spar.b import y\n",
        "b/__init__.py": "", "b/y.py": "def f():\n    from ..c import z\n",
        "c/__init__.py": "", "c/z.py": "from spar import a\n",
        "d/__init__.py": "", "d/p.py": "from spar.e.q import v\n",
        "e/__init__.py": "", "e/q.py": "import spar.d.p\nfrom spar import errors\n",
        "commands/__init__.py": "", "commands/run.py": "from spar.commands import gate\n",
        "commands/gate.py": "", "cli.py": "import spar.commands.run\n", "series.py": "from spar.commands.gate import x\n",
    })
    graph = package_graph(module_imports(spar))
    assert graph["spar.e"] == {"spar.d", "spar.errors"}
    assert sorted(cycles(graph)) == [["spar.a", "spar.b", "spar.c", "spar.a"], ["spar.d", "spar.e", "spar.d"]]
    assert command_imports(module_imports(spar)) == ["spar.commands.run -> spar.commands.gate",
                                                     "spar.series -> spar.commands.gate"]


def test_an_acyclic_tree_passes_the_graph_check(tmp_path):
    """Control: a chain of layers, each importing the ones below, is no cycle."""
    spar = write_tree(tmp_path / "spar", {
        "__init__.py": "", "base.py": "", "low/__init__.py": "from spar import base\n",
        "high/__init__.py": "", "high/m.py": "from spar.low import thing\nimport spar.base\n",
    })
    graph = package_graph(module_imports(spar))
    assert graph == {"spar": set(), "spar.base": set(), "spar.low": {"spar.base"}, "spar.high": {"spar.low", "spar.base"}}
    assert cycles(graph) == []


def test_the_process_layer_knows_no_rounds_nor_reviewers():
    """spar/proc/ starts, guards, limits and ends programs: it imports only the base layer
    (errors and the like), never a round, a reviewer preset, a judgment or a record."""
    imports = _spar_imports()
    allowed = {"spar.proc", "spar.errors", "spar.hostlist"}
    reached = sorted({package_of(name) for module, names in imports.items()
                      if package_of(module) == "spar.proc" for name in names} - allowed)
    assert reached == []


def test_the_copy_layer_knows_no_rounds_nor_reviewers():
    """spar/workspace/ builds a round's copies from git: no round, preset or process layer."""
    imports = _spar_imports()
    reached = {package_of(name) for module, names in imports.items()
               if package_of(module) == "spar.workspace" for name in names}
    assert not reached & {"spar.round", "spar.presets", "spar.proc", "spar.commands", "spar.judge"}


def _names_used(path: Path) -> set[str]:
    tree = parsed(path)
    used = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    used |= {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
    return used | {alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) for alias in node.names}


def test_the_reviewer_guard_is_owned_by_commands_alone():
    """One owner: only a command enters `reviewer_guard()` (once, at its start), and only
    the process layer makes a `ReviewerGuard`; no round step starts or stops a guard."""
    owners = sorted(str(path.relative_to(SPAR.parent)) for path in SPAR.rglob("*.py")
                    if "reviewer_guard" in _names_used(path) and path.parent.name != "proc")
    assert owners == ["spar/commands/doctor.py", "spar/commands/run.py", "spar/commands/verify.py"]
    makers = [str(path.relative_to(SPAR.parent)) for path in SPAR.rglob("*.py")
              if "ReviewerGuard" in _names_used(path)]
    assert makers == ["spar/proc/process.py"]


def fixtures_defined(path: Path, name: str) -> list[int]:
    """Lines where the test module at `path` defines a function called `name` (a fixture of that name)."""
    return [node.lineno for node in ast.walk(parsed(path))
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == name]


def test_no_test_module_redefines_the_shared_anyio_backend():
    """tests/conftest.py's `anyio_backend` runs every async test on both backends (trio in the
    full suite); a module's own would quietly run its tests on one."""
    tests = Path(__file__).resolve().parent
    redefined = {path.name: fixtures_defined(path, "anyio_backend") for path in sorted(tests.rglob("*.py"))
                 if path.name != "conftest.py"}
    assert {name: lines for name, lines in redefined.items() if lines} == {}
    assert fixtures_defined(tests / "conftest.py", "anyio_backend")


def test_the_fixture_rule_sees_a_redefinition(tmp_path):
    """Control: a module defining its own anyio_backend is found."""
    bad = tmp_path / "test_bad.py"
    bad.write_text("import pytest\n\n\n@pytest.fixture\ndef anyio_backend():\n    return 'asyncio'\n")
    assert fixtures_defined(bad, "anyio_backend") == [5]
