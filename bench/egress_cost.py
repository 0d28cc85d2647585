"""What the egress proxy costs (spar/proc/egress.py): per request and per round.

Per request: one connection, one HTTP request and its 2 KiB answer from a server on
127.0.0.1, made REQUESTS times in a row three ways, medians: directly (the baseline, what a
jail without a network of its own does), through the proxy's Unix socket (CONNECT), and
through the bridge's loopback port and the proxy (the whole way a jailed reviewer's
connection takes, the jail itself aside).

Per round: `spar run` with 3 instant `command` reviewers on the small repository, every
reviewer jailed, alternating: each jail with a network of its own and the proxy (`required`)
against the jails keeping the host's network (`auto` with a bwrap that refuses
`--unshare-net`, the same run's baseline); medians.

    python bench/egress_cost.py [--repeat N] [--requests N]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from harness import PYTHON, Series, clean_env, machine_line, remove_tree, table, with_bytecode, work_dir
from repos import small_repo
from round_cost import _tree
from sandbox_cost import _config

from spar.proc.egress import BRIDGE_SCRIPT, EgressProxy, Rule, bridge_python
from spar.proc.sandbox import find_bwrap

REVIEWERS = 3
ANSWER = b"HTTP/1.1 200 OK\r\nContent-Length: 2048\r\nConnection: close\r\n\r\n" + b"x" * 2048
NO_NETNS = '#!/bin/sh\nfor a in "$@"; do [ "$a" = "--unshare-net" ] && exit 1; done\nexec BWRAP "$@"\n'


def _server() -> socket.socket:
    sock = socket.create_server(("127.0.0.1", 0), backlog=64)

    def serve() -> None:
        while True:
            try:
                conn, _ = sock.accept()
            except OSError:
                return
            with conn, contextlib.suppress(OSError):
                conn.recv(4096)
                conn.sendall(ANSWER)

    threading.Thread(target=serve, daemon=True).start()
    return sock


def _exchange(sock: socket.socket, target: str, tunnel: bool) -> None:
    if tunnel:
        sock.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
        head = b""
        while b"\r\n\r\n" not in head:
            head += sock.recv(4096)
        assert head.startswith(b"HTTP/1.1 200"), head
    sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    got = b""
    while chunk := sock.recv(65536):
        got += chunk
    assert got == ANSWER


def _timed(open_socket, target: str, tunnel: bool, count: int) -> float:
    series = Series()
    for _ in range(count):
        start = time.perf_counter()
        with open_socket() as sock:
            _exchange(sock, target, tunnel)
        series.add(time.perf_counter() - start)
    return series.median


def _free_port() -> int:
    with socket.create_server(("127.0.0.1", 0)) as probe:
        return int(probe.getsockname()[1])


def per_request(tmp: Path, count: int) -> dict:
    server = _server()
    port = server.getsockname()[1]
    target = f"127.0.0.1:{port}"
    proxy = EgressProxy(str(tmp / "p.sock"), Rule(hosts=(target,), services=(target,)))
    proxy.start()
    python = bridge_python()
    assert python is not None, "no system python3 for the bridge"
    bridge_port = _free_port()
    bridge = subprocess.Popen([python, "-I", "-S", BRIDGE_SCRIPT, proxy.socket_path, str(bridge_port), "--",
                               "sleep", "3600"], start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", bridge_port), timeout=1):
                break
            time.sleep(0.01)

        def unix() -> socket.socket:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.connect(proxy.socket_path)
            return sock

        _timed(lambda: socket.create_connection(("127.0.0.1", port)), target, False, 20)  # warm
        return {"requests": count,
                "direct": _timed(lambda: socket.create_connection(("127.0.0.1", port)), target, False, count),
                "proxy": _timed(unix, target, True, count),
                "bridge": _timed(lambda: socket.create_connection(("127.0.0.1", bridge_port)), target, True, count)}
    finally:
        os.killpg(bridge.pid, 9)
        bridge.wait()
        proxy.close()
        server.close()


def per_round(tmp: Path, repeat: int) -> dict:
    info = small_repo()
    bwrap = find_bwrap(None)
    assert bwrap is not None, "bwrap is not installed"
    shim = tmp / "shim"
    shim.mkdir()
    (shim / "bwrap").write_text(NO_NETNS.replace("BWRAP", bwrap))
    (shim / "bwrap").chmod(0o755)
    (tmp / "xdg").mkdir()
    samples = {"egress": Series(), "host": Series()}
    cpu = {"egress": Series(), "host": Series()}
    n = 0
    for i in range(repeat + 1):  # the first pass warms the bytecode and the caches
        for kind in ("egress", "host") if i % 2 else ("host", "egress"):
            n += 1
            out = tmp / f"s{n}" / "r1"
            config = _config(tmp, info, "required" if kind == "egress" else "auto")
            env = with_bytecode(clean_env(SPAR_CONFIG=str(config), XDG_CONFIG_HOME=str(tmp / "xdg")), True)
            if kind == "host":
                env["PATH"] = os.pathsep.join([str(shim), env.get("PATH", "")])
            wall, spent = _tree([PYTHON, "-m", "spar", "run", "--stage", "code", "--base", info.base,
                                 "--head", info.head, "--out", str(out)], tmp, cwd=info.path, env=env)
            rj = json.loads((out / "round.json").read_text())
            assert [r["status"] for r in rj["reviewers"]] == ["completed"] * REVIEWERS, rj["reviewers"]
            assert rj["sandbox"]["network"] == ("allowlist" if kind == "egress" else "host"), rj["sandbox"]
            remove_tree(out.parent)
            if i:
                samples[kind].add(wall)
                cpu[kind].add(spent)
    return {"repeat": repeat, **{f"{k}_wall": s.median for k, s in samples.items()},
            **{f"{k}_cpu": s.median for k, s in cpu.items()}, "spread": {k: s.spread() for k, s in samples.items()}}


def render(r: dict, f: dict) -> str:
    ms = 1000.0
    rows = [[f"one request, 2 KiB answer (median of {r['requests']})", f"{r['bridge'] * ms:.2f} ms",
             f"{r['proxy'] * ms:.2f} ms", f"{r['direct'] * ms:.2f} ms",
             f"{(r['bridge'] - r['direct']) * ms:+.2f} ms (x{r['bridge'] / r['direct']:.1f})"]]
    added = f["egress_wall"] - f["host_wall"]
    rows.append([f"3 instant reviewers, spar run wall (median of {f['repeat']})", f"{f['egress_wall']:.3f} s", "-",
                 f"{f['host_wall']:.3f} s", f"{added:+.3f} s (x{f['egress_wall'] / f['host_wall']:.2f}; "
                 f"{added / REVIEWERS * ms:+.0f} ms a reviewer)"])
    rows.append(["the same, CPU of spar and all it started", f"{f['egress_cpu']:.3f} s", "-", f"{f['host_cpu']:.3f} s",
                 f"{f['egress_cpu'] - f['host_cpu']:+.3f} s"])
    return table("The egress proxy's cost (small repository; baseline in the same run)",
                 ["what", "bridge + proxy", "proxy only", "no proxy (baseline)", "added"], rows,
                 [machine_line(), f"spread: egress {f['spread']['egress']}, host network {f['spread']['host']}"])


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=9)
    p.add_argument("--requests", type=int, default=200)
    a = p.parse_args(argv)
    tmp = work_dir("egress")
    try:
        print(render(per_request(tmp, a.requests), per_round(tmp, a.repeat)))
    finally:
        remove_tree(tmp)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
