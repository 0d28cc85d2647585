"""`spar run` on crafted commits: `.git` paths, symlinks leading out, names that are not UTF-8."""

from __future__ import annotations

import json
import os

import pytest

from tests.crafted import EXEC, FILE, LINK, crafted_commit, tree_of
from tests.runsetup import finding, make_setup, result

pytestmark = pytest.mark.slow

FSMONITOR = b"[core]\n\tfsmonitor = touch /tmp/spar-pwned\n"
HOSTILE = {
    b".git/config": (FILE, FSMONITOR),
    b"sub/.git": (FILE, b"gitdir: ../.git\n"),
    b".GIT/hooks/post-checkout": (EXEC, b"#!/bin/sh\n"),
    b"git~1/config": (FILE, FSMONITOR),
    b".gitmodules": (LINK, b"/etc/passwd"),
    b"passwd": (LINK, b"/etc/passwd"),
    b"secret": (LINK, b"../../secret.env"),
    b"up": (LINK, b".."),
    b"chain": (LINK, b"up/secret.env"),
    b"inside": (LINK, b"calc.py"),
    b"caf\xe9.txt": (FILE, b"line one\nline two\n"),
}


def hostile_setup(tmp_path):
    s = make_setup(tmp_path)
    head = crafted_commit(s.repo, {**tree_of(s.repo, s.head), **HOSTILE}, parent=s.head)
    return s, head


def test_hostile_tree_round(tmp_path):
    s, head = hostile_setup(tmp_path)
    answer = result(findings=[
        finding(id="f1", location="head/caf\\xe9.txt:2", proposed_class="hardening", link_kind="none", link=""),
        finding(id="f2", location="head/.git/config:2", proposed_class="hardening", link_kind="none", link=""),
        finding(id="f3", location="caf\\xe9.txt", proposed_class="note", link_kind="none", link=""),
    ])
    s.configure([s.answer_reviewer("house", answer)])
    proc = s.run("--base", s.base, "--head", head)
    assert proc.returncode == 0, proc.stderr.decode()
    round_dir = s.repo / "reviews" / "r1"
    ws = round_dir / "workspace" / "head"

    # 2: no .git in any spelling was written; the warning names each skipped path
    for name in (".git", "sub/.git", ".GIT", "git~1", ".gitmodules"):
        assert not os.path.lexists(ws / name), name
    rj = json.loads((round_dir / "round.json").read_text())
    refused = next(w for w in rj["warnings"] if "git refuses" in w)
    for name in ("head/.git/config", "head/sub/.git", "head/.GIT/hooks/post-checkout", "head/git~1/config",
                 "head/.gitmodules"):
        assert name in refused
    # 3: links leading out are small files saying where they pointed; the inside link stays
    for name, target in (("passwd", "/etc/passwd"), ("secret", "../../secret.env"), ("up", ".."),
                         ("chain", "up/secret.env")):
        assert not (ws / name).is_symlink(), name
        assert f"symbolic link in the commit, to {target}\n" in (ws / name).read_text()
    assert os.readlink(ws / "inside") == "calc.py"
    packet = (round_dir / "packet.md").read_text()
    assert "## Workspace notes" in packet
    assert "- `head/passwd`: a symbolic link to `/etc/passwd`, outside the copy" in packet
    assert "- `head/.git/config`: not copied (a path git refuses to check out)" in packet
    # 5: the name that is not UTF-8 is copied byte for byte and named in the escaped form
    assert (ws / os.fsdecode(b"caf\xe9.txt")).read_bytes() == b"line one\nline two\n"
    assert "- `caf\\xe9.txt`" in packet
    findings = {f["id"]: f for f in json.loads((round_dir / "findings.json").read_text())}
    assert findings["house-F1"]["path"] == "caf\\xe9.txt"
    assert not findings["house-F1"]["location_unreadable"]
    assert findings["house-F3"]["path"] == "caf\\xe9.txt"
    # findings about a skipped path are still judged through git
    assert findings["house-F2"]["path"] == ".git/config" and not findings["house-F2"]["location_unreadable"]
    assert "caf\\xe9.txt" in (round_dir / "summary.md").read_text()


def test_git_status_in_the_copy_runs_nothing_from_the_change(tmp_path):
    """What the attack did: `git status` in workspace/head with the change's .git/config."""
    import subprocess

    s = make_setup(tmp_path)
    marker = tmp_path / "pwned"
    config = b"[core]\n\tfsmonitor = touch " + str(marker).encode() + b"\n"
    repo_files = {}
    for where in (b".git/", b"sub/.git/"):  # enough for git to take the folder as a repository
        repo_files.update({where + b"config": (FILE, config), where + b"HEAD": (FILE, b"ref: refs/heads/main\n"),
                           where + b"objects/info/packs": (FILE, b""), where + b"refs/heads/.keep": (FILE, b"")})
    head = crafted_commit(s.repo, {**tree_of(s.repo, s.head), **repo_files, b"sub/x.txt": (FILE, b"x\n")},
                          parent=s.head)
    s.configure([s.answer_reviewer("house", result(findings=[]))])
    proc = s.run("--base", s.base, "--head", head, "--dry-run")
    assert proc.returncode == 0, proc.stderr.decode()
    ws = s.repo / "reviews" / "r1" / "workspace" / "head"
    for where in (ws, ws / "sub"):
        subprocess.run(["git", "status"], cwd=where, capture_output=True, env={**s.env, "GIT_CEILING_DIRECTORIES": str(ws.parent)})
    assert not marker.exists()
