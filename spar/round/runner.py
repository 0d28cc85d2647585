"""All reviewers of a round at once, in one anyio task group: attempts, fallback, timeouts.

Per attempt everything runs inside the reviewer's `timeout_seconds` (G19): the
version check (≤ 30 s), then the run. A quota refusal (contract §5) with a
`fallback_model` gets one more attempt with that model and a fresh time limit.
The runner delivers raw facts (status, reason, attempts, the raw result); the
caller validates results (G1–G6) and writes the records.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import anyio

from spar.config.model import ReviewerConfig
from spar.errors import quote
from spar.judge.refusal import RefusalScan, reason_for
from spar.judge.transient import transient_failure
from spar.judge.unreachable import short_message
from spar.proc.environment import credential_values, reviewer_env
from spar.proc.executable import ExecutableLookup, find_executable
from spar.proc.masking import mask_text, mask_value, secrets_of
from spar.proc.process import KILL_GRACE, OUTPUT_CAP, GuardedProcess, OutputHandling, ProcessResult
from spar.records.clock import now
from spar.records.model import Attempt, NotRun
from spar.records.model import ReviewerStatus as S
from spar.records.usage import attempt_usage
from spar.round.interface import InputSpec, Monitor, Preset, RunPaths, recorded_argv
from spar.round.liveness import watch_liveness
from spar.round.sandboxing import Confinement, confined, egress_rule, remove_scratch

if TYPE_CHECKING:
    from spar.progress import Progress

VERSION_TIMEOUT = 30.0
TRANSIENT_BACKOFF = 3.0  # seconds before the one retry of a transient failure
MIN_RETRY_SECONDS = 5.0  # a retry needs at least this much of the limit left after the backoff


@dataclass
class ReviewerJob:
    """One reviewer to run in a round."""

    config: ReviewerConfig  # after --model/--effort overrides; timeout_seconds is the per-attempt limit
    reviewer_dir: Path  # ROUND/<name>/ exists; input files already written
    round_dir: Path
    workspace: Path  # ROUND/workspace (cwd of the reviewer)
    schema_path: Path  # ROUND/schema.json
    input: InputSpec
    preset: Preset  # the reviewer's preset, looked up by the caller (`spar run` asks the registry)


@dataclass
class ReviewerOutcome:
    """How one reviewer's attempts ended."""

    name: str
    # COMPLETED (raw result present, not yet validated), FAILED, UNAVAILABLE, TIMEOUT,
    # TOOL_VIOLATION or AWAITING_RECORD
    status: S
    reason: str  # "" when completed
    resets: str | None
    observed_model: str | None
    attempts: list[Attempt]  # model, observed_model (absent when unknown), started_at, finished_at,
    #                       exit_code, status, reason, resets, argv, usage (docs/records.md)
    result: dict[str, Any] | None  # the raw result object for completed (None when output_error is set)
    model: str  # model of the last attempt ("" = CLI default)
    # completed, but the final answer is not one JSON object: the caller records invalid_output
    output_error: str | None = None
    warnings: list[str] = field(default_factory=list)  # round warnings from every attempt
    not_run: NotRun | None = None  # the last attempt's: why the reviewer never got to review
    # per attempt, the words of its read and search calls that may name files (coverage);
    # None: Spar cannot see the reviewer's calls (command, native)
    named_words: list[list[str]] | None = None


@dataclass
class _Attempt:
    """How one attempt ended."""

    record: Attempt
    status: S
    reason: str = ""
    resets: str | None = None
    observed_model: str | None = None
    result: dict[str, Any] | None = None
    output_error: str | None = None
    not_run: NotRun | None = None  # why it never got to review (None: it ran)
    quota: bool = False  # refused for quota or rate limit (fallback may follow)
    transient: str | None = None  # failed, and its own words say for a moment (one retry may follow)
    deadline: float | None = None  # the end of its time limit (anyio clock), once it ran
    warnings: list[str] = field(default_factory=list)  # round warnings (e.g. the CLI ignored a value)
    named_words: list[str] = field(default_factory=list)  # its tool calls' words (coverage)


