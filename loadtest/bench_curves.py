#!/usr/bin/env python3
"""Curves of Strata against etcd leader-direct: put throughput and p99 against the number of clients
and against the value size, and (with --failover) every put's latency over time through a kill -9 of
Strata's leader.

`run` starts a fresh 3-member etcd and a fresh 3-node Strata behind Envoy (as bench_compare.py does)
and, for each point, runs strata-bench's put workload (keys uniform over 10,000) a few seconds
against etcd's leader, then through Envoy against Strata, alternating, `--rounds` times. Axes:

- clients 1, 4, 16, 64, 256, 1024 (256-byte values; connections min(clients, 16));
- value size 64 B, 1 KiB, 16 KiB, 256 KiB, 1 MiB (16 clients on 16 connections).

Each point's figures are the rounds pooled (ops over seconds; p50/p99 the mean of the rounds). The
failover timeline waits until puts are fast again, then sends a put through Envoy's REST API every
5 ms (open loop on 32 keep-alive connections, bounded in count and time), kills Strata's leader by
its pid after 2 s, and records each put's send time, latency, status and how late it was sent.
Everything goes to one JSON file, which plot_bench.py turns into PNGs.

`down` stops everything `run` started (by the pids it recorded). Standard library only.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import http.client
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from bench_compare import (RECORDS, Ports, down, etcd_up, machine, measure, run_bench, side_args, strata_roles,
                           strata_up)

ROOT = Path(__file__).resolve().parents[1]
CLIENTS = [1, 4, 16, 64, 256, 1024]
VALUE_SIZES = [64, 1024, 16 * 1024, 256 * 1024, 1024 * 1024]
SIDES = ("etcd-leader", "strata")
# bench_compare.py's COMMON without the value size, which is an axis here.
COMMON = ["--records", str(RECORDS), "--key-size", "8", "--no-progress", "--threads", "2"]


def point(runs: list[dict]) -> dict:
    """One point of a curve from its rounds."""
    ops = sum(r["ops"] for r in runs)
    secs = sum(r["duration_s"] for r in runs)
    return {"ops_per_s": ops / secs if secs else 0.0, "errors": sum(r["errors"] for r in runs),
            "p50_ms": sum(r["p50_ms"] for r in runs) / len(runs), "p99_ms": sum(r["p99_ms"] for r in runs) / len(runs),
            "rounds": runs}


def curve(args, ports: Ports, run_dir: Path, pids: dict, axis: str, xs: list[int]) -> dict:
    out = {"x": xs, **{side: [] for side in SIDES}}
    for x in xs:
        clients, value = (x, 256) if axis == "clients" else (16, x)
        rounds = {side: [] for side in SIDES}
        for rnd in range(args.rounds):
            for side in SIDES:
                path = run_dir / "runs" / f"{axis}-{x}-{side}-r{rnd}.json"
                bench_args = [*side_args(side, ports), *COMMON, "--workload", "put", "--no-load",
                              "--clients", str(clients), "--connections", str(min(clients, 16)),
                              "--value-size", str(value), "--duration", f"{args.seconds}s",
                              "--request-timeout", "10s"]
                summary, cpu = measure(side, run_dir, ports, pids[side],
                                       lambda: run_bench(Path(args.bench), bench_args, path, args.seconds + 60))
                r = {"ops": summary["ops"], "errors": summary["errors"], "duration_s": summary["duration_s"],
                     "p50_ms": summary["latency"]["p50_us"] / 1000, "p99_ms": summary["latency"]["p99_us"] / 1000,
                     "server_cpu_s": cpu["server_cpu_s"], "client_cpu_s": cpu["client_cpu_s"]}
                rounds[side].append(r)
                print(f"  {axis} {x:>8} {side:<11} round {rnd + 1}: {r['ops'] / r['duration_s']:>9,.0f} puts/s "
                      f"p99 {r['p99_ms']:.1f} ms, {r['errors']} errors", flush=True)
        for side in SIDES:
            out[side].append(point(rounds[side]))
    return out


_local = threading.local()


def put_once(host: str, port: int, path: str, due: float, t0: float) -> dict:
    """One REST put on this thread's keep-alive connection (a new one after an error). Latency runs
    from when the put was actually sent; `late_ms` is how long after its due time that was."""
    start = time.monotonic()
    status = "ok"
    try:
        conn = getattr(_local, "conn", None) or http.client.HTTPConnection(host, port, timeout=5)
        _local.conn = conn
        conn.request("PUT", path, body=b"x")
        r = conn.getresponse()
        r.read()
        if r.status != 200:
            status = str(r.status)
    except (OSError, http.client.HTTPException) as e:
        status = "timeout" if isinstance(e, TimeoutError) else "connection"
        if getattr(_local, "conn", None) is not None:
            _local.conn.close()
        _local.conn = None
    return {"t_s": start - t0, "latency_ms": (time.monotonic() - start) * 1000,
            "late_ms": (start - due) * 1000, "status": status}


def settle(ports: Ports, limit_s: float = 30.0) -> None:
    """Waits (bounded) until ten puts in a row take under 50 ms: the curves before leave work behind
    (flushes and compactions of large values) that would otherwise show in the timeline."""
    deadline, fast = time.monotonic() + limit_s, 0
    while fast < 10 and time.monotonic() < deadline:
        r = put_once("127.0.0.1", ports.gateway, "/v1/kv/failover-settle", time.monotonic(), 0.0)
        fast = fast + 1 if r["status"] == "ok" and r["latency_ms"] < 50 else 0
        time.sleep(0.05)


def failover_timeline(ports: Ports, run_dir: Path, seconds: float, kill_at_s: float, interval_ms: int) -> dict:
    """A put every `interval_ms` through Envoy's REST API; kill -9 of Strata's leader at `kill_at_s`."""
    settle(ports)
    roles = strata_roles(run_dir, ports)
    results, killed_at = [], None
    t0 = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=32) as pool:
        futures = []
        for i in range(int(seconds * 1000 / interval_ms)):
            due = t0 + i * interval_ms / 1000
            time.sleep(max(0.0, due - time.monotonic()))
            if killed_at is None and time.monotonic() - t0 >= kill_at_s:
                os.kill(roles["leader"], signal.SIGKILL)
                killed_at = time.monotonic() - t0
            futures.append(pool.submit(put_once, "127.0.0.1", ports.gateway, f"/v1/kv/failover-probe-{i}", due, t0))
        for f in futures:
            results.append(f.result())
    results.sort(key=lambda r: r["t_s"])
    print(f"  failover: killed leader pid {roles['leader']} at {killed_at:.2f} s; "
          f"{sum(r['status'] != 'ok' for r in results)} of {len(results)} puts failed; "
          f"slowest {max(r['latency_ms'] for r in results):.0f} ms; "
          f"sent late by up to {max(r['late_ms'] for r in results):.0f} ms", flush=True)
    return {"interval_ms": interval_ms, "killed_at_s": killed_at, "puts": results}


def git_commit() -> str:
    try:
        return subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, timeout=10).stdout.strip()
    except OSError:
        return "unknown"


def run(args: argparse.Namespace) -> int:
    run_dir = Path(args.run_dir).resolve()
    ports = Ports(args.port_offset)
    bin_dir = Path(args.bin_dir)
    down(bin_dir, run_dir)
    shutil.rmtree(run_dir, ignore_errors=True)
    (run_dir / "runs").mkdir(parents=True)
    load_before = os.getloadavg()[0]
    print(f"machine: {machine()}; load average before: {load_before:.2f}", flush=True)
    etcd_pids = etcd_up(Path(args.etcd), run_dir, ports)
    strata_pids = strata_up(bin_dir, Path(args.envoy), run_dir, ports)
    pids = {"etcd-leader": etcd_pids, "strata": strata_pids}
    doc = {"machine": machine(), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "commit": git_commit(),
           "seconds": args.seconds, "rounds": args.rounds, "load_average_before": load_before}
    for axis, xs in (("clients", CLIENTS), ("value_size", VALUE_SIZES)):
        if axis in args.axes.split(","):
            doc[axis] = curve(args, ports, run_dir, pids, axis, xs)
    if args.failover:
        doc["failover"] = failover_timeline(ports, run_dir, seconds=6.0, kill_at_s=2.0, interval_ms=5)
    doc["load_average_after"] = os.getloadavg()[0]
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=1))
    print(f"curves: {out} (plot with `./dev bench-plot`)")
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--run-dir", required=True)
    r.add_argument("--out", required=True, help="the JSON file to write")
    r.add_argument("--bench", required=True, help="strata-bench built with --features etcd")
    r.add_argument("--etcd", required=True)
    r.add_argument("--bin-dir", required=True, help="directory of the release strata-node and strata-cluster")
    r.add_argument("--envoy", required=True)
    r.add_argument("--seconds", type=int, default=3, help="length of each run (one side, one point)")
    r.add_argument("--rounds", type=int, default=1, help="interleaved rounds per point")
    r.add_argument("--axes", default="clients,value_size", help="which curves (comma-separated; may be empty)")
    r.add_argument("--failover", action="store_true", help="also a put timeline through a kill of the leader")
    r.add_argument("--port-offset", type=int, default=0, help="added to every port (21301-21491 by default)")
    d = sub.add_parser("down")
    d.add_argument("--run-dir", required=True)
    d.add_argument("--bin-dir", required=True, help="directory of strata-cluster")
    args = p.parse_args()
    run_dir = Path(args.run_dir).resolve()
    if args.cmd == "down":
        down(Path(args.bin_dir), run_dir)
        return 0

    def on_signal(signum, _frame):
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        return run(args)
    finally:
        down(Path(args.bin_dir), run_dir)


if __name__ == "__main__":
    sys.exit(main())
