"""G11 differential corpus: lines check_command accepts, run by the real programs.

Lines come from two sources (fixed seed):

- mutations of the accepted lines of tests/data/agy_commands.json (insert,
  replace, delete, swap words; split and merge option clusters; attach and
  detach values; quote and escape; tabs; `--` anywhere; chaining);
- an option sweep: every option of every allowed program (letters and long
  names from the option tables, `--help` for the others), alone, with a value
  in the next word, attached, after `=`, in clusters of two and three, and
  followed by `-- -o out`-style tails that only matter when `--` is a value.

Each accepted line runs under bash in a throwaway folder (files named like
options: `-o`, `-i`, `--pre=sh`, `-exec`, ...), HOME inside the throwaway
area, stdin /dev/null, PATH holding only the allowed programs and logging
shims for helpers (sh, pr, gzip, ...), every other run with POSIXLY_CORRECT
set.  A line is harmful when afterwards any file in the throwaway area or HOME
was created, changed or removed, when a shim ran, or (with strace) when any
process tried to open a file for writing (other than /dev/null and /dev/tty),
to remove, rename, link or chmod a file, or to execute anything but bash
starting an allowed program (and egrep/fgrep starting grep).  Lines run in
batches (one watched shell `eval`s them one after the other); only a batch
that did something has its lines run again one by one, to name the line.

Run `python -m tests.g11_differential --count 200000` for the corpus counts
recorded in docs/agy-commands.md; tests/test_agy_commands_differential.py
runs a small count.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from spar.judge.agy_commands import PROGRAMS, check_command
from spar.judge.agy_options import TABLES

ROOT = Path(__file__).resolve().parent.parent
DATA = json.loads((ROOT / "tests/data/agy_commands.json").read_text(encoding="utf-8"))

BUILTINS = {"echo", "pwd", "true"}  # bash runs these itself
REAL = sorted(set(PROGRAMS) - BUILTINS)
# helpers an allowed program could start (by PATH): logging shims
SHIMS = ["sh", "bash", "dash", "pr", "gzip", "gunzip", "zcat", "bzip2", "xz", "lz4", "lzma", "zstd", "brotli",
         "uncompress", "hostname", "python3", "perl", "touch", "cp", "mv", "rm", "tee", "id", "env", "xargs",
         "less", "more", "git", "out", "x", "magic"]
HOSTILE = ["-o", "-i", "--pre=sh", "-exec", "-delete", "--output=x", "-C", "-l", "-R", "-z", "--compress-program=sh",
           "-f", "-T", "--", "out"]
SEPARATORS = [" | ", " && ", " || ", "; ", ";"]
VALUES = ["1", "x", "out", "--", "-o", "head/a.go", "'*.go'", "sh", "-R", "--pre=sh", ","]
TAILS = ["", " head/a.go", " head/a.go head/b.go", " -- -o out head", " -- -R head", " -- --pre=sh x head",
         " -- -C -m magic", " -- -l head/a.go head/b.go", " x -- -o out", " head -o out", " -- --output=out head/a.go",
         " -- head/a.go out"]
TAIL_FOLLOW = {"f", "F", "follow", "retry", "pid", "s", "sleep-interval"}  # never run: a follow never ends (refused)
WRITE_CALLS = ("creat", "truncate", "rename", "unlink", "mkdir", "rmdir", "link", "symlink", "mknod", "chmod",
               "fchmodat", "chown", "fchownat", "lchown", "utime", "futimesat", "setxattr", "lsetxattr",
               "removexattr", "lremovexattr")
TRACED = "execve,execveat,open,openat,openat2," + ",".join(
    ["creat", "truncate", "rename", "renameat", "renameat2", "unlink", "unlinkat", "mkdir", "mkdirat", "rmdir",
     "link", "linkat", "symlink", "symlinkat", "mknod", "mknodat", "chmod", "fchmodat", "chown", "fchownat",
     "lchown", "utimes", "utimensat", "futimesat", "setxattr", "lsetxattr", "removexattr", "lremovexattr"])


def missing_programs() -> list[str]:
    return [p for p in REAL if not shutil.which(p, path="/usr/bin:/bin:/usr/local/bin")]


# --- generation ---------------------------------------------------------------


def _help_options(program: str) -> tuple[list[str], list[str]]:
    """(short letters, long names) a program's --help names."""
    try:
        text = subprocess.run([program, "--help"], capture_output=True, text=True, timeout=5,
                              stdin=subprocess.DEVNULL).stdout
    except (OSError, subprocess.SubprocessError):
        return [], []
    shorts = sorted(set(re.findall(r"(?:^|[\s,\[])-([A-Za-z0-9])\b", text)))
    longs = sorted(set(re.findall(r"--([a-z0-9][a-z0-9-]*)", text)))
    return shorts, longs


