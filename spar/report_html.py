"""The series report as one self-contained HTML page (pure: a dict in, text out).

No script, no external asset, no font or image fetched: styles are inline and
the charts are inline SVG, and a Content-Security-Policy of `default-src
'none'` (inline styles and data: images only) makes any fetch a refused one.
A verified round lists its findings confirmed first and refuted last, each with
its verdict, verifier, call and the verifier's evidence. Every value from the
records (reviewer text included, a verifier's too) goes through
`spar.textsafe.html_safe`: controls, bidi overrides and invisible characters
shown escaped (`\u202e`), then HTML-escaped.

The input is `spar.commands.report.gather`'s dict: the cap report of the
series (rounds, reviewer statuses and usage), per round its wall time and
(for the latest rounds) findings with their disposition history and the
changed files each reviewer saw (`series_report.file_table`), and the gate
over every round.
"""

from __future__ import annotations

from typing import Any

from spar.judge.classify import rule_words
from spar.judge.next_steps import next_steps
from spar.judge.verdicts import NO_VERDICT_RANK, RANKS
from spar.records import usage as usage_text
from spar.records.model import ReviewerStatus
from spar.textsafe import html_safe

CLASSES = ("defect", "requirement-question", "hardening", "note")
COLORS = {"defect": "#c62828", "requirement-question": "#6a1b9a", "hardening": "#ef6c00", "note": "#546e7a"}
STATUS_COLORS: dict[str, str] = {ReviewerStatus.COMPLETED: "#2e7d32", ReviewerStatus.AWAITING_RECORD: "#1565c0",
                                  ReviewerStatus.PENDING: "#757575"}
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"

