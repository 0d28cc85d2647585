"""`spar doctor`: one screen saying whether a round can run here, and what to do if not.

Every check only reads: git's version, the repository, the configuration
(the same loader as `spar run`, so an error names file:line), each configured
reviewer's executable with its version check (the preset's own version argv,
under a short limit, in its own process group), a harmless login check where
the CLI has one, whether the series folder is ignored (G28), and the Jaekit
Core that reads Spar's gate (`spar.core_query`).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import anyio

from spar import __version__, git
from spar.argparsing import command_parser, start_folder
from spar.backend import async_backend
from spar.config import agent_hooks
from spar.config.load import load_config
from spar.config.model import ENDPOINT, AppliedConfig, ReviewerConfig
from spar.config.sources import named_skipped
from spar.core_query import query_core
from spar.endpoint.client import Endpoint, NetworkError, list_models
from spar.errors import EXIT_NOT_CLEAN, EXIT_OK, Refused, UsageError
from spar.judge.core_caps import GATE_FEATURE
from spar.presets import get_preset
from spar.presets.codex import PRESET as CODEX
from spar.proc.environment import credential_values, reviewer_env
from spar.proc.executable import find_executable
from spar.proc.masking import mask_value, secrets_of
from spar.proc.process import GuardedProcess, OutputHandling, reviewer_guard
from spar.records import paths
from spar.round.interface import RunPaths
from spar.round.sandboxing import Confinement, SandboxChoice, choose_sandbox, confined
from spar.textsafe import bounded, for_stream, terminal_safe

SCHEMA = "spar-doctor/v1"
VERSION_TIMEOUT = 10.0  # a version print is instant; a hung CLI must not hold the screen
LOGIN_TIMEOUT = 10.0
ENDPOINT_TIMEOUT = 5.0  # an endpoint's GET /models

DESCRIPTION = """\
Say in one screen whether a review round can run here: git, the repository,
the configuration (errors name <file>:<line>), each configured reviewer's
executable and version (its version check, at most 10 s), whether claude
(`claude auth status`) and codex (`codex login status`, or CODEX_API_KEY set)
are logged in (agy has no harmless check), each CLI run with the environment
its reviewer would get (env_passthrough), whether reviewers run in the
kernel sandbox here ([sandbox] mode; bwrap tried once) and why not, a
warning when no configured
reviewer runs unattended (only `native`, which needs a host agent to run
`spar record`) or when `native` is among reviewers that do (every round then
waits for its record), and whether the series folder (--series, default reviews) is
ignored as `spar run --out` requires (every repository holding it ignores it
and no tracked file is under it).

It also asks the Jaekit Core that reads Spar's gate (`ha` on PATH, or
--core PATH) `ha capabilities --format json` (at most 5 s, not retried) and
reports, following the core-capabilities contract, whether it reads
review-gate/v1 (formats.review_gate, feature review-gate/v1, run-rules/5).
Exit 64 from ha means the query is unsupported (an older Core); an answer
that cannot be interpreted is never a pass, nor is a version print. Core is
needed only to record the gate, so it counts towards the exit code only when
--core is given.

Exit codes: 0 a round can run (every check needed holds); 1 something needed
is missing (each problem says what to do); 64 usage error."""


@dataclass
class Check:
    """One line of `spar doctor`'s answer."""

    check: str  # git | repository | config | sandbox | reviewer | login | series | hook | core
    subject: str
    status: str  # ok | problem | warning | info
    detail: str
    fix: str = ""


def _parser() -> argparse.ArgumentParser:
    p = command_parser("doctor", DESCRIPTION)
    p.add_argument("--format", choices=("text", "json"), default="text", help="text (default) or json")
    p.add_argument("--series", default="reviews", metavar="DIR",
                   help="the series folder rounds go to (default: reviews, relative to the current folder)")
    p.add_argument("--core", metavar="PATH", help="the Core executable to check (default: ha on PATH)")
    p.add_argument("-C", dest="directory", metavar="DIR", help="check as if started in DIR")
    return p


# ---------------------------------------------------------------- processes


async def _run(argv: list[str], env: dict[str, str], timeout: float,
               stdin_text: str | None = None) -> tuple[int | None, str, str, bool]:
    """(exit code, stdout, stderr, timed out) of a short read-only command."""
    with tempfile.TemporaryDirectory(prefix="spar-doctor-") as tmp:
        out, err = Path(tmp) / "out", Path(tmp) / "err"
        output = OutputHandling(stdout_path=out, stderr_path=err, cap=64 * 1024)
        async with GuardedProcess(argv, cwd=tmp, env=env, output=output, stdin_text=stdin_text) as running:
            with anyio.move_on_after(timeout):
                await running.wait()
        proc = running.result
        return (proc.exit_code, out.read_bytes().decode("utf-8", "replace"),
                err.read_bytes().decode("utf-8", "replace"), proc.timed_out)