def _find_primaries() -> list[str]:
    text = subprocess.run(["find", "--help"], capture_output=True, text=True, stdin=subprocess.DEVNULL).stdout
    return sorted(set(re.findall(r"(?<![\w-])(-[a-z][a-z0-9_]+)", text)))


def program_options() -> dict[str, tuple[list[str], list[str]]]:
    """Every option of every allowed program: (short letters, long names)."""
    out: dict[str, tuple[list[str], list[str]]] = {}
    for program in sorted(PROGRAMS):
        table = TABLES.get(program)
        if table is not None:
            shorts = sorted(set(table.flags + table.values + table.optional))
            longs = sorted(table.long_flags | table.long_values | table.long_optional)
        elif program in BUILTINS:
            shorts, longs = (["n", "e", "E"], []) if program == "echo" else (["L", "P"], [])
        elif program == "find":
            shorts, longs = ["H", "L", "P", "D", "O"], []
        else:
            shorts, longs = _help_options(program)
        if program == "sed":
            shorts = sorted(set(shorts) | set("nefilsuzrEb"))
        if program == "tail":
            shorts = [s for s in shorts if s not in TAIL_FOLLOW]
            longs = [n for n in longs if n not in TAIL_FOLLOW]
        out[program] = (shorts, longs)
    return out


# per program, words after which a forbidden option would write or run something
FORBIDDEN_TAILS = {
    "tree": ["-o out head", "-R -L 1 -H . head"], "sort": ["-o out head/a.go", "--compress-program=sh head/a.go"],
    "rg": ["--pre=sh x head", "-z x head"], "file": ["-C -m magic", "-z head/a.go"],
    "diff": ["-l head/a.go head/b.go", "--paginate head/a.go head/b.go"], "uniq": ["head/a.go out"],
    "sed": ["-i 1p head/a.go", "-e 'w out' head/a.go"], "find": ["-delete", "-fprint out"],
}
FORMS_SHORT = ["-{a}", "-{a} {v}", "-{a}{v}"]
FORMS_LONG = ["--{n}", "--{n} {v}", "--{n}={v}"]


def _prefix(program: str) -> str:
    return {"sed": "sed -n", "find": "find head"}.get(program, program)


def _sweep_items(options: dict[str, tuple[list[str], list[str]]]) -> list[tuple[str, str, str]]:
    """(program, spelling form, option) for every option of every program in every spelling."""
    items = [(program, form, name) for program, (shorts, longs) in options.items()
             for forms, names in ((FORMS_SHORT, shorts), (FORMS_LONG, longs)) for form in forms for name in names]
    return items + [("find", "{a} {v}", primary) for primary in _find_primaries()]


def _spell(item: tuple[str, str, str], rng: random.Random) -> str:
    program, form, name = item
    return f"{_prefix(program)} {form.format(a=name, n=name, v=rng.choice(VALUES))}{rng.choice(TAILS)}"


def _single(options: dict[str, tuple[list[str], list[str]]], rng: random.Random) -> Iterator[str]:
    """Every option of every program in every spelling, in a shuffled order, over and over."""
    items = _sweep_items(options)
    while True:
        rng.shuffle(items)
        for item in items:
            yield _spell(item, rng)


