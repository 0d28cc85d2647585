"""Print the Performance table of README.md from bench/results.json (written by run_all.py).

    python bench/report.py            # the Markdown table, one row per row of issue 15's table
"""

from __future__ import annotations

import json
import sys

from harness import BENCH


def _ok(flag: bool) -> str:
    return "met" if flag else "**missed**"


def _cpu(f: dict) -> str:
    """The CPU-time form of the overhead ratio, where the run measured it."""
    if "cpu_overhead_ratio_to_pass" not in f:
        return ""
    return (f" (CPU {f['cpu_overhead_3']:.3f} s = {f['cpu_overhead_ratio_to_pass']:.1f}x its "
            f"{f['python_pass_cpu']:.3f} s)")


def rows(results: dict) -> list[list[str]]:
    b = results["benchmarks"]
    out: list[list[str]] = []
    if "cost" in b:
        c = b["cost"]["figures"]
        cached, cold = c["cached"], c["not_cached"]
        out.append([
            "small repository, 3 instant reviewers: Spar's overhead (wall − reviewers run directly)",
            f"{cached['overhead_3']:.3f} s = {cached['overhead_ratio_to_pass']:.1f}x `python -c pass` "
            f"({cached['python_pass_wall']:.3f} s){_cpu(cached)}; without cached bytecode {cold['overhead_3']:.3f} s = "
            f"{cold['overhead_ratio_to_pass']:.1f}x{_cpu(cold)}",
            f"≤ 6x: {_ok(cached['overhead_ratio_to_pass'] <= 6)} (cached), "
            f"{_ok(cold['overhead_ratio_to_pass'] <= 6)} (not cached)"])
        out.append([
            "each additional reviewer, (8 − 3 reviewers) / 5",
            f"{cached['per_reviewer_wall'] * 1000:+.0f} ms wall, {cached['per_reviewer_cpu'] * 1000:+.0f} ms CPU; "
            f"not cached {cold['per_reviewer_wall'] * 1000:+.0f} ms, {cold['per_reviewer_cpu'] * 1000:+.0f} ms CPU",
            f"≤ +10 ms: {_ok(cached['per_reviewer_wall'] <= 0.010)}; ≤ +15 ms CPU: "
            f"{_ok(cached['per_reviewer_cpu'] <= 0.015)}"])
        out.append([
            "reviewers sleeping 2 s: wall − 2 s, 3 and 8 reviewers",
            f"{cached['sleeping_3_minus_s']:.3f} s and {cached['sleeping_8_minus_s']:.3f} s (run directly: "
            f"{cached['direct_sleeping_3_minus_s']:.3f} s and {cached['direct_sleeping_8_minus_s']:.3f} s)",
            f"≤ 0.25 s: {_ok(cached['sleeping_3_minus_s'] <= 0.25)}; ≤ 0.30 s: "
            f"{_ok(cached['sleeping_8_minus_s'] <= 0.30)}"])
        out.append([
            "async backend, 3 instant reviewers (wall / CPU)",
            f"asyncio {cached['spar_3_wall']:.3f} / {cached['spar_3_cpu']:.3f} s; trio "
            f"{cached['spar_3_trio_wall']:.3f} / {cached['spar_3_trio_cpu']:.3f} s",
            "asyncio is the default"])
    if "workspace" in b:
        w = b["workspace"]["figures"]["large"]
        where = b["workspace"]["figures"].get("where", "?")
        cpu = f"; CPU {w['spar_cpu']:.2f} s = {w['ratio_cpu']:.2f}x" if "ratio_cpu" in w else ""
        git_only = (f"; every byte from git (head not checked out): {w['git_only_seconds']:.2f} s = "
                    f"{w['git_only_ratio']:.2f}x" if "git_only_ratio" in w else "")
        out.append([
            f"20,003-file repository, first round of a series: workspace copies (written under {where})",
            f"{w['spar_seconds']:.2f} s = {w['ratio']:.2f}x the `git archive | tar -x` floor "
            f"({w['archive_floor_seconds']:.2f} s, head + base){cpu}{git_only}",
            f"≤ 0.8x: {_ok(w['ratio'] <= 0.8)}"])
        later = b["workspace"]["figures"].get("later")
        if later:
            cow = b["workspace"]["figures"].get("cow", "?")
            goal = 0.3 if cow.startswith("yes") else 0.8  # issue 24: ≤ 0.3x where files clone, else ≤ 0.8x
            out.append([
                f"same repository, a later round of the series (one file changed; files clone copy-on-write "
                f"under {where}: {cow})",
                f"{later['reuse_seconds']:.2f} s = {later['ratio']:.2f}x the floor "
                f"({later['archive_floor_seconds']:.2f} s); "
                f"CPU {later['reuse_cpu']:.2f} s = {later['ratio_cpu']:.2f}x; without the earlier copy "
                f"{later['fresh_ratio']:.2f}x",
                f"≤ {goal}x: {_ok(later['ratio'] <= goal)}"])
    if "scale" in b:
        s = b["scale"]["figures"]
        out.append([
            f"`spar gate`, {s['rounds']:,} rounds × 50 findings",
            f"{s['gate_wall']:.2f} s = {s['ratio_wall']:.2f}x reading every record ({s['read_all_wall']:.2f} s; "
            f"CPU {s['ratio_cpu']:.2f}x); peak {s['gate_peak_rss_mib_quarter']:.0f} MiB at {s['rounds'] // 4} "
            f"rounds, {s['gate_peak_rss_mib']:.0f} MiB at {s['rounds']:,}",
            f"≤ 1.3x: {_ok(s['ratio_wall'] <= 1.3)}; flat memory: "
            f"{_ok(s['gate_peak_rss_mib'] <= 1.25 * s['gate_peak_rss_mib_quarter'])}"])
    if "round" in b:
        r = b["round"]["figures"]
        small, large = r["small"], r["large"]
        out.append([
            f"a round with 3 reviewers sleeping {r['sleep']:g} s: overhead (wall − {r['sleep']:g} s), "
            "small and large repository",
            f"{small['overhead']:.3f} s ({small['repository']}); {large['overhead']:.2f} s ({large['repository']}) "
            f"= {large['overhead_to_floor']:.2f}x the archive floor ({large['archive_floor']:.2f} s)",
            f"< 1 s: {_ok(small['target_met'])}; ≤ 2x the floor: {_ok(large['target_met'])}"])
    if "streaming" in b:
        st = b["streaming"]["figures"]
        big = st["1000000"]
        out.append([
            "a reviewer printing 1,000,000 event lines",
            f"spar run {big['run_wall']:.2f} s ({big['run_lines_per_s']:,.0f} lines/s; the reviewer alone "
            f"{big['baseline_lines_per_s']:,.0f} lines/s); peak {big['run_peak_rss_mib']:.0f} MiB "
            f"(100,000 lines: {st['100000']['run_peak_rss_mib']:.0f} MiB)",
            f"memory flat: {_ok(st['memory_flat_run'])}"])
    if "diff" in b:
        d = b["diff"]["figures"]
        out.append([
            f"{d['files']:,} changed files: reading the change for the packet, beyond a 1-file change",
            f"+{d['extra_once']:.3f} s (before: +{d['extra_two_runs']:.3f} s; {d['ratio_once_to_two']:.2f}x)",
            "the patch read once and cut at what the packet keeps: done"])
    return out


def machine_text(results: dict) -> str:
    """The machine once, then when (commit, load) each benchmark's figures were measured."""
    benches = results["benchmarks"]
    m = next(iter(benches.values()))["machine"]
    when = "; ".join(f"{name} {b['machine']['measured_at']} (commit {b['machine']['commit']}, load "
                     f"{b['machine']['load_at_start'][0]:.1f}{', quick' if b.get('quick') else ''})"
                     for name, b in benches.items())
    return f"{m['nproc']} cores ({m['cpu']}), Python {m['python']}, {m['git']}; measured: {when}"


def main() -> int:
    results = json.loads((BENCH / "results.json").read_text())
    print(machine_text(results))
    print()
    print("| what | Spar (median, baseline in the same run) | target |")
    print("| --- | --- | --- |")
    for row in rows(results):
        print("| " + " | ".join(cell.replace("|", "\\|") if i else cell for i, cell in enumerate(row)) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
