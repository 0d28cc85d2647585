"""`spar init`: set a user up in one command (user configuration, optional
project configuration, the series folder in the repository's ignore rules).

Every change is planned first; when any part cannot be done safely nothing is
written at all and the user gets the exact lines to add by hand. Existing
files are only ever added to (`spar.config.scaffold`), never rewritten.
"""

from __future__ import annotations

import argparse
import json
import os
import stat
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from spar import git
from spar.argparsing import command_parser, start_folder
from spar.config import agent_hooks
from spar.config.checks import check_project, check_user
from spar.config.model import plain_http_elsewhere
from spar.config.scaffold import (
    BASELINE_RULES,
    CLI_PRESETS,
    TIMEOUT_BLOCK,
    CannotEdit,
    Edit,
    add_reviewers,
    caps_block,
    configured_presets,
    fit,
    ignore_pattern,
    lists_rule,
    project_key_block,
    project_template,
    project_values,
    reviewer_blocks,
    text_with_line,
    user_template,
    without_own_native,
)
from spar.config.sources import PROJECT_FILE, find_user_source, missing_why, user_candidates
from spar.config.toml_positions import LocatedDoc, TomlSyntaxError, locate_toml
from spar.endpoint.discover import Found, from_environment, local_servers
from spar.errors import EXIT_OK, ConfigError, Refused, UsageError, quote
from spar.proc.executable import find_executable
from spar.records import atomic, paths

DESCRIPTION = """\
Set Spar up: write the user configuration (reviewers for the CLIs found on
PATH among claude, codex, agy; otherwise the host's native reviewer), with
--project the repository's .jaekit/spar.toml and Spar's baseline rules
(.jaekit/rules/baseline.md, listed in its rules: a leaked secret, an
unconfined path, injection, a swallowed error, a test that cannot fail; never
written over an existing file, nor when the project's rules leave it out), and
add the series folder (--series, default reviews) to the repository's ignore
rules so that `spar run --out reviews/ROUND` is accepted (a record folder must
be ignored by every repository holding it).

The user file is the one Spar reads: the first existing of $SPAR_CONFIG,
$XDG_CONFIG_HOME/jaekit/spar.toml, ~/.config/jaekit/spar.toml; when none
exists, the first of those paths (a variable that is unset or empty is
skipped). Run again, init adds a [[reviewers]] entry to the user file for each
of claude, codex, agy found on PATH that no entry names yet (--dry-run shows
the entries); once one runs unattended, the native entry init wrote itself
(marked so) is removed, and a native entry the user wrote stays with a note
that every round waits for `spar record` of its answer. Otherwise existing
files are never rewritten: keys they lack are added (top-level keys after the
leading comments, tables at the end) and every other byte stays. The ignore
line (/NAME/) goes at the end of the .gitignore in the folder holding the
series, where no other rule can override it. When a file cannot be edited
safely (not TOML, clean-review's config.json, a symbolic link to a folder,
...), nothing at all is written and the exact lines to add are printed. Inside
the repository no symbolic link may be on the way to a file init writes
(.jaekit, .jaekit/spar.toml, .jaekit/rules and its baseline.md, the folders to
the series and its .gitignore): a committed link would send the write
elsewhere, so it is refused. Everything is checked before the first write: a
--series name holding a control character (a newline would be several ignore
rules), a .gitignore that is not a regular file (git would wait on a FIFO), a
git command that does not finish within its time limit.

Exit codes: 0 done, or nothing to do; 64 usage error; 65 refused (nothing
written; the lines to add are on stderr); 70 a write failed part-way."""


@dataclass
class Step:
    """One planned change (or a note that nothing changes)."""

    path: str
    action: str  # "create" | "edit" | "keep"
    text: str = ""  # the whole new text (create, edit)
    shown: str = ""  # what --dry-run prints: the whole text or the added lines
    note: str = ""
    notice: str = ""  # one more line for the user, after the step's own