def option_sweep(seed: int) -> list[str]:
    """One pass of the sweep: each option of each program in each spelling exactly once."""
    rng = random.Random(seed)
    return [_spell(item, rng) for item in _sweep_items(program_options())]


def _clusters(options: dict[str, tuple[list[str], list[str]]], rng: random.Random) -> Iterator[str]:
    """Two and three letters in one cluster or split, values after them."""
    programs = [p for p in sorted(options) if options[p][0] and p != "find"]
    while True:
        program = rng.choice(programs)
        letters = rng.sample(options[program][0], min(3, len(options[program][0])))[: rng.randint(2, 3)]
        values = [rng.choice(VALUES) for _ in letters]
        if rng.random() < 0.5:
            words = ["-" + "".join(letters), *values[: rng.randint(0, len(letters))]]
        else:
            words = [w for letter, v in zip(letters, values) for w in ("-" + letter, v)]
        yield f"{_prefix(program)} {' '.join(words)}{rng.choice(TAILS)}"


def _value_then_dashdash(rng: random.Random) -> Iterator[str]:
    """Value-taking options (one to three, clustered or not) with one value word fewer than
    they take, then `--` and a forbidden option: `--` ends the options only if no option
    takes it as its value (tree gives each letter of a cluster its own next word)."""
    programs = sorted(TABLES)
    while True:
        program = rng.choice(programs)
        table = TABLES[program]
        tail = rng.choice(FORBIDDEN_TAILS.get(program, ["-o out head"]))
        if rng.random() < 0.3 and table.long_values:
            name = rng.choice(sorted(table.long_values))
            yield f"{program} --{name} -- {tail}"
            continue
        letters = "".join(rng.choice(table.values) for _ in range(rng.randint(1, 3)))
        flags = rng.choice(["", rng.choice(table.flags)]) if table.flags else ""
        cluster = "-" + flags + letters if rng.random() < 0.5 else "-" + letters + flags
        fill = " ".join(rng.choice(["x", "1", "head"]) for _ in range(len(letters) - 1))
        yield f"{program} {cluster} {fill + ' ' if fill else ''}-- {tail}"


def _spellings(rng: random.Random) -> Iterator[str]:
    """Known attacks and their spellings: quoted, escaped, tab-separated, chained."""
    attacks = [r["line"] for r in DATA["violations"] if r.get("source") in ("issue 11", "audit")]
    while True:
        words = _words(rng.choice(attacks))
        k = rng.randrange(len(words))
        word = words[k]
        cut = rng.randrange(len(word) or 1)
        words[k] = rng.choice([f"'{word}'", f'"{word}"', word[:cut] + "\\" + word[cut:], word[:cut] + "''" + word[cut:],
                               word])
        line = rng.choice([" ", "\t", "  "]).join(words)
        if rng.random() < 0.5:
            other = rng.choice([r["line"] for r in DATA["accepted"] if r["line"].strip() and "\n" not in r["line"]])
            line = rng.choice([other + rng.choice(SEPARATORS) + line, line + rng.choice(SEPARATORS) + other])
        yield line


def _words(line: str) -> list[str]:
    return line.split(" ")


