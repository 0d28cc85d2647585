"""`summary.md`: the round for people, rendered from records already read (pure), and the
lines `spar run` ends with.

Standpoint parts appear only in rounds with standpoints, so a round without
them renders exactly as before standpoints existed; likewise the verdicts of a
verification (verifications.json) appear only in a verified round, which then
lists confirmed findings first and refuted ones last (docs/records.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from spar.judge.coverage import shortened
from spar.judge.dispositions import standing
from spar.judge.repeats import group_order
from spar.judge.verdicts import Verdict, rank, rank_of, unverified, verdicts
from spar.records import usage
from spar.records.model import Finding, LedgerLine, ReviewerStatus, RoundRecord, VerificationsRecord, WaiverLine
from spar.records.repeat_checks import RepeatChecksRecord
from spar.textsafe import terminal_safe

CLASS_ORDER = ("defect", "requirement-question", "hardening", "note")


def _cell(value: object) -> str:
    """One markdown table cell: no line breaks, `|` escaped, empty shown as -."""
    if value is None or value == "":
        return "-"
    text = str(value).replace("|", "\\|")
    return " ".join(text.split("\n")).replace("\r", " ")


def _code(value: object) -> str:
    if value is None or value == "":
        return "-"
    text = str(value)
    ticks = "``" if "`" in text else "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def class_counts(findings: list[Finding]) -> dict[str, int]:
    counts = dict.fromkeys(CLASS_ORDER, 0)
    for f in findings:
        cls = f.get("class")
        if cls in counts:
            counts[cls] += 1
    return counts


def counts_text(findings: list[Finding]) -> str:
    counts = class_counts(findings)
    return ", ".join(f"{counts[c]} {c}" for c in CLASS_ORDER)


def _disposition(finding: Finding, standing: dict[str, LedgerLine]) -> str:
    line = standing.get(finding.get("id"))
    if not line:
        return "-"
    text = str(line.get("disposition", "-"))
    if line.get("auto"):
        text += " (auto)"
    return text


def _files(count: int, kind: str) -> str:
    return f"{count} {kind} file{'' if count == 1 else 's'}"


def uncommitted_text(rj: RoundRecord) -> str | None:
    """What a round says of the working tree beyond HEAD: the changes it reviews as a commit
    Spar made (--worktree), or those it does not review; None when there is nothing to say."""
    counts = rj.get("uncommitted")
    if rj.get("head_source") == "worktree":
        held = "" if not counts else (
            f" ({_files(counts['modified'], 'changed tracked')}, {_files(counts['untracked'], 'untracked')})")
        return f"the head {rj.get('head', '')} is the working tree{held}, made a commit on {rj.get('head_parent', '?')}"
    if not counts or not (counts["modified"] or counts["untracked"]):
        return None
    text = (f"the working tree has {_files(counts['modified'], 'changed tracked')} and "
            f"{_files(counts['untracked'], 'untracked')} that this round does not review: it reviews "
            "the commit; commit them, or run spar run --worktree")
    own = counts.get("spar_files") or []
    if own:  # after `spar init` these are often all there is: say so, and what to do
        text += (f"; of them, Spar's set-up files (where spar init writes): {shortened([_code(p) for p in own])}; "
                 "commit them too (Spar reads them from the working tree either way)")
    return text


def closing_lines(rj: RoundRecord, out: Path, findings: list[Finding]) -> list[str]:
    """What `spar run` says last: the round's warnings, what the host does with a native
    reviewer, and the counts with each reviewer that did not complete."""
    lines = [f"spar: warning: {terminal_safe(warning)}" for warning in rj["warnings"]]
    for entry in rj["reviewers"]:
        if entry["status"] == ReviewerStatus.AWAITING_RECORD:
            folder = out / entry["name"]
            lines.append(f"spar: {entry['name']}: give {folder / 'prompt.md'} to the host's subagent, save its "
                         f"answer and run: spar record {out} --reviewer {entry['name']} --result "
                         f"{folder / 'result.json'}")
    not_completed = [e for e in rj["reviewers"] if e["status"] != ReviewerStatus.COMPLETED]
    line = f"spar: round {out} recorded: {counts_text(findings)}"
    if not_completed:
        line += "; not completed: " + ", ".join(f"{e['name']} ({e['status']})" for e in not_completed)
    return lines + [line]


def coverage_text(rj: RoundRecord) -> str | None:
    """The round's changed files that no completed reviewer saw, in one line; None when not recorded."""
    unseen, total = rj.get("unseen"), rj.get("changed_files")
    if unseen is None or total is None:
        return None
    if not unseen:
        return f"each of the {total} changed files was seen by a completed reviewer"
    return (f"{len(unseen)} of {total} changed files were seen by no reviewer: "
            + shortened([_code(path) for path in unseen]))


