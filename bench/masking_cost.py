"""Masking cost: how fast `spar.proc.masking` masks a reviewer's output, as it streams
(`Masker`) and event by event once decoded (`mask_value`, as each monitor does).

The input is ~20 MB of JSON-lines output as a claude reviewer prints it (stream-json:
assistant text from README.md's paragraphs, Read tool calls and their results holding
spar's own source files, line-numbered and JSON-escaped), seeded, with 3 credentials of 40
characters printed 8 times each in clear (`--printed N`; `--blobs 0.3`: 30% of the files
read are MIME base64 instead, a line break to read every 77 bytes). It is fed in 64 KiB
chunks (`--chunk`; the size the process layer reads at most) to this tree's masker and to
the one of a git revision (`--against`, main by default: its spar/proc/masking.py loaded
alone), alternating; median of 5 (`--repeat`). `--worst`: 3 MB of one escape repeated.

    python bench/masking_cost.py [--quick] [--repeat N] [--against REV] [--mb N] [--blobs SHARE]
                                 [--credentials N] [--printed N] [--chunk BYTES] [--worst]
"""

from __future__ import annotations

import argparse
import base64
import importlib.util
import json
import random
import statistics
import string
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent
CHUNK = 64 * 1024


def _secrets(rng: random.Random, count: int) -> list[str]:
    alphabet = string.ascii_letters + string.digits
    prefixes = ["sk-ant-api03-", "sk-proj-", "ghp_"] + ["tok-"] * (count - 3)
    return [p + "".join(rng.choice(alphabet) for _ in range(40 - len(p))) for p in prefixes[:count]]


def _events(rng: random.Random, sources: list[str], prose: list[str], blobs: float) -> list[str]:
    """One turn: assistant text, a Read call and its result (a source file, numbered; or,
    for a share `blobs` of them, a file of MIME base64, every line break one to look at)."""
    text = "\n\n".join(rng.sample(prose, 3))
    path = rng.choice(sources)
    lines = Path(ROOT / path).read_text(encoding="utf-8").splitlines()[:rng.randint(40, 200)]
    if rng.random() < blobs:
        lines = base64.encodebytes(rng.randbytes(60 * len(lines))).decode().splitlines()
    numbered = "\n".join(f"{i + 1:>6}\u2192{line}" for i, line in enumerate(lines))
    tool = f"toolu_{rng.getrandbits(64):016x}"
    return [
        json.dumps({"type": "assistant", "message": {"content": [{"type": "text", "text": text}]}},
                   separators=(",", ":")),
        json.dumps({"type": "assistant", "message": {"content": [
            {"type": "tool_use", "id": tool, "name": "Read", "input": {"file_path": f"/w/{path}"}}]}},
            separators=(",", ":")),
        json.dumps({"type": "user", "message": {"content": [
            {"type": "tool_result", "tool_use_id": tool, "content": numbered}]}}, separators=(",", ":")),
    ]


def build_input(megabytes: float, blobs: float = 0.0, credentials: int = 3, printed: int = 8,
                seed: int = 7) -> tuple[bytes, list[str]]:
    """The output, and the credentials (the first 3 printed `printed` times each; others only known)."""
    rng = random.Random(seed)
    sources = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "spar").rglob("*.py"))
    prose = [p.strip() for p in (ROOT / "README.md").read_text(encoding="utf-8").split("\n\n") if len(p) > 80]
    secrets = _secrets(rng, credentials)
    lines: list[str] = []
    size = 0
    while size < megabytes * 1e6:
        for line in _events(rng, sources, prose, blobs):
            lines.append(line)
            size += len(line) + 1
    for secret in secrets[:3] * printed:  # each credential in clear in 8 assistant texts
        at = rng.randrange(len(lines)) // 3 * 3
        lines.insert(at, json.dumps({"type": "assistant", "message": {
            "content": [{"type": "text", "text": f"the key is {secret}, as printed"}]}}))
    return ("\n".join(lines) + "\n").encode(), secrets