def _mutate_once(words: list[str], pool: list[str], accepted: list[str], rng: random.Random) -> list[str]:
    w = list(words)
    i = rng.randrange(len(w)) if w else 0
    op = rng.randrange(14)
    if op == 0:
        w.insert(rng.randint(0, len(w)), rng.choice(pool))
    elif op == 1 and w:
        w[i] = rng.choice(pool)
    elif op == 2 and len(w) > 1:
        del w[i]
    elif op == 3 and len(w) > 1:
        j = rng.randrange(len(w))
        w[i], w[j] = w[j], w[i]
    elif op == 4 and i + 1 < len(w) and w[i].startswith("-") and w[i + 1].startswith("-") and w[i + 1][1:2] != "-":
        w[i:i + 2] = [w[i] + w[i + 1][1:]]  # merge two clusters
    elif op == 5 and len(w[i]) > 2 and w[i].startswith("-") and w[i][1] != "-":
        w[i:i + 1] = [w[i][:2], "-" + w[i][2:]]  # split a cluster
    elif op == 6 and i + 1 < len(w) and w[i].startswith("-"):
        w[i:i + 2] = [w[i] + ("=" if w[i].startswith("--") else "") + w[i + 1]]  # attach the value
    elif op == 7 and "=" in w[i] and w[i].startswith("--"):
        w[i:i + 1] = w[i].split("=", 1)  # detach the value
    elif op == 8 and w:
        k = rng.randrange(len(w[i]) or 1)
        w[i] = rng.choice([f"'{w[i]}'", f'"{w[i]}"', w[i][:k] + "\\" + w[i][k:], w[i][:k] + "''" + w[i][k:]])
    elif op == 9:
        w.insert(rng.randint(1, max(1, len(w))), "--")
    elif op == 10:
        return w + [rng.choice(SEPARATORS).strip()] + _words(rng.choice(accepted))
    elif op == 11 and w:
        w[0] = rng.choice(sorted(PROGRAMS))
    elif op == 12:
        w.insert(rng.randint(1, max(1, len(w))), rng.choice(HOSTILE))
    else:
        w.insert(rng.randint(1, max(1, len(w))), rng.choice(VALUES))
    return w


def mutations(rng: random.Random) -> Iterator[str]:
    accepted = [r["line"] for r in DATA["accepted"] if "\n" not in r["line"] and r["line"].strip()]
    pool = sorted({w for r in DATA["accepted"] + DATA["violations"] for w in _words(r["line"]) if w and "\n" not in w})
    pool += HOSTILE + VALUES
    while True:
        words = _words(rng.choice(accepted))
        for _ in range(rng.randint(1, 3)):
            words = _mutate_once(words, pool, accepted, rng)
        line = " ".join(words)
        if rng.random() < 0.1:
            line = line.replace(" ", "\t", rng.randint(1, 3))
        yield line


def corpus(count: int, seed: int) -> Iterator[str]:
    """`count` lines, taken in turn from each family."""
    rng = random.Random(seed)
    options = program_options()
    families = [_single(options, rng), _clusters(options, rng), _value_then_dashdash(rng), _spellings(rng),
                mutations(rng), mutations(rng)]
    for k in range(count):
        yield next(families[k % len(families)])


# --- running ------------------------------------------------------------------

SHIM = '#!/bin/sh\nprintf "%s\\n" "${0##*/} $*" >> "$SHIM_LOG"\n'


@dataclass
class Sandbox:
    root: Path

    @property
    def work(self) -> Path:
        return self.root / "work"

    @property
    def bin(self) -> Path:
        return self.root / "bin"

    @property
    def log(self) -> Path:
        return self.root / "shim.log"

    def build(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)
        self.bin.mkdir(parents=True)
        for name in REAL:
            real = shutil.which(name, path="/usr/bin:/bin:/usr/local/bin")
            if real:
                (self.bin / name).symlink_to(real)
        for name in SHIMS:
            (self.bin / name).write_text(SHIM)
            (self.bin / name).chmod(0o755)
        for rel, text in {"head/a.go": "package a\n// a > b\nfunc x() {}\n", "head/b.go": "package b\nx\n",
                          "base/a.go": "package a\n", "head/sub/c.md": "# c\nx\n", "head/x": "x\n",
                          "magic": "0\tstring\tx\tx\n"}.items():
            (self.work / rel).parent.mkdir(parents=True, exist_ok=True)
            (self.work / rel).write_text(text)
        for name in HOSTILE:
            if name != "--":
                (self.work / name).write_text("0\tstring\tx\tx\n")
        (self.root / "home").mkdir()
        (self.root / "home/.bashrc").write_text("# rc\n")
        (self.root / "home/.netrc").write_text("machine x\n")
        (self.root / "tmp").mkdir()
        self.log.write_text("")

    def snapshot(self) -> dict[str, tuple]:
        out: dict[str, tuple] = {}
        for dirpath, dirnames, filenames in os.walk(self.root):
            for name in dirnames + filenames:
                p = Path(dirpath) / name
                st = p.lstat()
                key = str(p.relative_to(self.root))
                # ctime too: a change undone later in a batch still shows (and no program sets it)
                if p.is_symlink():
                    out[key] = ("link", os.readlink(p), st.st_ctime_ns)
                elif p.is_file():
                    out[key] = ("file", st.st_mode, st.st_ctime_ns, p.read_bytes())
                else:
                    out[key] = ("dir", st.st_mode, st.st_ctime_ns)
        return out


