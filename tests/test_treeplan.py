"""treeplan: the .git spellings git refuses, and which symbolic links stay links."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from spar.workspace.treeplan import component_refused, path_refused, plan_tree, workspace_warnings

REFUSED = [
    ".git", ".GIT", ".Git", "sub/.git", ".git/config", "a/b/.gIt/hooks/x",
    ".git.", ".git..", ".git ", ".git. .", ".git::$INDEX_ALLOCATION", ".git:stream",  # NTFS
    "git~1", "GIT~1", "git~1.", "sub/git~1/config",  # NTFS short name
    ".g\u200cit", ".\u200dgit", ".git\ufeff", ".gi\u206at", ".GI\u202eT",  # HFS+
    "x\\.git", "a\\git~1\\config", "..", ".", "a//b",
]
ALLOWED = [
    ".gitignore", ".github/workflows/x.yml", ".gitmodules", "git", ".gitx", "x.git", "my.git/config",
    "git~2", ".git~1", "g.it", ".gi t", "caf\udce9.txt", "a\\b", ".gitattributes",
    ".g\u200bit",  # U+200B is not HFS-ignorable
]
LINK_REFUSED = [".gitmodules", ".GITMODULES", ".gitmodules.", ".gitmodules:x", "gitmod~1", "GI7EBA~9",
                ".git\u200cmodules", ".gitattributes", ".gitignore", ".mailmap", "sub/.gitignore",
                "gitatt~1", "gi250a~3"]


@pytest.mark.parametrize("path", REFUSED)
def test_git_refuses(path):
    assert path_refused(path)
    assert path_refused(path, symlink=True)


@pytest.mark.parametrize("path", ALLOWED)
def test_git_allows(path):
    assert not path_refused(path)


@pytest.mark.parametrize("path", LINK_REFUSED)
def test_dotfile_links_refused_files_allowed(path):
    assert path_refused(path, symlink=True)
    assert not path_refused(path)


def test_only_the_last_component_of_a_link_is_a_link():
    assert not component_refused(".gitmodules")
    assert not path_refused(".gitmodules/x", symlink=True)


def entries(tree: dict[str, str | bytes]):
    """path -> link target (str) or file content (bytes)."""
    out, blobs = [], {}
    for i, (path, value) in enumerate(tree.items()):
        sha = f"{i:040x}"
        if isinstance(value, str):
            out.append(SimpleNamespace(path=path, mode="120000", sha=sha))
            blobs[sha] = value.encode("utf-8", "surrogateescape")
        else:
            out.append(SimpleNamespace(path=path, mode="100644", sha=sha))
    return out, blobs


def outward(tree) -> set[str]:
    return set(plan_tree(*entries(tree)).outward)


def test_links_leading_out_are_caught():
    tree = {
        "f.txt": b"x",
        "src/a.py": b"x",
        "abs": "/etc/passwd",
        "netrc": "/root/.netrc",
        "up": "../../secret.env",
        "src/up1": "../../x",  # src/.. is the root, one more leaves it
        "dir_out": "..",
        "via/chain": "../abs",  # a chain through an outward link
        "hop1": "hop2",
        "hop2": "src/../../out",
        "through_dir": "dir_out/etc/passwd",
        "loop1": "loop2",
        "loop2": "loop1",
        "empty": "",
        "nul": "a\0b",
        "missing_then_up": "nothere/../../x",
    }
    keep = {
        "ok_file": "f.txt",
        "ok_dir": "src",
        "src/ok_up": "../f.txt",
        "src/ok_self": "./a.py",
        "ok_chain": "ok_dir/a.py",
        "ok_missing": "not/there.txt",  # dangling inside the copy stays a link
        "ok_dot": ".",
        "deep/ok": "../src/../f.txt",
    }
    assert outward({**tree, **keep}) == set(tree) - {"f.txt", "src/a.py"}


def test_plan_skips_git_paths_and_warns():
    tree = {"ok.txt": b"x", ".git/config": b"[core]", "sub/.GIT": b"gitdir: /x", ".gitmodules": "/etc/x",
            "git~1/x": b"x", "l": "/etc/passwd"}
    plan = plan_tree(*entries(tree))
    assert sorted(plan.refused) == [".git/config", ".gitmodules", "git~1/x", "sub/.GIT"]
    assert [e.path for e in plan.copied] == ["ok.txt"]
    warnings = workspace_warnings({"head": plan})
    assert warnings[0].startswith("workspace: 4 path(s) git refuses to check out were not copied: ")
    assert "head/.git/config" in warnings[0] and "head/sub/.GIT" in warnings[0]
    assert warnings[1] == ("workspace: 1 symbolic link(s) pointing outside their copy were written as small "
                           "files saying where they pointed: head/l -> /etc/passwd")
    assert workspace_warnings({"head": plan_tree(*entries({"a": b"x", "b": "a"}))}) == []


def test_plan_tree_refuses_exactly_what_path_refused_does():
    # plan_tree checks each folder once for all the files under it: the verdicts stay per path
    paths = REFUSED + ALLOWED + LINK_REFUSED
    nested = [f"{folder}/{name}" for folder in ("ok", "ok/.git", "ok/deep", ".GIT", "x/git~1", "x\\.git")
              for name in ("a.txt", ".gitmodules", ".git", "gi7eba~1", "b")]
    tree: dict[str, str | bytes] = {}
    for i, path in enumerate(paths + nested):
        tree[path] = "target" if i % 2 else b"file"  # every path as a file or a link in turn
    listed, blobs = entries(tree)
    plan = plan_tree(listed, blobs)
    expected = [e.path for e in listed if path_refused(e.path, symlink=e.mode == "120000")]
    assert plan.refused == expected
    assert {"ok/.git/a.txt", ".GIT/b", "ok/deep/.git"} <= set(plan.refused)
    assert "ok/deep/a.txt" not in plan.refused