def _claude_logged_in(code: int | None, out: str, err: str) -> bool | None:
    """`claude auth status` prints a JSON object whose boolean `loggedIn` decides
    (whatever the exit code); anything else is unknown."""
    try:
        value = json.loads(out)
    except ValueError:
        return None
    flag = value.get("loggedIn") if isinstance(value, dict) else None
    return flag if isinstance(flag, bool) else None


LOGIN_CHECKS: dict[str, tuple[tuple[str, ...], Callable[[int | None, str, str], bool | None]]] = {
    "claude": (("auth", "status"), _claude_logged_in),
    "codex": (CODEX.login_args or (), CODEX.logged_in),
}
# keys a CLI's non-interactive mode takes from the environment though its login check does
# not see them: `codex exec` reads CODEX_API_KEY, `codex login status` ignores it
LOGIN_KEYS = {"codex": ("CODEX_API_KEY",)}


def _one_line(text: str) -> str:
    """The first non-empty line, shortened and safe to print (a CLI's output is not trusted)."""
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return terminal_safe(first[:120])


@asynccontextmanager
async def _jail(r: ReviewerConfig, exe: str, env: dict[str, str], bwrap: str | None) -> AsyncIterator[Confinement]:
    """The confinement a round gives the reviewer (its jail, its scratch HOME, its environment),
    around an empty workspace of doctor's own."""
    preset = get_preset(r.preset)
    with tempfile.TemporaryDirectory(prefix="spar-doctor-") as tmp:
        paths = RunPaths(reviewer_dir=Path(tmp) / "reviewer", round_dir=Path(tmp), workspace=Path(tmp) / "workspace",
                         schema_path=Path(tmp) / "schema.json")
        for folder in (paths.reviewer_dir, paths.workspace):
            folder.mkdir()
        paths.schema_path.write_text("{}\n", encoding="utf-8")
        with confined(preset, paths, exe, [exe], env, bwrap) as jail:
            yield jail


async def reviewer_checks(r: ReviewerConfig, env: dict[str, str], passthrough: list[str] | None,
                          sandbox: SandboxChoice | None = None) -> list[Check]:
    """The reviewer's executable, version and login, each CLI run in the jail a round gives it
    (`sandbox`: the round's choice; None when the round would be refused for want of one)."""
    preset = get_preset(r.preset)
    env = reviewer_env(env, passthrough, preset.env_names(r))  # what the reviewer of a round would get
    subject = f"{r.name} ({r.preset})"
    if not preset.runs_process:
        return [Check("reviewer", subject, "info",
                      "the host's own subagent: spar run writes its prompt, `spar record` records its answer")]
    if r.preset == ENDPOINT:
        return [await endpoint_check(r, env)]
    name = r.argv[0] if r.preset == "command" else (r.binary or r.preset)
    lookup = find_executable(name, env.get("PATH"))
    if lookup.status != "ok" or lookup.path is None:
        fix = f"install {r.preset} or set binary for {r.name}" if r.preset != "command" \
            else f"fix argv of {r.name}"
        return [Check("reviewer", subject, "problem", lookup.reason, fix + " in the user configuration")]
    if preset.version_args is None:
        return [Check("reviewer", subject, "ok", f"{lookup.path} (a command has no version check)")]
    if sandbox is None:
        return [Check("reviewer", subject, "info", f"{lookup.path} (not run: no sandbox for it here)")]
    async with _jail(r, lookup.path, env, sandbox.bwrap) as jail:
        return await _cli_checks(r, name, lookup.path, jail)


