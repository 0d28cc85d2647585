"""`spar hook stop`: the review gate in a coding agent's loop (Claude Code's and Codex's
`Stop` hook, Cursor's `stop` hook).

Decides from the records alone (git and the series folder; no reviewer is started): is
there a finished round for the change the agent is about to hand over (HEAD and the
working tree, as `spar run --worktree` sees it), and does the gate pass over the series
(the rounds `spar gate --series` and `spar report` gate)? It always exits 0 and answers
in the agent's JSON on stdout: any other exit, a crash or a timeout would let the stop
through without a verdict, so its own failure is an answer too (the person is told the
gate could not be checked).
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import stat
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from spar import git
from spar.argparsing import Parser, command_parser
from spar.config.load import load_config
from spar.config.model import DEFAULT_CAPS, DEFAULT_MAX_COPY_BYTES, AppliedConfig
from spar.errors import EXIT_OK, Refused, SparError, UsageError
from spar.gate_cache import RoundCache, Stats, file_stat, round_stats
from spar.gating import GateList, build_gate, real_paths, series_gate_list
from spar.judge import stop
from spar.judge.answer import parse_answer
from spar.judge.caps import stage_cap
from spar.records import atomic, lock, paths, readers
from spar.records.model import ReviewerStatus
from spar.round.sandboxing import choose_sandbox

INPUT_LIMIT = 4 * 1024 * 1024  # the hook input names a session and its last message: bounded
NO_SENDS = 0
OPEN_SHOWN = 30  # open findings listed to the agent; the gate file has them all
STATE_LIMIT = 4 * 1024 * 1024
SERIES_KEYS = {"head", "base", "state", "reasons", "open", "could_not_run", "at_cap", "demoted", "count", "rounds"}
DEADLINE = 40.0  # seconds: under the 60 s `spar init --agent` gives the hook, so the hook answers first
STATE_FILE = ".spar-hook.json"  # in the series folder: the sends-back for the current change
CAN_NOT_RUN = (ReviewerStatus.UNAVAILABLE,)  # rounds written before `not_run`: the status alone tells

EPILOG = f"""\
Answers (stdout, exit 0 always):
  allow   the gate passes over the series and its latest round reviewed exactly this
          change (Claude Code, Codex: {{}}; Cursor: {{}})
  block   send the agent back: no round for this change (with the commands to run),
          open findings (each with its place and claim, and what settles it), or a
          record to clear ({{"decision": "block", "reason": ...}}; Cursor:
          {{"followup_message": ...}})
  person  stop and tell the person: the reviewers never got to review (their
          not_run in round.json: quota, login, network, a program missing or that
          cannot start, no sandbox, a host the egress allowlist refused), spar run
          would refuse the round (a required sandbox missing), the series is at its
          cap, the agent was sent back --bound times for one change with no new
          round, or the gate could not be checked ({{"continue": false,
          "stopReason": ...}}; Cursor cannot show it: {{}} and the words on stderr)