def _parser() -> argparse.ArgumentParser:
    p = command_parser("init", DESCRIPTION)
    p.add_argument("--project", action="store_true", help="also write <repository>/.jaekit/spar.toml")
    p.add_argument("--series", default="reviews", metavar="DIR",
                   help="the series folder to ignore (default: reviews, relative to the current folder)")
    p.add_argument("--agent", action="append", default=[], choices=tuple(agent_hooks.SETTINGS),
                   help="add spar hook as this agent's stop hook in the repository's settings "
                        "(.claude/settings.json, .codex/hooks.json, .cursor/hooks.json); repeatable")
    p.add_argument("--dry-run", action="store_true", help="print what would be written; write nothing")
    p.add_argument("-C", dest="directory", metavar="DIR", help="work as if started in DIR")
    return p


# ---------------------------------------------------------------- user configuration


def found_clis(path_env: str | None) -> list[str]:
    return [name for name in CLI_PRESETS if find_executable(name, path_env).status == "ok"]


def _validated(path: str, text: str, check: Callable[[LocatedDoc], object]) -> None:
    """The text Spar would read must pass the same checks as `spar config`."""
    try:
        check(locate_toml(path, text))
    except TomlSyntaxError as err:
        raise ConfigError(path, err.line, err.message) from None


def _read_existing(path: str, lines: str) -> str:
    # O_NONBLOCK: a FIFO planted where a file is expected must not hang init; only a
    # regular file is read
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as err:
        raise CannotEdit(f"it cannot be read ({err.strerror or err})", lines) from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise CannotEdit("it is not a regular file", lines)
        with open(fd, encoding="utf-8", closefd=False) as fh:
            return fh.read()
    except (OSError, UnicodeDecodeError) as err:
        raise CannotEdit(f"it cannot be read ({getattr(err, 'strerror', None) or err})", lines) from None
    finally:
        os.close(fd)


def _first_toml(env: Mapping[str, str], home: Path) -> str:
    return next(c.path for c in user_candidates(env, home) if c.kind == "toml")


def plan_user(env: Mapping[str, str], home: Path, found: list[str]) -> Step:
    source, _ = find_user_source(env, home)
    template = user_template(found)
    if source is None:
        target = _first_toml(env, home)
        _validated(target, template, check_user)
        return Step(target, "create", template, template, f"reviewers: {', '.join(found) or 'native'}")
    if source.kind == "json":
        raise _refusal(source.path, "it is clean-review's config.json, which Spar reads but does not edit; "
                       f"to configure Spar instead, create {_first_toml(env, home)} with",
                       template)
    head = [("timeout_seconds", TIMEOUT_BLOCK)]
    tail = [("reviewers", reviewer_blocks(found))]
    lines = Edit("", head_lines=TIMEOUT_BLOCK + "\n", tail_lines="\n" + reviewer_blocks(found)).lines_to_add()
    step = _plan_edit(source.path, head, tail, lines, check_user, "reviewers", needs="reviewers")
    if step.action != "keep":
        return step
    # the file names its reviewers (the user's choice, kept); a CLI installed since is added
    return _plan_new_clis(source.path, found)


def _plan_new_clis(path: str, found: list[str]) -> Step:
    """CLIs installed since are added; with a reviewer that runs unattended, the `native`
    stand-in init wrote goes (a round would wait for `spar record` of its answer forever)."""
    real = os.path.realpath(path)
    lines = Edit("", tail_lines="\n" + reviewer_blocks(found)).lines_to_add()
    try:
        existing = _read_existing(real, lines)
        presets = configured_presets(existing)
        missing = [p for p in found if p not in presets]
        unattended = bool(missing) or bool(presets - {"native"})
        stripped = without_own_native(existing) if unattended else None
        edit = add_reviewers(existing if stripped is None else stripped, missing)
    except CannotEdit as err:
        raise _refusal(path, err.why, err.lines) from None
    notice = _native_notice(path, edit.text) if unattended else ""
    if not missing and stripped is None:
        return Step(real, "keep", note="already has reviewers for every CLI found on PATH; left as it is",
                    notice=notice)
    _validated(path, edit.text, check_user)
    done = [f"added reviewers {', '.join(missing)} (found on PATH, not configured yet)"] if missing else []
    shown = edit.lines_to_add() if missing else ""
    if stripped is not None:
        done.append("removed the native reviewer `spar init` wrote when no CLI was found "
                    "(rounds no longer wait for `spar record`)")
        shown += "and remove the [[reviewers]] entry of the native reviewer spar init wrote\n"
    return Step(real, "edit", edit.text, shown, "; ".join(done), notice=notice)


