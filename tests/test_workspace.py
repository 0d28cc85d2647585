"""workspace/head and workspace/base: blob entries of each commit, read-only, one blob batch per commit."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from spar import git as spar_git
from spar.errors import WriteFailed
from spar.workspace.build import build_workspace
from tests.gitrepo import commit, git, make_repo
from tests.spies import calls_to


def make_writable(root: Path) -> None:
    """Undo the workspace's read-only modes, so a test can write as any user."""
    for dirpath, _dirnames, filenames in os.walk(root):
        os.chmod(dirpath, 0o755)
        for name in filenames:
            p = os.path.join(dirpath, name)
            if not os.path.islink(p):
                os.chmod(p, os.stat(p).st_mode | stat.S_IWUSR)


@pytest.fixture
def repo(tmp_path):
    repo = make_repo(tmp_path, {
        "README.md": "hello\n",
        "src/app.py": "print('v1')\n",
        "old.txt": "only in base\n",
    })
    base = git(repo, "rev-parse", "HEAD").strip()
    (repo / "bin").mkdir()
    (repo / "bin" / "run.sh").write_text("#!/bin/sh\necho hi\n")
    os.chmod(repo / "bin" / "run.sh", 0o755)
    git(repo, "add", "bin/run.sh")
    # a gitlink (submodule entry) that must not appear in the copies
    git(repo, "update-index", "--add", "--cacheinfo", f"160000,{base},vendor/sub")
    head = commit(repo, {"src/app.py": "print('v2')\n", "docs/deep/x y.md": "space name\n",
                         "bin.dat": bytes(range(256))},
                  remove=["old.txt"], symlinks={"link-to-app": "src/app.py", "dangling": "../nowhere"})
    return repo, base, head


def mode(p: Path) -> int:
    return stat.S_IMODE(os.lstat(p).st_mode)


def test_copies_hold_blob_entries_only(repo, tmp_path):
    repo, base, head = repo
    ws = tmp_path / "round" / "workspace"
    ws.parent.mkdir()
    build_workspace(repo, base, head, ws)
    files = sorted(str(p.relative_to(ws / "head")) for p in (ws / "head").rglob("*") if not p.is_dir() or p.is_symlink())
    assert files == ["README.md", "bin.dat", "bin/run.sh", "dangling", "docs/deep/x y.md", "link-to-app", "src/app.py"]
    assert not (ws / "head" / "vendor").exists()
    assert (ws / "head" / "src/app.py").read_text() == "print('v2')\n"
    assert (ws / "head" / "bin.dat").read_bytes() == bytes(range(256))
    assert (ws / "base" / "old.txt").read_text() == "only in base\n"
    assert (ws / "base" / "src/app.py").read_text() == "print('v1')\n"
    assert not (ws / "base" / "bin").exists()


def test_symlinks_are_symlinks(repo, tmp_path):
    repo, base, head = repo
    ws = tmp_path / "workspace"
    build_workspace(repo, base, head, ws)
    assert os.readlink(ws / "head" / "link-to-app") == "src/app.py"
    assert (ws / "head" / "link-to-app").read_text() == "print('v2')\n"
    # a link that climbs out of its copy is a small file saying where it pointed
    assert not (ws / "head" / "dangling").is_symlink()
    assert "../nowhere" in (ws / "head" / "dangling").read_text()
    assert mode(ws / "head" / "dangling") == 0o444


def test_everything_read_only_and_exec_bits_kept(repo, tmp_path):
    repo, base, head = repo
    ws = tmp_path / "workspace"
    build_workspace(repo, base, head, ws)
    assert mode(ws / "head" / "bin/run.sh") == 0o555
    assert mode(ws / "head" / "README.md") == 0o444
    for d in (ws, ws / "head", ws / "base", ws / "head" / "docs" / "deep"):
        assert mode(d) == 0o555, d
    if os.geteuid() != 0:  # root ignores permission bits
        with pytest.raises(PermissionError):
            (ws / "head" / "new.txt").write_text("x")
    make_writable(ws)
    assert mode(ws / "head") == 0o755
    (ws / "head" / "new.txt").write_text("x")


