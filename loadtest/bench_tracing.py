#!/usr/bin/env python3
"""What tracing costs: the same cluster with tracing off, on at 1 %, and on at 100 %, side by side.

`run` starts three fresh 3-node clusters behind Envoy (strata-cluster, release binaries) and one OTLP
sink that counts and drops spans (`strata-cluster otlp-sink`): `off` exports nothing (no endpoint:
no OpenTelemetry layer in the nodes, entries carry no trace context; Envoy's tracer, always on, sends
an unsampled traceparent and exports nothing, so the nodes' log spans name the trace); `1%` and `100%` give Envoy and the nodes the
sink (`strata-cluster up --otlp ... --trace-sampling P`). The same records are loaded into each, then
every workload runs interleaved over the three (off, 1 %, 100 %, off, ...) with the same client
(strata-bench, gRPC through Envoy). Around each run it reads the CPU time of the cluster's processes
(nodes and Envoy). It prints each configuration's throughput, latency and CPU per request, and its
ratio to `off`. Only one cluster is under load at a time; the others idle.

`down` stops everything `run` started. `run` also stops it on exit, failure and SIGINT/SIGTERM.
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
from pathlib import Path

from bench_compare import aggregate, alive, cpu_seconds, machine, read_pids, run_bench

SINK = "127.0.0.1:21900"
RECORDS = 10_000
# (name, sampling percent or None for off, base port, gateway, admin)
CONFIGS = [
    ("off", None, 21501, 21580, 21591),
    ("1%", 1.0, 21601, 21680, 21691),
    ("100%", 100.0, 21701, 21780, 21791),
]
WORKLOADS = [
    ("put-100", "put, 100 clients / 10 conns", ["--workload", "put", "--clients", "100", "--connections", "10"],
     60_000),
    ("get-lin", "get linearizable, 100 clients", ["--workload", "get", "--clients", "100", "--connections", "10"],
     120_000),
    ("put-1", "put, 1 client", ["--workload", "put", "--clients", "1", "--connections", "1"], 5_000),
]
COMMON = ["--target", "grpc", "--records", str(RECORDS), "--key-size", "8", "--value-size", "256",
          "--no-progress", "--threads", "2"]


def cluster_dir(run_dir: Path, name: str) -> Path:
    return run_dir / ("cluster-" + name.replace("%", "pct"))


def up(bin_dir: Path, envoy: Path, run_dir: Path) -> None:
    sink_log = open(run_dir / "sink.log", "w")
    sink = subprocess.Popen([str(bin_dir / "strata-cluster"), "otlp-sink", "--listen", SINK],
                            stdout=sink_log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    (run_dir / "sink.pid").write_text(str(sink.pid))
    for name, pct, base, gw, admin in CONFIGS:
        argv = [str(bin_dir / "strata-cluster"), "up", "--fresh", "--run-dir", str(cluster_dir(run_dir, name)),
                "--node-bin", str(bin_dir / "strata-node"), "--envoy", str(envoy),
                "--base-port", str(base), "--gateway-port", str(gw), "--admin-port", str(admin),
                "--timeout", "60", "--no-canary"]
        if pct is not None:
            argv += ["--otlp", SINK, "--trace-sampling", str(pct)]
        subprocess.run(argv, check=True, timeout=90)


def down(bin_dir: Path, run_dir: Path) -> None:
    for name, *_ in CONFIGS:
        d = cluster_dir(run_dir, name)
        if (d / "pids").is_dir():
            subprocess.run([str(bin_dir / "strata-cluster"), "down", "--run-dir", str(d)], timeout=30, check=False)
    pid_file = run_dir / "sink.pid"
    if pid_file.exists():
        pid = int(pid_file.read_text())
        try:
            os.kill(pid, signal.SIGTERM)
            for _ in range(50):
                if not alive(pid):
                    break
                time.sleep(0.1)
            else:
                os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        pid_file.unlink()


def run(args: argparse.Namespace) -> int:
    run_dir = Path(args.run_dir).resolve()
    bin_dir, bench, envoy = Path(args.bin_dir), Path(args.bench), Path(args.envoy)
    for path in (bench, bin_dir / "strata-node", bin_dir / "strata-cluster", envoy):
        if not path.exists():
            print(f"bench-tracing: {path} is missing", file=sys.stderr)
            return 1
    down(bin_dir, run_dir)
    shutil.rmtree(run_dir, ignore_errors=True)
    (run_dir / "runs").mkdir(parents=True)
    print(f"machine: {machine()}; load average before: {os.getloadavg()[0]:.2f}", flush=True)
    up(bin_dir, envoy, run_dir)
    pids = {name: read_pids(cluster_dir(run_dir, name) / "pids") for name, *_ in CONFIGS}
    endpoint = {name: f"http://127.0.0.1:{gw}" for name, _, _, gw, _ in CONFIGS}
    for name, *_ in CONFIGS:
        summary, _ = run_bench(bench, [*COMMON, "--endpoints", endpoint[name], "--workload", "c", "--load-only",
                                       "--load-clients", "64"], run_dir / "runs" / f"load-{name}.json", 180)
        print(f"loaded {RECORDS} records into {name} in {summary['load']['duration_s']:.1f} s", flush=True)
    only = set(args.only.split(",")) if args.only else None
    results = []
    for wi, (wid, label, wargs, budget) in enumerate(w for w in WORKLOADS if not only or w[0] in only):
        rounds: dict[str, list] = {name: [] for name, *_ in CONFIGS}
        for rnd in range(args.rounds):
            for name, *_ in CONFIGS:
                out = run_dir / "runs" / f"w{wi}-{name.replace('%', 'pct')}-r{rnd}.json"
                bench_args = [*COMMON, "--endpoints", endpoint[name], *wargs, "--no-load", "--ops", str(budget),
                              "--duration", f"{args.seconds}s", "--request-timeout", "10s"]
                cpu0 = cpu_seconds(pids[name])
                summary, client_cpu = run_bench(bench, bench_args, out, args.seconds + 60)
                cpu1 = cpu_seconds(pids[name])
                if not all(alive(p) for p in pids[name]):
                    raise RuntimeError(f"a process of the {name} cluster died during '{label}'")
                r = {"ops": summary["ops"], "errors": summary["errors"], "duration_s": summary["duration_s"],
                     "p50_ms": summary["latency"]["p50_us"] / 1000, "p99_ms": summary["latency"]["p99_us"] / 1000,
                     "server_cpu_s": cpu1 - cpu0, "gateway_cpu_s": 0.0, "client_cpu_s": client_cpu}
                rounds[name].append(r)
                print(f"  {label:<32} {name:<5} round {rnd + 1}: {summary['throughput_ops_per_s']:>9,.0f} ops/s "
                      f"p50 {r['p50_ms']:.2f} ms p99 {r['p99_ms']:.1f} ms, {r['errors']} errors, "
                      f"server CPU {r['server_cpu_s']:.1f} s", flush=True)
        results.append({"workload": label, "configs": {n: aggregate(rs) for n, rs in rounds.items()},
                        "rounds": rounds})
    print(f"\nload average after: {os.getloadavg()[0]:.2f}\n")
    print("| workload | tracing | ops/s | p50 / p99 ms | server CPU µs/op | throughput vs off | CPU/op vs off |")
    print("|" + "---|" * 7)
    for r in results:
        off = r["configs"]["off"]
        for name, *_ in CONFIGS:
            c = r["configs"][name]
            tput = c["ops_per_s"] / off["ops_per_s"] if off["ops_per_s"] else float("nan")
            cpu = c["cpu_us_per_op"] / off["cpu_us_per_op"] if off["cpu_us_per_op"] else float("nan")
            err = f" ({c['errors']} err)" if c["errors"] else ""
            print(f"| {r['workload']} | {name} | {c['ops_per_s']:,.0f}{err} | {c['p50_ms']:.2f} / {c['p99_ms']:.1f} "
                  f"| {c['cpu_us_per_op']:.0f} | {tput:.2f}× | {cpu:.2f}× |")
    sink_log = (run_dir / "sink.log")
    (run_dir / "results.json").write_text(json.dumps({"machine": machine(), "seconds": args.seconds,
                                                       "rounds": args.rounds, "results": results}, indent=2))
    down(bin_dir, run_dir)
    print(f"\nOTLP sink: {sink_log.read_text().strip().splitlines()[-1] if sink_log.exists() else 'no log'}")
    print(f"per-run JSON summaries: {run_dir / 'runs'}; table data: {run_dir / 'results.json'}")
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--run-dir", required=True)
    r.add_argument("--bench", required=True, help="strata-bench")
    r.add_argument("--bin-dir", required=True, help="directory of the release strata-node and strata-cluster")
    r.add_argument("--envoy", required=True)
    r.add_argument("--seconds", type=int, default=10, help="upper bound of each run")
    r.add_argument("--rounds", type=int, default=3, help="interleaved rounds per configuration and workload")
    r.add_argument("--only", help="comma-separated workload ids: " + ",".join(w[0] for w in WORKLOADS))
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