@dataclass
class RunSettings:
    """What every attempt of a round shares (`run_settings` makes it)."""

    env: Mapping[str, str]
    passthrough: list[str] | None  # env_passthrough: None passes `env` whole
    output_cap: int
    kill_grace: float
    version_timeout: float
    progress: Progress | None = None
    transient_backoff: float = TRANSIENT_BACKOFF
    started: dict[str, Any] = field(default_factory=dict)
    sandbox: str | None = None  # bwrap, when the round's reviewers run in its sandbox (spar/round/sandboxing.py)
    # every credential of `env` (and the endpoints' keys): masked in every reviewer's output, since a
    # reviewer may read another's (without the sandbox, from /proc/PID/environ)
    credentials: list[str] = field(default_factory=list)
    egress: bool = False  # and each jail has a network of its own, its way out the egress proxy


async def run_reviewers(jobs: list[ReviewerJob], *, progress: Progress | None = None,
                        env: Mapping[str, str] | None = None, env_passthrough: list[str] | None = None,
                        output_cap: int = OUTPUT_CAP,
                        kill_grace: float = KILL_GRACE,
                        version_timeout: float = VERSION_TIMEOUT, sandbox: str | None = None,
                        transient_backoff: float = TRANSIENT_BACKOFF, egress: bool = False) -> list[ReviewerOutcome]:
    """Run every job at once; outcomes in the order of `jobs`.

    `env` is the environment reviewers inherit from (default: this process's), each
    through `env_passthrough` and its preset's vendor variables (spar.proc.environment);
    its PATH is where bare executable names are looked up. One reviewer's failure never
    stops the others. `sandbox`: bwrap, to run every reviewer process in its sandbox;
    `egress`: each with a network of its own and the egress proxy as its way out.
    """
    settings = run_settings(progress=progress, env=env, env_passthrough=env_passthrough, output_cap=output_cap,
                            kill_grace=kill_grace, version_timeout=version_timeout, sandbox=sandbox,
                            key_names=[job.config.api_key_env for job in jobs], egress=egress)
    settings.transient_backoff = transient_backoff
    outcomes: list[ReviewerOutcome | None] = [None] * len(jobs)

    async def one(index: int, job: ReviewerJob) -> None:
        outcomes[index] = await run_reviewer(job, settings)

    async with anyio.create_task_group() as tg:
        for index, job in enumerate(jobs):
            tg.start_soon(one, index, job)
    return [o for o in outcomes if o is not None]


def run_settings(*, progress: Progress | None = None, env: Mapping[str, str] | None = None,
                 env_passthrough: list[str] | None = None, output_cap: int = OUTPUT_CAP,
                 kill_grace: float = KILL_GRACE, version_timeout: float = VERSION_TIMEOUT,
                 sandbox: str | None = None, key_names: list[str] | None = None,
                 egress: bool = False) -> RunSettings:
    """What `run_reviewer` needs besides the job (the arguments of `run_reviewers`;
    `key_names`: the variables holding the configured endpoints' keys)."""
    full = dict(os.environ if env is None else env)
    return RunSettings(env=full, passthrough=env_passthrough, output_cap=output_cap, kill_grace=kill_grace,
                       version_timeout=version_timeout, progress=progress, sandbox=sandbox,
                       credentials=credential_values(full, key_names or ()), egress=egress and sandbox is not None)


