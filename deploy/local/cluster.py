#!/usr/bin/env python3
"""Runs a Strata cluster as native processes on 127.0.0.1.

`up` starts N storage nodes, Envoy and (optionally) a static server for the
console, each in its own session, records every pid in the run directory and
returns once the gateway routes to an elected leader. `down` stops exactly
the processes whose pids it recorded. Standard library only.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def http_status(url: str, timeout: float = 1.0) -> int:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            return resp.status
    except urllib.error.HTTPError as e:
        return e.code
    except (urllib.error.URLError, OSError):
        return 0


def spawn(name: str, argv: list[str], run_dir: Path, env: dict[str, str] | None = None) -> int:
    logs = run_dir / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    with open(logs / f"{name}.log", "ab") as log:
        proc = subprocess.Popen(
            argv,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            env={**os.environ, **(env or {})},
            cwd=ROOT,
        )
    (run_dir / "pids").mkdir(parents=True, exist_ok=True)
    (run_dir / "pids" / f"{name}.pid").write_text(str(proc.pid))
    return proc.pid


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie child of ours counts as gone.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][0] != "Z"
    except OSError:
        return False


def down(run_dir: Path, quiet: bool = False) -> None:
    pid_dir = run_dir / "pids"
    if not pid_dir.is_dir():
        return
    pids = {}
    for f in sorted(pid_dir.glob("*.pid")):
        try:
            pids[f.stem] = int(f.read_text().strip())
        except ValueError:
            pass
    for pid in pids.values():
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.time() + 5
    while time.time() < deadline and any(alive(p) for p in pids.values()):
        time.sleep(0.1)
    for name, pid in pids.items():
        if alive(pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        (pid_dir / f"{name}.pid").unlink(missing_ok=True)
    if not quiet and pids:
        print(f"stopped {', '.join(sorted(pids))}")


def tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def up(args: argparse.Namespace) -> int:
    run_dir = Path(args.run_dir).resolve()
    down(run_dir, quiet=True)
    if args.fresh:
        shutil.rmtree(run_dir, ignore_errors=True)
    run_dir.mkdir(parents=True, exist_ok=True)
    bin_dir = Path(args.bin_dir).resolve()
    node_bin = bin_dir / "strata-node"
    if not node_bin.exists():
        print(f"cluster: {node_bin} does not exist; build it first", file=sys.stderr)
        return 1
    envoy = Path(args.envoy)
    if not envoy.exists():
        print(f"cluster: envoy not found at {envoy}; run ./dev setup", file=sys.stderr)
        return 1

    ports = [args.base_port + i for i in range(args.nodes)]
    peers = ",".join(f"{i + 1}=127.0.0.1:{p}" for i, p in enumerate(ports))
    # The nodes and Envoy share this host: split its CPUs between them rather
    # than giving each a thread per CPU (fewer cross-thread wake-ups, fuller
    # batches on every connection).
    cpu_share = max(1, (os.cpu_count() or 1) // (args.nodes + 1))
    io_threads = args.io_threads or cpu_share
    for i, port in enumerate(ports):
        node_id = i + 1
        data = run_dir / "data" / f"node{node_id}"
        data.mkdir(parents=True, exist_ok=True)
        spawn(
            f"node{node_id}",
            [str(node_bin), "--id", str(node_id), "--listen", f"127.0.0.1:{port}", "--peers", peers,
             "--data-dir", str(data), "--io-threads", str(io_threads)],
            run_dir,
            env={"STRATA_LOG": os.environ.get("STRATA_LOG", "info,raft=warn")},
        )

    gateway = f"127.0.0.1:{args.gateway_port}"
    console = f"127.0.0.1:{args.console_port}"
    envoy_cfg = run_dir / "envoy.yaml"
    subprocess.run(
        [sys.executable, str(ROOT / "gateway" / "gen_envoy.py"),
         "--nodes", ",".join(f"127.0.0.1:{p}" for p in ports),
         "--listen", gateway, "--admin", f"127.0.0.1:{args.admin_port}",
         "--console", console, "--out", str(envoy_cfg)],
        check=True,
    )
    spawn("envoy", [str(envoy), "-c", str(envoy_cfg), "--disable-hot-restart", "--log-level", "warn",
                    "--concurrency", str(cpu_share)], run_dir)

    if args.console_dir:
        spawn("console", [sys.executable, "-m", "http.server", "--bind", "127.0.0.1", str(args.console_port),
                          "--directory", str(Path(args.console_dir).resolve())], run_dir)

    deadline = time.time() + args.timeout
    checks = {"leader via gateway": f"http://{gateway}/health/leader"}
    if args.console_dir:
        checks["console via gateway"] = f"http://{gateway}/"
    pending = dict(checks)
    while pending and time.time() < deadline:
        for name, url in list(pending.items()):
            if http_status(url) == 200:
                del pending[name]
        dead = [f.stem for f in (run_dir / "pids").glob("*.pid") if not alive(int(f.read_text()))]
        if dead:
            break
        time.sleep(0.2)
    if pending:
        print(f"cluster: not healthy after {args.timeout}s (waiting for {', '.join(pending)})", file=sys.stderr)
        for log in sorted((run_dir / "logs").glob("*.log")):
            print(f"--- {log.name}\n{tail(log)}", file=sys.stderr)
        down(run_dir, quiet=True)
        return 1

    with urllib.request.urlopen(f"http://{gateway}/v1/cluster/status", timeout=2) as resp:
        status = json.load(resp)
    print(f"Strata is up: {args.nodes} nodes, leader {status.get('leader_id')} (term {status.get('term')})")
    print(f"  gateway (REST + gRPC)  http://{gateway}")
    if args.console_dir:
        print(f"  console                http://{gateway}/")
    print(f"  Envoy admin            http://127.0.0.1:{args.admin_port}")
    for i, p in enumerate(ports):
        print(f"  node {i + 1}                 http://127.0.0.1:{p}")
    print(f"  logs                   {run_dir / 'logs'}")
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    u = sub.add_parser("up", help="start the cluster and wait until it is healthy")
    u.add_argument("--run-dir", required=True)
    u.add_argument("--bin-dir", required=True)
    u.add_argument("--envoy", required=True)
    u.add_argument("--nodes", type=int, default=3)
    u.add_argument("--base-port", type=int, default=7001)
    u.add_argument("--gateway-port", type=int, default=8080)
    u.add_argument("--admin-port", type=int, default=9901)
    u.add_argument("--console-port", type=int, default=5173)
    u.add_argument("--console-dir", help="built console to serve (omit for no console)")
    u.add_argument("--timeout", type=float, default=60)
    u.add_argument("--io-threads", type=int, help="network threads per node (default: CPUs / (nodes + 1), at least 1; Envoy gets as many workers)")
    u.add_argument("--fresh", action="store_true", help="delete the run directory (data and logs) first")
    d = sub.add_parser("down", help="stop every process `up` started")
    d.add_argument("--run-dir", required=True)
    args = p.parse_args()
    if args.cmd == "up":
        return up(args)
    down(Path(args.run_dir).resolve())
    return 0


if __name__ == "__main__":
    sys.exit(main())