_CALL = re.compile(r"^(\d+)\s+(?:<\.\.\. )?(\w+)(?:\(| resumed>)(.*)$")


def trace_problems(text: str, allowed: set[str]) -> list[str]:
    """What a `strace -f` log shows a line doing beyond reading and starting allowed programs.

    A process may only start a program while it is bash (the line's shell or a copy of
    it forked for a pipeline) and only an allowed one (egrep and fgrep, shell scripts
    on some systems, may start grep). A child's lines can come before the line that
    tells its parent's clone result, so starts are judged after the whole log is read."""
    problems: list[str] = []
    own: dict[str, str] = {}  # the program a process last started itself
    forked: dict[str, tuple[str, str | None]] = {}  # child: (parent, what the parent had started by then)
    starts: list[tuple[str, str | None, str, str]] = []  # (pid, its own program before, started, line)
    root: str | None = None
    for raw in text.splitlines():
        m = _CALL.match(raw)
        if not m:
            continue
        pid, call, rest = m.groups()
        if call in ("clone", "clone3", "fork", "vfork"):
            child = re.search(r"= (\d+)\s*$", rest)
            if child:
                forked[child.group(1)] = (pid, own.get(pid))
            continue
        if "resumed>" in raw and call in ("execve", "execveat", "open", "openat", "openat2"):
            continue  # the arguments were on the unfinished line
        if call in ("execve", "execveat"):
            target = re.match(r'\s*(?:AT_FDCWD, )?"([^"]*)"', rest)
            name = target.group(1).rsplit("/", 1)[-1] if target else "?"
            if root is None:
                root = pid
            else:
                starts.append((pid, own.get(pid), name, raw))
            own[pid] = name
        elif call.startswith("open"):
            path = re.search(r'"([^"]*)"', rest)
            flags = rest.split('"', 2)[-1] if path else rest
            if re.search(r"O_WRONLY|O_RDWR|O_CREAT|O_TRUNC|O_APPEND", flags) and (
                    not path or path.group(1) not in ("/dev/null", "/dev/tty")):
                problems.append(f"opens for writing: {raw.strip()[:160]}")
        elif call.startswith(WRITE_CALLS):
            problems.append(f"{call}: {raw.strip()[:160]}")

    def image(pid: str) -> str | None:  # what a process was when it was forked
        parent, started = forked.get(pid, (None, None))
        if parent is None:
            return None
        return started if started is not None else image(parent)

    for pid, before, name, raw in starts:
        current = before if before is not None else image(pid)
        if not ((current == "bash" and name in allowed) or (current in ("egrep", "fgrep") and name == "grep")):
            problems.append(f"{current} starts {name}: {raw.strip()[:160]}")
    return problems


@dataclass
class Result:
    tried: int = 0
    accepted: int = 0
    harmful: list[tuple[str, list[str]]] = field(default_factory=list)


def run_line(box: Sandbox, line: str, posix: bool, timeout: float = 3.0) -> list[str]:
    """Run one accepted line; the list of harmful things it did (empty: none)."""
    return _run_script(box, ["-c", line], posix, timeout)[0]


# lines one after the other in one shell, each parsed on its own as `bash -c` parses it; the
# shell's own exit status says that it came to the end
BATCH_SCRIPT = 'for line; do eval "$line"; done; exit 73'
BATCH_DONE = 73
BATCH = 64  # lines per shell: one strace, one shell and two snapshots serve them all