The count of sends-back is kept in SERIES/{STATE_FILE}."""


def _parser() -> Parser:
    p = command_parser("hook", "The review gate as an agent's stop hook (reads the hook input on stdin).", EPILOG)
    p.add_argument("event", choices=("stop", "subagent-stop"),
                   help="stop (the agent is about to stop), subagent-stop (Claude Code: a native reviewer's "
                        "answer checked against the one answer rule)")
    p.add_argument("--agent", choices=stop.AGENTS, help="the agent's dialect (default: told by the hook input)")
    p.add_argument("--series", default="reviews", metavar="DIR",
                   help="the series folder, relative to the repository's top (default: reviews)")
    p.add_argument("--dry-run", action="store_true", help="answer, but keep no state (spar doctor's check)")
    p.add_argument("--deadline", type=float, default=DEADLINE, metavar="SECONDS",
                   help=f"answer \"could not be checked\" after this long (default {DEADLINE:g}; keep it under "
                        "the agent's hook timeout, past which the agent lets the stop through)")
    p.add_argument("--bound", type=int, default=stop.DEFAULT_BOUND, metavar="N",
                   help=f"sends-back for one change with no new round before the person is told "
                        f"(default {stop.DEFAULT_BOUND})")
    return p


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    if args.bound < 1:
        raise UsageError("--bound must be 1 or more")
    if not args.deadline > 0:
        raise UsageError("--deadline must be more than 0 seconds")
    payload: dict[str, Any] = {}
    remember: Callable[[], None] | None = None
    previous = signal.signal(signal.SIGALRM, _past_deadline)
    signal.setitimer(signal.ITIMER_REAL, args.deadline)
    try:
        payload = _read_input()
        ended = _ended_otherwise(payload)
        if args.event == "subagent-stop":
            verdict = _native_answer(payload)
        elif ended is not None:
            verdict = ended
        else:
            verdict, remember = _judge(payload, args.series, args.bound)
    except _Deadline:
        verdict = stop.StopVerdict("person", f"spar: the review gate could not be checked within {args.deadline:g} s "
                                   "(a hung git or file system?); run spar gate --series yourself")
    except Exception as exc:  # whatever went wrong, the agent gets an answer: a crash would let it stop
        text = exc.message if isinstance(exc, SparError) else f"{type(exc).__name__}: {exc}"
        verdict = stop.StopVerdict("person", f"spar: the review gate could not be checked: {text}")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    if remember is not None and not args.dry_run:
        try:
            remember()
        except (SparError, OSError) as exc:
            text = exc.message if isinstance(exc, SparError) else str(exc)
            verdict = stop.StopVerdict("person", f"spar: the hook could not keep its count of sends-back: {text}")
    agent = args.agent or stop.detect_agent(payload)
    print(stop.hook_output(agent, verdict), flush=True)
    if verdict.kind == "person":
        print(verdict.text, file=sys.stderr)
    return EXIT_OK


class _Deadline(Exception):
    """The hook's own time is up (raised by SIGALRM; a git it waits on is ended)."""


def _past_deadline(signum: int, frame: object) -> None:
    raise _Deadline


def _read_input() -> dict[str, Any]:
    raw = sys.stdin.buffer.read(INPUT_LIMIT + 1)
    if len(raw) > INPUT_LIMIT:
        raise ValueError(f"the hook input is over {INPUT_LIMIT} bytes")
    if not raw.strip():
        return {}
    value = json.loads(raw)
    if not isinstance(value, dict):
        raise ValueError("the hook input is not a JSON object")
    return value


def _ended_otherwise(payload: dict[str, Any]) -> stop.StopVerdict | None:
    """Cursor runs its stop hook also when the person aborted the loop or it ended on an
    error (its `status`): the agent is not handing work over, so it is never sent back; the
    words go to stderr. None for an agent that is about to hand its work over."""
    status = payload.get("status")
    if status == "aborted":
        return stop.StopVerdict("allow", "")
    if status == "error":
        return stop.StopVerdict("person", "spar: the agent's loop ended on an error; the review gate was not "
                                "checked: run spar gate --series yourself before calling the work done")
    return None


def _agent_folder(payload: dict[str, Any]) -> str:
    """Where the agent works: Claude Code and Codex name it `cwd`; Cursor names its
    `workspace_roots` and runs a project's hook in the root that holds it (so the folder the
    hook runs in, when it is in one of them; else the first: a user-level hook)."""
    cwd = payload.get("cwd")
    if isinstance(cwd, str) and cwd:
        return cwd
    roots = [r for r in payload.get("workspace_roots") or [] if isinstance(r, str) and r]
    here = os.getcwd()
    if not roots or any(_inside(here, root) for root in roots):
        return here
    return roots[0]


def _inside(path: str, root: str) -> bool:
    return os.path.commonpath([os.path.realpath(path), os.path.realpath(root)]) == os.path.realpath(root)