async def run_reviewer(job: ReviewerJob, st: RunSettings) -> ReviewerOutcome:
    """One job's attempts (fallback included) under its time limit: what `run_reviewers`
    does for each job, for callers that schedule jobs themselves (verification)."""
    cfg = job.config
    preset = job.preset
    if not preset.runs_process:
        _status(st, cfg.name, S.AWAITING_RECORD, "awaiting spar record")
        return ReviewerOutcome(cfg.name, S.AWAITING_RECORD, "awaiting spar record", None, None, [], None,
                               cfg.model)
    models = [cfg.model]
    if cfg.fallback_model:
        models.append(cfg.fallback_model)
    attempts: list[_Attempt] = []
    index, deadline = 0, None  # deadline: a retry's, the limit of the attempt it repeats
    while True:
        attempt = await _attempt(job, preset, models[index], len(attempts) + 1, st, deadline)
        attempts.append(attempt)
        deadline = _retry_deadline(attempt, attempts, st)
        if deadline is not None:
            _status(st, cfg.name, S.RETRYING, f"transient failure; trying {model_label(models[index])} "
                    f"again in {st.transient_backoff:g}s: {attempt.transient}")
            await anyio.sleep(st.transient_backoff)
        elif attempt.quota and index + 1 < len(models):
            index += 1
            _status(st, cfg.name, S.FALLBACK,
                    f"quota or rate limit; retrying with model {model_label(models[index])}")
        else:
            break
    last = attempts[-1]
    outcome = ReviewerOutcome(
        name=cfg.name,
        status=last.status,
        reason=last.reason,
        resets=last.resets,
        observed_model=last.observed_model,
        attempts=[a.record for a in attempts],
        result=last.result,
        model=last.record["model"],
        output_error=last.output_error,
        warnings=list(dict.fromkeys(w for a in attempts for w in a.warnings)),
        not_run=last.not_run,
        named_words=[a.named_words for a in attempts] if preset.observes_reads else None,
    )
    if last.status == S.COMPLETED:
        # the answer is judged after the run (G1-G6), so progress says "answered" here and
        # `spar run` reports completed or invalid_output once it has checked the answer
        _status(st, cfg.name, S.ANSWERED, f"answer not usable: {last.output_error}" if last.output_error else "")
    else:
        _status(st, cfg.name, last.status, last.reason)
    return outcome


def command_line(job: ReviewerJob, model: str, path_env: str | None) -> tuple[ExecutableLookup, list[str]]:
    """The executable lookup (G14) and the argv of one attempt of `job` with `model`: what
    runs, or what would run when the lookup fails (then argv[0] is the name looked up).
    Raises OSError when an input of the argv (claude: schema.json) cannot be read."""
    preset = job.preset
    paths = run_paths(job)
    name = preset.executable_name(job.config, paths, job.input)
    lookup = find_executable(name, path_env)
    exe = lookup.path if lookup.status == "ok" and lookup.path else name
    return lookup, preset.argv(exe, job.config, model, paths, job.input)


def run_paths(job: ReviewerJob) -> RunPaths:
    return RunPaths(reviewer_dir=Path(job.reviewer_dir).absolute(), round_dir=Path(job.round_dir).absolute(),
                    workspace=Path(job.workspace).absolute(), schema_path=Path(job.schema_path).absolute())


@dataclass
class _Facts:
    """What one attempt has learned so far; `done()` turns it into the attempt's record."""

    model: str
    input: InputSpec
    started_at: str = field(default_factory=now)
    clock_start: float = field(default_factory=anyio.current_time)
    argv: list[str] = field(default_factory=list)  # what ran, or would have run had the attempt got that far
    exit_code: int | None = None
    monitor: Monitor | None = None
    cli_version: str | None = None  # what the version check printed, once it answered
    deadline: float | None = None  # where its time limit ends, once it is set
    warnings: list[str] = field(default_factory=list)
    masks: tuple[bytes, ...] = ()  # the credentials handed to the reviewer: masked in all it prints
    masked: int = 0  # how many of them its output held (version check and run)

    def done(self, status: S, reason: str = "", *, resets: str | None = None, observed_model: str | None = None,
             not_run: NotRun | None = None, **kw: Any) -> _Attempt:
        named = self.monitor.named_words if self.monitor is not None else []
        # what the reviewer printed, decoded (its answer, messages, model): masked again before
        # anything records or shows it, as a decoding may bring out what the stream's masks missed
        (reason, resets, observed_model, warnings, named, cli_version), masked = mask_value(
            (reason, resets, observed_model, list(self.warnings), list(named), self.cli_version), self.masks)
        kw, more = mask_value(kw, self.masks)
        self.masked += masked + more + (self.monitor.masked if self.monitor is not None else 0)
        record: dict[str, Any] = {"model": self.model}
        if observed_model:
            record["observed_model"] = observed_model  # G12: absent from the attempt when unknown
        usage = self.monitor.usage if self.monitor is not None else None
        record.update(started_at=self.started_at, finished_at=now(), exit_code=self.exit_code, status=status,
                      reason=reason, resets=resets, not_run=not_run, argv=recorded_argv(self.argv, self.input),
                      usage=attempt_usage(anyio.current_time() - self.clock_start, usage))
        if cli_version is not None:
            record["cli_version"] = cli_version  # absent when no version check answered
        if self.masked:
            record["masked_secrets"] = self.masked  # how many, never which
        return _Attempt(record=cast(Attempt, record), status=status, reason=reason, resets=resets,
                        observed_model=observed_model, warnings=warnings, named_words=named,
                        deadline=self.deadline, not_run=not_run, **kw)


