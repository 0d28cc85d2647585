"""What to do about a blocked gate, from its document (pure): the views end a blocked verdict
with these (`spar gate` on stdout, `spar report`'s page), as the stop hook does to the agent.

Each reason a round left unfinished or unreadable already says what to do in its own words;
these steps are for the two a person meets most: open findings, and required reviewers that
neither completed nor were waived.
"""

from __future__ import annotations

import shlex
from typing import Any


def triage_command(folder: str, finding: str) -> str:
    """`spar triage ROUND FINDING`, each quoted for a shell (the views and the stop hook
    print it to be pasted, by a person or an agent); the caller adds the disposition."""
    return f"spar triage {shlex.quote(folder)} {shlex.quote(finding)}"


def next_steps(doc: dict[str, Any]) -> list[str]:
    """The steps that settle what blocks `doc` (a review-gate/v1 document); none when it passed."""
    if doc.get("state") != "blocked":
        return []
    paths = {entry.get("name"): entry.get("path") for entry in doc.get("rounds") or [] if isinstance(entry, dict)}
    steps = []
    open_ids = [ident for ident in doc.get("open") or [] if isinstance(ident, str) and "/" in ident]
    if open_ids:
        name, _, finding = open_ids[0].partition("/")
        command = triage_command(str(paths.get(name) or name), finding)
        steps.append(
            f"settle each of the {len(open_ids)} open finding(s): fix a defect, commit, and record the fix "
            f"({command} --to fixed --commit REV --failed-before CHECK --passed-after CHECK), or give it the "
            f"disposition it has ({command} --to rejected --evidence TEXT when it is wrong, --to answered "
            "--user-quote TEXT for a requirement-question; spar triage --help lists them all); then review "
            "the change again and run spar gate again")
    for stage in doc.get("stages") or []:
        if not isinstance(stage, dict):
            continue
        done = set(stage.get("completed") or []) | set(stage.get("waived") or [])
        missing = [name for name in stage.get("required_reviewers") or [] if name not in done]
        if missing:
            folder = shlex.quote(str(stage.get("path") or stage.get("round")))
            steps.append(
                f"the {stage.get('stage')} round {stage.get('round')} lacks reviewer(s) {', '.join(missing)}: "
                f"run it again for them once they can run (spar run --reviewers {','.join(missing)} with the "
                f"same input is a rerun, not a new round), or waive each with the user's own words (spar waive "
                f"{folder} --reviewer NAME --user-quote TEXT)")
    return steps