def _native_notice(path: str, text: str) -> str:
    """One line when a native reviewer the user wrote stays beside unattended ones."""
    if "native" not in configured_presets(text):
        return ""
    return (f"{path} keeps a native reviewer the user wrote: every round waits for `spar record` of its "
            'answer; to run rounds unattended, delete its [[reviewers]] entry (preset = "native")')


def _plan_edit(path: str, head: list[tuple[str, str]], tail: list[tuple[str, str]], lines: str,
               check: Callable[[LocatedDoc], object], main_key: str, needs: str | None = None) -> Step:
    real = os.path.realpath(path)  # a symbolic link (dotfiles) is edited at its target, never replaced
    try:
        existing = _read_existing(real, lines)
        edit = fit(existing, head, tail)
    except CannotEdit as err:
        raise _refusal(path, err.why, err.lines) from None
    if not edit.changed or (needs is not None and needs not in edit.added):
        return Step(real, "keep", note=f"already has {main_key}; left as it is")
    _validated(path, edit.text, check)
    return Step(real, "edit", edit.text, edit.lines_to_add(), "added " + ", ".join(edit.added))


def _refusal(path: str, why: str, lines: str) -> Refused:
    return Refused(f"cannot edit {quote(path)}: {why}; nothing was written. Add these lines yourself:\n{lines}")


# ---------------------------------------------------------------- project configuration


def plan_project(root: Path) -> list[Step]:
    """The project file, and the baseline rules it lists."""
    entries = list(root.iterdir())
    values = project_values({e.name for e in entries if e.is_file()}, {e.name for e in entries if e.is_dir()})
    path = str(root.joinpath(*PROJECT_FILE))
    template = project_template(values)
    _refuse_links(root, Path(path), "--project", template)
    if missing_why(path) is not None:
        _validated(path, template, check_project)
        step = Step(path, "create", template, template, "rules, check_paths, angles, caps")
        return [step, plan_baseline(root, listed=True)]
    head = [(k, project_key_block(k, values)) for k in ("rules", "check_paths", "angles")]
    tail = [("caps", caps_block(values))]
    lines = Edit("", head_lines="".join(b + "\n" for _, b in head), tail_lines="\n" + tail[0][1]).lines_to_add()
    step = _plan_edit(path, head, tail, lines, check_project, "every key")
    text = step.text if step.action != "keep" else _read_existing(step.path, lines)
    return [step, plan_baseline(root, listed=lists_rule(text, BASELINE_RULES))]


def baseline_text() -> str:
    """Spar's baseline rules as installed with it (package data)."""
    return resources.files("spar").joinpath("configs", "baseline.md").read_text(encoding="utf-8")


def plan_baseline(root: Path, *, listed: bool) -> Step:
    """The baseline rules at BASELINE_RULES, written only where the project's rules list
    them (a user who took them out of the list keeps them out) and never over a file."""
    path = root.joinpath(*BASELINE_RULES.split("/"))
    if not listed:
        return Step(str(path), "keep", note=f"the project's rules do not list {BASELINE_RULES}; not written")
    text = baseline_text()
    _refuse_links(root, path, "--project", f"the text of spar/configs/baseline.md (installed with Spar) in {path}")
    if os.path.lexists(path):
        if not path.is_file():
            raise Refused(f"--project: {quote(str(path))} is not a regular file, and the project's rules "
                          "list it; nothing was written")
        return Step(str(path), "keep", note="already there; left as it is")
    return Step(str(path), "create", text, text, "Spar's baseline rules, listed in the project's rules")


def _refuse_links(root: Path, path: Path, what: str, lines: str) -> None:
    """Every file init writes must be where the user asked: a symbolic link in the
    repository part of its path (committed by anyone who can push) would send the
    write to wherever it points."""
    link = paths.link_below(root, path)
    if link is not None:
        target = os.readlink(link)
        raise Refused(f"{what}: cannot write {quote(str(path))}: {quote(str(link))} is a symbolic link "
                      f"(to {quote(target)}) inside the repository {quote(str(root))}, and Spar writes only "
                      f"where it was asked; nothing was written. If the link is yours, add these lines to "
                      f"its target yourself:\n{lines}")


# ---------------------------------------------------------------- agent hooks


