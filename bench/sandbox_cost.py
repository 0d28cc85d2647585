"""What Spar's kernel sandbox adds to a round (issue 33): `spar run` with 3 instant
`command` reviewers on the small repository, `[sandbox] mode = "off"` against
`"required"` (every reviewer started in bwrap), alternating, medians; the difference is
what the sandbox costs a round (its probe, each reviewer's jail and scratch HOME).

    python bench/sandbox_cost.py [--repeat N]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from harness import PYTHON, Series, clean_env, machine_line, remove_tree, run_measured, table, with_bytecode, work_dir
from repos import RepoInfo, small_repo
from round_cost import ANGLES, _tree

from spar.proc.sandbox import Bind, Jail, find_bwrap, jail_argv

REVIEWERS = 3
STARTS = 30  # samples of one program's start, in a jail and not


def _config(tmp: Path, info: RepoInfo, mode: str) -> Path:
    result = tmp / "result.json"
    result.write_text(json.dumps({
        "reviewed_head": info.head[:12], "verdict": "no_blocking_findings",
        "angles_checked": [{"angle": a, "result": "looked"} for a in ANGLES],
        "angles_unchecked": [], "findings": [], "limits": ""}))
    lines = []
    for n in range(REVIEWERS):
        # the answer's path is an argument of its own: the sandbox shows the files argv names
        lines += ["[[reviewers]]", f'name = "r{n}"', 'preset = "command"', f'argv = ["/bin/cat", "{result}"]', ""]
    lines += ["[sandbox]", f'mode = "{mode}"', ""]
    path = tmp / f"spar-{mode}.toml"
    path.write_text("\n".join(lines))
    return path


def measure(repeat: int) -> dict:
    info = small_repo()
    tmp = work_dir("sandbox")
    (tmp / "xdg").mkdir()
    samples = {"off": Series(), "required": Series()}
    cpu = {"off": Series(), "required": Series()}
    n = 0
    try:
        for i in range(repeat + 1):  # the first pass warms the bytecode and the caches
            for mode in ("off", "required") if i % 2 else ("required", "off"):
                n += 1
                out = tmp / f"s{n}" / "r1"
                out.parent.mkdir()  # a series outside a repository is made by its user
                env = with_bytecode(clean_env(SPAR_CONFIG=str(_config(tmp, info, mode)),
                                              XDG_CONFIG_HOME=str(tmp / "xdg")), True)
                wall, spent = _tree([PYTHON, "-m", "spar", "run", "--stage", "code", "--base", info.base,
                                     "--head", info.head, "--out", str(out)], tmp, cwd=info.path, env=env)
                rj = json.loads((out / "round.json").read_text())
                assert [r["status"] for r in rj["reviewers"]] == ["completed"] * REVIEWERS, rj["reviewers"]
                assert (rj["sandbox"]["kind"] == "bwrap") == (mode == "required"), rj["sandbox"]
                remove_tree(out.parent)
                if i:
                    samples[mode].add(wall)
                    cpu[mode].add(spent)
        return {"repeat": repeat, **_one_start(tmp), **{f"{m}_wall": s.median for m, s in samples.items()},
                **{f"{m}_cpu": s.median for m, s in cpu.items()},
                "spread": {m: s.spread() for m, s in samples.items()}}
    finally:
        remove_tree(tmp)


def _one_start(tmp: Path) -> dict:
    """One program's start and end (`true`), bare and in a jail like a reviewer's: the
    sandbox's cost per reviewer process, less disturbed by a busy machine than a round."""
    bwrap = find_bwrap(None)
    assert bwrap is not None, "bwrap is not installed"
    jail = Jail(bwrap, cwd=str(tmp), private=("/tmp",), binds=(Bind(str(tmp), str(tmp)),))
    bare, jailed = Series(), Series()
    for _ in range(STARTS):
        bare.add(run_measured(["/usr/bin/true"]).wall)
        jailed.add(run_measured(jail_argv(jail, ["/usr/bin/true"])).wall)
    return {"start_bare": bare.median, "start_jailed": jailed.median}


def render(f: dict) -> str:
    added = f["required_wall"] - f["off_wall"]
    rows = [["3 instant reviewers, wall", f"{f['required_wall']:.3f} s", f"{f['off_wall']:.3f} s",
             f"{added:+.3f} s ({added / REVIEWERS * 1000:+.0f} ms a reviewer)"],
            ["the same, CPU of spar and all it started", f"{f['required_cpu']:.3f} s", f"{f['off_cpu']:.3f} s",
             f"{f['required_cpu'] - f['off_cpu']:+.3f} s"],
            [f"one program's start and end (`true`), median of {STARTS}", f"{f['start_jailed'] * 1000:.1f} ms",
             f"{f['start_bare'] * 1000:.1f} ms", f"{(f['start_jailed'] - f['start_bare']) * 1000:+.1f} ms"]]
    return table(f"The kernel sandbox's cost, small repository, median of {f['repeat']}",
                 ["what", "sandbox (required)", "no sandbox (off)", "added"], rows,
                 [machine_line(), f"spread: required {f['spread']['required']}, off {f['spread']['off']}"])


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=9)
    a = p.parse_args(argv)
    print(render(measure(a.repeat)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
