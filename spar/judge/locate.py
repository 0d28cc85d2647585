"""Targets of finding locations (G7) and confirmation of links (G8, G9).

Both read references with the §3 grammar (`spar.judge.refs`); they differ in the
prefixes removed and in what counts as a target.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import NamedTuple

from spar.errors import quote
from spar.judge.context import REGULAR_MODES, RoundContext, RoundDoc, count_lines
from spar.judge.criteria import find_ids
from spar.judge.refs import G7_PREFIXES, G8_PREFIXES, ParsedRef, parse_ref
from spar.pathtext import literal_key

# G7 target order by prefix: which copies, then whether round documents are looked at.
_COPIES = {"": ("head", "base"), "head/": ("head",), "./": ("head",), "base/": ("base",)}
_DOCUMENTS_TOO = {"": True, "head/": True, "./": True, "base/": False}


def match_document(path: str, documents: list[RoundDoc]) -> RoundDoc | None:
    """A document named `path` by its G26 name or real absolute path; otherwise the
    one document whose file name is `path` (never when several documents share it).
    Entries with the same real path are one document (a file given twice)."""
    named = _distinct(d for d in documents if path in (d.name, d.real_path))
    if len(named) == 1:
        return named[0]
    by_file = _distinct(d for d in documents if d.file_name == path)
    return by_file[0] if len(by_file) == 1 else None


def _distinct(docs: Iterable[RoundDoc]) -> list[RoundDoc]:
    seen: dict[str, RoundDoc] = {}
    for doc in docs:
        seen.setdefault(doc.real_path, doc)
    return list(seen.values())


class Located(NamedTuple):
    """Where a finding's location points, or why it cannot be read."""

    path: str  # repository path of the target ("" = root, or unreadable); G26 name for a document
    unreadable: bool
    why: str  # "" when readable; else the reason shown as `unreadable location (<why>)`
    start: int | None
    end: int | None
    target: str = ""  # "head", "base", "document"; "" when unreadable


def _location_target(prefix: str, path: str, ctx: RoundContext) -> tuple[str, str] | None:
    """(where, repository path) of a G7 target, or None."""
    if path == "":
        # a prefix alone is the repository root; an empty location is nothing
        return (_COPIES[prefix][0], "") if prefix else None
    norm = path[:-1] if path.endswith("/") else path  # a trailing "/" is removed
    if norm:
        # the path's text form first, then the name read literally (spar.pathtext)
        for key in (norm, literal_key(norm)):
            for copy in _COPIES[prefix]:
                if key is not None and ctx.in_copy(copy, key):
                    return copy, key
    if _DOCUMENTS_TOO[prefix]:
        doc = match_document(path, ctx.documents)
        if doc is not None:
            return "document", doc.name
    return None


def parse_location(location: str, ctx: RoundContext) -> ParsedRef:
    return parse_ref(location, G7_PREFIXES,
                     lambda prefix, path: _location_target(prefix, path, ctx) is not None)


def locate(location: str, ctx: RoundContext) -> Located:
    """G7: the target of a finding location, or an unreadable location with its why."""
    parsed = parse_location(location, ctx)
    found = _location_target(parsed.prefix, parsed.path, ctx)
    if found is None:
        why = (f"outside the grammar: {parsed.stray}" if parsed.stray
               else f"no target {quote(parsed.path)}")
        return Located("", True, why, parsed.start, parsed.end)
    problem = parsed.line_problem  # lines are judged only after the path is settled
    if problem:
        return Located("", True, problem, parsed.start, parsed.end)
    where, path = found
    return Located(path, False, "", parsed.start, parsed.end, where)


class LinkCheck(NamedTuple):
    """Whether a finding's link is confirmed, and why not."""

    confirmed: bool
    target: str  # the rule document's G26 name, the head path, or the criterion IDs
    why: str  # "" when confirmed


