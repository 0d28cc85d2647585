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

import json
import os
import sys
from pathlib import Path
from typing import Any

from spar import git
from spar.argparsing import Parser, command_parser
from spar.config.model import DEFAULT_MAX_COPY_BYTES
from spar.errors import EXIT_OK, Refused, SparError, UsageError
from spar.gating import GateList, build_gate, series_gate_list
from spar.judge import stop
from spar.judge.gate import HeadCheck
from spar.records import atomic, paths, readers
from spar.records.model import ReviewerStatus
from spar.series import project_caps, read_series, stage_caps

INPUT_LIMIT = 4 * 1024 * 1024  # the hook input names a session and its last message: bounded
NO_SENDS = 0
STATE_FILE = ".spar-hook.json"  # in the series folder: the sends-back for the current change
CAN_NOT_RUN = (ReviewerStatus.UNAVAILABLE,)

EPILOG = f"""\
Answers (stdout, exit 0 always):
  allow   the gate passes over the series and its latest round reviewed exactly this
          change (Claude Code, Codex: {{}}; Cursor: {{}})
  block   send the agent back: no round for this change (with the commands to run),
          open findings (each with its place and claim, and what settles it), or a
          record to clear ({{"decision": "block", "reason": ...}}; Cursor:
          {{"followup_message": ...}})
  person  stop and tell the person: the reviewers could not run (unavailable: quota,
          login, network, a required sandbox missing), the series is at its cap, the
          agent was sent back --bound times for one change with no new round, or the
          gate could not be checked ({{"continue": false, "stopReason": ...}}; Cursor
          cannot show it: {{}} and the words on stderr)
The count of sends-back is kept in SERIES/{STATE_FILE}."""


def _parser() -> Parser:
    p = command_parser("hook", "The review gate as an agent's stop hook (reads the hook input on stdin).", EPILOG)
    p.add_argument("event", choices=("stop",), help="the hook event (stop)")
    p.add_argument("--agent", choices=stop.AGENTS, help="the agent's dialect (default: told by the hook input)")
    p.add_argument("--series", default="reviews", metavar="DIR",
                   help="the series folder, relative to the repository's top (default: reviews)")
    p.add_argument("--bound", type=int, default=stop.DEFAULT_BOUND, metavar="N",
                   help=f"sends-back for one change with no new round before the person is told "
                        f"(default {stop.DEFAULT_BOUND})")
    return p


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    if args.bound < 1:
        raise UsageError("--bound must be 1 or more")
    payload: dict[str, Any] = {}
    try:
        payload = _read_input()
        verdict = _judge(payload, args.series, args.bound)
    except (SparError, OSError, ValueError, git.GitError) as exc:
        text = exc.message if isinstance(exc, SparError) else str(exc)
        verdict = stop.StopVerdict("person", f"spar: the review gate could not be checked: {text}")
    agent = args.agent or stop.detect_agent(payload)
    print(stop.render(agent, verdict), flush=True)
    if verdict.kind == "person":
        print(verdict.text, file=sys.stderr)
    return EXIT_OK


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


def _judge(payload: dict[str, Any], series_arg: str, bound: int) -> stop.StopVerdict:
    cwd = payload.get("cwd")
    repo = git.repo_root(cwd if isinstance(cwd, str) and cwd else os.getcwd())
    if repo is None:
        raise Refused("the agent's folder is not inside a git repository")
    series = Path(series_arg) if os.path.isabs(series_arg) else repo / series_arg
    commit, tree = _current_change(repo)
    listed = series_gate_list(series) if series.is_dir() else GateList([], [], [])
    facts = _facts(repo, series, listed, commit, tree)
    facts.bound = bound
    key = {"tree": tree, "rounds": sorted(os.path.basename(r) for r in listed.rounds)}
    facts.sends = _sends(series, key)
    verdict = stop.decide(facts)
    _remember(repo, series, key, facts.sends + 1 if verdict.kind == "block" else 0)
    return verdict