def load_masking(rev: str) -> ModuleType:
    """spar/proc/masking.py as it is at git revision `rev`, loaded alone."""
    source = subprocess.run(["git", "show", f"{rev}:spar/proc/masking.py"], cwd=ROOT, check=True,
                            capture_output=True).stdout
    path = Path(tempfile.mkdtemp(prefix="spar-masking-")) / "masking_at_rev.py"
    path.write_bytes(source)
    spec = importlib.util.spec_from_file_location("masking_at_rev", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def stream_once(module: ModuleType, data: bytes, secrets: list[str], chunk: int = CHUNK) -> tuple[float, int]:
    """Seconds to mask `data` in `chunk`-byte pieces, and how many strings were masked."""
    masker = module.Masker(module.secrets_of(secrets))
    start = time.perf_counter()
    size = 0
    for at in range(0, len(data), chunk):
        size += len(masker.feed(data[at:at + chunk]))
    size += len(masker.flush())
    return time.perf_counter() - start, masker.count


WORST = {  # 3 MB of one sequence, each a piece of a view
    "%41": b"%41" * 1_000_000,
    "\\u0041": b"\\u0041" * 500_000,
    "16 base64 characters and a line break": (b"A" * 16 + b"\n") * 176_000,
}


def worst(sides: dict[str, ModuleType], repeat: int) -> None:
    secrets = ["sk-ant-api03-" + "Q" * 27]
    for label, data in WORST.items():
        row = [f"{name} {statistics.median(stream_once(module, data, secrets)[0] for _ in range(repeat)):.2f} s"
               for name, module in sides.items()]
        print(f"  {label}, {len(data) / 1e6:.1f} MB: " + ", ".join(row))


def events_once(module: ModuleType, data: bytes, secrets: list[str]) -> tuple[float, int]:
    """Seconds for `mask_value` of every line of `data`, decoded (as a monitor masks each
    event), and how many strings were masked; the decoding is not timed."""
    events = [json.loads(line) for line in data.splitlines()]
    masks = module.secrets_of(secrets)
    start = time.perf_counter()
    count = sum(module.mask_value(event, masks)[1] for event in events)
    return time.perf_counter() - start, count


def _report(title: str, sides: dict[str, ModuleType], times: dict[str, list[float]], counts: dict[str, int],
            mb: float) -> None:
    print(title)
    base = statistics.median(next(iter(times.values())))
    for name in sides:
        median = statistics.median(times[name])
        print(f"  {name:>10}: {median:6.3f} s  {mb / median:6.1f} MB/s  {median / base:4.2f}x  "
              f"masked {counts[name]}  (min {min(times[name]):.3f} s, max {max(times[name]):.3f} s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="5 MB, 3 repetitions")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--mb", type=float, default=20.0)
    parser.add_argument("--against", default="main", help="git revision to compare with (default main)")
    parser.add_argument("--worst", action="store_true", help="3 MB of one escape or wrapped line repeated")
    parser.add_argument("--chunk", type=int, default=CHUNK, help="bytes a feed (default 65536)")
    parser.add_argument("--credentials", type=int, default=3, help="credentials known (3 or more; 3 printed)")
    parser.add_argument("--printed", type=int, default=8, help="times each of 3 credentials is printed (default 8)")
    parser.add_argument("--blobs", type=float, default=0.0,
                        help="share of tool results that are MIME base64 files (default 0)")
    args = parser.parse_args()
    megabytes, repeat = (5.0, 3) if args.quick else (args.mb, args.repeat)
    sys.path.insert(0, str(ROOT))
    from spar.proc import masking as current

    sides = {args.against: load_masking(args.against), "this tree": current}
    if args.worst:
        return worst(sides, repeat)
    data, secrets = build_input(megabytes, args.blobs, max(3, args.credentials), args.printed)
    mb = len(data) / 1e6
    what = f"{mb:.1f} MB of JSON-lines reviewer output ({args.blobs:.0%} of the files base64)"
    for title, measure in ((f"masking {what} in {args.chunk:,}-byte chunks",
                            lambda module: stream_once(module, data, secrets, args.chunk)),
                           (f"mask_value of each of its {len(data.splitlines()):,} events, decoded",
                            lambda module: events_once(module, data, secrets))):
        times: dict[str, list[float]] = {name: [] for name in sides}
        counts: dict[str, int] = {}
        for _ in range(repeat):
            for name, module in sides.items():
                seconds, counts[name] = measure(module)
                times[name].append(seconds)
        _report(f"{title}, {len(secrets)} credentials of 40 characters, median of {repeat}", sides, times, counts, mb)


if __name__ == "__main__":
    main()
