#!/usr/bin/env python3
"""Two or more Strata builds side by side on one workload, interleaved, a fresh cluster each run.

Each round starts, for every build in turn (the order alternates from round to round), a fresh
3-node release cluster behind Envoy on the same ports (strata-cluster up --fresh --no-canary), runs
strata-bench once against the gateway, reads the CPU time of the nodes and of Envoy around the run
(utime + stime from /proc/<pid>/stat), and stops the cluster. It prints one line per run, then a
markdown table of every round and each build's ratio to the first one (median and range of the
per-round ratios), and writes every run's JSON summary under the run dir.

    loadtest/bench_builds.py --run-dir /tmp/ab --envoy ENVOY --rounds 3 \
        --build before=/path/to/old/bin --build after=/path/to/new/bin \
        -- --workload batch --batch-size 100 --clients 32 --connections 8 --no-load --duration 10s

A build's directory holds its strata-node, strata-cluster and strata-bench. Every run is bounded in
time; the cluster is stopped (by the pids it recorded) on exit, failure and SIGINT/SIGTERM.
Standard library only.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench_compare import cpu_seconds, read_pids


class Cluster:
    def __init__(self, bin_dir: Path, envoy: Path, run_dir: Path, ports: tuple[int, int, int],
                 node_args: list[str]):
        self.bin_dir, self.envoy, self.run_dir = bin_dir, envoy, run_dir
        self.base, self.gateway, self.admin = ports
        self.node_args = node_args
        self.started = False

    def up(self) -> None:
        self.started = True
        cmd = [str(self.bin_dir / "strata-cluster"), "up", "--fresh", "--run-dir", str(self.run_dir),
               "--node-bin", str(self.bin_dir / "strata-node"), "--envoy", str(self.envoy),
               "--base-port", str(self.base), "--gateway-port", str(self.gateway),
               "--admin-port", str(self.admin), "--timeout", "60", "--no-canary"]
        if self.node_args:
            cmd += ["--", *self.node_args]
        subprocess.run(cmd, check=True, timeout=90, stdout=subprocess.DEVNULL)

    def down(self) -> None:
        if self.started:
            subprocess.run([str(self.bin_dir / "strata-cluster"), "down", "--run-dir", str(self.run_dir)],
                           timeout=30, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            self.started = False


def run_once(name: str, bin_dir: Path, args: argparse.Namespace, out: Path) -> dict:
    cluster = Cluster(bin_dir, Path(args.envoy), Path(args.run_dir) / "cluster",
                      (args.base_port, args.gateway_port, args.admin_port), args.node_arg)
    try:
        cluster.up()
        pid_dir = cluster.run_dir / "pids"
        nodes, envoy = read_pids(pid_dir, "node*"), read_pids(pid_dir, "envoy")
        if args.warmup_s > 0:
            # The bench's own --duration (and its value) gives way to the warm-up's.
            bench_args = [a for i, a in enumerate(args.bench_args)
                          if a != "--duration" and (i == 0 or args.bench_args[i - 1] != "--duration")]
            warm = [str(bin_dir / "strata-bench"), "--endpoints", f"http://127.0.0.1:{args.gateway_port}",
                    *bench_args, "--duration", f"{args.warmup_s}s", "--no-progress"]
            subprocess.run(warm, check=True, timeout=args.warmup_s + 60, stdout=subprocess.DEVNULL)
        before = (cpu_seconds(nodes), cpu_seconds(envoy))
        cmd = [str(bin_dir / "strata-bench"), "--endpoints", f"http://127.0.0.1:{args.gateway_port}",
               *args.bench_args, "--no-progress", "--json", str(out)]
        with open(out.with_suffix(".log"), "w") as log:
            subprocess.run(cmd, check=True, timeout=args.limit_s, stdout=log, stderr=subprocess.STDOUT)
        after = (cpu_seconds(nodes), cpu_seconds(envoy))
    finally:
        cluster.down()
    summary = json.loads(out.read_text())
    keys = summary["throughput_keys_per_s"]
    keys_total = keys * summary["duration_s"]
    return {
        "build": name,
        "keys_per_s": keys,
        "errors": summary["errors"],
        "p99_ms": summary["latency"]["p99_us"] / 1000,
        "node_cpu_us_per_key": (after[0] - before[0]) * 1e6 / max(keys_total, 1),
        "envoy_cpu_us_per_key": (after[1] - before[1]) * 1e6 / max(keys_total, 1),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--run-dir", required=True)
    p.add_argument("--envoy", required=True)
    p.add_argument("--build", action="append", required=True, metavar="NAME=BIN_DIR",
                   help="a build to compare; the first is the reference of the ratios")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--base-port", type=int, default=22001)
    p.add_argument("--gateway-port", type=int, default=22080)
    p.add_argument("--admin-port", type=int, default=22091)
    p.add_argument("--warmup-s", type=int, default=0, help="an unmeasured run of this many seconds first")
    p.add_argument("--limit-s", type=float, default=120, help="the most one measured bench run may take")
    p.add_argument("--node-arg", action="append", default=[], help="a further flag for every node")
    p.add_argument("bench_args", nargs=argparse.REMAINDER, help="after --: strata-bench's arguments")
    args = p.parse_args()
    args.bench_args = [a for a in args.bench_args if a != "--"]
    builds = []
    for b in args.build:
        name, _, path = b.partition("=")
        if not path or not (Path(path) / "strata-node").is_file():
            raise SystemExit(f"--build {b}: expected NAME=DIR with strata-node in DIR")
        builds.append((name, Path(path)))
    run_dir = Path(args.run_dir)
    (run_dir / "runs").mkdir(parents=True, exist_ok=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))

    print(f"load average before: {os.getloadavg()[0]:.2f}; bench: {' '.join(args.bench_args)}", flush=True)
    rows: list[dict[str, dict]] = []
    for r in range(args.rounds):
        order = builds if r % 2 == 0 else list(reversed(builds))
        row = {}
        for name, bin_dir in order:
            res = run_once(name, bin_dir, args, run_dir / "runs" / f"r{r + 1}-{name}.json")
            row[name] = res
            print(f"round {r + 1} {name}: {res['keys_per_s']:,.0f} keys/s, {res['errors']} errors, "
                  f"p99 {res['p99_ms']:.1f} ms, nodes {res['node_cpu_us_per_key']:.2f} µs CPU/key, envoy {res['envoy_cpu_us_per_key']:.2f}",
                  flush=True)
            time.sleep(1)
        rows.append(row)
    print(f"load average after: {os.getloadavg()[0]:.2f}\n")

    names = [n for n, _ in builds]
    print("| round | " + " | ".join(f"{n} keys/s (errors)" for n in names) + " |")
    print("|---" * (len(names) + 1) + "|")
    for i, row in enumerate(rows):
        cells = [f"{row[n]['keys_per_s']:,.0f} ({row[n]['errors']})" for n in names]
        print(f"| {i + 1} | " + " | ".join(cells) + " |")
    ref = names[0]
    for n in names[1:]:
        ratios = [row[n]["keys_per_s"] / row[ref]["keys_per_s"] for row in rows]
        cpu = [row[n]["node_cpu_us_per_key"] / row[ref]["node_cpu_us_per_key"] for row in rows]
        print(f"\n{n} / {ref}: keys/s {statistics.median(ratios):.2f}x ({min(ratios):.2f}-{max(ratios):.2f}); "
              f"node CPU per key {statistics.median(cpu):.2f}x ({min(cpu):.2f}-{max(cpu):.2f})")
    with open(run_dir / "results.json", "w") as f:
        json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