def plan_agent_hook(root: Path, agent: str, series: str) -> Step:
    """The agent's project settings with Spar's stop hook merged in (never a key or entry
    of the file dropped; kept as it is when the hook is there already)."""
    target = root / agent_hooks.SETTINGS[agent]
    shown_lines = agent_hooks.merged(agent, None, series)[0]
    _refuse_links(root, target, f"--agent {agent}", shown_lines)
    existing = None
    if os.path.lexists(target):
        try:
            existing = _read_existing(str(target), shown_lines)
        except CannotEdit as err:
            raise _refusal(str(target), err.why, err.lines) from None
    try:
        text, added = agent_hooks.merged(agent, existing, series)
    except CannotEdit as err:
        raise _refusal(str(target), err.why, err.lines) from None
    if not added:
        return Step(str(target), "keep", note=f"{agent} already runs spar hook")
    action = "edit" if existing is not None else "create"
    return Step(str(target), action, text, text, f"{agent} runs spar hook on {', '.join(added)}")


# ---------------------------------------------------------------- ignore rules


def check_series_name(name: str) -> None:
    """The --series name must fit on one ignore line: a newline would make several
    rules (one of them possibly `!/AGENTS.md`), other controls are no folder a user means."""
    bad = next((ch for ch in name if not ch.isprintable()), None)
    if bad is not None:
        raise Refused(f"--series {quote(name)} holds the control character U+{ord(bad):04X}, which one "
                      "ignore rule cannot hold; nothing was written: pick another folder name")


def _refuse_odd_ignore_files(root: Path, series: Path) -> None:
    """git reads every .gitignore from the root down to the series and waits forever on
    one that is a FIFO: only regular files (or none) are let through to git."""
    folder = Path(os.path.abspath(series)).parent
    holders = [folder, *folder.parents]
    inside = next((n for n, holder in enumerate(holders) if _same(holder, root)), None)
    for holder in holders[:inside + 1] if inside is not None else []:
        candidate = holder / ".gitignore"
        try:
            mode = os.stat(candidate).st_mode
        except OSError:
            continue  # none there (or unreadable: git says so itself)
        if not stat.S_ISREG(mode):
            raise Refused(f"{quote(str(candidate))} is not a regular file (git would read it as ignore "
                          "rules and wait on it); nothing was written")


def _same(a: Path, b: Path) -> bool:
    return os.path.realpath(a) == os.path.realpath(b)


def plan_ignore(series: Path, repo: Path | None = None) -> Step:
    """G28 for the series folder; when the innermost repository does not ignore
    it, one line for the .gitignore of the deepest existing folder holding it.
    `repo` is the work tree the user works in: no link inside it may be on the way."""
    if repo is not None:
        _refuse_links(repo, series, "--series", f"{ignore_pattern(series.name)} (in the .gitignore beside it)")
        _refuse_odd_ignore_files(repo, series)
    try:
        paths.check_record_path(series, kind="--series", directory=True)
    except Refused as err:
        problem = err
    else:
        inside = bool(paths.containing_repos(series, kind="--series"))
        return Step(str(series), "keep", note="already ignored" if inside else "not inside a git repository")
    real = Path(os.path.realpath(series))
    root = paths.containing_repos(series, kind="--series")[0]
    _refuse_links(root, series, "--series", f"{ignore_pattern(real.name)} (in the .gitignore beside it)")
    if real == root:
        raise Refused(f"--series {quote(str(series))} is the repository root; pick a folder inside it")
    try:
        unfixable = git.tracked_under(root, real) or git.is_ignored(root, real, directory=True)
    except git.GitError as err:
        raise Refused(f"--series {quote(str(series))}: git cannot decide whether {quote(str(root))} "
                      f"ignores it ({err}); nothing was written") from None
    if unfixable:
        raise Refused(f"{problem.message}; an ignore rule cannot fix that: pick another --series")
    folder = real.parent
    while not folder.is_dir():
        folder = folder.parent
    pattern = ignore_pattern(real.relative_to(folder).as_posix())
    target = folder / ".gitignore"
    existing = ""
    if os.path.lexists(target):
        lines = f"at the end of {target}:\n{pattern}\n"
        if target.is_symlink() or not target.is_file():
            raise _refusal(str(target), "it is not a regular file", lines)
        try:
            existing = _read_existing(str(target), lines)
        except CannotEdit as err:
            raise _refusal(str(target), err.why, err.lines) from None
    action = "edit" if os.path.lexists(target) else "create"
    return Step(str(target), action, text_with_line(existing, pattern), pattern + "\n", f"ignores {series}")