def _header(rj: RoundRecord) -> list[str]:
    out = [
        f"# Review round {rj.get('name', '')}",
        "",
        f"- Stage: `{rj.get('stage', '')}`",
        f"- Base: `{rj.get('base', '')}`",
        f"- Head: `{rj.get('head', '')}`",
        f"- Counted: {'yes' if rj.get('counted') else 'no'}",
        f"- Started: {rj.get('started_at', '-')}",
    ]
    if rj.get("recorded_at"):
        out.append(f"- Recorded: {rj['recorded_at']}")
    finished = rj.get("finished_at") or "not yet (a reviewer awaits a record)"
    out.append(f"- Finished: {finished}")
    uncommitted = uncommitted_text(rj)
    if uncommitted:
        out.append(f"- Working tree: {uncommitted}")
    out += _packet_line(rj)
    coverage = coverage_text(rj)
    if coverage:
        out.append(f"- Coverage: {coverage}")
    for w in rj.get("warnings") or []:
        out.append(f"- Warning: {w}")
    return out + [""]


def _packet_line(rj: RoundRecord) -> list[str]:
    """Only when the project asked for incremental packets: what the round got, and why not."""
    kind = rj.get("packet")
    if not kind or kind["configured"] == "full":
        return []
    if kind["kind"] == "incremental":
        return [f"- Packet: incremental (the changes since round {kind['since_round']}; the whole diff, "
                f"{kind['change_diff_bytes']} bytes, in workspace/change.diff)"]
    return [f"- Packet: full, not incremental: {kind['reason']}"]


# the model column of a reviewer whose configuration sets none, where "(default)" is not true
_UNSET_MODEL = {"command": "(set by the command)", "native": "(the host's)"}