def _current_change(repo: Path) -> tuple[str, str]:
    """(commit, tree) of what the agent hands over: HEAD when the working tree is clean,
    else the working tree as `spar run --worktree` makes it a commit."""
    head = git.head_commit(repo)
    changes = git.uncommitted(repo)
    if changes.modified or changes.untracked:
        made = git.snapshot_worktree(repo, head, DEFAULT_MAX_COPY_BYTES)
        return made.commit, made.tree
    return head, git.tree_of(repo, head)


def _facts(repo: Path, series: Path, listed: GateList, commit: str, tree: str) -> stop.StopFacts:
    shown = os.path.relpath(series, repo) if series.is_relative_to(repo) else str(series)
    commands = [f"spar run --stage code --worktree --out {_next_round(series, shown)}",
                f"spar gate --series {shown} --out {shown}/gate.json"]
    if not listed.rounds:
        return stop.StopFacts(shown, commands, round_for_change=False)
    doc = build_gate(listed.rounds, None, head=HeadCheck(commit, "the working tree", expected_tree=tree))
    reviewed = doc["head"]
    for_change = isinstance(reviewed, str) and git.tree_of(repo, reviewed) == tree
    latest = _latest_rounds(doc)
    return stop.StopFacts(shown, commands, for_change, state=doc["state"], reasons=doc["reasons"],
                          open=_open_findings(series, doc["open"]), could_not_run=_could_not_run(latest),
                          at_cap=_at_cap(series), demoted=_demoted(latest))


def _next_round(series: Path, shown: str) -> str:
    n = 1 + sum(1 for _ in readers.series_round_names(series)) if series.is_dir() else 1
    while (series / f"code-{n}").exists():
        n += 1
    return f"{shown}/code-{n}"


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


def _could_not_run(folders: list[Path]) -> list[str]:
    """Reviewers of the latest round (and its reruns) that never completed because they
    could not run; none when one of its reruns completed them."""
    last: dict[str, str] = {}
    for folder in folders:
        for entry in readers.read_round(folder)["reviewers"]:
            status, reason = entry["status"], entry.get("reason", "")
            if status == ReviewerStatus.COMPLETED:
                last[entry["name"]] = ""
            elif status in CAN_NOT_RUN or "sandbox" in reason:
                last.setdefault(entry["name"], f"{entry['name']}: {status}: {reason}")
    return [line for line in last.values() if line]


def _demoted(folders: list[Path]) -> list[str]:
    out = []
    for folder in folders:
        for finding in readers.read_findings(folder):
            if finding["class_reason"].startswith("rule 6"):
                out.append(f"{folder.name}/{finding['id']} (link {json.dumps(finding.get('claimed_link', ''))})")
    return out


def _at_cap(series: Path) -> str:
    """Why the code stage can take no new round, or ""."""
    rounds = read_series(series)
    caps, _ = project_caps(rounds)
    for cap in stage_caps(rounds, caps, readers.read_extensions(series)):
        if cap.stage == "code" and cap.remaining <= 0:
            return f"{len(cap.counted)} of {cap.cap} code rounds used"
    return ""


def _sends(series: Path, key: dict[str, Any]) -> int:
    """Sends-back so far for the change `key` names (none when the state is of another
    change, after a new round, or unreadable)."""
    try:
        state = json.loads((series / STATE_FILE).read_bytes()[:65536])
    except (OSError, ValueError):
        state = None
    sends = state.get("sends") if isinstance(state, dict) and state.get("key") == key else None
    return sends if isinstance(sends, int) and sends > 0 else NO_SENDS


def _remember(repo: Path, series: Path, key: dict[str, Any], sends: int) -> None:
    if not series.is_dir():
        paths.check_record_path(series, kind="--series", directory=True)
        series.mkdir(parents=True, exist_ok=True)
    link = paths.link_below(repo, series / STATE_FILE)
    if link is not None:
        raise Refused(f"{link} is a symbolic link inside the repository; the hook writes no file through it")
    atomic.write_text(series / STATE_FILE, atomic.dumps({"key": key, "sends": sends}), unique_tmp=True)