def _judge(payload: dict[str, Any], series_arg: str, bound: int) -> tuple[stop.StopVerdict, Callable[[], None]]:
    """The verdict, and the write of what it keeps (made after the deadline is off)."""
    repo = git.repo_root(_agent_folder(payload))
    if repo is None:
        raise Refused("the agent's folder is not inside a git repository")
    series = Path(series_arg) if os.path.isabs(series_arg) else repo / series_arg
    config = _quiet_config(repo)
    tree = _current_tree(repo, config.max_copy_bytes if config is not None else DEFAULT_MAX_COPY_BYTES)
    remembered = _read_state(series)
    # the series as it is on disk: the judgment kept from the last call is reused while it is the same
    stats = _series_stats(series)
    fingerprint = _fingerprint(series, stats)
    seen = remembered.get("series") if fingerprint and remembered.get("fingerprint") == fingerprint else None
    cache = None
    if not isinstance(seen, dict) or set(seen) != SERIES_KEYS:
        seen, cache = _judge_kept(series, stats or {})
    shown = os.path.relpath(series, repo) if series.is_relative_to(repo) else str(series)
    reviewed = seen["head"]
    # the next round reviews the whole change from the series' base, committed parts included
    base = f" --base {seen['base']}" if isinstance(seen["base"], str) and seen["base"] else ""
    facts = stop.StopFacts(
        shown, [f"spar run --stage code --worktree{base} --out {shown}/{_next_round(series, seen['count'])}",
                f"spar gate --series {shown} --out {shown}/gate.json"],
        round_for_change=isinstance(reviewed, str) and _tree_or_none(repo, reviewed) == tree,
        state=seen["state"], reasons=seen["reasons"], open=[stop.OpenFinding(*row) for row in seen["open"]],
        could_not_run=seen["could_not_run"], at_cap=seen["at_cap"], demoted=seen["demoted"], bound=bound)
    if not facts.round_for_change and config is not None:
        facts.run_refused = _run_refusal(config.sandbox)
    key = {"tree": tree, "rounds": seen["rounds"]}
    sends = remembered.get("sends") if remembered.get("key") == key else None
    facts.sends = sends if isinstance(sends, int) and sends > 0 else NO_SENDS
    verdict = stop.verdict_for(facts)
    state = {"key": key, "sends": facts.sends + 1 if verdict.kind == "block" else NO_SENDS,
             "fingerprint": fingerprint, "series": seen}
    return verdict, lambda: _remember(repo, series, state, cache)


def _quiet_config(repo: Path) -> AppliedConfig | None:
    """The configuration `spar run` would apply here; None when it does not load (the agent
    sees why when it runs the round)."""
    try:
        return load_config(repo, env=os.environ)
    except (SparError, OSError):
        return None


def _current_tree(repo: Path, max_copy_bytes: int) -> str:
    """The tree of what the agent hands over: HEAD's when the working tree is clean, else
    the working tree's as `spar run --worktree` makes it a commit (with the same cap per
    file: a file over it is a note in both)."""
    head = git.head_commit(repo)
    changes = git.uncommitted(repo)
    if changes.modified or changes.untracked:
        return git.snapshot_worktree(repo, head, max_copy_bytes).tree
    return git.tree_of(repo, head)


def _judge_kept(series: Path, stats: dict[str, Stats]) -> tuple[dict[str, Any], RoundCache]:
    """The series judged with the rounds kept by the last call that judged it; judged
    from the records alone when what was kept does not hold up (a damaged file)."""
    cache = RoundCache.load(series, stats)
    try:
        return _judge_series(series, cache), cache
    except _Deadline:
        raise
    except Exception:  # whatever the kept file held, the records decide
        cache = RoundCache(series, {}, stats)
        return _judge_series(series, cache), cache


def _judge_series(series: Path, cache: RoundCache) -> dict[str, Any]:
    """What the hook needs of the gate over the series (G29's list), as plain JSON: the
    latest round's head, the gate's state and reasons (its head is the hook's to check),
    the open findings with place and claim, the reviewers that could not run, the cap."""
    listed = series_gate_list(series, cache.known_round) if series.is_dir() else GateList([], [], [])
    names = sorted(os.path.basename(r) for r in listed.rounds)
    seen: dict[str, Any] = {"head": None, "base": None, "state": None, "reasons": [], "open": [], "could_not_run": [],
                            "at_cap": "", "demoted": [], "count": len(names),
                            "rounds": hashlib.sha256("\0".join(names).encode()).hexdigest()}
    if not listed.rounds:
        return seen
    doc = build_gate(listed.rounds, None, check_head=False, read=cache.read_listed, real_args=real_paths(listed.rounds))
    latest = _latest_rounds(doc)
    seen.update(head=doc["head"], base=doc.get("base"), state=doc["state"], reasons=doc["reasons"],
                open=[[f.id, f.place, f.claim] for f in _open_findings(series, doc["open"][:OPEN_SHOWN])],
                could_not_run=_could_not_run(latest, cache), demoted=doc["demoted"][-OPEN_SHOWN:],
                at_cap=_at_cap(series, doc, latest) if doc["state"] != "passed" else "")
    if len(doc["open"]) > OPEN_SHOWN:
        seen["reasons"] = [f"{len(doc['open']) - OPEN_SHOWN} more open findings: spar gate --series {series}"]
    return seen