async def _cli_checks(r: ReviewerConfig, name: str, exe: str, jail: Confinement) -> list[Check]:
    """The version check and the login check of a CLI, run in `jail`."""
    preset = get_preset(r.preset)
    subject = f"{r.name} ({r.preset})"
    assert preset.version_args is not None
    shown = " ".join([name, *preset.version_args])
    try:
        code, out, err, timed_out = await _run(jail.argv([exe, *preset.version_args]), jail.env, VERSION_TIMEOUT)
    except OSError as exc:
        return [Check("reviewer", subject, "problem", f"{exe} cannot be started: {exc.strerror or exc}")]
    if timed_out or code != 0:
        what = f"no answer within {VERSION_TIMEOUT:g}s" if timed_out else f"exit {code}"
        detail = _one_line(err) or _one_line(out)
        return [Check("reviewer", subject, "problem", f"`{shown}` failed ({what})" + (f": {detail}" if detail else ""),
                      f"run `{shown}` yourself and repair the installation")]
    checks = [Check("reviewer", subject, "ok", f"{exe} {_one_line(out) or _one_line(err)}".rstrip())]
    checks.append(await _login(r, exe, jail))
    return checks


async def endpoint_check(r: ReviewerConfig, env: dict[str, str]) -> Check:
    """An openai-compatible reviewer's endpoint: reachable, key accepted, model listed by
    `GET /models` (one request, at most ENDPOINT_TIMEOUT)."""
    subject = f"{r.name} ({r.preset})"
    key = env.get(r.api_key_env, "") if r.api_key_env else None
    if key == "":
        return Check("reviewer", subject, "problem", f"{r.api_key_env} (api_key_env) is not set",
                     f"export {r.api_key_env} with the endpoint's key")
    try:
        _, models, error = await anyio.to_thread.run_sync(
            lambda: list_models(Endpoint(r.base_url, key), ENDPOINT_TIMEOUT))
    except NetworkError as exc:
        return Check("reviewer", subject, "problem", f"{r.base_url}: {exc}",
                     "start the server, or correct base_url in the user configuration")
    if error is not None:
        what = bounded(error.describe(), 300)
        if error.kind == "authentication":
            return Check("reviewer", subject, "problem", f"{r.base_url} refused the key: {what}",
                         f"check the key in {r.api_key_env or 'api_key_env'}")
        return Check("reviewer", subject, "warning", f"{r.base_url}: GET /models answered {what}")
    keyed = "key accepted" if key else "no key"
    if key and r.key_in_clear():  # allowed by allow_plain_http, or the configuration would be refused
        return Check("reviewer", subject, "warning", f"{r.base_url} reachable, {keyed}, but the key travels "
                     "unencrypted (http://, allow_plain_http = true)", "use an https:// base_url")
    if r.model in models:
        return Check("reviewer", subject, "ok", f"{r.base_url} reachable, {keyed}, model {r.model} listed")
    shown = ", ".join(bounded(m, 80) for m in models[:5]) + (", …" if len(models) > 5 else "")
    return Check("reviewer", subject, "warning", f"{r.base_url} reachable, {keyed}, but GET /models does not "
                 f"list model {r.model} (it lists {shown or 'none'})", "correct model in the user configuration")


UNATTENDED = "unattended"  # the subject of the warning below
WAITING = "waits for spar record"  # the subject of waiting_warning


def unattended_warning(reviewers: list[ReviewerConfig]) -> Check:
    """No configured reviewer runs a program: a round only ends when a host agent
    records each answer with `spar record` (nothing does that in CI or a cron job)."""
    names = ", ".join(r.name for r in reviewers)
    return Check("reviewer", UNATTENDED, "warning",
                 f"no configured reviewer can run unattended ({names}: the host's own subagent, "
                 "which needs a host agent to run `spar record`)",
                 "install claude, codex or agy and run `spar init` again (it adds a reviewer for each "
                 "found on PATH), or add a [[reviewers]] entry (spar/configs/user.example.toml)")


def waiting_warning(reviewers: list[ReviewerConfig]) -> Check | None:
    """A `native` reviewer beside ones that run unattended: every reviewer is required, so
    each round waits for `spar record` of the native answer before it finishes and the gate
    stays blocked on it; often a stand-in left from before a CLI was installed."""
    hosts = [r.name for r in reviewers if not get_preset(r.preset).runs_process]
    if not hosts or len(hosts) == len(reviewers):
        return None
    names = ", ".join(hosts)
    return Check("reviewer", WAITING, "warning",
                 f"every round waits for `spar record` of {names} (the host's own subagent) beside the "
                 "reviewers that run unattended; without it the round stays unfinished and the gate blocked",
                 f"delete the [[reviewers]] entry of {names} from the user configuration to run unattended, "
                 "or leave it out of one round with --reviewers")