STYLE = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px auto;max-width:1100px;
color:#1b1b1b;padding:0 16px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}
.muted{color:#666}.gate{padding:10px 14px;border-radius:6px;margin:12px 0}
.passed{background:#e8f5e9;border:1px solid #a5d6a7}.blocked{background:#ffebee;border:1px solid #ef9a9a}
.unknown{background:#fff8e1;border:1px solid #ffe082}
table{border-collapse:collapse;width:100%;margin:6px 0}th,td{border:1px solid #ddd;padding:4px 6px;
text-align:left;vertical-align:top}th{background:#f5f5f5}td.num{text-align:right;font-variant-numeric:tabular-nums}
.badge{display:inline-block;padding:0 6px;border-radius:9px;color:#fff;font-size:12px;margin:1px 2px}
.cls{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:4px}
.finding{border:1px solid #ddd;border-radius:6px;padding:8px 10px;margin:8px 0}
.finding h3{font-size:14px;margin:0 0 4px}.details{margin:4px 0}.details dt{font-weight:bold;font-size:12px}
.details dd{margin:0 0 4px 12px;white-space:pre-wrap}.hist{margin:4px 0 0 0;padding-left:18px}code{font-size:12px}
svg text{font:12px system-ui,sans-serif}
"""


def _e(value: object) -> str:
    return html_safe(value)


def _badge(status: str) -> str:
    color = STATUS_COLORS.get(status, "#c62828")
    return f'<span class="badge" style="background:{color}">{_e(status)}</span>'


def _cost(value: float | None) -> str:
    return "not recorded" if value is None else usage_text.cost_text(value)


def _seconds(value: float | None) -> str:
    return "not recorded" if value is None else usage_text.duration_text(value)


def timeline_svg(rounds: list[dict[str, Any]]) -> str:
    """Rounds on a time axis (started_at), labelled with name and stage."""
    width, height, pad = 1000, 90, 60
    times = [r["started_epoch"] for r in rounds if r["started_epoch"] is not None]
    lo, hi = (min(times), max(times)) if times else (0.0, 0.0)
    parts = [f'<svg role="img" aria-label="timeline of the rounds" viewBox="0 0 {width} {height}" '
             f'width="100%">',
             f'<line x1="{pad}" y1="45" x2="{width - pad}" y2="45" stroke="#999"/>']
    for i, r in enumerate(rounds):
        t = r["started_epoch"]
        if hi > lo and t is not None:
            x = pad + (t - lo) / (hi - lo) * (width - 2 * pad)
        else:
            x = pad + (i + 0.5) / max(len(rounds), 1) * (width - 2 * pad)
        counts = r["findings_count"]
        color = "#c62828" if counts and counts["defect"] else "#2e7d32" if r["recorded"] else "#9e9e9e"
        y = 25 if i % 2 == 0 else 75
        parts.append(f'<circle cx="{x:.1f}" cy="45" r="7" fill="{color}"><title>{_e(r["name"])} '
                     f'{_e(r["started_at"])}</title></circle>')
        if not r.get("detailed", True):
            continue  # an older round is a point with its title; labels only for the latest rounds
        anchor = "start" if x < pad + 80 else "end" if x > width - pad - 80 else "middle"
        parts.append(f'<text x="{x:.1f}" y="{y}" text-anchor="{anchor}">{_e(r["name"])} ({_e(r["stage"])})</text>')
    parts.append("</svg>")
    return "".join(parts)


def findings_chart_svg(rounds: list[dict[str, Any]]) -> str:
    """Stacked bars: findings per round by class, with the total above each bar."""
    bar_w, gap, chart_h, top, left = 46, 28, 180, 24, 40
    width = left + len(rounds) * (bar_w + gap) + 180
    height = top + chart_h + 60
    peak = max([sum(r["findings_count"].values()) for r in rounds if r["findings_count"]] + [1])
    parts = [f'<svg role="img" aria-label="findings per round by class" viewBox="0 0 {width} {height}" '
             f'width="{min(width, 1060)}">',
             f'<line x1="{left}" y1="{top + chart_h}" x2="{width - 170}" y2="{top + chart_h}" stroke="#999"/>']
    for i, r in enumerate(rounds):
        x = left + gap / 2 + i * (bar_w + gap)
        y = top + chart_h
        if r["findings_count"] is None:
            parts.append(f'<text x="{x + bar_w / 2:.1f}" y="{y - 4}" text-anchor="middle" fill="#999">n/a</text>')
        else:
            for cls in CLASSES:
                n = r["findings_count"][cls]
                if not n:
                    continue
                h = n / peak * chart_h
                y -= h
                parts.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar_w}" height="{h:.1f}" '
                             f'fill="{COLORS[cls]}"><title>{_e(r["name"])}: {n} {cls}</title></rect>')
            total = sum(r["findings_count"].values())
            parts.append(f'<text class="total" x="{x + bar_w / 2:.1f}" y="{y - 4:.1f}" '
                         f'text-anchor="middle">{total}</text>')
        parts.append(f'<text x="{x + bar_w / 2:.1f}" y="{top + chart_h + 16}" text-anchor="middle">'
                     f'{_e(r["name"])}</text>')
    for k, cls in enumerate(CLASSES):
        ly = top + 10 + k * 20
        parts.append(f'<rect x="{width - 160}" y="{ly - 10}" width="12" height="12" fill="{COLORS[cls]}"/>'
                     f'<text x="{width - 142}" y="{ly}">{cls}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _gate_html(gate: dict[str, Any]) -> str:
    state = gate.get("state") or "unknown"
    klass = state if state in ("passed", "blocked") else "unknown"
    gated = gate.get("gated") or []
    lines = [f'<div class="gate {klass}" id="gate"><strong>Gate: {_e(state)}</strong>'
             f' <span class="muted">(as <code>spar gate</code> judges {_names(gated, "round")} now)</span>']
    if gate.get("not_gated"):
        lines.append(f'<p class="muted">Not gated: {_names(gate["not_gated"], "dry run")}; '
                     "<code>spar gate</code> blocks on a dry run only when it is listed.</p>")
    for note in gate.get("stopped") or []:
        lines.append(f'<p class="muted">Not gated: {_e(note)}</p>')
    if gate.get("error"):
        lines.append(f"<p>{_e(gate['error'])}</p>")
    reasons = gate.get("reasons") or []
    if reasons:
        lines.append("<ul>" + "".join(f"<li>{_e(r)}</li>" for r in reasons) + "</ul>")
    if gate.get("open"):
        lines.append(f"<p>Open findings: {_e(', '.join(gate['open']))}</p>")
    if gate.get("demoted"):
        lines.append("<p>Kept as notes for their link:</p><ul>"
                     + "".join(f"<li>{_e(line)}</li>" for line in gate["demoted"]) + "</ul>")
    steps = next_steps(gate)
    if steps:
        lines.append("<p>What to do:</p><ul>" + "".join(f"<li>{_e(step)}</li>" for step in steps) + "</ul>")
    lines.append("</div>")
    return "".join(lines)


def _names(names: list[str], what: str, shown: int = 12) -> str:
    """`round a, b and c`, escaped; a long list cut after `shown` names, saying how many more."""
    if not names:
        return f"no {what}"
    text = ", ".join(names[:shown])
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return _e(f"{what}{'s' if len(names) > 1 else ''} {text}{more}")


def _rounds_table(rounds: list[dict[str, Any]]) -> str:
    head = ("<table id=\"rounds\"><tr><th>round</th><th>stage</th><th>head</th><th>started</th>"
            "<th>wall time</th><th>reviewer time</th><th>tokens</th><th>cost</th><th>reviewers</th>"
            + "".join(f"<th>{c}</th>" for c in CLASSES) + "</tr>")
    rows = []
    for r in rounds:
        u = r["usage"]
        reviewers = " ".join(f'{_e(v["name"])} {_badge(v["status"])}' for v in r["reviewers"])
        counts = [str(r["findings_count"][c]) if r["findings_count"] else "-" for c in CLASSES]
        tag = " (dry run)" if r["dry_run"] else "" if r["counted"] else " (rerun, not counted)"
        rows.append(f'<tr data-round="{_e(r["name"])}"><td>{_e(r["name"])}{tag}</td><td>{_e(r["stage"])}</td>'
                    f'<td><code>{_e(r["head"][:12])}</code></td><td>{_e(r["started_at"])}</td>'
                    f'<td class="num">{_seconds(r["wall_seconds"])}</td>'
                    f'<td class="num">{_seconds(u["duration_seconds"])}</td>'
                    f'<td class="num">{_e(usage_text.tokens_text(u))}</td>'
                    f'<td class="num cost">{_cost(u["cost_usd"])}</td>'
                    f'<td>{reviewers}</td>' + "".join(f'<td class="num">{c}</td>' for c in counts) + "</tr>")
    return head + "".join(rows) + "</table>"


def _reviewers_table(rounds: list[dict[str, Any]]) -> str:
    rows = []
    for r in rounds:
        for v in r["reviewers"]:
            u = v["usage"]
            rows.append(f"<tr><td>{_e(r['name'])}</td><td>{_e(v['name'])}</td><td>{_e(v['preset'])}</td>"
                        f"<td>{_badge(v['status'])}</td><td>{_e(v.get('reason') or '')}</td>"
                        f"<td class=\"num\">{v['attempts']}</td>"
                        f"<td class=\"num\">{_seconds(u['duration_seconds'])}</td>"
                        f"<td class=\"num\">{_e(usage_text.tokens_text(u))}</td>"
                        f"<td class=\"num\">{_cost(u['cost_usd'])}</td></tr>")
    return ("<table id=\"reviewers\"><tr><th>round</th><th>reviewer</th><th>preset</th><th>status</th><th>reason</th>"
            "<th>attempts</th><th>time</th><th>tokens</th><th>cost</th></tr>" + "".join(rows) + "</table>")


def _file_rows(table: dict[str, Any], rows: list[dict[str, Any]], unseen: bool) -> str:
    head = "<tr><th>file</th>" + "".join(
        f"<th>{_e(v['name'])} {_badge(v['status'])}"
        + (' <span class="muted">(calls not visible: inline only)</span>' if v["observed"] is False else "")
        + "</th>" for v in table["reviewers"]) + "</tr>"
    mark = ' <span class="badge" style="background:#c62828">seen by no completed reviewer</span>' if unseen else ""
    body = "".join(f'<tr class="{"unseen" if unseen else "seen"}" data-path="{_e(row["path"])}">'
                   f'<td><code>{_e(row["path"])}</code>{mark}</td>'
                   + "".join(f"<td>{_e(cell)}</td>" for cell in row["cells"]) + "</tr>" for row in rows)
    return f'<table class="files" data-round="{_e(table["round"])}">{head}{body}</table>'


def _left_out(left: int) -> str:
    return f'<p class="muted">{left} more not shown (round.json lists them).</p>' if left else ""


def _file_tables(tables: list[dict[str, Any]]) -> str:
    """Per round: the changed files x reviewers, files no completed reviewer saw first, the rest folded."""
    if not tables:
        return ('<p class="muted">No round shown in full recorded which changed files its reviewers saw '
                "(code rounds recorded by <code>spar run</code> do).</p>")
    parts = ['<p class="muted">Per changed file and reviewer (its last attempt): <em>inline</em>, its whole '
             "diff was in the packet; <em>opened</em>, the reviewer's read or search calls named it; "
             "\u2014, neither. Only completed reviewers count as having seen a file.</p>"]
    for t in tables:
        unseen = len(t["unseen"]) + t["unseen_left"]
        seen = len(t["seen"]) + t["seen_left"]
        parts.append(f'<section class="coverage" id="files-{_e(t["round"])}"><h3>{_e(t["round"])}: {unseen} of '
                     f'{t["changed_files"]} changed file(s) seen by no completed reviewer</h3>')
        if unseen:
            parts.append(_file_rows(t, t["unseen"], True) + _left_out(t["unseen_left"]))
        if seen:
            parts.append(f"<details><summary>{seen} file(s) seen by a completed reviewer</summary>"
                         + _file_rows(t, t["seen"], False) + _left_out(t["seen_left"]) + "</details>")
        parts.append("</section>")
    return "".join(parts)


def _history(lines: list[dict[str, Any]]) -> str:
    if not lines:
        return '<p class="muted">No disposition: open.</p>'
    items = []
    for line in lines:
        extra = [f"{k.replace('_', ' ')}: {line[k]}" for k in ("of", "commit", "evidence", "user_quote",
                                                            "failed_before", "passed_after") if line.get(k)]
        auto = " (automatic)" if line.get("auto") else ""
        items.append(f"<li><code>{_e(line.get('at'))}</code> <strong>{_e(line.get('disposition'))}</strong>{auto}"
                     + (f" — {_e('; '.join(extra))}" if extra else "") + "</li>")
    return '<ol class="hist">' + "".join(items) + "</ol>"


def _memory(f: dict[str, Any]) -> str:
    """Series memory marks (absent in rounds recorded before it existed)."""
    out = ""
    repeat = f.get("repeat_of")
    if isinstance(repeat, dict) and repeat.get("round"):
        out += f" · repeats {_e(repeat.get('round'))}/{_e(repeat.get('finding'))}"
    if f.get("corroborated_by"):
        out += (f" · corroborated by {_e(', '.join(map(str, f['corroborated_by'])))}"
                f" ({_e(f.get('vendor_count'))} vendor(s))")
    return out


def _grouped(findings: list[dict[str, Any]]) -> list[tuple[dict[str, Any] | None, list[dict[str, Any]]]]:
    """(group or None, its findings): each group once with its members, most vendors first,
    then every finding in no group, in file order."""
    groups: dict[str, tuple[dict[str, Any], list[dict[str, Any]]]] = {}
    singles: list[tuple[dict[str, Any] | None, list[dict[str, Any]]]] = []
    for f in findings:
        group = f.get("group")
        if isinstance(group, dict) and isinstance(group.get("id"), str):
            groups.setdefault(group["id"], (group, []))[1].append(f)
        else:
            singles.append((None, [f]))
    ordered = sorted(groups.values(), key=lambda g: -len(g[0].get("vendors") or []))
    # a verified round: the verdict first (confirmed, none or unsure, refuted; a group its best
    # member's, each verdict covering its own member), then that order
    return sorted([(g, members) for g, members in ordered] + singles,
                  key=lambda entry: min(_rank(m) for m in entry[1]))


def _rank(f: dict[str, Any]) -> int:
    verification = f.get("verification")
    return RANKS.get(verification["verdict"], NO_VERDICT_RANK) if verification else NO_VERDICT_RANK


def _verification(f: dict[str, Any], verified: bool) -> str:
    """The verdict of a finding of a verified round, with the verifier's evidence as data."""
    v = f.get("verification")
    if not verified:
        return ""
    if not v:
        return '<p class="verdict" data-verdict="none">Not verified.</p>'
    return (f'<p class="verdict" data-verdict="{_e(v["verdict"])}"><strong>{_e(v["verdict"])}</strong> by '
            f'{_e(v["verifier"])} ({_e(v["preset"])}), call {_e(v["call"])}: {_e(v["evidence"])}</p>')


DETAILS = (("failure_scenario", "failure scenario"), ("evidence", "evidence"), ("smallest_fix", "smallest fix"))


def _details(f: dict[str, Any]) -> str:
    """The reviewer's failure scenario, evidence and smallest fix (each when given), as data."""
    rows = [f"<dt>{label}</dt><dd>{_e(f[key])}</dd>" for key, label in DETAILS
            if isinstance(f.get(key), str) and f[key].strip()]
    return f'<dl class="details">{"".join(rows)}</dl>' if rows else ""


def _rule(f: dict[str, Any]) -> str:
    words = rule_words(f["class_reason"]) if isinstance(f.get("class_reason"), str) else ""
    return f" ({_e(words)})" if words else ""


def _finding_html(round_name: str, f: dict[str, Any], verified: bool = False) -> str:
    cls = str(f["class"]) if f.get("class") in CLASSES else "note"
    where = f.get("path") or "(unreadable location)"
    standing = f["history"][-1]["disposition"] if f["history"] else "open"
    return (f'<div class="finding" id="{_e(round_name)}/{_e(f["id"])}" data-standing="{_e(standing)}">'
            f'<h3><span class="cls" style="background:{COLORS[cls]}"></span>{_e(f["id"])} · {_e(cls)} · '
            f'<code>{_e(where)}</code> · {_e(standing)}</h3>'
            f'<p>{_e(f.get("claim"))}</p>' + _details(f)
            + f'<p class="muted">location {_e(f.get("location"))} · {_e(f.get("class_reason"))}'
            + _rule(f) + _memory(f) + "</p>" + _verification(f, verified)
            + _history(f["history"]) + "</div>")


def _findings(rounds: list[dict[str, Any]], detail_rounds: int) -> str:
    parts = []
    older = sum(1 for r in rounds if not r.get("detailed", True))
    if older:
        parts.append(f'<p class="muted" id="older-rounds">Every finding of the latest {detail_rounds} round(s) is '
                     f"shown below; the {older} earlier round(s) show their counts in the rounds table (their "
                     "records keep every finding: <code>spar export</code>).</p>")
    for r in rounds:
        if not r["findings"]:
            continue
        parts.append(f"<h3>{_e(r['name'])}</h3>")
        for group, members in _grouped(r["findings"]):
            inner = "".join(_finding_html(r["name"], f, r.get("verified", False)) for f in members)
            if group is None:
                parts.append(inner)
                continue
            vendors = [str(v) for v in group.get("vendors") or []]
            parts.append(f'<div class="group" id="{_e(r["name"])}/{_e(group["id"])}"><h3>group {_e(group["id"])}'
                         f' · {len(vendors)} vendor(s): {_e(", ".join(vendors))} · {len(members)} finding(s)</h3>'
                         + inner + "</div>")
    return "".join(parts) or '<p class="muted">No findings recorded.</p>'


def render(data: dict[str, Any]) -> str:
    rounds = data["rounds"]
    # a long series: the chart and the reviewer table cover the rounds shown in full, the
    # rounds table and the timeline every round
    recent = [r for r in rounds if r.get("detailed", True)]
    latest = f" (latest {len(recent)} rounds)" if len(recent) < len(rounds) else ""
    total = data["usage"]
    body = [
        f"<h1>Spar series report</h1><p class=\"muted\">{_e(data['series'])} · {len(rounds)} round(s) · "
        f"generated {_e(data['generated_at'])} by spar {_e(data['spar_version'])}</p>",
        _gate_html(data["gate"]),
        f"<p>Series totals: reviewer time {_seconds(total['duration_seconds'])}, tokens "
        f"{_e(usage_text.tokens_text(total))}, cost <span id=\"total-cost\">{_cost(total['cost_usd'])}</span>."
        " Time and cost come from each attempt's <code>usage</code>; rounds recorded before Spar kept it show"
        " “not recorded”.</p>",
        "<h2>Timeline</h2>", timeline_svg(rounds),
        f"<h2>Findings per round by class{latest}</h2>", findings_chart_svg(recent),
        "<h2>Rounds</h2>", _rounds_table(rounds),
        f"<h2>Reviewers{latest}</h2>", _reviewers_table(recent),
        f"<h2>Changed files each reviewer saw{latest}</h2>", _file_tables(data.get("file_tables") or []),
        "<h2>Caps</h2><table><tr><th>stage</th><th>cap</th><th>counted</th><th>remaining</th><th>extensions</th></tr>"
        + "".join(f"<tr><td>{_e(s['stage'])}</td><td class=\"num\">{s['cap']}</td><td class=\"num\">{s['counted']}</td>"
                  f"<td class=\"num\">{s['remaining']}</td><td>"
                  + _e("; ".join(f"+{x['by']} {x['cause'] or 'no recorded cause'}" for x in s["extensions"]) or "-")
                  + "</td></tr>" for s in data["stages"]) + "</table>",
        "<h2>Findings and their dispositions</h2>", _findings(rounds, data.get("detail_rounds", len(rounds))),
    ]
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>Spar report: {_e(data['series_name'])}</title><style>{STYLE}</style></head>"
            "<body>" + "\n".join(body) + "</body></html>\n")