async def _attempt(job: ReviewerJob, preset: Preset, model: str, number: int, st: RunSettings,
                   deadline: float | None = None) -> _Attempt:
    """One attempt: find the executable, check its version, run it, judge how it ended; all
    within the reviewer's time limit (G19), which runs from here (or ends at `deadline`: a
    retry of a transient failure stays inside the limit of the attempt it repeats)."""
    cfg = job.config
    facts = _Facts(model=model, input=job.input)
    names = preset.env_names(cfg)  # its vendor's variables, or what its configuration names
    env = reviewer_env(st.env, st.passthrough, names, proxy_credentials=preset.proxy_credentials)
    facts.masks = secrets_of([*st.credentials, *credential_values(env, [cfg.api_key_env])])
    if st.progress is not None:
        st.progress.reviewer_started(cfg.name, number, model or preset.unset_model_text)
    try:
        lookup, facts.argv = command_line(job, model, env.get("PATH"))
    except OSError as exc:
        return facts.done(S.FAILED, f"cannot build the command line: {exc.strerror or exc}",
                          not_run=NotRun.NOT_STARTED)
    if lookup.status != "ok" or lookup.path is None:
        missing = lookup.status == S.UNAVAILABLE
        return facts.done(S(lookup.status), lookup.reason, not_run=NotRun.NOT_INSTALLED if missing else
                          NotRun.NOT_STARTED)
    if deadline is None:
        deadline = anyio.current_time() + cfg.timeout_seconds  # the attempt's cancel scopes end here
    facts.deadline = deadline
    rule = egress_rule(preset, cfg, env) if st.egress else None
    homes: list[str] = []  # its scratch HOME, removed here in a worker thread (a deep tree takes seconds)
    try:
        with confined(preset, run_paths(job), lookup.path, facts.argv, env, st.sandbox, rule, homes) as jail:
            ended = await _check_and_run(job, lookup.path, _log_suffix(number), deadline, jail, st, facts, env)
            attempt = _refusals_told(ended, jail, preset)
    except OSError as exc:
        attempt = facts.done(S.FAILED, f"cannot prepare the sandbox: {exc.strerror or exc}", not_run=NotRun.SANDBOX)
    finally:
        with anyio.CancelScope(shield=True):  # removed however the attempt ended
            left = [await anyio.to_thread.run_sync(remove_scratch, home) for home in homes]
    attempt.warnings.extend(w for w in left if w)  # what could not be removed: said, never fatal
    return attempt


