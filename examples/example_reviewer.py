#!/usr/bin/env python3
"""A deterministic example reviewer for Spar's `command` preset (no AI involved).

usage: example_reviewer.py PROMPT_FILE

Spar passes the reviewer's input (`{prompt}`: the review packet, with a
standpoint instruction in standpoint rounds) and runs this with the round's
`workspace/` as the working folder. It prints one G1 result object on stdout:
the head commit read from the packet, every angle of the packet as checked,
and findings pointing at the first lines the diff adds:

- the first changed file outside tests: a proposed defect linked to the last
  acceptance criterion ID of the packet's criteria (when there is one);
- the first changed test file: a hardening finding about missing edge cases.

The same packet always gives the same answer, so it is usable in demos and
tests. It is not a reviewer: it never reads the code's meaning.
"""

from __future__ import annotations

import json
import re
import sys

HEAD = re.compile(r"^- Head commit: `([0-9a-f]{7,64})`", re.M)
ANGLE = re.compile(r"^- `([a-z]+)`: ")
AC_ID = re.compile(r"(?<![A-Za-z0-9])AC-[0-9]+(?![A-Za-z0-9])")
HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@")


def section(text: str, title: str) -> str:
    """The lines under `## title` up to the next `## ` heading outside fenced blocks."""
    out: list[str] = []
    inside = False
    fence = ""
    for line in text.split("\n"):
        if fence:
            if line == fence:
                fence = ""
        elif line.startswith("```"):
            fence = line[: len(line) - len(line.lstrip("`"))]
        elif line.startswith("## "):
            if inside:
                break
            inside = line == f"## {title}"
            continue
        if inside:
            out.append(line)
    return "\n".join(out)


def angles(text: str) -> list[str]:
    out = []
    for line in section(text, "Angles").splitlines():
        m = ANGLE.match(line)
        if m:
            out.append(m.group(1))
    return out


def first_additions(text: str) -> list[tuple[str, int, str]]:
    """Per changed file, in diff order: (path, line, text) of its first added `def` line,
    else of its first added line that is not blank."""
    found: dict[str, list[tuple[int, str]]] = {}
    path = None
    line_no = 0
    for line in section(text, "Subject").splitlines():
        if line.startswith("+++ "):
            target = line[4:]
            path = target[2:] if target.startswith("b/") else None
            if path is not None:
                found.setdefault(path, [])
            continue
        m = HUNK.match(line)
        if m:
            line_no = int(m.group(1))
            continue
        if path is None or not line_no:
            continue
        if line.startswith("+"):
            if line[1:].strip():
                found[path].append((line_no, line[1:].strip()))
            line_no += 1
        elif line.startswith(" "):
            line_no += 1
    out = []
    for p, added in found.items():
        if added:
            line_no, body = next((a for a in added if a[1].startswith("def ")), added[0])
            out.append((p, line_no, body))
    return out


def is_test(path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    return path.startswith("tests/") or "/tests/" in path or name.startswith("test_")


def finding(n: int, **values) -> dict:
    base = {
        "id": f"E{n}",
        "proposed_class": "note",
        "angle": "correctness",
        "location": "",
        "claim": "",
        "failure_scenario": "",
        "evidence": "",
        "link_kind": "none",
        "link": "",
        "introduced_by_change": "yes",
        "regression": "no",
        "check_impact": "none",
        "confidence": "medium",
        "smallest_fix": "",
    }
    base.update(values)
    return base


def review(text: str) -> dict:
    head = HEAD.search(text)
    if head is None:
        return {
            "reviewed_head": "0000000",
            "verdict": "could_not_review",
            "angles_checked": [],
            "angles_unchecked": [{"angle": a, "reason": "no head commit in the packet"} for a in angles(text)],
            "findings": [],
            "limits": "the packet names no head commit",
        }
    criteria_ids = AC_ID.findall(section(text, "Criteria"))
    additions = first_additions(text)
    findings = []
    code = next((a for a in additions if not is_test(a[0])), None)
    if code is not None:
        path, line, added = code
        link = criteria_ids[-1] if criteria_ids else ""
        findings.append(finding(
            len(findings) + 1,
            proposed_class="defect",
            location=f"head/{path}:{line}",
            claim=f"The code added at {path}:{line} does not reject input it cannot handle.",
            failure_scenario="Called with input outside its domain it fails with an unhandled "
                             "error instead of the ValueError the rules ask for.",
            evidence=f"Added line: {added}",
            link_kind="criterion" if link else "none",
            link=link,
            confidence="high",
            smallest_fix="Check the input first and raise ValueError with a clear message.",
        ))
    test = next((a for a in additions if is_test(a[0])), None)
    if test is not None:
        path, line, added = test
        findings.append(finding(
            len(findings) + 1,
            proposed_class="hardening",
            angle="checks",
            location=f"head/{path}:{line}",
            claim=f"The test added at {path}:{line} covers only the usual case.",
            failure_scenario="An edge case breaks without any test failing.",
            evidence=f"Added line: {added}",
            confidence="medium",
        ))
    result = {
        "reviewed_head": head.group(1),
        "verdict": "blocking_findings" if any(f["proposed_class"] == "defect" for f in findings)
        else "no_blocking_findings",
        "angles_checked": [{"angle": a, "result": "looked at the added lines"} for a in angles(text)],
        "angles_unchecked": [],
        "findings": findings,
        "limits": "example reviewer: reads only the packet's diff",
    }
    if "\n## Standpoints for this round\n" in text:
        # an unassigned reviewer's report is not checked, so one answer fits every reviewer
        result["standpoint_report"] = {"checked": True, "detail": "looked at the added lines for it"}
    return result


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: example_reviewer.py PROMPT_FILE", file=sys.stderr)
        return 2
    with open(argv[1], encoding="utf-8", errors="replace") as fh:
        text = fh.read()
    json.dump(review(text), sys.stdout, ensure_ascii=False, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
