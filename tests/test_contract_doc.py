"""docs/contract.md explains every rule id the repository cites, and users never see the ids
(issue 21 point 4).

A citation is `G<n>` (a row of the input contract) or `§<n>` with the document it belongs
to. A `§` usually follows its document's name ("design §8", "contract §4",
"core-capabilities §1", "Review round §6"); a bare `§<n>` belongs to the document named
nearest before it in the same file (else the first one named after it, else the input
contract, which the design calls the authority on formats).
"""

from __future__ import annotations

import ast
import os
import re
from pathlib import Path

import pytest

from spar import cli
from tests.sourcetree import parsed

ROOT = Path(__file__).resolve().parents[1]
CONTRACT_DOC = ROOT / "docs" / "contract.md"

G_ID = re.compile(r"(?<![A-Za-z0-9_])G([1-9][0-9]*)(?![A-Za-z0-9_])")
SECTION = re.compile(r"§\s*([0-9]+)")
DOCUMENT = re.compile(r"core[- ]capabilities|spar-design|design|contract|review round", re.IGNORECASE)
DOCUMENT_HEADING = {"core-capabilities": "Core capabilities", "core capabilities": "Core capabilities",
                    "spar-design": "Design", "design": "Design", "contract": "Contract",
                    "review round": "Review round"}
HEADING = re.compile(r"^#{2,3}\s+(G[0-9]+|(?:Design|Contract|Core capabilities|Review round) §[0-9]+)\b",
                     re.MULTILINE)
USER_ID = re.compile(r"(?<![A-Za-z0-9_])G[0-9]+(?![A-Za-z0-9_])|§")


def _documents(text: str) -> list[tuple[int, str]]:
    """(offset, heading prefix) of every document name in `text`. "core-capabilities
    contract" names one document, the core-capabilities one."""
    found = []
    for m in DOCUMENT.finditer(text):
        name = DOCUMENT_HEADING[m.group(0).lower()]
        if name == "Contract" and re.search(r"core[- ]capabilities\W*$", text[max(0, m.start() - 25):m.start()],
                                            re.IGNORECASE):
            continue
        found.append((m.start(), name))
    return found


def cited(text: str) -> set[str]:
    """The headings `text` cites: `G<n>` and `<Document> §<n>`."""
    ids = {f"G{m.group(1)}" for m in G_ID.finditer(text)}
    documents = _documents(text)
    for m in SECTION.finditer(text):
        before = [name for at, name in documents if at < m.start()]
        after = [name for at, name in documents if at > m.start()]
        document = before[-1] if before else after[0] if after else "Contract"
        ids.add(f"{document} §{m.group(1)}")
    return ids


def headings(text: str) -> set[str]:
    return set(HEADING.findall(text))


def _cited_files() -> list[Path]:
    """Every file of spar/, tests/ and docs/ and the README (the issue's list), and of the
    other folders a reader meets (bench/, examples/, configs/, .ci/); not this test, whose
    strings are the checker's own examples (its controls cite rows that do not exist), nor
    what the bench generates in bench/out/."""
    folders = ("spar", "tests", "docs", "bench", "examples", "configs", ".ci")
    generated = ROOT / "bench" / "out"  # the bench's generated repositories (ignored by git), not a reader's text
    files = []
    for folder in folders:
        for where, dirs, names in os.walk(ROOT / folder):
            # not walked at all: a generated repository holds tens of thousands of files
            dirs[:] = [d for d in dirs if d != "__pycache__" and Path(where, d) != generated]
            files += [Path(where, name) for name in names]
    return sorted(p for p in files if p != Path(__file__).resolve() and p.is_file()) + [ROOT / "README.md"]


def _text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return None  # a binary file (an image) cites nothing


def test_every_cited_rule_has_a_section():
    """Issue 21 point 4: every G-row and design/contract section cited anywhere in spar/,
    tests/, docs/ or the README (and bench/, examples/, configs/, .ci/) has its heading in
    docs/contract.md."""
    sections = headings(CONTRACT_DOC.read_text(encoding="utf-8"))
    missing: dict[str, list[str]] = {}
    for path in _cited_files():
        text = _text(path)
        for rule in sorted(cited(text or "") - sections):
            missing.setdefault(rule, []).append(str(path.relative_to(ROOT)))
    assert not missing, f"cited without a section in docs/contract.md: {missing}"
    assert {f"G{n}" for n in range(1, 36)} <= sections  # the whole input table, cited or not


def test_citation_reading_control():
    """Control for the check above: a missing row or section is found, a bare § takes the
    document named before it, and a heading is recognised only in the form the page uses."""
    row, section = "G" + "99", "§" + "42"
    text = f"see {row}, and Design {section}; then contract §4 and later §5 (core-capabilities contract §1)"
    assert cited(text) == {"G99", "Design §42", "Contract §4", "Contract §5", "Core capabilities §1"}
    assert cited("the §3 grammar, as the contract says") == {"Contract §3"}
    assert cited("a bare §6 with no document named") == {"Contract §6"}
    assert "G7" not in cited("G70 and XG7 and G7a")
    page = "## G7 — locations\n## Design §3 — classification\n### G8 nested\nG9 in text\n"
    assert headings(page) == {"G7", "Design §3", "G8"}
    assert cited(text) - headings(page)  # what the page lacks is reported


