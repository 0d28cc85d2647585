"""A small XFS file system with reflink on a loop device, for the tests of copy-on-write
clones (tests/test_workspace_clones.py): root only; skips without mkfs.xfs or the device."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

TIMEOUT = 120  # seconds for mkfs, mount and umount: a hang fails the test instead of stalling it
MKFS = ["mkfs.xfs", "-q", "-m", "reflink=1"]


def run(argv: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT)


@contextmanager
def xfs_mounted(where: Path) -> Iterator[Path]:
    """A folder on a fresh XFS file system with reflink, on a 512 MiB sparse loop image in
    `where`; unmounted at the end whatever the tests did."""
    if os.geteuid() != 0:
        pytest.skip("needs root, to mount a loop device")
    for program in (MKFS[0], "mount", "umount"):
        if shutil.which(program) is None:
            pytest.skip(f"needs {program} (xfsprogs) to make a file system that clones files")
    image, mnt = where / "fs.img", where / "mnt"
    mnt.mkdir()
    with open(image, "wb") as f:
        f.truncate(512 * 1024 * 1024)  # sparse: only what the file system writes takes room
    made = run([*MKFS, str(image)])
    assert made.returncode == 0, made.stderr
    mounted = run(["mount", "-o", "loop", str(image), str(mnt)])
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a loop device here (needs losetup and /dev/loop*): {mounted.stderr.strip()}")
    try:
        yield mnt
    finally:
        done = run(["umount", str(mnt)])
        if done.returncode != 0:
            run(["umount", "-l", str(mnt)])  # still unmounted, once nothing holds it
        image.unlink()


@contextmanager
def folder_for_test(mnt: Path, request: pytest.FixtureRequest) -> Iterator[Path]:
    """A folder of `mnt` named for the running test, removed after it (read-only copies
    inside made writable first)."""
    from tests.test_workspace import make_writable

    root = mnt / request.node.name.replace("[", "_").replace("]", "")
    root.mkdir()
    try:
        yield root
    finally:
        make_writable(root)
        shutil.rmtree(root)
