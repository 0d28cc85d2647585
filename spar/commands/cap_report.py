"""`spar cap-report SERIES [--format md|json]` (design §11, G32, G34).

Reads the series without the lock (it writes nothing) and refuses on any record
it cannot read. Markdown is for people (a table per stage), JSON
(`cap-report/v1`) for tools; the fields are listed in the epilog below.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from typing import Any

from spar.argparsing import Parser, command_parser
from spar.errors import EXIT_OK, UsageError, quote
from spar.judge.convergence import ENDINGS
from spar.records import usage
from spar.records.record_rules import CAUSES, CLASSES
from spar.series import series_folder
from spar.series_report import NO_CAUSE, SCHEMA, build_report
from spar.textsafe import for_stream

EPILOG = f"""\
JSON ({SCHEMA}):
  schema, series (absolute path), spar_version,
  caps_from: the round whose config.caps gave the project caps (the latest
    round), or null when the series has no round (then the defaults),
  stages[]: stage, project_cap, extended_by, cap, counted (number),
    counted_rounds (names), remaining (never below 0),
    extensions[]: by, cause (null when none recorded), reason (null), at,
  rounds[] (series order: started_at, then name): name, stage, head, base,
    started_at, counted, dry_run, recorded (round.json marked recorded),
    reviewers[]: name, preset, status, attempts (number),
      usage: totals over its attempts (duration_seconds, input_tokens,
      cached_input_tokens, output_tokens, cost_usd; null when none reported),
    findings: count per class ({', '.join(CLASSES)}) or null when not recorded,
    new_defects: defects with introduced_by_change "yes" (null when not recorded),
    convergence: new (not a repeat), repeat, corroborated (findings in a
      group), groups; null when not recorded or recorded before repeats existed,
    groups[]: each corroborated group once (findings.json `group`): id,
      members, vendors; most vendors first; [] when none or not recorded,
  code_extension_causes: for each of {', '.join(CAUSES)} and {NO_CAUSE}:
    extensions (how many code extensions) and by (rounds they added),
  coverage: rounds (those that record it), changed_files and unseen (files no
    completed reviewer saw), summed over the series' non-dry rounds
  usage: reviewers[] (name, rounds, attempts and the usage totals over every
    round of the series, by reviewer name) and series (attempts and the usage
    totals of every attempt of every round),
  verdicts[]: per stage with rounds: stage, state (converges, churns,
    unknown), new_per_round (new findings of each input, reruns merged), text,
  scoreboard[]: per reviewer over the series: name, presets, raised,
    ended ({', '.join(ENDINGS)}: the standing disposition), fixed_or_answered,
    share_fixed_or_answered, seconds_per_fixed_or_answered and
    cost_per_fixed_or_answered (the reviewer's usage totals above divided by
    fixed_or_answered; null when not reported or none),
  noise: beside the scoreboard, over the verified rounds (verifications.json):
    verified_rounds (0: no round was verified), reviewers[] (scoreboard order):
    name, findings (its findings in verified rounds), checked (those a
    verifier of another vendor gave a verdict), refuted (of those, refuted),
    share_refuted (refuted / checked; null when none checked),
  unfinished[] (by name): name, why; a round folder a killed write left behind
    (no round.json, leftover *.tmp files, or round.json never marked recorded).