async def _check_and_run(job: ReviewerJob, exe: str, suffix: str, deadline: float, jail: Confinement,
                         st: RunSettings, facts: _Facts, env: Mapping[str, str]) -> _Attempt:
    """The version check and the login check (when the preset has them), then the run."""
    preset = job.preset
    if preset.version_args is not None:
        checked = await _version_check(exe, preset.version_args, run_paths(job), deadline, jail, st, facts)
        if isinstance(checked, tuple):
            status, reason, not_run = checked
            return facts.done(status, reason, not_run=not_run)
        facts.cli_version = checked
    if preset.login_args is not None and not preset.works_without_login(env):
        refused = await _login_check(exe, preset, run_paths(job), deadline, jail, st, facts)
        if refused is not None:
            return facts.done(S.UNAVAILABLE, refused, not_run=NotRun.AUTHENTICATION)
    return await _run_and_judge(job, preset, exe, suffix, deadline, jail, st, facts)


def _refusals_told(ended: _Attempt, jail: Confinement, preset: Preset) -> _Attempt:
    """The attempt with the connections its egress proxy refused (host, port, how often); a
    failure after one is said to be the allowlist's doing first (claude reports a refused
    host as "Failed to authenticate. API Error: 403"), unless only hosts its CLI reaches for
    without needing them were refused (`incidental_hosts`)."""
    refused = jail.refusals()
    if not refused:
        return ended
    ended.record["egress_refused"] = [{"host": r.host, "port": r.port, "count": r.times} for r in refused]
    refused = [r for r in refused if r.host.lower() not in preset.incidental_hosts]
    if refused and ended.status != S.COMPLETED:
        named = ", ".join(f"{r.host}:{r.port}" for r in refused[:5]) + (", ..." if len(refused) > 5 else "")
        ended.reason = (f"blocked by Spar's egress allowlist: it tried to reach {named}, which its sandbox "
                        "refused (add a host it needs to allow_hosts)" + (f"; {ended.reason}" if ended.reason else ""))
        ended.record["reason"] = ended.reason
        ended.not_run = ended.record["not_run"] = NotRun.EGRESS  # the person must allow the host
        ended.transient = None  # a refusal does not pass by itself
    return ended


def _log_suffix(number: int) -> str:
    return "" if number == 1 else f".{number}"


async def _run_and_judge(job: ReviewerJob, preset: Preset, exe: str, suffix: str, deadline: float,
                         jail: Confinement, st: RunSettings, facts: _Facts) -> _Attempt:
    """Run the reviewer until it answers, the monitor objects or `deadline` passes; then judge."""
    cfg = job.config
    paths = run_paths(job)
    _status(st, cfg.name, S.RUNNING, "")
    monitor = facts.monitor = preset.monitor()
    monitor.masks = facts.masks
    monitor.on_notice = lambda text: _notice(st, cfg.name, mask_text(text, facts.masks)[0])
    stderr_refusals = RefusalScan()  # the whole stderr, searched as it streams

    def stderr_text(text: str) -> None:
        stderr_refusals.feed(text)
        for line in text.splitlines():
            monitor.stderr_line(line)

    output = OutputHandling(stdout_path=paths.reviewer_dir / f"stdout{suffix}.log",
                            stderr_path=paths.reviewer_dir / f"stderr{suffix}.log",
                            on_stdout_line=monitor.feed, on_long_stdout_line=monitor.long_line,
                            on_stderr_text=stderr_text, cap=st.output_cap, masks=facts.masks)
    liveness = watch_liveness(cfg, monitor, st.progress)
    try:
        async with GuardedProcess(jail.argv(facts.argv), cwd=paths.workspace, env=jail.env,
                                  stdin_text=preset.stdin_text(job.input),
                                  output=output, kill_grace=st.kill_grace) as proc:
            with anyio.move_on_at(deadline):
                async with liveness.watching():  # stops waiting when the CLI cannot reach its service
                    await proc.wait()
    except OSError as exc:
        return facts.done(S.FAILED, f"could not start {quote(exe)}: {exc.strerror or exc}",
                          not_run=NotRun.NOT_STARTED)
    facts.exit_code = proc.result.exit_code
    facts.masked += proc.result.masked
    facts.warnings.extend(monitor.warnings)
    if liveness.gave_up is not None:  # its process group is ended like a timed-out one's
        return facts.done(S.UNAVAILABLE, liveness.reason(preset.name), observed_model=monitor.observed_model,
                          quota=liveness.gave_up.kind == "quota", not_run=NotRun(liveness.gave_up.kind))
    return _judge(cfg, proc.result, monitor, stderr_refusals, facts)