# ---------------------------------------------------------------- running


def _indent(text: str) -> str:
    return "".join("    " + line if line.strip() else line for line in text.splitlines(keepends=True))


def _write(step: Step) -> None:
    path = Path(step.path)
    mode = None
    if step.action == "edit":
        mode = os.stat(path).st_mode & 0o7777
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
    atomic.write_text(path, step.text)
    if mode is not None:
        os.chmod(path, mode)  # the replacement keeps the file's permissions (a private config stays private)


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    base = start_folder("init", args.directory)
    env = os.environ
    home = Path(env["HOME"]) if env.get("HOME") else Path.home()
    if not args.series:
        raise UsageError("init: --series needs a folder")
    check_series_name(args.series)
    series = Path(args.series) if os.path.isabs(args.series) else base / args.series


    try:
        root = git.repo_root(base)
    except git.GitError as err:
        raise Refused(f"cannot find the repository of {os.path.abspath(base)}: {err}") from None
    steps = [plan_user(env, home, found_clis(env.get("PATH")))]
    if args.project:
        if root is None:
            raise Refused(f"--project: {os.path.abspath(base)} is not inside a git repository")
        steps += plan_project(Path(root))
    for agent in dict.fromkeys(args.agent):
        if root is None:
            raise Refused(f"--agent {agent}: {os.path.abspath(base)} is not inside a git repository")
        steps.append(plan_agent_hook(Path(root), agent, args.series.rstrip("/")))
    steps.append(plan_ignore(series, Path(root) if root is not None else None))

    out = sys.stdout
    for step in steps:
        if args.dry_run:
            if step.action == "keep":
                out.write(f"would keep {step.path}: {step.note}\n")
            else:
                verb = "create" if step.action == "create" else "add to"
                out.write(f"would {verb} {step.path} ({step.note}):\n{_indent(step.shown)}")
        else:
            if step.action != "keep":
                _write(step)
            verb = {"create": "created", "edit": "edited", "keep": "kept"}[step.action]
            out.write(f"{verb} {step.path}: {step.note}\n")
        if step.notice:
            out.write(f"note: {step.notice}\n")
    if not args.dry_run:
        ignore = steps[-1]
        if ignore.action != "keep":

            paths.check_record_path(series, kind="--series", directory=True)  # the line must have done it
        out.write(f"Next: `spar doctor`, then `spar run --stage code --out {args.series.rstrip('/')}/ROUND`.\n")
    out.write(endpoint_offers(from_environment(env) + local_servers(), steps[0].path))
    return EXIT_OK


def endpoint_offers(found: list[Found], config_path: str) -> str:
    """The openai-compatible entries init offers (printed, never written: using a key found
    in the environment, or a local server, is the user's choice)."""
    if not found:
        return ""
    # every line below is TOML (comments included): the block pastes as printed
    lines = ["", f"# OpenAI-compatible endpoints found; to review with one, add its entry to {config_path}:"]
    for f in found:
        where = "from OPENAI_API_KEY/OPENAI_BASE_URL" if f.name == "openai" else "answering on this machine"
        lines += ["", f"# {f.name}: {f.base_url} ({where})", "[[reviewers]]", f"name = {_toml(f.name)}",
                  'preset = "openai-compatible"', f"base_url = {_toml(f.base_url)}"]
        if f.models:
            listed = ", ".join(_toml(m[:200]) for m in f.models[:10])
            lines.append(f"allowed_models = [{listed}]  # listed by GET /models; the first is the default")
        else:  # no model listed: the entry names none, and loading it says exactly what to add
            lines.append('# model = "NAME"  # required: a model this endpoint serves; uncomment and put its name')
        if f.api_key_env:
            lines.append(f"api_key_env = {_toml(f.api_key_env)}  # the variable's name; the key stays there")
            if plain_http_elsewhere(f.base_url):  # refused without it: say so before the user meets it
                lines.append("# allow_plain_http = true  # http:// off this machine sends the key unencrypted: "
                             "prefer https://")
    return "\n".join(lines) + "\n"


def _toml(value: str) -> str:
    return json.dumps(value)  # a JSON string is a TOML basic string
