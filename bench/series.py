"""A long series for the scale benchmark: N rounds of 50 findings each.

One real `spar run` (two `command` reviewers that print 25 findings each)
makes a template round, so every record has exactly the shape spar writes.
The template is then copied N times, as a long review would leave the series:
stages plan, plan-delta and code; a new packet (so a counted round) each
time; an extension line for every round past the cap; and dispositions by hand
for the blocking findings of every round but the latest (fixed, answered,
rejected, and duplicates of the previous round's finding), so `spar gate`
has real tracing to do. The latest round keeps its blocking findings open.

    python bench/series.py DEST [--rounds N]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
from pathlib import Path

from harness import clean_env, remove_tree, run_measured, spar_argv, work_dir
from repos import RepoInfo, small_repo

ANGLES = ["criteria", "correctness", "checks", "contracts", "risk"]
REVIEWERS = ("alpha", "beta")
PER_REVIEWER = 25
CAUSES = ("churn", "recurring", "unrelated", "hardening", "other")


def _finding(k: int, reviewer: str) -> dict:
    """Finding k (1-based) of a reviewer: 2 defects, 1 requirement-question, 1 hardening, 1 note per 5."""
    kind = k % 5
    base = {"id": f"{reviewer[0].upper()}{k}", "angle": ANGLES[k % 5], "claim": f"claim {k} of {reviewer}",
            "failure_scenario": f"scenario {k}: a caller passes an empty list", "evidence": f"line {k}",
            "link_kind": "none", "link": "", "introduced_by_change": "no", "regression": "no",
            "check_impact": "none", "confidence": "medium", "smallest_fix": ""}
    if kind == 0:  # in check paths -> hardening, deferred automatically
        base.update(proposed_class="hardening", location=f"head/tests/test_mod.py:{k}")
    elif kind == 1:  # introduced and a regression -> defect (rule 5)
        base.update(proposed_class="defect", location=f"head/src/mod1.py:{k}", introduced_by_change="yes",
                    regression="yes")
    elif kind == 2:
        base.update(proposed_class="requirement-question", location=f"head/src/mod2.py:{k}")
    elif kind == 3:
        base.update(proposed_class="note", location=f"head/src/mod3.py:{k}")
    else:  # a false pass in check paths -> defect (rule 1)
        base.update(proposed_class="defect", location=f"head/tests/test_mod.py:{k}", check_impact="false_pass")
    return base


def template_round(info: RepoInfo, tmp: Path) -> Path:
    lines = []
    for name in REVIEWERS:
        result = {"reviewed_head": info.head[:12], "verdict": "blocking_findings",
                  "angles_checked": [{"angle": a, "result": "looked"} for a in ANGLES], "angles_unchecked": [],
                  "findings": [_finding(k, name) for k in range(1, PER_REVIEWER + 1)], "limits": ""}
        (tmp / f"{name}.json").write_text(json.dumps(result))
        lines += ["[[reviewers]]", f'name = "{name}"', 'preset = "command"',
                  f'argv = ["/bin/cat", "{tmp / (name + ".json")}"]', ""]
    (tmp / "spar.toml").write_text("\n".join(lines))
    (tmp / "xdg").mkdir(exist_ok=True)
    out = tmp / "template-series" / "template"
    out.parent.mkdir()  # a series outside a repository is made by its user
    env = clean_env(SPAR_CONFIG=str(tmp / "spar.toml"), XDG_CONFIG_HOME=str(tmp / "xdg"))
    run_measured(spar_argv("run", "--stage", "code", "--base", info.base, "--head", info.head,
                           "--check-path", "tests/**", "--out", str(out)), cwd=info.path, env=env)
    return out


def _stage(n: int, rounds: int) -> str:
    # a plan, a plan change, then code rounds: the order a long review goes through
    if n <= rounds // 10:
        return "plan"
    if n <= rounds // 5:
        return "plan-delta"
    return "code"


def _ledger_lines(name: str, prev: str | None, findings: list[dict], at: str, head: str, even: bool) -> list[dict]:
    lines = []
    for f in findings:
        k = int(f["id"].rsplit("-F", 1)[1])
        if f["class"] == "defect" and k % 5 == 1:
            lines.append({"finding": f["id"], "disposition": "fixed", "auto": False, "at": at, "commit": head,
                          "failed_before": "pytest tests/test_mod.py failed", "passed_after": "pytest passed"})
        elif f["class"] == "defect" and prev is not None and even:
            lines.append({"finding": f["id"], "disposition": "duplicate", "auto": False, "at": at,
                          "of": f"{prev}/{f['id']}"})
        elif f["class"] == "defect":
            lines.append({"finding": f["id"], "disposition": "rejected", "auto": False, "at": at,
                          "evidence": "the test covers the empty list already"})
        elif f["class"] == "requirement-question":
            lines.append({"finding": f["id"], "disposition": "answered", "auto": False, "at": at,
                          "user_quote": "yes, empty input is an error"})
    return lines


def build_series(dest: Path, rounds: int = 200, info: RepoInfo | None = None, *, chains: bool = False) -> list[Path]:
    """Write `dest` (must not exist) as a series of `rounds` rounds; returns the round folders in order.
    `chains`: every round's defects that are not fixed are duplicates of the round before's (from
    round 2 on), so each chain runs back to round 1; else every other round's are (chains of two)."""
    info = info or small_repo()
    tmp = work_dir("template")
    try:
        template = template_round(info, tmp)
        findings = json.loads((template / "findings.json").read_text())
        assert len(findings) == len(REVIEWERS) * PER_REVIEWER, len(findings)
        base_round = json.loads((template / "round.json").read_text())
        packet = (template / "packet.md").read_text()
        dest.mkdir(parents=True)
        caps = base_round["config"]["caps"]
        counted = {"plan": 0, "plan-delta": 0, "code": 0}
        extensions = []
        folders, prev = [], None
        for n in range(1, rounds + 1):
            name = f"r{n:03d}"
            folder = dest / name
            shutil.copytree(template, folder, symlinks=True)
            stage = _stage(n, rounds)
            started = f"2024-02-{1 + n // 1440:02d}T{(n // 60) % 24:02d}:{n % 60:02d}:00.000Z"
            finished = started.replace(":00.000Z", ":40.000Z")
            text = packet + f"\n<!-- bench round {n} -->\n"  # a new packet: every round is counted
            (folder / "packet.md").chmod(0o644)
            (folder / "packet.md").write_text(text)
            data = dict(base_round, name=name, stage=stage, started_at=started, recorded_at=finished,
                        finished_at=finished, counted=True,
                        packet_sha256=hashlib.sha256(text.encode()).hexdigest())
            (folder / "round.json").write_text(json.dumps(data, indent=2) + "\n")
            counted[stage] += 1
            cap_key = stage.replace("-", "_")
            if counted[stage] > caps[cap_key]:
                line = {"stage": stage, "by": 1, "at": started}
                if stage == "code":
                    cause = CAUSES[n % len(CAUSES)]
                    line = {"stage": stage, "by": 1, "cause": cause, "reason": f"round {n}: {cause}", "at": started}
                extensions.append(line)
            if n < rounds:  # the latest round keeps its blocking findings open
                with open(folder / "ledger.jsonl", "a") as fh:
                    for line in _ledger_lines(name, prev, findings, finished, info.head, chains or n % 2 == 0):
                        fh.write(json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n")
            folders.append(folder)
            prev = name
        with open(dest / "extensions.jsonl", "w") as fh:
            for line in extensions:
                fh.write(json.dumps(line, separators=(",", ":")) + "\n")
        return folders
    finally:
        remove_tree(tmp)


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("dest")
    p.add_argument("--rounds", type=int, default=200)
    p.add_argument("--chains", action="store_true", help="duplicate chains through every round")
    a = p.parse_args(argv)
    folders = build_series(Path(a.dest), a.rounds, chains=a.chains)
    print(f"{len(folders)} rounds in {a.dest}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