def test_one_blob_stream_for_both_copies_and_shared_files_are_linked(repo, tmp_path, monkeypatch):
    repo, base, head = repo
    calls = calls_to(monkeypatch, spar_git, "stream_blobs", lambda _repo, shas: list(shas))
    build_workspace(repo, base, head, tmp_path / "workspace")
    assert len(calls) == 1  # one git process for head and base
    assert len(calls[0]) == len(set(calls[0]))
    head_blobs = {(e.sha, e.mode) for e in spar_git.ls_tree(repo, head)}
    ws = tmp_path / "workspace"
    for e in spar_git.ls_tree(repo, base):
        if e.mode == "120000":
            continue
        linked = os.stat(ws / "base" / e.path).st_ino == os.stat(ws / "head" / e.path).st_ino \
            if (ws / "head" / e.path).exists() else False
        # a base file equal to a head file (blob and mode) shares its inode; the stream asks git
        # for a blob of the base alone as well, once
        assert linked == ((e.sha, e.mode) in head_blobs), e.path
        assert e.sha in calls[0], e.path


def test_links_keep_contents_and_modes_exact(tmp_path):
    files = {"same.txt": "same\n", "tool.sh": "#!/bin/sh\n", "changed.txt": "old\n", "dup1": "d\n", "dup2": "d\n"}
    repo = make_repo(tmp_path, files)
    base = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "update-index", "--chmod=+x", "tool.sh")
    git(repo, "commit", "-qm", "exec")
    from tests.gitrepo import commit as make_commit

    head = make_commit(repo, {"changed.txt": "new\n"}, message="change")
    ws = tmp_path / "workspace"
    build_workspace(repo, base, head, ws)
    assert (ws / "base" / "changed.txt").read_text() == "old\n"
    assert (ws / "head" / "changed.txt").read_text() == "new\n"
    # same blob, different mode: never linked (a mode belongs to the inode)
    assert mode(ws / "base" / "tool.sh") == 0o444 and mode(ws / "head" / "tool.sh") == 0o555
    assert os.stat(ws / "base" / "tool.sh").st_ino != os.stat(ws / "head" / "tool.sh").st_ino
    assert os.stat(ws / "base" / "same.txt").st_ino == os.stat(ws / "head" / "same.txt").st_ino
    # the same blob twice within one commit is written once
    assert os.stat(ws / "head" / "dup1").st_ino == os.stat(ws / "head" / "dup2").st_ino


def test_existing_workspace_is_a_write_failure(repo, tmp_path):
    repo, base, head = repo
    (tmp_path / "workspace").mkdir()
    with pytest.raises(WriteFailed):
        build_workspace(repo, base, head, tmp_path / "workspace")


@pytest.mark.slow
def test_many_files(tmp_path):
    # more blob IDs than one pipe buffer holds (the stream feeds git from a thread);
    # speed is measured in bench/workspace_copies.py, not here
    files = {f"pkg{i % 20}/mod{i}.py": f"x = {i}\n" for i in range(2000)}
    repo = make_repo(tmp_path, files)
    head = git(repo, "rev-parse", "HEAD").strip()
    build_workspace(repo, head, head, tmp_path / "workspace")
    assert (tmp_path / "workspace" / "base" / "pkg7" / "mod1987.py").read_text() == "x = 1987\n"
    assert (tmp_path / "workspace" / "head" / "pkg0" / "mod0.py").read_text() == "x = 0\n"


def test_unsafe_tree_paths_are_never_written(tmp_path):
    from types import SimpleNamespace

    from spar.workspace.build import plan_targets

    for bad in ("../escape.txt", "a/../../escape.txt", "/abs.txt", "a//b", "./x"):
        dest = tmp_path / f"copy{abs(hash(bad))}"
        entry = SimpleNamespace(mode="100644", sha="s", path=bad)
        with pytest.raises(WriteFailed):
            plan_targets([entry], dest)
    assert not (tmp_path / "escape.txt").exists() and not (tmp_path.parent / "escape.txt").exists()