def _series_stats(series: Path) -> dict[str, Stats] | None:
    """Each round folder's `round_stats`, by name (taken once: the fingerprint and the kept
    rounds read them both); None when there is no series folder."""
    try:
        with os.scandir(series) as entries:
            folders = sorted(e.name for e in entries if e.is_dir(follow_symlinks=False))
    except FileNotFoundError:
        return None
    return {name: round_stats(os.path.join(series, name)) for name in folders}


def _fingerprint(series: Path, stats: dict[str, Stats] | None) -> str:
    """The series as the stats of its rounds' records and folders show it (a record replaced,
    appended, created or removed, a *.tmp file a killed write left, in a round's folder or a
    reviewer's) and its extensions': any write to the series changes it. "" while a write
    holds the series lock: a *.tmp file is then no leftover, and the lock's end changes no
    stat, so that judgment is never reused."""
    if stats is None or lock.is_locked(series):
        return ""
    digest = hashlib.sha256(repr(file_stat(os.path.join(series, readers.EXTENSIONS_FILE))).encode())
    for name, seen in stats.items():
        digest.update(f"{name}\0{seen}\0".encode())
    return digest.hexdigest()


def _tree_or_none(repo: Path, commit: str) -> str | None:
    """The commit's tree; None when this repository does not have it (another repository's round)."""
    try:
        return git.tree_of(repo, commit)
    except git.GitError:
        return None


def _next_round(series: Path, count: int) -> str:
    n = count + 1
    while (series / f"code-{n}").exists():
        n += 1
    return f"code-{n}"


def _latest_rounds(doc: dict[str, Any]) -> list[Path]:
    """The folders of the gated rounds that reviewed the gate's head (the latest round and
    its reruns)."""
    return [Path(entry["path"]) for entry in doc["rounds"] if entry.get("head") == doc["head"]]


def _open_findings(series: Path, open_ids: list[str]) -> list[stop.OpenFinding]:
    by_round: dict[str, dict[str, Any]] = {}
    out = []
    for ident in open_ids:
        name, _, fid = ident.partition("/")
        if name not in by_round:
            try:
                by_round[name] = {f["id"]: f for f in readers.read_findings(series / name)}
            except (SparError, OSError):
                by_round[name] = {}
        found = by_round[name].get(fid, {})
        out.append(stop.OpenFinding(ident, str(found.get("location", "?")), str(found.get("claim", "?"))))
    return out


def _could_not_run(folders: list[Path], cache: RoundCache) -> list[str]:
    """Reviewers of the latest round (and its reruns) that never completed because they
    could not run (their entry's `not_run`, set by the runner); none when one of its reruns
    completed them."""
    last: dict[str, str] = {}
    for folder in folders:
        for entry in (cache.known_round(folder) or readers.read_round(folder))["reviewers"]:
            status, reason = entry["status"], entry.get("reason", "")
            not_run = entry.get("not_run", status if status in CAN_NOT_RUN else None)
            if status == ReviewerStatus.COMPLETED:
                last[entry["name"]] = ""
            elif not_run:
                last.setdefault(entry["name"], f"{entry['name']}: {status}: {reason}")
    return [line for line in last.values() if line]


