"""One name, one meaning (issue 21, point 5): no two modules of spar/ define a public class,
function or type alias of the same name, and no field is read through a name built at run
time (`getattr(obj, f"{key}_x")`), which no search for the field finds."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.gitrepo import write_tree
from tests.sourcetree import parsed

SPAR = Path(__file__).resolve().parent.parent / "spar"

# names every module of a family defines as that family's one entry point, meaning the same
# thing in each: a command's `main(argv) -> int` (and the program's), an export format's `build`
ENTRY_POINTS = {"main": ("spar/commands/", "spar/cli.py", "spar/proc/egress_bridge.py"), "build": ("spar/export/",)}
NAME_READERS = {"getattr", "setattr", "hasattr", "delattr"}


def public_names(tree: ast.Module) -> set[str]:
    """Top-level public classes, functions and type aliases (`Key = tuple[str, str]`: a
    CapWords name bound at module level); constants (UPPER_CASE) are not counted."""
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name) and t.id[:1].isupper() and not t.id.isupper()}
    return {name for name in names if not name.startswith("_")}


def duplicate_names(root: Path) -> dict[str, list[str]]:
    """Public name -> the modules (paths relative to root's parent) defining it, for names
    defined in more than one module and not an entry point of a family."""
    where: dict[str, list[str]] = {}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root.parent).as_posix()
        for name in public_names(parsed(path)):
            where.setdefault(name, []).append(rel)
    return {name: paths for name, paths in where.items() if len(paths) > 1
            and not all(p.startswith(ENTRY_POINTS.get(name, ("\0",))) for p in paths)}


def computed_field_reads(path: Path) -> list[str]:
    """`line: call` for each getattr/setattr/hasattr/delattr whose attribute name is built
    at run time from text (an f-string, or text joined with +)."""
    found: list[str] = []
    source = path.read_text(encoding="utf-8")
    if not any(name in source for name in NAME_READERS):
        return found  # no such call to look for
    for node in ast.walk(parsed(path)):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in NAME_READERS
                and len(node.args) > 1 and isinstance(node.args[1], ast.JoinedStr | ast.BinOp)):
            found.append(f"{node.lineno}: {ast.unparse(node)}")
    return found


def test_no_two_modules_define_one_public_name():
    """Issue 21 point 5: `SeriesRound`, `read_series`, `Lookup`, `Known`, `Links`, `parse`,
    `render`, `as_text`, `append_line` each meant different things in different modules."""
    assert duplicate_names(SPAR) == {}


def test_no_field_is_read_through_a_computed_name():
    """Issue 21 point 5: fields are read by name in the code (or through a mapping)."""
    found = {path.relative_to(SPAR.parent).as_posix(): computed_field_reads(path) for path in sorted(SPAR.rglob("*.py"))}
    assert {path: reads for path, reads in found.items() if reads} == {}


def test_the_name_check_sees_a_duplicate_and_spares_entry_points_and_constants(tmp_path):
    """Control: a class and a function, or two type aliases, of one name in two modules are
    caught; private names, constants and the families' entry points are not."""
    spar = write_tree(tmp_path / "spar", {
        "a.py": "class Lookup:\n    pass\nKey = tuple[str, str]\nSCHEMA = 'x'\ndef _helper(): pass\n",
        "b/c.py": "def Lookup(): pass\nKey: type = dict\nSCHEMA = 'y'\ndef _helper(): pass\n",
        "commands/run.py": "def main(argv): pass\n", "commands/gate.py": "def main(argv): pass\n",
        "cli.py": "def main(): pass\n", "export/sarif.py": "def build(items): pass\n",
        "export/rdjsonl.py": "def build(items): pass\n",
        "d.py": "def build(args): pass\n",  # not an export format: a second meaning of build
    })
    assert duplicate_names(spar) == {"Lookup": ["spar/a.py", "spar/b/c.py"], "Key": ["spar/a.py", "spar/b/c.py"],
                                     "build": ["spar/d.py", "spar/export/rdjsonl.py", "spar/export/sarif.py"]}


def test_the_field_check_sees_computed_names(tmp_path):
    """Control: f-strings and joined text are caught; a literal or a plain variable is not."""
    bad = tmp_path / "bad.py"
    bad.write_text("getattr(r, f'{key}_written')\nsetattr(r, 'allowed_' + key, 1)\n"
                   "getattr(r, 'model')\ngetattr(module, name)\n", encoding="utf-8")
    assert computed_field_reads(bad) == ["1: getattr(r, f'{key}_written')", "2: setattr(r, 'allowed_' + key, 1)"]
