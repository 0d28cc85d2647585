"""What `spar hook stop` answers an agent about to stop, from facts already read (pure).

Four answers: `allow` (the gate passes for the change handed over), `block` (send the
agent back: no round for this change, open findings, a record to clear), `person` (stop
and tell the person: the reviewers could not run, the series is at its cap, the loop is
at its bound, or the gate could not be checked). Each agent's own wording of them is
`hook_output`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from spar.judge.next_steps import triage_command

AGENTS = ("claude", "codex", "cursor")
DEFAULT_BOUND = 3  # consecutive sends-back for one change with no new round, then the person


@dataclass(frozen=True)
class OpenFinding:
    id: str  # ROUND/ID as the gate names it
    place: str
    claim: str


@dataclass
class StopFacts:
    """What the hook read: the gate over the series and how the change compares to it."""

    series: str
    commands: list[str]  # the exact commands that review this change
    round_for_change: bool  # a gated round reviewed exactly this tree
    state: str | None = None  # the gate's state over the series (None: no round yet)
    reasons: list[str] = field(default_factory=list)
    open: list[OpenFinding] = field(default_factory=list)
    could_not_run: list[str] = field(default_factory=list)  # "NAME: status: reason" of the latest round
    at_cap: str = ""  # why no new round can run, when the series is at its cap
    run_refused: str = ""  # no round for the change, and why `spar run` would refuse one (only the person can fix)
    demoted: list[str] = field(default_factory=list)  # proposed defects kept as notes for their link
    sends: int = 0  # sends-back for this change so far, this one not counted
    bound: int = DEFAULT_BOUND


@dataclass(frozen=True)
class StopVerdict:
    kind: str  # "allow", "block" or "person"
    text: str


def verdict_for(facts: StopFacts) -> StopVerdict:
    """The answer; never `block` once the loop is at its bound or the agent cannot fix it."""
    if facts.round_for_change and facts.state == "passed":
        return StopVerdict("allow", _with_demoted("spar: the review gate passed for this change.", facts))
    if facts.round_for_change and facts.could_not_run:
        return StopVerdict("person", "spar: the reviewers could not run, so the change is not reviewed:\n"
                           + "".join(f"- {line}\n" for line in facts.could_not_run)
                           + "Fix that (login, quota, sandbox), or waive the reviewer with spar waive, "
                           "then run the round again.")
    if not facts.round_for_change and facts.run_refused:
        return StopVerdict("person", f"spar: no review round covers this change, and spar run refuses one here: "
                           f"{facts.run_refused}\nFix that, then review the change:\n"
                           + "".join(f"  {line}\n" for line in facts.commands))
    if facts.at_cap:
        return StopVerdict("person", f"spar: the review series {facts.series} is at its cap: {facts.at_cap}\n"
                           "Raise it with spar extend, or decide yourself.")
    text = _send_back(facts)
    if facts.sends >= facts.bound:
        return StopVerdict("person", f"spar: the agent was sent back {facts.sends} times for this change with no "
                           f"new review round; handing over to you. Last word to it:\n{text}")
    return StopVerdict("block", text)


def _send_back(facts: StopFacts) -> str:
    run_them = "Run:\n" + "".join(f"  {line}\n" for line in facts.commands)
    if not facts.round_for_change:
        return ("spar: no finished review round covers this change (HEAD and the working tree). " + run_them
                + "then deal with what the gate lists and stop again.")
    if facts.open:
        listed = "".join(f"- {f.id} at {f.place}: {f.claim}\n" for f in facts.open)
        name, _, ident = facts.open[0].id.partition("/")
        command = triage_command(f"{facts.series}/{name}", ident)
        return _with_demoted(
            f"spar: the review gate is blocked by {len(facts.open)} open finding(s):\n{listed}"
            "Settle each. Fix it, commit the fix and record it, e.g.\n"
            f"  {command} --to fixed --commit HEAD --failed-before CHECK --passed-after CHECK\n"
            f"or, when it is wrong, {command} --to rejected --evidence TEXT "
            "(spar triage --help: every disposition). Then review the change again. " + run_them, facts)
    reasons = "".join(f"- {reason}\n" for reason in facts.reasons)
    return _with_demoted(f"spar: the review gate is blocked:\n{reasons}Deal with each, then " + run_them, facts)


def _with_demoted(text: str, facts: StopFacts) -> str:
    if not facts.demoted:
        return text
    return (text + "\nKept as notes for their link:\n"
            + "".join(f"- {line}\n" for line in facts.demoted))


def detect_agent(payload: dict[str, object]) -> str:
    """The agent whose hook input this is: Cursor names its version and spells the event
    `stop`; Codex names the turn; Claude Code otherwise."""
    if "cursor_version" in payload or payload.get("hook_event_name") == "stop":
        return "cursor"
    if "turn_id" in payload:
        return "codex"
    return "claude"


def hook_output(agent: str, verdict: StopVerdict) -> str:
    """The JSON line the agent reads on stdout (exit 0 always: any other exit, a crash or a
    timeout lets the stop through)."""
    if agent == "cursor":
        # Cursor's stop hook can only send a follow-up message; to stop, it sends none
        return json.dumps({"followup_message": verdict.text} if verdict.kind == "block" else {})
    if verdict.kind == "block":
        return json.dumps({"decision": "block", "reason": verdict.text})
    if verdict.kind == "person":
        return json.dumps({"continue": False, "stopReason": verdict.text})
    if facts_said(verdict):
        return json.dumps({"systemMessage": verdict.text})  # shown to the person; the stop goes through
    return "{}"


def facts_said(verdict: StopVerdict) -> bool:
    """Whether an `allow` has more to say than that the gate passed (demoted findings)."""
    return verdict.kind == "allow" and "\n" in verdict.text
