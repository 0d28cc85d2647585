"""What `spar init` writes: commented configuration text and ignore rules (pure, no I/O).

A new file gets the whole template. An existing file is never rewritten: the
keys it lacks are added as text (top-level keys after its leading comment
block, tables at its end), so every byte the user wrote stays where it was.
tomlkit reads the existing text (syntax, which keys are there) and renders the
added values; the result is parsed again and must equal the old values plus
the added ones, or nothing is written and the user gets the lines to add.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from typing import Any

import tomlkit
from tomlkit.exceptions import TOMLKitError

from spar.config.model import ANGLES, DEFAULT_CAPS, DEFAULT_TIMEOUT

CLI_PRESETS = ("claude", "codex", "agy")  # looked up on PATH, in this order

USER_HEADER = """\
# Spar user configuration: which reviewers run, with which programs and models.
# Written by `spar init`; edit freely (`spar init` never rewrites a line of it).
#
# Spar reads the first of these that exists: $SPAR_CONFIG,
# $XDG_CONFIG_HOME/jaekit/spar.toml, ~/.config/jaekit/spar.toml, clean-review's
# config.json. Only this file may choose programs and models; a repository
# cannot. `spar config` prints what Spar would use, `spar doctor` whether a
# round can run. Every key, commented: spar/configs/user.example.toml, installed
# with Spar (the folder configs/ beside Spar's cli.py).
"""

TIMEOUT_BLOCK = f"""\
# Default time limit for every reviewer below, in seconds (> 0). The limit
# covers one whole attempt, including the CLI's version check.
timeout_seconds = {DEFAULT_TIMEOUT}