async def _login(r: ReviewerConfig, exe: str, jail: Confinement) -> Check:
    subject = f"{r.name} ({r.preset})"
    if r.preset not in LOGIN_CHECKS:
        return Check("login", subject, "info", f"not checked ({r.preset} has no harmless login check)")
    args, judge = LOGIN_CHECKS[r.preset]
    shown = " ".join([r.preset, *args])
    env = jail.env
    try:
        code, out, err, timed_out = await _run(jail.argv([exe, *args]), env, LOGIN_TIMEOUT)
    except OSError:
        code, out, err, timed_out = None, "", "", False
    state = None if timed_out else judge(code, out, err)
    if state is True:
        return Check("login", subject, "ok", f"logged in (`{shown}`)")
    keys = [k for k in LOGIN_KEYS.get(r.preset, ()) if env.get(k)]
    if keys:
        return Check("login", subject, "ok", f"{keys[0]} is set (the reviewer uses it; `{shown}` does not see it)")
    if state is False:
        return Check("login", subject, "problem", f"not logged in (`{shown}`)",
                     f"log in with `{r.preset} login`" if r.preset == "codex" else "log in: run `claude` and /login")
    return Check("login", subject, "warning", f"unknown: `{shown}` gave no answer Spar can read")


# ---------------------------------------------------------------- the other checks


async def git_check(env: dict[str, str]) -> Check:
    lookup = find_executable("git", env.get("PATH"))
    if lookup.status != "ok" or lookup.path is None:
        return Check("git", "git", "problem", lookup.reason, "install git")
    code, out, err, timed_out = await _run([lookup.path, "--version"], env, VERSION_TIMEOUT)
    if code != 0 or timed_out:
        return Check("git", "git", "problem", f"`git --version` failed: {_one_line(err)}", "repair git")
    return Check("git", "git", "ok", _one_line(out))


def repository_check(base: Path) -> tuple[Check, Path | None]:
    try:
        root = git.repo_root(base)
    except git.GitError as err:
        return Check("repository", str(base), "problem", f"git cannot read it: {err}"), None
    if root is None:
        return Check("repository", str(base), "problem", "not inside a git repository",
                     "run spar in the repository under review"), None
    if git.unborn_head(root):  # nothing a round could review
        return Check("repository", str(root), "problem", git.NO_COMMITS,
                     "commit the change to review, then run spar doctor again"), Path(root)
    return Check("repository", str(root), "ok", "git repository"), Path(root)


def config_check(root: Path | None, env: dict[str, str]) -> tuple[list[Check], AppliedConfig | None]:
    """The check, and the configuration when it can be read. A SPAR_CONFIG naming no file
    is a problem: the next source is read instead, which a round would use as well, so
    a mistyped path would run other reviewers while doctor said ok."""
    try:
        cfg = load_config(root, env=env)
    except Refused as err:
        return [Check("config", "configuration", "problem", err.message,
                      "fix that line (`spar config` shows it)")], None
    files = "; ".join(f"{f['role']} {f['path']}" for f in cfg.files) or "no file: the defaults"
    names = ", ".join(r.name for r in cfg.reviewers)
    skipped = named_skipped(env, cfg.skipped)
    if skipped is not None:
        return [Check("config", "configuration", "problem",
                      f"SPAR_CONFIG {env['SPAR_CONFIG']} names no configuration file ({skipped['why']}), so the "
                      f"next source is read: {files}; reviewers {names}",
                      "correct SPAR_CONFIG, or unset it to use the next source")], cfg
    return [Check("config", "configuration", "ok", f"{files}; reviewers {names}; "
                  f"timeout {cfg.timeout_seconds}s")], cfg


def sandbox_check(mode: str, env: dict[str, str]) -> tuple[Check, SandboxChoice | None]:
    """Whether the reviewers of a round would run in the kernel sandbox here, and why not;
    the round's choice (None: the round would be refused)."""
    subject = f'[sandbox] mode = "{mode}"'
    try:
        choice = choose_sandbox(mode, env.get("PATH"))
    except Refused as err:
        return Check("sandbox", subject, "problem", err.message, "install bubblewrap where user namespaces are "
                     'allowed, or set [sandbox] mode = "auto"'), None
    if choice.egress:
        return Check("sandbox", subject, "ok", f"every reviewer process runs in {choice.bwrap}'s sandbox (its "
                     "checks below too), each reviewer's with a network of its own: it reaches only its service "
                     "and its allow_hosts, through Spar's egress proxy"), choice
    if choice.bwrap is not None:
        return Check("sandbox", subject, "warning", f"every reviewer process runs in {choice.bwrap}'s sandbox (its "
                     "checks below too), but with the host's network (every host, the host's own local services "
                     f"included): {choice.network_why}",
                     "allow network namespaces for unprivileged users where bwrap runs"), choice
    if mode == "off":
        return Check("sandbox", subject, "info",
                     "reviewers run without Spar's sandbox (the configuration says so)"), choice
    return Check("sandbox", subject, "warning", f"reviewers run without a sandbox: {choice.why}",
                 "install bubblewrap (apt-get install bubblewrap) where user namespaces are allowed"), choice