def _judge(cfg: ReviewerConfig, proc: ProcessResult, monitor: Monitor, stderr_refusals: RefusalScan,
           facts: _Facts) -> _Attempt:
    """How an attempt whose process ran ended: its status from the process and the monitor."""
    observed = monitor.observed_model
    if proc.violation is not None:
        return facts.done(S.TOOL_VIOLATION, proc.violation, observed_model=observed)
    if proc.timed_out:
        reason = f"no answer within {cfg.timeout_seconds}s (timeout_seconds); process group killed"
        if monitor.last_retry:  # what it was waiting for, in its own words
            reason += f"; it was retrying: {quote(short_message(monitor.last_retry))}"
        return facts.done(S.TIMEOUT, reason, observed_model=observed)
    if proc.log_error is not None:
        # the raw output is part of the record; an answer whose log was lost is not kept
        return facts.done(S.FAILED, proc.log_error, observed_model=observed)
    answer = monitor.finish(proc.exit_code, proc.stdout)
    observed = monitor.observed_model
    if monitor.unreadable_answer is not None:
        return facts.done(S.COMPLETED, "", observed_model=observed, output_error=monitor.unreadable_answer)
    if answer.timed_out:
        return facts.done(S.TIMEOUT, answer.failure, observed_model=observed)
    if answer.completed:
        return facts.done(S.COMPLETED, "", observed_model=observed, result=answer.result,
                          output_error=answer.output_error)
    # not completed: a refusal (G13, contract §5) decides unavailable (and maybe a fallback), else
    # failed. The whole stderr first, then every error message of the output.
    late = RefusalScan()
    late.feed("\n".join(answer.error_texts))
    refusal = stderr_refusals.then(monitor.refusals).then(late).result()
    if refusal is not None:
        return facts.done(S.UNAVAILABLE, reason_for(refusal), resets=refusal.resets, observed_model=observed,
                          quota=refusal.kind == "quota",
                          not_run=NotRun.QUOTA if refusal.kind == "quota" else NotRun.AUTHENTICATION)
    if answer.unavailable:
        return facts.done(S.UNAVAILABLE, answer.unavailable, observed_model=observed,
                          not_run=answer.unavailable_kind)
    if proc.not_started:  # the guard could not start its program: no transient failure
        return facts.done(S.FAILED, failure_reason(proc, answer.failure), observed_model=observed,
                          not_run=NotRun.NOT_STARTED)
    return facts.done(S.FAILED, failure_reason(proc, answer.failure), observed_model=observed,
                      transient=transient_failure([*answer.error_texts, answer.failure]))


def _retry_deadline(attempt: _Attempt, attempts: list[_Attempt], st: RunSettings) -> float | None:
    """When `attempt` failed for a moment and is not itself a retry: the deadline its one
    retry runs to (its own), provided the backoff leaves time for a try; else None."""
    if attempt.transient is None or attempt.deadline is None:
        return None
    if len(attempts) > 1 and attempts[-2].transient is not None and attempts[-2].record["model"] == \
            attempt.record["model"]:
        return None  # one retry per model
    if attempt.deadline - anyio.current_time() <= st.transient_backoff + MIN_RETRY_SECONDS:
        return None
    return attempt.deadline


def failure_reason(proc: ProcessResult, failure: str) -> str:
    """Say what happened: exit code, what the output said, the last stderr line."""
    code = proc.exit_code
    if code is None:
        head = "killed"
    elif code < 0:
        head = f"killed by signal {-code}"
    else:
        head = f"exit code {code}"
    parts = [f"{head}: {failure}" if failure else head]
    line = proc.last_stderr_line
    if line:
        parts.append(f"stderr: {line[:500]}")
    if proc.stdout.cut_lines:
        parts.append(f"{proc.stdout.cut_lines} stdout line(s) too long to read")
    return "; ".join(parts)