def _reviewers(rj: RoundRecord) -> list[str]:
    out = [
        "## Reviewers",
        "",
        "| reviewer | preset | status | model | observed model | attempts | time | tokens | cost | verdict "
        "| findings | reason |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rj.get("reviewers", []):
        reason = r.get("reason") or ""
        if r.get("resets"):
            reason = f"{reason} (resets {r['resets']})" if reason else f"resets {r['resets']}"
        attempts = r.get("attempts") or []
        spent = usage.of_reviewer(r)  # over every attempt; a reviewer that never ran shows -
        tokens, cost = usage.tokens_text(spent), usage.cost_text(spent["cost_usd"])
        if r.get("status") == ReviewerStatus.UNAVAILABLE and not usage.spent_anything(spent):
            tokens = cost = "not measured"  # a CLI that could not start work reports zeros: nothing ran
        out.append(
            "| " + " | ".join([
                _cell(r.get("name")), _cell(r.get("preset")), _cell(r.get("status")),
                _cell(r.get("model") or _UNSET_MODEL.get(str(r.get("preset")), "(default)")),
                _cell(r.get("observed_model") or "unknown"),
                _cell(len(attempts)), _cell(usage.duration_text(spent["duration_seconds"])),
                _cell(tokens), _cell(cost), _cell(r.get("verdict")),
                _cell(r.get("finding_count") if r.get("status") == ReviewerStatus.COMPLETED else None), _cell(reason),
            ]) + " |"
        )
    out.append("")
    for r in rj.get("reviewers", []):
        for w in r.get("warnings") or []:
            if isinstance(w, dict):
                out.append(f"- `{r.get('name')}` warning: {w.get('kind')} ({w.get('tool')})")
            else:
                out.append(f"- `{r.get('name')}` warning: {w}")
    if out[-1] != "":
        out.append("")
    return out


def _standpoints(rj: RoundRecord) -> list[str]:
    standpoints = rj.get("standpoints") or []
    if not standpoints:
        return []
    out = ["## Standpoints", ""]
    by_name = {r.get("name"): r for r in rj.get("reviewers", [])}
    for sp in standpoints:
        name = sp.get("reviewer")
        out.append(f"### `{name}`")
        out.append("")
        out += ["> " + line if line else ">" for line in str(sp.get("text", "")).split("\n")]
        out.append("")
        r = by_name.get(name)
        if r is None:
            out.append("Not a reviewer of this round.")
        else:
            report = r.get("standpoint_report")
            if isinstance(report, dict):
                state = "checked" if report.get("checked") else "not checked"
                out.append(f"Report ({state}): {_cell(report.get('detail'))}")
            else:
                out.append(f"No report (status {r.get('status')}).")
        out.append("")
    uncovered = rj.get("standpoints_uncovered") or []
    if uncovered:
        out += ["Standpoints without a completed reviewer: " + ", ".join(f"`{n}`" for n in uncovered), ""]
    return out


def _angles(rj: RoundRecord) -> list[str]:
    done = [r for r in rj.get("reviewers", []) if r.get("status") == ReviewerStatus.COMPLETED]
    if not done:
        return []
    out = ["## Angles", ""]
    for r in done:
        checked = [a.get("angle") for a in r.get("angles_checked") or []]
        unchecked = [f"{a.get('angle')} ({_cell(a.get('reason'))})" for a in r.get("angles_unchecked") or []]
        line = f"- `{r.get('name')}`: checked {', '.join(checked) or '-'}"
        if unchecked:
            line += f"; not checked {', '.join(unchecked)}"
        out.append(line)
    return out + [""]


# why a repeat was not put to a verifier, as summary.md says it
_UNCHECKED_WORDS = {"max_findings": "over [verify] max_findings", "max_cost_usd": "max_cost_usd reached",
                    "no_other_vendor": "no verifier of another vendor"}


def repeat_words(checks: RepeatChecksRecord | None) -> dict[str, str]:
    """Finding id -> what the repeat check of it said, for the "repeat of" column: the verdict,
    its verifier and call, or why no verifier was asked; empty when none was ever planned."""
    if checks is None:
        return {}
    said = {c["finding"]: f"checked: {c['verdict']} by {c['verifier']} ({c['call']})" for c in checks["calls"]}
    for entry in checks["unchecked"]:
        said[entry["finding"]] = f"not checked: {_UNCHECKED_WORDS.get(entry['why'], entry['why'])}"
    return said


def _repeat(finding: Finding, checked: dict[str, str]) -> str:
    rep = finding.get("repeat_of")
    if not isinstance(rep, dict):
        return "-"
    decided = rep.get("disposition") or "no disposition"
    check = checked.get(str(finding.get("id")))
    return f"{rep.get('round')}/{rep.get('finding')} ({decided}{'; ' + check if check else ''})"


def _seen_by(finding: Finding) -> str:
    others = finding.get("corroborated_by") or []
    if not others:
        return "-"
    vendors = finding.get("vendor_count") or 1
    return f"{', '.join(str(o) for o in others)} ({vendors} vendor{'s' if vendors != 1 else ''})"


def _groups(round_name: str, findings: list[Finding], checked: dict[str, Verdict] | None = None) -> list[str]:
    """Each corroborated group once (findings.json `group`), most vendors first, with
    each member; empty for a round without groups. In a verified round (`checked`: finding
    id -> verdict) a group ranks by its best member's verdict (confirmed, none or unsure,
    refuted) and each member shows its own."""
    groups: dict[str, list[Finding]] = {}
    vendors: dict[str, list[str]] = {}
    for f in findings:
        group = f.get("group")
        if isinstance(group, dict) and isinstance(group.get("id"), str):
            groups.setdefault(group["id"], []).append(f)
            vendors[group["id"]] = [str(v) for v in group.get("vendors") or []]
    if not groups:
        return []
    by_id = checked or {}
    order = sorted(groups, key=lambda g: (rank_of((m["id"] for m in groups[g]), by_id), -len(vendors[g]),
                                          int(g[1:]) if g[1:].isdigit() else 0, g))
    out = ["## Groups", "", f"Each group is one problem seen by more than one reviewer; "
           f"`spar triage {round_name} GROUP --to ...` with a group's id disposes every member at once.", ""]
    for gid in order:
        count = len(vendors[gid])
        out.append(f"- **{_cell(gid)}** ({count} vendor{'s' if count != 1 else ''}: {_cell(', '.join(vendors[gid]))})")
        for m in groups[gid]:  # a verdict covers the member it names alone
            verdict = by_id.get(m["id"]) if checked is not None else None
            said = f"; {verdict.words()}" if verdict is not None else ""
            out.append(f"  - {_code(m.get('id'))} ({_cell(m.get('reviewer'))}, {_cell(m.get('class'))}"
                       f"{_cell(said) if said else ''}): {_cell(m.get('claim'))}")
    return out + [""]


def _verification(fid: str, checked: dict[str, Verdict], why: dict[str, str]) -> str:
    verdict = checked.get(fid)
    if verdict is not None:
        return verdict.words()
    return f"not verified ({why[fid]})" if fid in why else "not verified"


def _reading_order(findings: list[Finding], checked: dict[str, Verdict] | None) -> list[Finding]:
    """The findings table's rows: groups first, most vendors first (rounds recorded before
    repeats and corroboration: file order); in a verified round the verdict ranks before that
    (confirmed, none or unsure, refuted), a group by its verdict."""
    series_aware = any("repeat_of" in f or "corroborated_by" in f for f in findings)
    ordered = group_order(findings) if series_aware else [[f] for f in findings]
    if checked is not None:
        ordered = sorted(ordered, key=lambda g: rank_of((f["id"] for f in g), checked))
    return [f for g in ordered for f in g]


def _findings(findings: list[Finding], standing: dict[str, LedgerLine],
              checked: dict[str, Verdict] | None = None, why: dict[str, str] | None = None,
              repeats_checked: dict[str, str] | None = None) -> list[str]:
    """The findings table; in a verified round (`checked`) with a verification column and
    in reading order: confirmed first, refuted last, each part in the order it had. A repeat
    put to a verifier (`repeats_checked`) shows its verdict in the "repeat of" column."""
    out = ["## Findings", "", counts_text(findings) + ".", ""]
    if not findings:
        return out
    # rounds written before repeats and corroboration keep their table as it was
    series_aware = any("repeat_of" in f or "corroborated_by" in f for f in findings)
    extra = ["corroborated by", "repeat of"] if series_aware else []
    if series_aware:
        ordered = group_order(findings)
        groups = sum(1 for g in ordered if len(g) > 1)
        repeats = sum(1 for f in findings if isinstance(f.get("repeat_of"), dict))
        out += [f"{groups} corroborated group{'s' if groups != 1 else ''} (listed first, most vendors first); "
                f"{repeats} repeat{'s' if repeats != 1 else ''} of an earlier finding of the series.", ""]
    if checked is not None:
        out += ["Verified: confirmed findings first, refuted ones last; a verdict never changes a class, "
                "a disposition or the gate.", ""]
    rows = _reading_order(findings, checked)
    head = ["id", "class", "angle", "location", "claim", "link", *extra,
            *(["verification"] if checked is not None else []), "disposition"]
    out += ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for f in rows:
        location = _code(f.get("location"))
        if f.get("location_unreadable"):
            location += " (unreadable location)"
        link = f"{f.get('link_kind')} {f.get('link')}" if f.get("link_kind") not in (None, "none") else "-"
        cells = [_cell(f.get("id")), _cell(f.get("class")), _cell(f.get("angle")), _cell(location),
                 _cell(f.get("claim")), _cell(link)]
        if series_aware:
            cells += [_cell(_seen_by(f)), _cell(_repeat(f, repeats_checked or {}))]
        if checked is not None:
            cells.append(_cell(_verification(f["id"], checked, why or {})))
        out.append("| " + " | ".join(cells + [_cell(_disposition(f, standing))]) + " |")
    return out + [""]


def _verdicts(findings: list[Finding], checked: dict[str, Verdict], why: dict[str, str]) -> list[str]:
    """Each verdict once (at the finding it names) in reading order, with the
    verifier's evidence as data; then the findings that got no call, and why."""
    said: dict[str, Verdict] = {}
    for f in _reading_order(findings, checked):
        verdict = checked.get(f["id"])
        if verdict is not None:
            said.setdefault(verdict.call, verdict)
    out = ["## Verification", "", f"{len(said)} verification call{'s' if len(said) != 1 else ''} "
           "(each covers the finding it names alone), in reading order: verdict, finding, verifier (its preset), "
           "call and the verifier's evidence.", ""]
    for verdict in sorted(said.values(), key=rank):  # a group's members may rank apart
        named = f"{_code(verdict.finding)} (of group {_cell(verdict.group)})" if verdict.group \
            else _code(verdict.finding)
        out.append(f"- **{verdict.verdict}** {named}, by {_cell(verdict.verifier)} ({_cell(verdict.preset)}), "
                   f"call {_cell(verdict.call)}: {_cell(verdict.said())}")
    if why:
        out += ["", "Not verified: " + ", ".join(f"{_code(fid)} ({_cell(reason)})" for fid, reason in why.items())]
    return out + [""]


def _class_changes(findings: list[Finding]) -> list[str]:
    """Each finding whose class is not the one its reviewer proposed, with the classification
    rule that set it (class_reason), so a reader need not look it up in findings.json."""
    changed = [f for f in findings if f.get("proposed_class") and f.get("class") != f.get("proposed_class")]
    if not changed:
        return []
    out = ["## Classes Spar changed", ""]
    for f in changed:
        out.append(f"- `{f.get('id')}`: proposed {_cell(f.get('proposed_class'))}, classed {_cell(f.get('class'))}, "
                   f"by {_cell(f.get('class_reason'))}")
    return out + [""]


def _smallest_fixes(findings: list[Finding]) -> list[str]:
    out = ["## Smallest fixes", ""]
    fixes = [f for f in findings if isinstance(f.get("smallest_fix"), str) and f["smallest_fix"].strip()]
    if not fixes:
        return out + ["No finding gives one.", ""]
    for f in fixes:
        out.append(f"- `{f.get('id')}`: {_cell(f['smallest_fix'])}")
    return out + [""]


def _waivers(waivers: Iterable[WaiverLine]) -> list[str]:
    out = [f"- `{w.get('reviewer')}` waived by the user: {_cell(str(w.get('user_quote') or '').strip())}"
           for w in waivers]
    return out + [""] if out else []


def render_summary(round_json: RoundRecord, findings: list[Finding], ledger: list[LedgerLine],
                   waivers: Sequence[WaiverLine] = (), verifications: VerificationsRecord | None = None,
                   repeat_checks: RepeatChecksRecord | None = None) -> str:
    """summary.md; `verifications`: the round's verifications.json, None when never verified
    (the summary is then as it was before verification existed); `repeat_checks`: its
    repeat-checks.json, None when no repeat was ever put to a verifier."""
    lines = standing(ledger)
    checked = verdicts(verifications, findings) if verifications is not None else None
    why = unverified(verifications)
    parts: list[str] = []
    parts += _header(round_json)
    parts += _reviewers(round_json)
    parts += _waivers(waivers)
    parts += _standpoints(round_json)
    parts += _angles(round_json)
    parts += _groups(str(round_json.get("name") or "ROUND"), findings, checked)
    parts += _findings(findings, lines, checked, why, repeat_words(repeat_checks))
    if checked is not None:
        parts += _verdicts(findings, checked, why)
    parts += _class_changes(findings)
    parts += _smallest_fixes(findings)
    # read with `cat` as often as in an editor: a reviewer's control characters
    # (screen clear, OSC 52) are shown escaped; findings.json keeps the exact text
    return terminal_safe("\n".join(parts).rstrip("\n"), multiline=True) + "\n"
