"""Reading round documents (G23, G26): kinds, names, and files that are not regular."""

from __future__ import annotations

import contextlib
import os

import anyio

from spar.errors import Refused
from spar.round.documents import read_round_documents


def test_each_document_keeps_its_kind_and_name(tmp_path):
    repo = tmp_path / "repo"
    (repo / "docs").mkdir(parents=True)
    for name in ("criteria.md", "rules.md", "subject.md", "config-rules.md"):
        (repo / "docs" / name).write_text(f"{name}\n")
    outside = tmp_path / "outside.md"
    outside.write_text("x\n")
    docs = read_round_documents(str(repo), config_rules=["docs/config-rules.md"], criteria=["docs/criteria.md"],
                                rules=[str(outside)], subject=["docs/subject.md"], cwd=str(repo))
    assert {kind: [(d.kind, d.name) for d in found] for kind, found in docs.items()} == {
        "criteria": [("criteria", "docs/criteria.md")],
        "rules": [("rules", "docs/config-rules.md"), ("rules", "outside.md")],
        "subject": [("subject", "docs/subject.md")],
    }


def test_fifo_is_refused_without_waiting_for_a_writer(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    caught: list[BaseException] = []

    def read() -> None:
        try:
            read_round_documents(str(tmp_path), config_rules=[], criteria=[str(fifo)], rules=[], subject=[])
        except Refused as err:
            caught.append(err)

    async def bounded() -> None:
        # a regression blocks in open() until a writer comes: bounded, then let loose
        try:
            with anyio.fail_after(30):
                await anyio.to_thread.run_sync(read, abandon_on_cancel=True)
        finally:
            with contextlib.suppress(OSError):  # ENXIO: nobody was waiting on it, the refusal came first
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))

    anyio.run(bounded)
    assert len(caught) == 1 and "is a FIFO, not a readable regular file" in str(caught[0])