async def agent_hook_checks(root: Path, series: str, env: dict[str, str]) -> list[Check]:
    """For each agent whose project settings exist: Spar's stop hook is in them, and `spar
    hook stop` runs here and answers in the agent's JSON (run with --dry-run: no state kept)."""
    checks = []
    for agent, relative in agent_hooks.SETTINGS.items():
        path = root / relative
        if not path.is_file():
            continue
        try:
            listed = agent_hooks.MARK in path.read_text(encoding="utf-8", errors="replace")[:1024 * 1024]
        except OSError as exc:
            listed = False
            checks.append(Check("hook", agent, "problem", f"{relative} cannot be read: {exc.strerror or exc}"))
            continue
        if not listed:
            checks.append(Check("hook", agent, "warning", f"{relative} runs no spar hook: the agent may stop "
                                "with the gate blocked", f"run `spar init --agent {agent}`"))
            continue
        checks.append(await _hook_runs(root, agent, series, env))
    return checks


async def _hook_runs(root: Path, agent: str, series: str, env: dict[str, str]) -> Check:
    found = find_executable("spar", env.get("PATH"))
    if found.status != "ok" or found.path is None:
        return Check("hook", agent, "problem", "spar is not on PATH, so the agent cannot run its hook",
                     "install Spar where the agent's PATH finds it")
    argv = [str(found.path), "hook", "stop", "--agent", agent, "--series", series, "--dry-run"]
    code, out, err, timed_out = await _run(argv, env, 30, stdin_text=json.dumps({"cwd": str(root)}))
    try:
        answer = json.loads(out)
    except ValueError:
        answer = None
    if timed_out or code != 0 or not isinstance(answer, dict):
        return Check("hook", agent, "problem", f"spar hook stop did not answer ({_one_line(err or out)})")
    said = answer.get("stopReason") or answer.get("reason") or answer.get("followup_message") or "let the stop through"
    return Check("hook", agent, "ok", f"spar hook stop runs; now it says: {_one_line(str(said))}")


def series_check(series: Path, shown: str) -> Check:
    try:
        paths.check_record_path(series, kind="--series", directory=True)
    except Refused as err:
        return Check("series", shown, "problem", err.message, f"run `spar init --series {shown}`")
    return Check("series", shown, "ok", "rounds may be written there (ignored, nothing tracked under it)")


async def core_check(requested: str | None, env: dict[str, str]) -> tuple[Check, dict[str, Any]]:
    result = await query_core(requested or "ha", env.get("PATH"), env)
    caps = result.capabilities
    # what the Core printed is the Core's text: bounded here, escaped wherever it is shown
    version = bounded(caps.ha_version) if caps.ha_version is not None else None
    report = {"requested": result.requested, "executable": result.executable, "sha256": result.sha256,
              "state": caps.state, "reason": bounded(caps.reason, 400), "ha_version": version,
              "reads_review_gate": caps.reads_review_gate, "missing": caps.missing_for_gate}
    needed = requested is not None
    bad = "problem" if needed else "warning"
    subject = result.executable or result.requested
    if caps.state == "missing":
        status = "problem" if needed else "info"
        return Check("core", subject, status, f"{caps.reason} (Core is needed only to record the gate)",
                     "install Jaekit Core" if needed else ""), report
    if caps.state != "ok":
        return Check("core", subject, bad, f"capability query: {bounded(caps.reason, 400)}",
                     "install a Core of v0.1.8 or later"), report
    if caps.missing_for_gate:
        return Check("core", subject, bad, f"ha {version} does not read review-gate/v1: lacks "
                     + ", ".join(caps.missing_for_gate), "install a Core with run-rules/5"), report
    return Check("core", subject, "ok", f"ha {version} reads review-gate/v1 "
                 f"({GATE_FEATURE}, run-rules/5)"), report


# ---------------------------------------------------------------- output


MARK = {"ok": "ok", "problem": "FAIL", "warning": "warn", "info": "--"}


