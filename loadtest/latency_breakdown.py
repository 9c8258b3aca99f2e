#!/usr/bin/env python3
"""Where a single client's put spends its time, from the cluster's own traces, beside the physical floor.

`run` starts a fresh 3-node release cluster behind Envoy with the trace viewer (`strata-cluster up
--traces`, every request sampled), sends `--puts` puts one after the other through Envoy over gRPC
(strata-bench, one client), reads every trace back from the viewer's HTTP API and splits each put
into the stages below, using the spans Envoy and the nodes record (Envoy's ingress and egress spans,
the node's request span, `raft.propose`, and `raft.append` / `raft.apply` on every member):

  envoy in        Envoy took the request until it sent it to the leader
  to the leader   Envoy sent it until the leader's request span began (network, HTTP/2, gRPC decoding)
  to raft         the request span began until the proposal reached raft
  propose         the proposal reached raft until the leader's append began (the raft round)
  fsync, leader   the leader's append: its log write and fdatasync, on the log's I/O thread
  replicate       the leader's append began until the first follower's append began
  fsync, follower the first follower to finish: its log write and fdatasync
  commit          the later of the leader's and the first follower's append ended (a quorum durable)
                  until the leader's apply began (the follower's answer, raft's commit, the hand-over)
  apply           the leader's apply of the entry to the engine
  answer          the apply ended until the proposal's answer (the waiter woken)
  respond         the proposal's answer until Envoy's egress span ended (gRPC encoding, network)
  envoy out       until Envoy's ingress span ended

The floor beside it is measured on the same machine and disk: the p50 of a 256-byte write and
fdatasync into a file allocated ahead, in the cluster's data directory (as the raft log writes;
beside it, interleaved, the same into a file that grows with each append, as the log wrote before),
and the p50 of a 1-byte TCP round trip over loopback. A replicated durable write needs at least one
fdatasync on a quorum and a round trip, whatever the software.

Tracing every request costs time itself (docs/benchmarks.md: tracing at 100 %), so the total here is
a little above an untraced put's; the split is what the stages tell. Prints a markdown table and
writes the medians and every put's stages as JSON. `down` stops what `run` started; `run` stops it
on exit, failure and SIGINT/SIGTERM. Standard library only.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

BASE, GATEWAY, ADMIN = 21801, 21880, 21891
OTLP, UI = 21817, 21886

STAGES = [
    "envoy in", "to the leader", "to raft", "propose", "fsync, leader", "replicate",
    "fsync, follower", "commit", "apply", "answer", "respond", "envoy out",
]


def up(bin_dir: Path, envoy: Path, jaeger: Path, run_dir: Path) -> None:
    subprocess.run([str(bin_dir / "strata-cluster"), "up", "--fresh", "--run-dir", str(run_dir),
                    "--node-bin", str(bin_dir / "strata-node"), "--envoy", str(envoy),
                    "--base-port", str(BASE), "--gateway-port", str(GATEWAY), "--admin-port", str(ADMIN),
                    "--k6-port", str(GATEWAY + 2), "--k6-dashboard-port", str(GATEWAY + 3),
                    "--traces", "--jaeger", str(jaeger), "--traces-otlp-port", str(OTLP),
                    "--traces-ui-port", str(UI), "--trace-sampling", "100", "--no-canary", "--timeout", "60"],
                   check=True, timeout=120, stdout=subprocess.DEVNULL)


def down(bin_dir: Path, run_dir: Path) -> None:
    if (run_dir / "pids").is_dir():
        subprocess.run([str(bin_dir / "strata-cluster"), "down", "--run-dir", str(run_dir)],
                       timeout=60, check=False, stdout=subprocess.DEVNULL)


def fsync_floor(directory: Path, allocated: bool, n: int = 2000) -> float:
    """p50 seconds of a 256-byte write and fdatasync at the end of a file, allocated ahead or growing."""
    path = directory / "floor-fsync"
    fd = os.open(path, os.O_CREAT | os.O_RDWR | os.O_TRUNC, 0o644)
    try:
        if allocated:
            os.posix_fallocate(fd, 0, 256 * n + 4096)
        os.fsync(fd)
        buf = b"x" * 256
        took = []
        for _ in range(n):
            start = time.perf_counter()
            os.write(fd, buf)
            os.fdatasync(fd)
            took.append(time.perf_counter() - start)
        return statistics.median(took)
    finally:
        os.close(fd)
        path.unlink()


def rtt_floor(n: int = 5000) -> float:
    """p50 seconds of a 1-byte TCP round trip over loopback (an echo thread on the other end)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)

    def echo() -> None:
        conn, _ = server.accept()
        with conn:
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            while data := conn.recv(1):
                conn.sendall(data)

    t = threading.Thread(target=echo, daemon=True)
    t.start()
    client = socket.create_connection(server.getsockname())
    client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    took = []
    for _ in range(n):
        start = time.perf_counter()
        client.sendall(b"x")
        client.recv(1)
        took.append(time.perf_counter() - start)
    client.close()
    t.join(timeout=5)
    server.close()
    return statistics.median(took)


def fetch_traces(limit: int) -> list[dict]:
    url = f"http://127.0.0.1:{UI}/api/traces?service=strata-gateway&limit={limit}&lookback=1h"
    with urllib.request.urlopen(url, timeout=30) as r:
        return json.load(r)["data"]