# A reviewer inherits PATH, HOME, USER, LOGNAME, SHELL, TMPDIR, TZ, LANG, LC_*,
# its own vendor's variables (claude ANTHROPIC_* CLAUDE_*, codex OPENAI_* CODEX_*,
# agy GEMINI_* GOOGLE_*) and the network settings (HTTPS_PROXY, NO_PROXY,
# SSL_CERT_FILE, NODE_EXTRA_CA_CERTS, ...), nothing else: before this release,
# the whole environment. env_passthrough names what passes instead of the
# network settings. Each reviewer runs in a kernel sandbox where bwrap works
# ([sandbox] mode = "auto", "required" or "off"; spar/configs/user.example.toml).
# env_passthrough = ["HTTPS_PROXY", "NO_PROXY", "MY_TOOL_TOKEN"]
"""

PROJECT_HEADER = """\
# Spar project configuration: <repository>/.jaekit/spar.toml, read from the
# working tree. Written by `spar init --project`; edit freely. It describes the
# repository, never the reviewers: keys such as reviewers, preset, model,
# binary, argv or timeout_seconds are refused here.
"""

RULES_COMMENT = """\
# Rule documents given to every round (repository-relative regular files).
# .jaekit/rules/baseline.md: Spar's baseline rules (a leaked secret, an unconfined
# path, injection, a swallowed error, a test that cannot fail), which reviewers link
# a defect to; edit it, or remove it from this list to stop using it.
"""
CHECK_PATHS_COMMENT = """\
# Where the project's checks live. Globs: "**" is any number of folders, other
# segments use Go path.Match syntax (*, ?, [a-z], \\ escape).
"""
ANGLES_COMMENT = """\
# Angles every reviewer must cover; any non-empty subset of
# criteria, correctness, checks, contracts, risk.
"""
CAPS_COMMENT = """\
# Rounds per stage per series before `spar extend` is needed (integers >= 0).
"""

RULE_CANDIDATES = ("AGENTS.md", "CLAUDE.md")
# where `spar init --project` writes the baseline rules (spar/configs/baseline.md, installed
# with Spar), listed in the project's rules
BASELINE_RULES = ".jaekit/rules/baseline.md"
CHECK_FOLDERS = ("tests", "test", "spec", "checks")


def _value(value: object) -> str:
    return str(tomlkit.item(value).as_string())


# The `native` entry `spar init` writes when it finds no CLI. The marked line inside it tells a
# later `spar init` that the entry is its own, to be replaced by the CLIs found then (a native
# entry without it is the user's and stays).
NATIVE_MARK = "# spar init: a stand-in until a reviewer CLI is found (delete this line to keep it)"
NATIVE_BLOCK = (
    "# None of claude, codex, agy was found on PATH, so the one reviewer is the\n"
    "# host's own subagent: `spar run` writes its prompt and waits for its answer,\n"
    "# recorded with `spar record ROUND --reviewer native --result FILE`.\n"
    "# Once a reviewer CLI is installed, run `spar init` again: it replaces this entry\n"
    "# with one for each CLI found (every key of an entry: spar/configs/user.example.toml).\n"
    "[[reviewers]]\n"
    f"{NATIVE_MARK}\n"
    'preset = "native"\n'
)
# the same entry as `spar init` wrote it before it was marked
_UNMARKED_NATIVE_BLOCK = (
    "# None of claude, codex, agy was found on PATH, so the one reviewer is the\n"
    "# host's own subagent: `spar run` writes its prompt and waits for its answer,\n"
    "# recorded with `spar record ROUND --reviewer native --result FILE`.\n"
    "# Once a reviewer CLI is installed, run `spar init` again: it adds an entry for it\n"
    "# (every key of an entry: spar/configs/user.example.toml).\n"
    "[[reviewers]]\n"
    'preset = "native"\n'
)


def reviewer_blocks(found: list[str]) -> str:
    """The [[reviewers]] entries: one per CLI found on PATH, else `native`."""
    if not found:
        return NATIVE_BLOCK
    out = [
        "# Each [[reviewers]] entry is one reviewer of every round, in this order.",
        f"# Found on PATH when this file was written: {', '.join(found)}.",
    ]
    return "\n".join(out + _entries(found)) + "\n"


def _entries(presets: list[str]) -> list[str]:
    out = []
    for preset in presets:
        out += [
            "",
            "[[reviewers]]",
            f"preset = {_value(preset)}",
            f'# binary = ""               # "" looks up {_value(preset)} on PATH; a path with / is used as is',
            '# model = ""                # passed as --model; leave out for the CLI\'s default',
            '# fallback_model = ""       # one more attempt with this model after a quota refusal',
            "# timeout_seconds = 1200    # this reviewer only",
        ]
    return out


def added_reviewer_blocks(presets: list[str]) -> str:
    """[[reviewers]] entries for CLIs found on PATH after the file was written."""
    head = [f"# Added by `spar init`: {', '.join(presets)} found on PATH (delete an entry to stop using it)."]
    return "\n".join(head + _entries(presets)) + "\n"


def user_template(found: list[str]) -> str:
    return "\n".join([USER_HEADER, TIMEOUT_BLOCK, reviewer_blocks(found)])


def project_values(files: set[str], folders: set[str]) -> dict[str, Any]:
    """Values for a new project file from what the repository holds at its root."""
    return {
        "rules": [r for r in RULE_CANDIDATES if r in files] + [BASELINE_RULES],
        "check_paths": [f"{d}/**" for d in CHECK_FOLDERS if d in folders],
        "angles": list(ANGLES),
        "caps": dict(DEFAULT_CAPS),
    }


def project_key_block(key: str, values: dict[str, Any]) -> str:
    comment = {"rules": RULES_COMMENT, "check_paths": CHECK_PATHS_COMMENT, "angles": ANGLES_COMMENT}[key]
    return f"{comment}{key} = {_value(values[key])}\n"


def caps_block(values: dict[str, Any]) -> str:
    lines = [CAPS_COMMENT + "[caps]"] + [f"{k} = {v}" for k, v in values["caps"].items()]
    return "\n".join(lines) + "\n"


def project_template(values: dict[str, Any]) -> str:
    parts = [PROJECT_HEADER] + [project_key_block(k, values) for k in ("rules", "check_paths", "angles")]
    return "\n".join(parts + [caps_block(values)])


@dataclass
class Edit:
    """The outcome of fitting a template into an existing file."""

    text: str  # the new file text (== the old text when nothing is added)
    added: list[str] = field(default_factory=list)  # keys added, in order
    head_lines: str = ""  # text inserted after the leading comment block
    tail_lines: str = ""  # text appended at the end

    @property
    def changed(self) -> bool:
        return bool(self.added)

    def lines_to_add(self) -> str:
        """The exact lines a user adds by hand when Spar will not edit the file."""
        parts = []
        if self.head_lines:
            parts.append("at the top (before any [table]):\n" + self.head_lines)
        if self.tail_lines:
            parts.append("at the end:\n" + self.tail_lines)
        return "\n".join(parts)


class CannotEdit(Exception):
    """The existing text cannot be edited safely; `lines` are what to add by hand."""

    def __init__(self, why: str, lines: str):
        super().__init__(why)
        self.why = why
        self.lines = lines


def _leading_comment_end(text: str) -> int:
    """Offset just after the file's leading block of comment and blank lines
    (keeping one blank line after it when there is one)."""
    pos = 0
    for line in text.splitlines(keepends=True):
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            break
        pos += len(line)
    return pos


def fit(existing: str, head: list[tuple[str, str]], tail: list[tuple[str, str]]) -> Edit:
    """Add to `existing` each (key, block) whose top-level key it lacks: `head`
    blocks (top-level values) after the leading comments, `tail` blocks (tables)
    at the end. Raises CannotEdit when the text is not TOML or the edit would
    change anything but the added keys."""
    head_text = "".join(block + "\n" for _, block in head)
    tail_text = "".join("\n" + block for _, block in tail)
    try:
        present = set(tomlkit.parse(existing).keys())
    except TOMLKitError as err:
        raise CannotEdit(f"it is not valid TOML ({err})", _lines(head_text, tail_text)) from None
    add_head = [(k, b) for k, b in head if k not in present]
    add_tail = [(k, b) for k, b in tail if k not in present]
    edit = Edit(existing, added=[k for k, _ in add_head + add_tail],
                head_lines="".join(b + "\n" for _, b in add_head),
                tail_lines="".join("\n" + b for _, b in add_tail))
    if not edit.changed:
        return edit
    cut = _leading_comment_end(existing)
    lead, body = existing[:cut], existing[cut:]
    head_part = edit.head_lines
    if head_part and lead and not lead.endswith("\n\n"):
        head_part = ("\n" if lead.endswith("\n") else "\n\n") + head_part
    new = lead + head_part + body
    if edit.tail_lines:
        if new and not new.endswith("\n"):
            new += "\n"
        # one blank line before the added tables, not two
        new += edit.tail_lines[1:] if (not new or new.endswith("\n\n")) else edit.tail_lines
    edit.text = new
    _check_only_added(existing, new, edit)
    return edit


def configured_presets(existing: str) -> set[str]:
    """The presets the file's [[reviewers]] entries name (none when it has no such list)."""
    try:
        entries = tomllib.loads(existing).get("reviewers")
    except tomllib.TOMLDecodeError:
        return set()
    if not isinstance(entries, list):
        return set()
    return {str(e.get("preset")) for e in entries if isinstance(e, dict)}


