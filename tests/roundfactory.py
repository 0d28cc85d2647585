"""Writes realistic round folders per docs/records.md, without running `spar run`.

Tests of the commands that work after a round (`record`, `triage`, `waive`,
`extend`, `gate`, `cap-report`) build their series with this, so they test
those commands alone. Files are written with plain `json` (not through
`spar.records`) so a bug in the writers cannot hide in both places.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path

from tests.gitrepo import git, head_commit

SPAR_VERSION = "0.1.0"
DEFAULT_CAPS = {"plan": 2, "plan_delta": 2, "code": 3}


def reviewer(
    name: str,
    *,
    preset: str | None = None,
    status: str = "completed",
    reason: str = "",
    model: str = "",
    verdict: str = "blocking_findings",
) -> dict:
    """One round.json reviewer entry (finding_count is filled in by make_round)."""
    entry = {
        "name": name,
        "preset": preset or (name if name in ("claude", "codex", "agy", "native", "command") else "command"),
        "status": status,
        "reason": "" if status == "completed" else (reason or f"{status} for a test"),
        "resets": None,
        "model": model,
        "effort": "",
        "timeout_seconds": 900,
        "observed_model": None,
        "attempts": [],
        "warnings": [],
        "standpoint": None,
        "standpoint_report": None,
    }
    if status == "completed":
        entry.update(
            verdict=verdict,
            reviewed_head="",
            angles_checked=[{"angle": a, "result": "checked"} for a in
                            ("criteria", "correctness", "checks", "contracts", "risk")],
            angles_unchecked=[],
            limits="",
            finding_count=0,
        )
    return entry


def finding(
    reviewer_name: str,
    n: int,
    *,
    cls: str = "defect",
    path: str = "app/main.py",
    in_check_paths: bool = False,
    introduced_by_change: str = "no",
    regression: str = "no",
    proposed_class: str | None = None,
    check_impact: str = "none",
    location_unreadable: bool = False,
    claim: str | None = None,
) -> dict:
    """One findings.json entry with every key docs/records.md lists."""
    location = "" if location_unreadable else f"head/{path}:{n}"
    return {
        "id": f"{reviewer_name}-F{n}",
        "reviewer": reviewer_name,
        "reviewer_id": f"F{n}",
        "proposed_class": proposed_class or cls,
        "angle": "correctness",
        "location": location,
        "claim": claim or f"{cls} number {n} from {reviewer_name}",
        "failure_scenario": "a caller passes an empty list and gets a crash",
        "evidence": f"{path} line {n}",
        "link_kind": "none",
        "link": "",
        "introduced_by_change": introduced_by_change,
        "regression": regression,
        "check_impact": check_impact,
        "confidence": "high",
        "smallest_fix": "",
        "path": "" if location_unreadable else path,
        "in_check_paths": False if location_unreadable else in_check_paths,
        "location_unreadable": location_unreadable,
        "class": cls,
        "class_reason": ("unreadable location (no target): " if location_unreadable else "") + "rule 7: proposed class",
        "claimed_link_kind": "none",
        "claimed_link": "",
    }


def ledger_line(finding_id: str, disposition: str, *, auto: bool = False, at: str = "2024-01-02T00:00:00.000Z", **options) -> dict:
    line = {"finding": finding_id, "disposition": disposition, "auto": auto, "at": at}
    line.update({k: v for k, v in options.items() if v is not None})
    return line


def _write_json(path: Path, value) -> None:
    path.write_text(json.dumps(value, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def _write_jsonl(path: Path, lines: list) -> None:
    with open(path, "a", encoding="utf-8") as fh:
        for line in lines:
            fh.write(json.dumps(line, ensure_ascii=False) + "\n")


_parents: dict[tuple[str, str], tuple[str, str]] = {}


def head_and_base(repo: Path) -> tuple[str, str]:
    # a commit's parent never changes: asked of git once per commit (most tests make
    # many rounds in one repository)
    commit = head_commit(repo)
    key = (str(repo), commit or "")
    if commit is not None and key in _parents:
        return _parents[key]
    head = git(repo, "rev-parse", "HEAD").strip()
    try:
        base = git(repo, "rev-parse", "HEAD~1").strip()
    except RuntimeError:
        base = head
    if commit == head:
        _parents[key] = (base, head)
    return base, head


def existing_rounds(series: Path) -> list[dict]:
    out = []
    if series.is_dir():
        for child in sorted(series.iterdir()):
            try:
                value = json.loads((child / "round.json").read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            if isinstance(value, dict):
                out.append(value)
    return out


def make_round(
    series: Path,
    name: str,
    *,
    repo: Path,
    stage: str = "code",
    base: str | None = None,
    head: str | None = None,
    reviewers: list[dict] | None = None,
    findings: list[dict] | None = None,
    ledger: list[dict] | None = None,
    waivers: list[dict] | None = None,
    dry_run: bool = False,
    recorded: bool = True,
    counted: bool | None = None,
    packet_text: str | None = None,
    started_at: str | None = None,
    check_paths: list[str] | None = None,
    caps: dict | None = None,
    auto_defer: bool = True,
    extra: dict | None = None,
) -> Path:
    """Write `series/name` as `spar run` would leave it (`extra`: more round.json keys).

    recorded=False leaves the state after step 2 (no findings.json, no
    finished_at, every reviewer pending). Hardening findings with a readable
    location get their automatic deferral unless auto_defer=False. `counted`
    defaults to design §8 over the rounds already in the series.
    """
    series = Path(series)
    series.mkdir(parents=True, exist_ok=True)
    folder = series / name
    folder.mkdir()
    if base is None or head is None:
        b, h = head_and_base(repo)
        base = base or b
        head = head or h
    reviewers = [dict(r) for r in (reviewers if reviewers is not None else [reviewer("claude"), reviewer("codex")])]
    findings = list(findings or [])
    earlier = existing_rounds(series)
    packet = packet_text if packet_text is not None else (
        f"# Review packet\n\nstage: {stage}\nbase: {base}\nhead: {head}\n\n## How to report\n\nOne JSON object.\n")
    packet_sha = hashlib.sha256(packet.encode()).hexdigest()
    if counted is None:
        counted = not dry_run and not any(
            not r.get("dry_run") and (r.get("stage"), r.get("base"), r.get("head"), r.get("packet_sha256"))
            == (stage, base, head, packet_sha) for r in earlier)
    if started_at is None:
        started_at = f"2024-01-01T00:{len(earlier):02d}:00.000Z"
    finished = started_at.replace("00.000Z", "30.000Z")
    applied_caps = dict(caps or DEFAULT_CAPS)
    config = {
        "reviewers": [{"name": r["name"], "preset": r["preset"], "timeout_seconds": 900} for r in reviewers],
        "timeout_seconds": 900,
        "rules": [],
        "check_paths": list(check_paths or ["tests/**"]),
        "angles": ["criteria", "correctness", "checks", "contracts", "risk"],
        "caps": applied_caps,
    }
    do_record = recorded and not dry_run
    for r in reviewers:
        if not do_record:
            for key in ("verdict", "reviewed_head", "angles_checked", "angles_unchecked", "limits", "finding_count"):
                r.pop(key, None)
            r["status"], r["reason"] = "pending", r["reason"] if r["status"] != "completed" else ""
        elif r["status"] == "completed":
            r["reviewed_head"] = head[:12]
            r["finding_count"] = sum(1 for f in findings if f["reviewer"] == r["name"])
    round_json = {
        "schema": "review-round/v1",
        "spar_version": SPAR_VERSION,
        "name": name,
        "stage": stage,
        "repository": str(Path(repo).resolve()),
        "base": base,
        "head": head,
        "expect_head": None,
        "packet_sha256": packet_sha,
        "documents": {"criteria": [], "rules": [], "subject": []},
        "criteria_digest": hashlib.sha256(b"[]").hexdigest(),
        "links": {"rules": [], "criteria_ids": []},
        "config": config,
        "config_files": [],
        "config_skipped": [],
        "config_digest": hashlib.sha256(json.dumps(config, sort_keys=True, separators=(",", ":")).encode()).hexdigest(),
        "standpoints": [],
        "standpoints_uncovered": [],
        "decisions": [],
        "counted": bool(counted),
        "dry_run": dry_run,
        "started_at": started_at,
        "reviewers": reviewers,
        "warnings": [],
        **(extra or {}),
    }
    if do_record:
        round_json["recorded_at"] = finished
        if not any(r["status"] == "awaiting_record" for r in reviewers):
            round_json["finished_at"] = finished
    (folder / "packet.md").write_text(packet, encoding="utf-8")
    _write_json(folder / "schema.json", {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object"})
    for r in reviewers:
        (folder / r["name"]).mkdir()
        (folder / r["name"] / "input.md").write_text(packet, encoding="utf-8")
    if do_record:
        _write_json(folder / "findings.json", findings)
        lines = []
        if auto_defer:
            lines = [ledger_line(f["id"], "deferred", auto=True, at=finished) for f in findings
                     if f["class"] == "hardening" and not f.get("location_unreadable")]
        (folder / "ledger.jsonl").write_text("", encoding="utf-8")
        _write_jsonl(folder / "ledger.jsonl", lines + list(ledger or []))
        (folder / "summary.md").write_text(f"# Round {name}\n\n{len(findings)} findings\n", encoding="utf-8")
    if waivers:
        _write_jsonl(folder / "waivers.jsonl", waivers)
    # round.json last, as `spar run` replaces it whole after the other files
    _write_json(folder / "round.json", round_json)
    return folder


def add_extension(series: Path, stage: str, by: int, cause: str | None = None, reason: str | None = None,
                  at: str = "2024-01-03T00:00:00.000Z") -> None:
    line = {"stage": stage, "by": by}
    if cause is not None:
        line["cause"] = cause
    if reason is not None:
        line["reason"] = reason
    line["at"] = at
    Path(series).mkdir(parents=True, exist_ok=True)
    _write_jsonl(Path(series) / "extensions.jsonl", [line])


def series_repo(tmp_path: Path) -> tuple[Path, Path]:
    """A repository with two commits whose `reviews/` (the series) and `gates/`
    folders are ignored, as G28 wants; returns (repo, series)."""
    from tests.gitrepo import commit, make_repo

    repo = make_repo(Path(tmp_path), {"app/main.py": "print(1)\n", "tests/test_main.py": "assert 1\n",
                                      ".gitignore": "reviews/\ngates/\n"})
    commit(repo, {"app/main.py": "print(2)\n"}, message="the change")
    (repo / "gates").mkdir()
    return repo, repo / "reviews"


_counter = iter(range(1, 1_000_000))


def fresh_series(repo: Path) -> Path:
    """A new, empty series folder under the repository's ignored `reviews/`, so
    tests can share one repository (a series is just a folder)."""
    series = Path(repo) / "reviews" / f"s{next(_counter)}"
    series.mkdir(parents=True)
    return series


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under `root` with its bytes, except the lock file (which never
    holds data), to check that a refused command wrote nothing."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for fn in filenames:
            if fn == ".spar.lock":
                continue
            full = Path(dirpath) / fn
            out[str(full.relative_to(root))] = full.read_bytes()
        for dn in dirnames:
            out[str((Path(dirpath) / dn).relative_to(root)) + "/"] = b""
    return out


def read_line(stream, timeout: float) -> str:
    """One line from a subprocess pipe, or AssertionError after `timeout` seconds."""
    import selectors

    sel = selectors.DefaultSelector()
    sel.register(stream, selectors.EVENT_READ)
    try:
        if not sel.select(timeout):
            raise AssertionError(f"no line within {timeout} s")
        return stream.readline()
    finally:
        sel.close()


def spar(*args: str, cwd: Path | None = None, env: dict | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    """Run the real `spar` command line in a subprocess."""
    import sys

    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "spar", *args], cwd=cwd, env=full_env,
                          capture_output=True, text=True, timeout=timeout)