def _run_refusal(mode: str) -> str:
    """Why `spar run` would refuse the round here before writing any, for a reason only the
    person can change: `[sandbox] mode = "required"` and no sandbox (the same choice `spar
    run` makes). "" when it would not refuse for that."""
    if mode != "required":  # only "required" refuses: auto and off start no probe here
        return ""
    try:
        choose_sandbox(mode, os.environ.get("PATH"))
    except Refused as exc:
        return exc.message
    except OSError:
        return ""
    return ""


def _at_cap(series: Path, doc: dict[str, Any], latest: list[Path]) -> str:
    """Why the code stage can take no new round, or "": its counted rounds (the gate's
    rounds[]) against the caps the latest round applied plus the series' extensions."""
    caps = dict(DEFAULT_CAPS)
    applied = (readers.read_round(latest[-1]).get("config") or {}).get("caps") if latest else None
    if isinstance(applied, dict) and all(isinstance(applied.get(k), int) for k in DEFAULT_CAPS):
        caps = {k: applied[k] for k in DEFAULT_CAPS}
    cap, _, _ = stage_cap("code", caps, readers.read_extensions(series))
    counted = [r for r in doc["rounds"] if r.get("stage") == "code" and r.get("counted") is True
               and not r.get("dry_run")]
    return f"{len(counted)} of {cap} code rounds used" if len(counted) >= cap else ""


def _read_state(series: Path) -> dict[str, Any]:
    """What the last call kept (the sends-back, the series' judgment); {} when unreadable."""
    try:
        state = json.loads((series / STATE_FILE).read_bytes()[:STATE_LIMIT])
    except (OSError, ValueError):
        return {}
    return state if isinstance(state, dict) else {}


def _remember(repo: Path, series: Path, state: dict[str, Any], cache: RoundCache | None) -> None:
    if not series.is_dir():
        paths.check_record_path(series, kind="--series", directory=True)
        series.mkdir(parents=True, exist_ok=True)
    paths.check_no_link_below(repo, series / STATE_FILE, writer="the hook")
    atomic.write_text(series / STATE_FILE, atomic.dumps(state), unique_tmp=True)
    if cache is not None and cache.stale:
        try:
            cache.write(repo)
        except (SparError, OSError) as exc:  # only the next stop's speed depends on it
            text = exc.message if isinstance(exc, SparError) else str(exc)
            print(f"spar: the hook could not keep the rounds it read: {text}", file=sys.stderr)


NATIVE_MARK = b"# Spar review prompt for reviewer "  # the first line of a native reviewer's prompt.md
TRANSCRIPT_LIMIT = 8 * 1024 * 1024


def _native_answer(payload: dict[str, Any]) -> stop.StopVerdict:
    """A subagent that was given a native reviewer's prompt is sent back while its answer
    breaks the one answer rule; any other subagent, and a good answer, stop."""
    transcript = payload.get("agent_transcript_path") or payload.get("transcript_path")
    text = _bounded_read(transcript) if isinstance(transcript, str) and transcript else b""
    if NATIVE_MARK not in text:
        return stop.StopVerdict("allow", "")
    message = payload.get("last_assistant_message")
    if not isinstance(message, str):
        message = _last_assistant_text(text)
    if message is None:
        return stop.StopVerdict("allow", "")
    _, problem = parse_answer(message, "the answer")
    if problem is None:
        return stop.StopVerdict("allow", "")
    return stop.StopVerdict("block", f"spar: your answer as Spar's reviewer breaks the one answer rule: {problem}. "
                            "Answer again with only the one JSON object the packet's \"How to report\" section "
                            "describes: nothing before or after it, no code fence.")


def _bounded_read(path: str) -> bytes:
    """A regular file's first TRANSCRIPT_LIMIT bytes (a FIFO never blocks: not read)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return b""
        with os.fdopen(os.dup(fd), "rb") as fh:
            return fh.read(TRANSCRIPT_LIMIT)
    finally:
        os.close(fd)


def _last_assistant_text(transcript: bytes) -> str | None:
    """The text of the transcript's last assistant message (Claude Code's JSONL)."""
    found = None
    for line in transcript.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        message = entry.get("message") if isinstance(entry, dict) and entry.get("type") == "assistant" else None
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list):
            texts = [part["text"] for part in content
                     if isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str)]
            if texts:
                found = "".join(texts)
    return found