async def _version_check(exe: str, version_args: tuple[str, ...], paths: RunPaths, deadline: float,
                         jail: Confinement, st: RunSettings, facts: _Facts) -> tuple[S, str, NotRun] | str:
    """The first line `<exe> --version` printed when it answers with exit 0 ("" when it
    printed nothing); else (status, reason, why the reviewer never got to review)."""
    args = [exe, *version_args]
    shown = " ".join(args)
    own_limit = anyio.current_time() + st.version_timeout
    try:
        async with GuardedProcess(jail.argv(args), cwd=paths.workspace, env=jail.env,
                                  output=OutputHandling(cap=64 * 1024, masks=facts.masks),
                                  kill_grace=st.kill_grace) as running:
            with anyio.move_on_at(min(deadline, own_limit)):
                await running.wait()
    except OSError as exc:
        return (S.FAILED, f"version check failed: could not start {quote(exe)}: {exc.strerror or exc}",
                NotRun.NOT_STARTED)
    proc = running.result
    facts.masked += proc.masked
    if proc.timed_out:
        if deadline <= own_limit:
            # the attempt's own limit ran out first: that is the reviewer's timeout (G19)
            return (S.TIMEOUT, f"no answer within the time limit (timeout_seconds) during the version check `{shown}`",
                    NotRun.VERSION_CHECK)
        return (S.FAILED, f"version check failed: `{shown}` gave no answer within {st.version_timeout:g}s",
                NotRun.VERSION_CHECK)
    if proc.exit_code != 0:
        detail = proc.last_stderr_line or proc.last_stdout_line
        code = "killed" if proc.exit_code is None else f"exited with code {proc.exit_code}"
        return (S.FAILED, f"version check failed: `{shown}` {code}" + (f": {detail[:300]}" if detail else ""),
                NotRun.NOT_STARTED if proc.not_started else NotRun.VERSION_CHECK)
    answer = [line.strip() for line in (proc.stdout_tail + "\n" + proc.stderr_tail).splitlines() if line.strip()]
    return answer[0][:200] if answer else ""


async def _login_check(exe: str, preset: Preset, paths: RunPaths, deadline: float, jail: Confinement,
                       st: RunSettings, facts: _Facts) -> str | None:
    """The reason when the CLI's own login check says it is not logged in (codex would
    otherwise retry for a minute before saying so); None when it is, or cannot tell."""
    args = [exe, *(preset.login_args or ())]
    try:
        async with GuardedProcess(jail.argv(args), cwd=paths.workspace, env=jail.env,
                                  output=OutputHandling(cap=64 * 1024, masks=facts.masks),
                                  kill_grace=st.kill_grace) as running:
            with anyio.move_on_at(min(deadline, anyio.current_time() + st.version_timeout)):
                await running.wait()
    except OSError:
        return None  # it ran for its version: the run itself will say what is wrong
    proc = running.result
    if proc.timed_out or preset.logged_in(proc.exit_code, proc.stdout_tail, proc.stderr_tail) is not False:
        return None
    shown = " ".join([preset.name, *(preset.login_args or ())])
    said = proc.last_stderr_line or proc.last_stdout_line
    return f"authentication: not logged in: `{shown}` says {quote(short_message(said))}"


def model_label(model: str) -> str:
    return model or "(CLI default)"


def _status(st: RunSettings, name: str, status: S, detail: str) -> None:
    if st.progress is not None:
        st.progress.reviewer_status(name, status, detail)


def _notice(st: RunSettings, name: str, text: str) -> None:
    if st.progress is not None:
        st.progress.reviewer_notice(name, text)


__all__ = ["ReviewerJob", "ReviewerOutcome", "RunSettings", "command_line", "failure_reason", "run_reviewer",
           "run_reviewers", "run_settings"]
