"""`spar run`'s arguments once parsed, and the checks that are not argparse's: the decision
pairs, the standpoints (usage errors, 64, and argument-only refusals, 65). The parser
itself is with the command (spar.commands.run).

`--decision` and `--decision-quote` are taken out of argv before argparse sees
it: their texts may start with `-` (G35), which argparse would read as an
option. Every other option keeps argparse's rules, so a missing value there
stays a usage error.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field

from spar.argparsing import SELECTION_VALUE_OPTIONS
from spar.config.select import split_assignment
from spar.errors import Refused, UsageError, quote
from spar.whitespace import is_blank

DECISION = "--decision"
DECISION_QUOTE = "--decision-quote"

# options of `spar run` that take a value (argparse reads the next token as it)
_VALUE_OPTIONS = (
    "--stage", "--out", "--base", "--head", "--expect-head", "--criteria", "--rules", "--subject", "--standpoint",
    *SELECTION_VALUE_OPTIONS,
)

@dataclass
class RunArgs:
    """`spar run`'s arguments, parsed."""

    stage: str
    out: str
    base: str | None = None
    head: str | None = None
    expect_head: str | None = None
    criteria: list[str] = field(default_factory=list)
    rules: list[str] = field(default_factory=list)
    subject: list[str] = field(default_factory=list)
    check_paths: list[str] = field(default_factory=list)
    reviewers: str | None = None
    models: list[str] = field(default_factory=list)
    efforts: list[str] = field(default_factory=list)
    standpoints: list[tuple[str, str]] = field(default_factory=list)
    decisions: list[tuple[str, str]] = field(default_factory=list)
    dry_run: bool = False
    worktree: bool = False  # review the working tree as a commit Spar makes (git.snapshot_worktree)


def split_decision_options(argv: list[str]) -> tuple[list[str], list[tuple[str, str | None]]]:
    """Takes `--decision`/`--decision-quote` and their values out of argv, in order.

    Returns the remaining argv and (option, value) items; value None means the
    option was last on the command line with no value.
    """
    rest: list[str] = []
    items: list[tuple[str, str | None]] = []
    i = 0
    while i < len(argv):
        tok = argv[i]
        if tok == "--":
            rest.extend(argv[i:])
            break
        if tok in (DECISION, DECISION_QUOTE):
            if i + 1 < len(argv):
                items.append((tok, argv[i + 1]))
                i += 2
            else:
                items.append((tok, None))
                i += 1
            continue
        opt, eq, value = tok.partition("=")
        if eq and opt in (DECISION, DECISION_QUOTE):
            items.append((opt, value))
            i += 1
            continue
        rest.append(tok)
        if tok in _VALUE_OPTIONS and i + 1 < len(argv):
            # the next token belongs to this option (argparse judges it), never a decision option
            rest.append(argv[i + 1])
            i += 2
            continue
        i += 1
    return rest, items


def _utf8_ok(text: str) -> bool:
    try:
        text.encode("utf-8")  # undecodable argv bytes arrive as lone surrogates
    except UnicodeEncodeError:
        return False
    return True


def pair_decisions(items: list[tuple[str, str | None]]) -> list[tuple[str, str]]:
    """G35: pairs in order; any problem is refused naming the decision (1-based) and option."""
    pairs: list[tuple[str, str]] = []
    pending: str | None = None  # a --decision waiting for its words
    for opt, value in items:
        number = len(pairs) + 1
        if value is None:
            raise Refused(f"decision {number}: {opt} has no value at the end of the command line")
        if not _utf8_ok(value):
            raise Refused(f"decision {number}: {opt} text is not valid UTF-8")
        if is_blank(value):
            raise Refused(f"decision {number}: {opt} text is empty")
        if opt == DECISION:
            if pending is not None:
                raise Refused(f"decision {number}: {DECISION} has no {DECISION_QUOTE} before the next {DECISION}")
            pending = value
        else:
            if pending is None:
                raise Refused(f"decision {number}: {DECISION_QUOTE} has no {DECISION} before it")
            pairs.append((pending, value))
            pending = None
    if pending is not None:
        raise Refused(f"decision {len(pairs) + 1}: {DECISION} has no {DECISION_QUOTE}")
    return pairs


def split_standpoint(raw: str) -> tuple[str, str]:
    """NAME=TEXT at the first `=`; no `=` or an empty name is a usage error."""
    name, eq, text = raw.partition("=")
    if not eq:
        raise UsageError(f"run: --standpoint {quote(raw)}: expected NAME=TEXT")
    if not name:
        raise UsageError(f"run: --standpoint {quote(raw)}: the reviewer name is empty")
    return name, text


def check_standpoints(standpoints: list[tuple[str, str]], accepted: list[str]) -> None:
    """The refusals of "Standpoint arguments": unknown name, a second one, blank or non-UTF-8 text."""
    seen: set[str] = set()
    for name, text in standpoints:
        if name not in accepted:
            raise Refused(f"--standpoint: {quote(name)} is not a reviewer of this run or its configuration")
        if name in seen:
            raise Refused(f"--standpoint: more than one standpoint for {quote(name)}")
        seen.add(name)
        if not _utf8_ok(text):
            raise Refused(f"--standpoint: the text for {quote(name)} is not valid UTF-8: {quote(text)}")
        if is_blank(text):
            raise Refused(f"--standpoint: the text for {quote(name)} is empty: {quote(text)}")


def run_args_from(ns: argparse.Namespace, decision_items: list[tuple[str, str | None]]) -> RunArgs:
    """RunArgs from argparse's answer and the decision options taken out before it: the
    standpoints' and --model/--effort's shape (usage errors) first, then the decision pairs."""
    standpoints = [split_standpoint(raw) for raw in ns.standpoints]
    for option, values in (("--model", ns.models), ("--effort", ns.efforts)):
        for raw in values:
            split_assignment(option, raw)
    return RunArgs(
        stage=ns.stage, out=ns.out, base=ns.base, head=ns.head, expect_head=ns.expect_head,
        criteria=ns.criteria, rules=ns.rules, subject=ns.subject, check_paths=ns.check_paths,
        reviewers=ns.reviewers, models=ns.models, efforts=ns.efforts, standpoints=standpoints,
        decisions=pair_decisions(decision_items), dry_run=ns.dry_run, worktree=ns.worktree,
    )
