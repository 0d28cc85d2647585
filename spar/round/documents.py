"""Round documents (G23 config rules, G26 `--criteria`/`--rules`/`--subject`).

A document may live outside the repository. Its name is the repository path
when its real path is inside the repository, else its file name. Everything
is read once, here, before anything is written, so an unreadable document is
refused with nothing on disk.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path
from typing import Any

from spar.errors import Refused, quote
from spar.judge.context import RoundDoc

KINDS = ("criteria", "rules", "subject")


def doc_sha256(doc: RoundDoc) -> str:
    return hashlib.sha256(doc.text).hexdigest()


def doc_record(doc: RoundDoc) -> dict[str, Any]:
    """The `documents` entry of round.json."""
    return {"name": doc.name, "path": doc.real_path, "sha256": doc_sha256(doc), "lines": doc.lines}


def document_name(real_path: str, repo_root: str) -> str:
    root = os.path.realpath(repo_root)
    rel = os.path.relpath(real_path, root)
    if rel != os.curdir and not rel.startswith(os.pardir + os.sep) and rel != os.pardir:
        return Path(rel).as_posix()
    return os.path.basename(real_path)


def _not_regular(mode: int) -> str | None:
    """What a file of `mode` is when it is not a regular file, else None."""
    if stat.S_ISREG(mode):
        return None
    for test, what in ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device")):
        if test(mode):
            return what
    return "not a regular file"


def read_document(kind: str, given: str, repo_root: str, *, option: str, cwd: str | None = None) -> RoundDoc:
    """Read one document; refused (65) when it is not a readable regular file."""
    if not given:
        raise Refused(f"{option} {quote(given)}: empty path")
    base = cwd if cwd is not None else os.getcwd()
    absolute = given if os.path.isabs(given) else os.path.join(base, given)
    real = os.path.realpath(absolute)
    try:
        # judged before opening: opening a FIFO waits for a writer, a device may act
        what = _not_regular(os.stat(real).st_mode)
        if what is None:
            # O_NONBLOCK: should the file be swapped for a FIFO after the stat, the
            # open still returns at once and the fstat below refuses it
            fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
            with os.fdopen(fd, "rb") as fh:
                what = _not_regular(os.fstat(fh.fileno()).st_mode)
                data = fh.read() if what is None else b""
    except OSError as exc:
        raise Refused(f"{option} {quote(given)}: cannot read: {exc.strerror or exc}") from exc
    if what is not None:
        raise Refused(f"{option} {quote(given)}: is {what}, not a readable regular file")
    return RoundDoc(kind=kind, name=document_name(real, repo_root), real_path=real,
                    file_name=os.path.basename(real), text=data)


def read_round_documents(
    repo_root: str,
    *,
    config_rules: list[str],
    criteria: list[str],
    rules: list[str],
    subject: list[str],
    cwd: str | None = None,
) -> dict[str, list[RoundDoc]]:
    """criteria, rules (config rules then --rules) and subject documents, in the order given."""
    out: dict[str, list[RoundDoc]] = {k: [] for k in KINDS}
    for given in criteria:
        out["criteria"].append(read_document("criteria", given, repo_root, option="--criteria", cwd=cwd))
    for rel in config_rules:
        # G23 was checked by the configuration; read from the working tree
        out["rules"].append(read_document("rules", rel, repo_root, option="rules", cwd=repo_root))
    for given in rules:
        out["rules"].append(read_document("rules", given, repo_root, option="--rules", cwd=cwd))
    for given in subject:
        out["subject"].append(read_document("subject", given, repo_root, option="--subject", cwd=cwd))
    return out


def documents_record(docs: dict[str, list[RoundDoc]]) -> dict[str, Any]:
    return {k: [doc_record(d) for d in docs[k]] for k in KINDS}