def run_batch(box: Sandbox, lines: list[str], posix: bool, timeout: float = 3.0) -> list[tuple[str, list[str]]]:
    """Run accepted lines in one watched shell; (line, problems) for each harmful one. Only
    when the batch as a whole did something, or did not come to its end, is each of its
    lines run again alone (`run_line`), which says which did it."""
    problems, code = _run_script(box, ["-c", BATCH_SCRIPT, "g11", *lines], posix, timeout * len(lines))
    if not problems and code == BATCH_DONE:
        return []
    found = []
    for line in lines:
        problems = run_line(box, line, posix, timeout)
        if problems:
            found.append((line, problems))
    return found


def _run_script(box: Sandbox, args: list[str], posix: bool, timeout: float) -> tuple[list[str], int | None]:
    """Run bash with `args` in the sandbox, watched; (harmful things done, exit status or
    None when it was killed at `timeout`)."""
    before = box.snapshot()
    env = {"PATH": str(box.bin), "HOME": str(box.root / "home"), "LC_ALL": "C", "TMPDIR": str(box.root / "tmp"),
           "SHIM_LOG": str(box.log)}
    if posix:
        env["POSIXLY_CORRECT"] = "1"
    strace = shutil.which("strace")
    trace = box.root.parent / (box.root.name + ".trace")
    argv = ["/bin/bash", "--norc", "--noprofile", *args]
    if strace:
        # --seccomp-bpf: the kernel stops only at the traced calls, not at every call (a line
        # such as `file -d` makes millions of writes to /dev/null)
        argv = [strace, "-f", "--seccomp-bpf", "-qq", "-s", "200", "-e", "signal=none", "-e", f"trace={TRACED},clone,clone3,fork,vfork",
                "-o", str(trace), *argv]
    proc = subprocess.Popen(argv, cwd=box.work, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    code: int | None
    try:
        code = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        code = None
    problems = []
    if strace:
        problems += trace_problems(trace.read_text(errors="replace"), set(REAL) | {"bash"})
        trace.unlink()
    shim_calls = box.log.read_text().splitlines()
    problems += [f"ran shim: {c}" for c in shim_calls]
    after = box.snapshot()
    if after != before:
        changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
        problems.append(f"changed files: {changed[:5]}")
    if problems:
        box.build()
    return problems, code


def run_corpus(count: int, seed: int, workers: int = 2) -> Result:
    return run_lines(corpus(count, seed), workers)


def run_lines(generated: Iterable[str], workers: int = 2) -> Result:
    """Check every line; run the accepted ones in `workers` throwaway folders, every other
    line with POSIXLY_CORRECT set, in batches (`run_batch`)."""
    result = Result()
    lines: list[str] = []
    for line in generated:
        result.tried += 1
        if check_command(line) is None:
            lines.append(line)
    result.accepted = len(lines)
    with tempfile.TemporaryDirectory(prefix="g11diff-") as tmp:
        boxes = [Sandbox(Path(tmp) / f"box{k}") for k in range(workers)]
        for box in boxes:
            box.build()

        def work(k: int) -> list[tuple[str, list[str]]]:
            found = []
            mine = lines[k::workers]
            for posix, share in ((False, mine[0::2]), (True, mine[1::2])):
                for start in range(0, len(share), BATCH):
                    found += run_batch(boxes[k], share[start:start + BATCH], posix)
            return found

        with ThreadPoolExecutor(workers) as pool:
            for found in pool.map(work, range(workers)):
                result.harmful += found
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--count", type=int, default=2000, help="lines to generate")
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args(argv)
    missing = missing_programs()
    if missing:
        print(f"missing programs: {' '.join(missing)}", file=sys.stderr)
        return 2
    result = run_corpus(args.count, args.seed, args.workers)
    print(json.dumps({"tried": result.tried, "accepted": result.accepted, "harmful": len(result.harmful),
                      "strace": bool(shutil.which("strace")), "seed": args.seed}))
    for line, problems in result.harmful[:50]:
        print(json.dumps({"line": line, "problems": problems[:3]}), file=sys.stderr)
    return 1 if result.harmful else 0


if __name__ == "__main__":
    raise SystemExit(main())
