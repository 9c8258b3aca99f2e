#!/usr/bin/env python3
"""Strata's Redis protocol against Redis itself, with Redis's own load tool.

    python3 loadtest/bench_redis.py run --run-dir DIR --bin-dir TARGET/release --envoy ENVOY
    python3 loadtest/bench_redis.py down --run-dir DIR --bin-dir TARGET/release

One redis-server (Debian's, the single-node durable ceiling: ``appendonly yes``, ``appendfsync
always``, so every write is fsynced before it is answered) and one fresh three-node release Strata
cluster (`strata-cluster up --resp-base-port`). Then ``redis-benchmark -t set,get`` runs against each
target in turn, round after round: Redis, Strata through the gateway's RESP listener, Strata's
leader directly. Each run reports requests a second, p50 and p99 (redis-benchmark's CSV), and the
servers' CPU per request (utime + stime from /proc: Redis; the three nodes and Envoy).

Every process started is stopped by pid (``down`` too, after a failed run).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_compare import alive, cpu_seconds, machine, read_pids  # noqa: E402

REDIS_PORT, BASE_PORT, RESP_BASE_PORT, GATEWAY_PORT, GATEWAY_RESP_PORT, ADMIN_PORT = (
    23379, 23301, 23380, 23308, 23370, 23309)
TARGETS = ("redis", "strata-gateway", "strata-leader")


def redis_up(run_dir: Path) -> int:
    data = run_dir / "redis"
    data.mkdir(parents=True)
    log = open(data / "redis.log", "w")
    p = subprocess.Popen(["redis-server", "--port", str(REDIS_PORT), "--bind", "127.0.0.1", "--dir", str(data),
                          "--appendonly", "yes", "--appendfsync", "always", "--save", "", "--daemonize", "no"],
                         stdout=log, stderr=log, start_new_session=True)
    (run_dir / "redis.pid").write_text(str(p.pid))
    for _ in range(100):
        if subprocess.run(["redis-cli", "-p", str(REDIS_PORT), "PING"], capture_output=True,
                          text=True).stdout.strip() == "PONG":
            return p.pid
        time.sleep(0.1)
    raise RuntimeError("redis-server did not answer PING in 10 s")


def strata_up(bin_dir: Path, envoy: Path, run_dir: Path) -> list[int]:
    sdir = run_dir / "strata"
    subprocess.run([str(bin_dir / "strata-cluster"), "up", "--fresh", "--run-dir", str(sdir),
                    "--node-bin", str(bin_dir / "strata-node"), "--envoy", str(envoy),
                    "--base-port", str(BASE_PORT), "--gateway-port", str(GATEWAY_PORT),
                    "--admin-port", str(ADMIN_PORT), "--resp-base-port", str(RESP_BASE_PORT),
                    "--gateway-resp-port", str(GATEWAY_RESP_PORT), "--timeout", "60", "--no-canary"],
                   check=True, timeout=90, stdout=subprocess.DEVNULL)
    return read_pids(sdir / "pids")


def leader_resp_port(run_dir: Path) -> int:
    out = subprocess.run(["redis-cli", "-p", str(GATEWAY_RESP_PORT), "INFO"], capture_output=True,
                         text=True, timeout=10).stdout
    leader = next(int(line.split(":")[1]) for line in out.splitlines() if line.startswith("leader_id:"))
    return RESP_BASE_PORT + leader - 1


def benchmark(port: int, requests: int, clients: int) -> dict[str, dict]:
    """redis-benchmark's SET and GET rows: requests a second, p50 and p99 in ms."""
    out = subprocess.run(["redis-benchmark", "-p", str(port), "-t", "set,get", "-n", str(requests),
                          "-c", str(clients), "-r", "100000", "-d", "256", "--csv"],
                         capture_output=True, text=True, timeout=600, check=True).stdout
    rows = {}
    for row in csv.DictReader(io.StringIO(out)):
        rows[row["test"]] = {"rps": float(row["rps"]), "p50_ms": float(row["p50_latency_ms"]),
                             "p99_ms": float(row["p99_latency_ms"])}
    if set(rows) != {"SET", "GET"}:
        raise RuntimeError(f"redis-benchmark gave no SET and GET rows: {out}")
    return rows