def render_text(checks: list[Check], ready: bool) -> str:
    head = "a round can run here" if ready else \
        f"a round cannot run here: {sum(c.status == 'problem' for c in checks)} problem(s)"
    if ready and any(c.subject == UNATTENDED and c.status == "warning" for c in checks):
        head += ", but only with a host agent to record each answer (no reviewer runs unattended)"
    lines = [f"spar doctor ({__version__}): {head}"]
    width = max(len(c.check) for c in checks)
    # subjects and details hold what tools printed (a Core's version, a CLI's answer): escaped
    # whether or not stdout is a terminal, since a pipe usually ends in one (a CI log, less)
    for c in checks:
        lines.append(f"  {MARK[c.status]:<4}  {c.check:<{width}}  {terminal_safe(c.subject)}: "
                     f"{terminal_safe(c.detail)}")
        if c.fix and c.status in ("problem", "warning"):
            lines.append(f"  {'':<4}  {'':<{width}}  -> {terminal_safe(c.fix)}")
    return "\n".join(lines) + "\n"


def _git_checks(args: argparse.Namespace, base: Path) -> tuple[Check, Path | None, Check | None]:
    """The repository and series checks, run before the event loop: their git calls block,
    and there Ctrl-C raises at once (asyncio's handler would only cancel the loop's task
    once the call returned), so git is ended with it."""
    repo, root = repository_check(base)
    series = Path(args.series) if os.path.isabs(args.series) else base / args.series
    return repo, root, series_check(series, args.series) if root is not None else None


async def _all_checks(args: argparse.Namespace, env: dict[str, str],
                      git_checks: tuple[Check, Path | None, Check | None]) -> tuple[list[Check], dict[str, Any]]:
    checks = [await git_check(env)]
    repo, root, series = git_checks
    checks.append(repo)
    config, cfg = config_check(root, env)
    checks += config
    reviewers = list(cfg.reviewers) if cfg is not None else []
    passthrough = cfg.env_passthrough if cfg is not None else None
    sandbox: SandboxChoice | None = SandboxChoice(None, "no configuration")
    if cfg is not None:
        check, sandbox = sandbox_check(cfg.sandbox, env)
        checks.append(check)
    results: dict[int, list[Check]] = {}

    async def one(i: int, r: ReviewerConfig) -> None:
        results[i] = await reviewer_checks(r, env, passthrough, sandbox)

    async with anyio.create_task_group() as tg:  # reviewers at once, as a round starts them
        for i, r in enumerate(reviewers):
            tg.start_soon(one, i, r)
    for i in range(len(reviewers)):
        checks += results[i]
    if reviewers and not any(get_preset(r.preset).runs_process for r in reviewers):
        checks.append(unattended_warning(reviewers))
    waiting = waiting_warning(reviewers)
    if waiting is not None:
        checks.append(waiting)
    if series is not None:
        checks.append(series)
    if root is not None:
        checks += await agent_hook_checks(root, args.series, env)
    core, report = await core_check(args.core, env)
    checks.append(core)
    return masked_checks(checks, report, env, reviewers)


def masked_checks(checks: list[Check], report: dict[str, Any], env: dict[str, str],
                  reviewers: list[ReviewerConfig]) -> tuple[list[Check], dict[str, Any]]:
    """What doctor prints, every credential masked: a CLI, a server or the Core may echo a
    key back (as `spar run` masks a reviewer's output)."""
    secrets = secrets_of(credential_values(env, [r.api_key_env for r in reviewers]))
    mask_value(report, secrets)
    return [Check(**mask_value(asdict(c), secrets)[0]) for c in checks], report


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    base = start_folder("doctor", args.directory)
    if not args.series:
        raise UsageError("doctor: --series needs a folder")
    env = dict(os.environ)
    with reviewer_guard():  # forked first, before any thread: it starts the CLIs asked for their version
        git_checks = _git_checks(args, base.absolute())
        checks, core = anyio.run(lambda: _all_checks(args, env, git_checks), backend=async_backend(env))
    ready = not any(c.status == "problem" for c in checks)
    if args.format == "json":
        # ASCII only: a C1 control or bidi override in a tool's text is \uXXXX, never raw in a log
        sys.stdout.write(for_stream(json.dumps({"schema": SCHEMA, "spar_version": __version__, "ready": ready,
                                                "checks": [asdict(c) for c in checks], "core": core},
                                               indent=2, ensure_ascii=True) + "\n", sys.stdout))
    else:
        sys.stdout.write(for_stream(render_text(checks, ready), sys.stdout))
    return EXIT_OK if ready else EXIT_NOT_CLEAN