TRY_WRITES = ("(echo x > head/new.txt) 2>/dev/null && echo created || echo denied; "
              "(echo y >> head/README.md) 2>/dev/null && echo appended || echo denied")


def _as_owner(ws: Path) -> list[str]:
    """Run the writes as the user owning the copies, never as root: as root (tests often are)
    the copies are handed to `nobody` first, as if a non-root user had run spar."""
    import subprocess

    kw = {}
    if os.geteuid() == 0:
        for dirpath, dirnames, filenames in os.walk(ws):
            for name in [dirpath, *(os.path.join(dirpath, n) for n in dirnames + filenames)]:
                os.lchown(name, 65534, 65534)
        kw = {"user": 65534, "group": 65534, "extra_groups": []}
    proc = subprocess.run(["sh", "-c", TRY_WRITES], cwd=ws, capture_output=True, text=True, check=True, **kw)
    return proc.stdout.split()


def test_read_only_modes_stop_the_owner_when_not_root(repo, tmp_path):
    repo, base, head = repo
    ws = tmp_path / "workspace"
    build_workspace(repo, base, head, ws)
    assert _as_owner(ws) == ["denied", "denied"]
    assert not (ws / "head" / "new.txt").exists()
    make_writable(ws)  # the same user with the modes undone: the modes were what stopped it
    assert _as_owner(ws) == ["created", "appended"]


def test_workspace_state_sees_what_a_root_writer_changes(repo, tmp_path):
    from spar.workspace.build import describe_changes, workspace_state

    repo, base, head = repo
    ws = tmp_path / "workspace"
    build_workspace(repo, base, head, ws)
    before = workspace_state(ws)
    assert describe_changes(before, workspace_state(ws)) is None  # reading changes nothing
    assert {"head/README.md", "head/docs/deep/x y.md", "base/old.txt", "head/link-to-app"} <= set(before)
    make_writable(ws)  # so that the test writes as any user; root would not need it
    before = workspace_state(ws)
    (ws / "head" / "new.txt").write_text("x")
    (ws / "base" / "old.txt").unlink()
    with open(ws / "head" / "README.md", "a") as f:
        f.write("more\n")
    os.chmod(ws / "head" / "bin" / "run.sh", 0o777)
    note = describe_changes(before, workspace_state(ws))
    # base files hard-linked to head files change with them (one inode): both are named
    expected = ["base/old.txt (removed)", "head/README.md (changed)", "head/bin/run.sh (changed)",
                "head/new.txt (added)"]
    for rel in ("README.md", "bin/run.sh"):
        if (ws / "base" / rel).exists() and os.stat(ws / "base" / rel).st_ino == os.stat(ws / "head" / rel).st_ino:
            expected.append(f"base/{rel} (changed)")
    expected.sort()
    shown = ", ".join(expected[:5]) + (f" and {len(expected) - 5} more" if len(expected) > 5 else "")
    assert note.startswith(f"workspace changed while the reviewers ran: {len(expected)} path(s): {shown}; ")
    assert describe_changes({"a": (1, 1, 1, 1)}, {"a": (1, 2, 1, 1), "b": (1, 1, 1, 2)}) == (
        "workspace changed while the reviewers ran: 2 path(s): a (changed), b (added); a reviewer wrote "
        "into the read-only copies (file modes do not stop a process running as root); findings were "
        "judged against the commits, not the copies")
    many = {f"p{i}": (1, 1, 1, i) for i in range(8)}
    assert "p0 (removed), p1 (removed), p2 (removed), p3 (removed), p4 (removed) and 3 more;" in \
        describe_changes(many, {})