def _link_target(kind: str, path: str, ctx: RoundContext) -> tuple[str, int | None] | None:
    """(target name, line count or None when it must be read) of a G8 target."""
    doc = match_document(path, ctx.rule_documents)  # rule documents come first
    if doc is not None:
        return doc.name, doc.lines
    if kind == "contract":
        for key in (path, literal_key(path)):  # as for locations: the text form, then the literal name
            if key is not None and ctx.head_files.get(key) in REGULAR_MODES:
                return key, None
    return None


def check_link(link_kind: str, link: str, ctx: RoundContext) -> LinkCheck:
    """G8 (rule, contract) and G9 (criterion) confirmation, with the reason when not."""
    if link_kind == "criterion":
        ids = find_ids(link)
        if not ids:
            return LinkCheck(False, "", "no criterion ID")
        missing = [i for i in ids if i not in ctx.criteria_ids]
        if missing:
            return LinkCheck(False, ",".join(ids),
                             f"{', '.join(missing)} not in the criteria documents")
        return LinkCheck(True, ",".join(ids), "")
    if link_kind not in ("rule", "contract"):
        return LinkCheck(False, "", "no link")
    parsed = parse_ref(link, G8_PREFIXES,
                       lambda _prefix, path: _link_target(link_kind, path, ctx) is not None)
    found = _link_target(link_kind, parsed.path, ctx)
    if found is None:
        by_id = rule_by_id(link, ctx.rule_documents)
        if by_id is not None:
            return by_id
        return LinkCheck(False, "", f"no {link_kind} target {quote(parsed.path)}")
    name, lines = found
    if not parsed.has_line:
        return LinkCheck(True, name, "")
    problem = parsed.line_problem
    if problem:
        return LinkCheck(False, name, problem)
    if lines is None:
        if ctx.read_head_blob is None:
            # without the head file's bytes its lines cannot be confirmed
            return LinkCheck(False, name, "head file lines unknown")
        lines = count_lines(ctx.read_head_blob(name))
    if parsed.end is not None and parsed.end > lines:
        return LinkCheck(False, name, f"line {parsed.end} is past the end ({lines} lines)")
    return LinkCheck(True, name, "")


# a rule ID as rule documents write them: capitals and digits in two or more parts joined by
# "-" (BASE-SECRETS, API-2), with no letter, digit, "_" or "-" right before or after
_RULE_ID = re.compile(r"(?<![A-Za-z0-9_-])[A-Z][A-Z0-9]*(?:-[A-Z0-9]+)+(?![A-Za-z0-9_-])")


def rule_by_id(link: str, documents: list[RoundDoc]) -> LinkCheck | None:
    """A link that names no document by the grammar, confirmed by the rule IDs it names
    however the path around them is spelled (`BASE-SECRETS`, `baseline.md#BASE-SECRETS`,
    `rules/baseline.md: BASE-SECRETS`): each ID found in a rule document must be in exactly
    one, and all in the same one. None when no ID of the link is in any rule document."""
    found: dict[str, list[RoundDoc]] = {}
    for ident in dict.fromkeys(_RULE_ID.findall(link)):
        word = re.compile(rf"(?<![A-Za-z0-9_-]){re.escape(ident)}(?![A-Za-z0-9_-])")
        holding = _distinct(d for d in documents if word.search(d.text.decode("utf-8", "surrogateescape")))
        if holding:
            found[ident] = holding
    if not found:
        return None
    several = [ident for ident, docs in found.items() if len(docs) > 1]
    if several:
        return LinkCheck(False, "", f"rule ID {', '.join(several)} is in several rule documents")
    names = {docs[0].name for docs in found.values()}
    if len(names) > 1:
        return LinkCheck(False, "", f"rule IDs {', '.join(found)} are in different rule documents")
    return LinkCheck(True, names.pop(), "")


def confirm_link(link_kind: str, link: str, ctx: RoundContext) -> bool:
    return check_link(link_kind, link, ctx).confirmed