Refused (65) on any record it reads that Spar could not have written: a torn,
missing or impossible round.json, the findings.json of a recorded round, or an
extensions.jsonl line `spar extend` would not have written (a cause not among the
five included), and on a SERIES that is not a series folder: a round folder, or a
folder holding neither a round folder nor extensions.jsonl (an empty folder is a
series whose first round is still to come: default caps)."""


def _cell(value: object) -> str:
    if value is None:
        return "-"
    text = str(value)
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\r", " ").replace("\n", " ") or "-"


def _row(cells: Iterable[object]) -> str:
    return "| " + " | ".join(_cell(c) for c in cells) + " |"


def render_markdown(report: dict[str, Any]) -> str:
    lines = [f"# Cap report: {report['series']}", ""]
    if report["caps_from"]:
        lines += [f"Project caps as applied by round {report['caps_from']}.", ""]
    else:
        lines += ["No round yet: default project caps.", ""]
    for stage in report["stages"]:
        lines += [f"## {stage['stage']}", "",
                  f"Cap {stage['cap']} (project {stage['project_cap']}, extended by {stage['extended_by']}); "
                  f"{stage['counted']} counted, {stage['remaining']} remaining.", ""]
        if stage["extensions"]:
            lines += ["| extension | cause | reason | at |", "| --- | --- | --- | --- |"]
            lines += [_row([f"+{e['by']}", e["cause"] or "no recorded cause", e["reason"], e["at"]])
                      for e in stage["extensions"]]
            lines.append("")
        rows = [r for r in report["rounds"] if r["stage"] == stage["stage"]]
        if rows:
            lines += ["| round | head | counted | reviewers | " + " | ".join(CLASSES) + " | new defects |",
                      "| --- " * (5 + len(CLASSES)) + "|"]
            for r in rows:
                counted = "dry run" if r["dry_run"] else ("yes" if r["counted"] else "no (rerun)")
                reviewers = ", ".join(f"{v['name']}: {v['status']}" for v in r["reviewers"])
                counts = [r["findings"][c] if r["findings"] else None for c in CLASSES]
                lines.append(_row([r["name"], r["head"][:12], counted, reviewers, *counts, r["new_defects"]]))
        else:
            lines.append("No rounds.")
        lines.append("")
    lines += ["## Code extension causes", "", "| cause | extensions | rounds added |", "| --- | --- | --- |"]
    for cause, t in report["code_extension_causes"].items():
        lines.append(_row([cause.replace("_", " ") if cause == NO_CAUSE else cause, t["extensions"], t["by"]]))
    if report["unfinished"]:
        lines += ["", "## Unfinished rounds", "", "| round | why |", "| --- | --- |"]
        lines += [_row([u["name"], u["why"]]) for u in report["unfinished"]]
    lines += ["", "## Usage", "", "| reviewer | rounds | attempts | time | tokens | cost |",
              "| --- | --- | --- | --- | --- | --- |"]
    for r in report["usage"]["reviewers"]:
        lines.append(_row([r["name"], r["rounds"], r["attempts"], usage.duration_text(r["duration_seconds"]),
                           usage.tokens_text(r), usage.cost_text(r["cost_usd"])]))
    t = report["usage"]["series"]
    lines.append(_row(["(all)", len(report["rounds"]), t["attempts"], usage.duration_text(t["duration_seconds"]),
                       usage.tokens_text(t), usage.cost_text(t["cost_usd"])]))
    lines += _convergence_md(report)
    return "\n".join(lines) + "\n"


def _share(value: float | None) -> str | None:
    return None if value is None else f"{round(value * 100)}%"


def _convergence_md(report: dict[str, Any]) -> list[str]:
    lines = ["", "## Convergence", ""]
    lines += [f"- {v['text']}" for v in report["verdicts"]] or ["No rounds."]
    known = [r for r in report["rounds"] if r["convergence"] is not None]
    if known:
        lines += ["", "| round | stage | new | repeat | corroborated | groups |", "| --- " * 6 + "|"]
        lines += [_row([r["name"], r["stage"], r["convergence"]["new"], r["convergence"]["repeat"],
                        r["convergence"]["corroborated"], r["convergence"]["groups"]]) for r in known]
    named = [(r["name"], g) for r in report["rounds"] for g in r["groups"]]
    if named:
        lines += ["", "| round | group | vendors | members |", "| --- " * 4 + "|"]
        lines += [_row([name, g["id"], f"{len(g['vendors'])} ({', '.join(g['vendors'])})", ", ".join(g["members"])])
                  for name, g in named]
    lines += ["", "## Reviewer scoreboard", ""]
    if not report["scoreboard"]:
        return lines + ["No reviewer yet."]
    lines += ["| reviewer | presets | raised | " + " | ".join(ENDINGS) + " | fixed or answered | "
              "time per fixed/answered (s) | cost per fixed/answered (USD) |",
              "| --- " * (6 + len(ENDINGS)) + "|"]
    for b in report["scoreboard"]:
        lines.append(_row([b["name"], ", ".join(b["presets"]), b["raised"], *[b["ended"][e] for e in ENDINGS],
                           _share(b["share_fixed_or_answered"]),
                           b["seconds_per_fixed_or_answered"] if b["seconds_per_fixed_or_answered"] is not None
                           else "unknown", b["cost_per_fixed_or_answered"]
                           if b["cost_per_fixed_or_answered"] is not None else "unknown"]))
    return lines + _noise_md(report["noise"])


def _noise_md(noise: dict[str, Any]) -> list[str]:
    lines = ["", "## Findings refuted by another vendor", ""]
    if not noise["verified_rounds"]:
        return lines + ["Not verified: no round of the series was verified."]
    rounds = noise["verified_rounds"]
    lines += [f"Over the {rounds} verified round{'s' if rounds != 1 else ''}: each reviewer's findings that a "
              "verifier of another vendor checked, and the share it refuted.", "",
              "| reviewer | findings | checked by another vendor | refuted | share refuted |", "| --- " * 5 + "|"]
    lines += [_row([n["name"], n["findings"], n["checked"], n["refuted"], _share(n["share_refuted"])])
              for n in noise["reviewers"]]
    return lines


def _parser() -> Parser:
    p = command_parser("cap-report", "Summarize the caps, rounds and extensions of a series.", EPILOG)
    p.add_argument("series", metavar="SERIES", help="the series folder")
    p.add_argument("--format", default="md", metavar="md|json", help="md (default) or json")
    return p


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    if args.format not in ("md", "json"):
        raise UsageError(f"cap-report: --format {quote(args.format)} is not md or json")
    series = series_folder(args.series, read="empty ok")
    report = build_report(series)
    if args.format == "json":
        sys.stdout.write(for_stream(json.dumps(report, indent=2, ensure_ascii=False) + "\n", sys.stdout))
    else:
        sys.stdout.write(for_stream(render_markdown(report), sys.stdout))
    return EXIT_OK