def stages_of(trace: dict) -> dict[str, float] | None:
    """One put's stages in microseconds, or None if the trace lacks a span it needs."""
    procs = trace["processes"]
    spans = []
    for s in trace["spans"]:
        tags = {t["key"]: t["value"] for t in procs[s["processID"]].get("tags", [])}
        spans.append((s["operationName"], tags.get("strata.node_id"), s["startTime"], s["startTime"] + s["duration"]))

    def find(name: str, node=None):
        return next((x for x in spans if x[0] == name and (node is None or x[1] == node)), None)

    ingress, egress = find("ingress"), find("router nodes egress")
    request = next((x for x in spans if x[0].startswith("/strata.v1.KV/")), None)
    propose = find("raft.propose")
    if not (ingress and egress and request and propose):
        return None
    leader = propose[1]
    append, apply = find("raft.append", leader), find("raft.apply", leader)
    followers = sorted((x for x in spans if x[0] == "raft.append" and x[1] != leader), key=lambda x: x[3])
    if not (append and apply and followers):
        return None
    first = followers[0]
    quorum = max(append[3], first[3])
    return {
        "envoy in": egress[2] - ingress[2],
        "to the leader": request[2] - egress[2],
        "to raft": propose[2] - request[2],
        "propose": append[2] - propose[2],
        "fsync, leader": append[3] - append[2],
        "replicate": first[2] - append[2],
        "fsync, follower": first[3] - first[2],
        "commit": apply[2] - quorum,
        "apply": apply[3] - apply[2],
        "answer": propose[3] - apply[3],
        "respond": egress[3] - propose[3],
        "envoy out": ingress[3] - egress[3],
        "total": ingress[3] - ingress[2],
    }


def run(args: argparse.Namespace) -> int:
    run_dir = args.run_dir
    run_dir.mkdir(parents=True, exist_ok=True)
    cluster = run_dir / "cluster"
    up(args.bin_dir, args.envoy, args.jaeger, cluster)
    # Interleaved, three of each: a file allocated ahead (as the raft log's
    # segments are) and one that grows with each append.
    allocated, growing = [], []
    for _ in range(3):
        allocated.append(fsync_floor(cluster, True))
        growing.append(fsync_floor(cluster, False))
    fsync_s, growing_s = statistics.median(allocated), statistics.median(growing)
    rtt_s = rtt_floor()
    # A few puts first so that connections exist, then the measured ones.
    bench = [str(args.bench), "--target", "grpc", "--endpoints", f"http://127.0.0.1:{GATEWAY}",
             "--workload", "put", "--no-load", "--clients", "1", "--connections", "1",
             "--no-progress", "--value-size", "256"]
    subprocess.run([*bench, "--ops", "50"], check=True, timeout=120, stdout=subprocess.DEVNULL)
    time.sleep(2)
    started_us = time.time() * 1e6
    subprocess.run([*bench, "--ops", str(args.puts), "--json", str(run_dir / "bench.json")],
                   check=True, timeout=600, stdout=subprocess.DEVNULL)
    # Spans reach the viewer in batches, a few seconds after their requests.
    deadline = time.time() + 30
    puts: list[dict[str, float]] = []
    while time.time() < deadline:
        time.sleep(3)
        traces = [t for t in fetch_traces(args.puts * 3)
                  if min(s["startTime"] for s in t["spans"]) >= started_us]
        puts = [s for s in map(stages_of, traces) if s]
        if len(puts) >= args.puts * 0.95:
            break
    if not puts:
        print("no complete put traces came back from the viewer", file=sys.stderr)
        return 1
    medians = {k: statistics.median(p[k] for p in puts) for k in [*STAGES, "total"]}
    summary = json.loads((run_dir / "bench.json").read_text())
    out = {"puts_traced": len(puts), "stages_p50_us": medians, "floor": {
        "fdatasync_p50_us": fsync_s * 1e6, "fdatasync_growing_file_p50_us": growing_s * 1e6,
        "loopback_rtt_p50_us": rtt_s * 1e6},
        "untraced_client": summary, "puts": puts}
    (run_dir / "breakdown.json").write_text(json.dumps(out, indent=1))
    print(f"single-client put through Envoy, {len(puts)} traced puts, p50 of each stage (µs):\n")
    print("| stage | p50 µs |\n|---|---|")
    for k in STAGES:
        print(f"| {k} | {medians[k]:.0f} |")
    print(f"| **total (Envoy's ingress span)** | **{medians['total']:.0f}** |")
    print(f"\nfloor on this machine: fdatasync p50 {fsync_s * 1e6:.0f} µs (256 B into a file allocated ahead, "
          f"in {cluster}; {growing_s * 1e6:.0f} µs into a file that grows with each append, interleaved), "
          f"loopback TCP round trip p50 {rtt_s * 1e6:.0f} µs")
    print(f"stages add up to their own p50s, not to the total's; JSON in {run_dir / 'breakdown.json'}")
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--run-dir", type=Path, required=True)
    r.add_argument("--bin-dir", type=Path, required=True)
    r.add_argument("--bench", type=Path, required=True)
    r.add_argument("--envoy", type=Path, required=True)
    r.add_argument("--jaeger", type=Path, required=True)
    r.add_argument("--puts", type=int, default=500)
    d = sub.add_parser("down")
    d.add_argument("--run-dir", type=Path, required=True)
    d.add_argument("--bin-dir", type=Path, required=True)
    args = p.parse_args()
    if args.cmd == "down":
        down(args.bin_dir, args.run_dir / "cluster")
        return 0

    def on_signal(signum, _frame):
        down(args.bin_dir, args.run_dir / "cluster")
        sys.exit(128 + signum)

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    try:
        return run(args)
    finally:
        down(args.bin_dir, args.run_dir / "cluster")


if __name__ == "__main__":
    sys.exit(main())