def test_no_write_through_a_link_goes_unnoticed(tmp_path):
    """A folder link leading out was writable unnoticed; every remaining link stays inside."""
    from spar.workspace.build import describe_changes, workspace_state
    from tests.crafted import FILE, LINK, crafted_commit

    outside = tmp_path / "outside"
    outside.mkdir()
    repo = make_repo(tmp_path, {"src/app.py": "x\n"})
    base = git(repo, "rev-parse", "HEAD").strip()
    rel_out = os.path.relpath(outside, tmp_path / "workspace" / "head")
    head = crafted_commit(repo, {b"src/app.py": (FILE, b"x\n"), b"out": (LINK, rel_out.encode()),
                                 b"abs": (LINK, str(outside).encode()), b"in": (LINK, b"src")}, parent=base)
    ws = tmp_path / "workspace"
    build_workspace(repo, base, head, ws)
    make_writable(ws)  # as if root wrote (modes do not stop root)
    before = workspace_state(ws)
    for name in ("out", "abs"):
        with pytest.raises(OSError):  # a regular file now, not a way out
            (ws / "head" / name / "planted.txt").write_text("x")
    assert list(outside.iterdir()) == []
    (ws / "head" / "in" / "app.py").write_text("changed through the link\n")
    (ws / "head" / "in" / "new.py").write_text("new\n")
    note = describe_changes(before, workspace_state(ws))
    assert "head/src/app.py (changed)" in note and "head/src/new.py (added)" in note


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o027, 0o002])
def test_modes_exact_whatever_the_umask(repo, tmp_path, umask):
    # files are created with their final mode when the umask keeps its bits, and fchmod'ed
    # to it otherwise: either way the copies hold exactly 0444/0555 and folders 0555
    from spar.workspace import build as workspace

    repo, base, head = repo
    ws = tmp_path / "workspace"
    old = os.umask(umask)
    try:
        assert workspace._umask() == umask  # read without changing it
        built = build_workspace(repo, base, head, ws)
    finally:
        os.umask(old)
    assert built == workspace.workspace_state(ws)
    modes = {str(p.relative_to(ws)): mode(p) for p in ws.rglob("*") if not p.is_symlink()}
    assert modes["head/bin/run.sh"] == 0o555 and modes["head/README.md"] == 0o444
    assert modes["head/dangling"] == 0o444  # the note written for a link leading out
    assert {m for p, m in modes.items() if (ws / p).is_dir()} == {0o555}
    assert {m for p, m in modes.items() if not (ws / p).is_dir()} == {0o444, 0o555}
    assert mode(ws) == 0o555


def test_state_as_built_is_what_a_scan_reads(tmp_path):
    """build_workspace returns the copies' state taken while writing: the same entries a
    scan reads (files, hard links, notes, links kept, folders, names that are not UTF-8),
    so the change check after the round needs no scan before it."""
    from spar.workspace.build import describe_changes, workspace_state
    from tests.crafted import EXEC, FILE, LINK, crafted_commit

    repo = make_repo(tmp_path, {"src/app.py": "x\n"})
    base = git(repo, "rev-parse", "HEAD").strip()
    head = crafted_commit(repo, {b"src/app.py": (FILE, b"y\n"), b"caf\xe9/n\xffo.txt": (FILE, b"latin-1\n"),
                                 b"dup1": (FILE, b"d\n"), b"deep/er/dup2": (FILE, b"d\n"),
                                 b"tool.sh": (EXEC, b"#!/bin/sh\n"), b"empty": (FILE, b""),
                                 b"in": (LINK, b"src"), b"out": (LINK, b"/etc/passwd"),
                                 b".git/config": (FILE, b"refused\n")}, parent=base)
    ws = tmp_path / "workspace"
    built = build_workspace(repo, base, head, ws)
    scanned = workspace_state(ws)
    assert built == scanned
    assert {"head/caf\udce9/n\udcffo.txt", "head/in", "head/out", "base/src/app.py", "head/deep/er"} <= set(built)
    assert describe_changes(built, scanned) is None
    os.utime(ws / "head" / "empty", ns=(1, 1))  # the owner may, modes aside: a change after the build counts
    assert describe_changes(built, workspace_state(ws)).startswith(
        "workspace changed while the reviewers ran: 1 path(s): head/empty (changed); ")