def down(bin_dir: Path, run_dir: Path) -> None:
    pid_file = run_dir / "redis.pid"
    if pid_file.exists():
        pid = int(pid_file.read_text())
        if alive(pid):
            os.kill(pid, 15)
        pid_file.unlink()
    if (run_dir / "strata" / "pids").is_dir():
        subprocess.run([str(bin_dir / "strata-cluster"), "down", "--run-dir", str(run_dir / "strata")],
                       timeout=30, check=False)


def run(args: argparse.Namespace) -> int:
    run_dir, bin_dir = Path(args.run_dir).resolve(), Path(args.bin_dir)
    if not shutil.which("redis-server") or not shutil.which("redis-benchmark"):
        print("bench-redis: needs Debian's redis-server and redis-tools "
              "(apt-get install redis-server redis-tools)", file=sys.stderr)
        return 2
    down(bin_dir, run_dir)
    shutil.rmtree(run_dir, ignore_errors=True)
    run_dir.mkdir(parents=True)
    print(f"machine: {machine()}; load average before: {os.getloadavg()[0]:.2f}", flush=True)
    redis_pid = redis_up(run_dir)
    strata_pids = strata_up(bin_dir, Path(args.envoy), run_dir)
    results: dict[str, list[dict]] = {t: [] for t in TARGETS}
    for rnd in range(args.rounds):
        for target in TARGETS:
            port = {"redis": REDIS_PORT, "strata-gateway": GATEWAY_RESP_PORT,
                    "strata-leader": leader_resp_port(run_dir)}[target]
            pids = [redis_pid] if target == "redis" else strata_pids
            before = cpu_seconds(pids)
            rows = benchmark(port, args.requests, args.clients)
            cpu = cpu_seconds(pids) - before
            rows["cpu_us_per_request"] = cpu / (2 * args.requests) * 1e6
            results[target].append(rows)
            print(f"  round {rnd + 1} {target:<15} SET {rows['SET']['rps']:>9,.0f}/s p50 {rows['SET']['p50_ms']:.2f} "
                  f"p99 {rows['SET']['p99_ms']:.2f} ms | GET {rows['GET']['rps']:>9,.0f}/s p50 "
                  f"{rows['GET']['p50_ms']:.2f} ms | server CPU {rows['cpu_us_per_request']:.0f} µs/request",
                  flush=True)
    print(f"\nload average after: {os.getloadavg()[0]:.2f}\n")
    print("| target | SET req/s | SET p50 / p99 ms | GET req/s | GET p50 / p99 ms | server CPU µs per request |")
    print("|---|---|---|---|---|---|")
    for target in TARGETS:
        rs = results[target]

        def med(test: str, key: str) -> float:
            vals = sorted(r[test][key] for r in rs)
            return vals[len(vals) // 2]
        cpu = sorted(r["cpu_us_per_request"] for r in rs)[len(rs) // 2]
        print(f"| {target} | {med('SET', 'rps'):,.0f} | {med('SET', 'p50_ms'):.2f} / {med('SET', 'p99_ms'):.2f} | "
              f"{med('GET', 'rps'):,.0f} | {med('GET', 'p50_ms'):.2f} / {med('GET', 'p99_ms'):.2f} | {cpu:.0f} |")
    (run_dir / "results.json").write_text(json.dumps({"machine": machine(), "requests": args.requests,
                                                       "clients": args.clients, "results": results}, indent=2))
    print(f"\ntable data: {run_dir / 'results.json'}")
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--run-dir", required=True)
    r.add_argument("--bin-dir", required=True)
    r.add_argument("--envoy", required=True)
    r.add_argument("--rounds", type=int, default=2)
    r.add_argument("--requests", type=int, default=20000, help="requests per test (SET, GET) per run")
    r.add_argument("--clients", type=int, default=50)
    d = sub.add_parser("down")
    d.add_argument("--run-dir", required=True)
    d.add_argument("--bin-dir", required=True)
    a = p.parse_args()
    if a.cmd == "down":
        down(Path(a.bin_dir), Path(a.run_dir).resolve())
        return 0
    try:
        return run(a)
    finally:
        down(Path(a.bin_dir), Path(a.run_dir).resolve())


if __name__ == "__main__":
    sys.exit(main())