def is_setup_file(path: str) -> bool:
    """Whether a repository path is one `spar init` writes: a .gitignore (the series' ignore
    line), the project configuration, or a file under .jaekit/ (the baseline rules)."""
    return path.startswith(".jaekit/") or path.rsplit("/", 1)[-1] == ".gitignore"


def lists_rule(text: str, rule: str) -> bool:
    """Whether the project configuration `text` lists `rule` in its rules."""
    try:
        rules = tomllib.loads(text).get("rules")
    except tomllib.TOMLDecodeError:
        return False
    return isinstance(rules, list) and rule in rules


def add_reviewers(existing: str, presets: list[str]) -> Edit:
    """`existing` with a [[reviewers]] entry appended for each of `presets`. Raises
    CannotEdit when the result would change anything but those entries (the file's
    reviewers are an inline array, say: then the user adds them by hand)."""
    block = added_reviewer_blocks(presets)
    edit = Edit(existing, added=[f"reviewers ({p})" for p in presets], tail_lines="\n" + block)
    if not presets:
        return edit
    new = existing if not existing or existing.endswith("\n") else existing + "\n"
    new += block if new.endswith("\n\n") or not new else "\n" + block
    try:
        before, after = tomllib.loads(existing), tomllib.loads(new)
    except tomllib.TOMLDecodeError as err:
        raise CannotEdit(f"the edited text would not be valid TOML ({err})", edit.lines_to_add()) from None
    expected = dict(before, reviewers=list(before.get("reviewers", [])) + [{"preset": p} for p in presets])
    if after != expected:
        raise CannotEdit("adding the entries would change values already there", edit.lines_to_add())
    edit.text = new
    return edit


def without_own_native(existing: str) -> str | None:
    """`existing` without the `native` entry `spar init` wrote (NATIVE_BLOCK, or the same
    entry as written before it was marked), or None when the file holds no such entry as
    written: a native entry the user wrote or changed is theirs. The result must be the old
    values less exactly that one entry."""
    for block in (NATIVE_BLOCK, _UNMARKED_NATIVE_BLOCK):
        if existing.count(block) != 1:
            continue
        new = existing.replace(block, "", 1)
        try:
            before, after = tomllib.loads(existing), tomllib.loads(new)
        except tomllib.TOMLDecodeError:
            return None
        entries = list(before.get("reviewers", []))
        if {"preset": "native"} not in entries:
            return None
        entries.remove({"preset": "native"})
        expected = {k: v for k, v in before.items() if k != "reviewers"}
        if entries:
            expected["reviewers"] = entries
        return new if after == expected else None
    return None


def _lines(head_text: str, tail_text: str) -> str:
    return Edit("", head_lines=head_text, tail_lines=tail_text).lines_to_add()


def _check_only_added(old: str, new: str, edit: Edit) -> None:
    try:
        before = tomllib.loads(old)
        after = tomllib.loads(new)
    except tomllib.TOMLDecodeError as err:
        raise CannotEdit(f"the edited text would not be valid TOML ({err})", edit.lines_to_add()) from None
    if {k: v for k, v in after.items() if k not in edit.added} != before:
        raise CannotEdit("adding the keys would change values already there", edit.lines_to_add())


# ---------------------------------------------------------------- ignore rules

_GLOB_SPECIAL = set("*?[\\")


def ignore_pattern(rel: str) -> str:
    """A .gitignore line matching exactly the folder `rel` (repository-relative,
    / separated): anchored with a leading /, a trailing / for folders only, glob
    characters and trailing spaces escaped."""
    escaped = "".join("\\" + ch if ch in _GLOB_SPECIAL else ch for ch in rel)
    stripped = escaped.rstrip(" ")
    escaped = stripped + "\\ " * (len(escaped) - len(stripped))
    return f"/{escaped}/"


def text_with_line(existing: str, line: str) -> str:
    """`existing` with `line` appended as a line of its own."""
    if existing and not existing.endswith("\n"):
        existing += "\n"
    return existing + line + "\n"