def test_every_module_named_in_contract_doc_exists():
    """Issue 21 point 4: each section names the module that does the rule; a named module
    that no longer exists makes the page false."""
    named = set(re.findall(r"`(spar/[A-Za-z0-9_/]*(?:\.py|/))`", CONTRACT_DOC.read_text(encoding="utf-8")))
    assert len(named) > 40
    assert sorted(n for n in named if not (ROOT / n).exists()) == []


def _commands(help_text: str) -> list[str]:
    """The command names `spar --help` lists."""
    block = help_text.split("\ncommands:\n", 1)[1].split("\n\n", 1)[0]
    return [line.split()[0] for line in block.splitlines() if line.startswith("  ")]


def test_help_texts_cite_no_rule_ids(capsys):
    """Issue 21 point 4: `spar --help` and every `spar <command> --help` say rules in words:
    no G-row and no § appears in what a user reads."""
    assert cli.main(["--help"]) == 0
    outputs = {"spar": capsys.readouterr().out}
    commands = _commands(outputs["spar"])
    assert {"run", "gate", "cap-report", "doctor", "export", "triage"} <= set(commands)
    for name in commands:
        assert cli.main([name, "--help"]) == 0
        outputs[name] = capsys.readouterr().out
    assert all(len(out) > 200 for name, out in outputs.items() if name != "spar")
    assert {name: USER_ID.findall(out) for name, out in outputs.items() if USER_ID.search(out)} == {}


def _docstrings(tree: ast.AST) -> set[int]:
    kinds = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    return {id(node.body[0].value) for node in ast.walk(tree)
            if isinstance(node, kinds) and node.body and isinstance(node.body[0], ast.Expr)
            and isinstance(node.body[0].value, ast.Constant)}


def id_strings(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, text) of each string constant in `tree`, other than a docstring, that cites
    a rule id. Every such constant can reach a user (an error, help, a record, the packet)."""
    skip = _docstrings(tree)
    return [(node.lineno, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip
            and USER_ID.search(node.value)]


def test_messages_cite_no_rule_ids():
    """Issue 21 point 4: no string in spar/ that is not a docstring (error and refusal
    messages, prints, help, epilogs, record and packet text) cites a G-row or a §. Comments
    and docstrings may, since docs/contract.md explains them; no module shows a docstring
    to users, so that line holds."""
    found = {}
    for path in sorted((ROOT / "spar").rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        assert "__doc__" not in source, f"{path} shows a docstring; it would need the same check"
        if hits := id_strings(parsed(path)):
            found[str(path.relative_to(ROOT))] = hits
    assert found == {}


@pytest.mark.parametrize(("source", "expected"), [
    ('raise Refused(f"bad stage {s} (G31)")', 1),
    ('parser.add_argument("--out", help="ignored as design §10 asks")', 1),
    ('"""Module docstring: G31, design §8."""\nx = 1  # G5 in a comment', 0),
    ('def f():\n    """G12 in a docstring."""\n    return "G12x and XG12"', 0),
])
def test_message_scan_control(source, expected):
    """Control for the scan above: ids in messages are found, docstrings and comments pass."""
    assert len(id_strings(ast.parse(source))) == expected


def _skip_reasons(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, text) of each string inside a `skip`, `skipif` or `importorskip` call."""
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
             and node.func.attr in ("skip", "skipif", "importorskip")]
    return [(sub.lineno, sub.value) for call in calls for sub in ast.walk(call)
            if isinstance(sub, ast.Constant) and isinstance(sub.value, str)]


def test_readme_and_skip_reasons_cite_no_rule_ids():
    """A user has the README and the skip lines of a test run, not the contract: both say
    what they mean in words."""
    assert USER_ID.findall((ROOT / "README.md").read_text(encoding="utf-8")) == []
    found = {}
    for path in sorted((ROOT / "tests").rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        if "skip" not in source:  # no call of skip, skipif or importorskip: nothing to parse
            continue
        hits = [(line, text) for line, text in _skip_reasons(ast.parse(source)) if USER_ID.search(text)]
        if hits:
            found[str(path.relative_to(ROOT))] = hits
    assert found == {}


def test_skip_reason_scan_control():
    """Control for the scan above: a reason citing a row is found, whatever call spells it."""
    source = ('pytestmark = pytest.mark.skipif(True, reason=f"needs {x} (the " "G11 test")\n'
              'pytest.skip("needs root")\n')
    assert [text for _, text in _skip_reasons(ast.parse(source)) if USER_ID.search(text)] == [" (the G11 test"]
