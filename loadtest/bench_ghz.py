#!/usr/bin/env python3
"""Strata against etcd leader-direct with an independent client (ghz), beside strata-bench.

`run` starts a fresh 3-member etcd and a fresh 3-node Strata behind Envoy (as bench_compare.py does),
loads the same 10,000 records into both, then runs each workload in interleaved rounds, four runs a
round with the same concurrency, connections, duration, key space (10,000 keys, uniform) and value
size (256 B):

    ghz -> etcd leader-direct, ghz -> Strata (through Envoy),
    strata-bench -> etcd leader-direct, strata-bench -> Strata.

Workloads: put with 1, 100 and 1000 clients, linearizable get with 100 (closed loop), and put at a fixed
500/s with 100 clients (open loop), where the two clients' latencies can be compared even when they spend
different CPU per request. ghz gets the same flags for both sides; only the host, the .proto file and
the method differ (etcd's `etcdserverpb.KV/Put` and `KV/Range`, Strata's `strata.v1.KV/Put` and
`KV/Get`). Requests for etcd go to the member that leads when the run starts (its maintenance Status).
Around each run the CPU of every process is read by role (client, Envoy, leader, followers). It prints
one table per client, the CPU per operation by process, and how far ghz and strata-bench agree on each
side.

`down` stops everything `run` started (by the pids it recorded). Standard library only.
"""

from __future__ import annotations

import argparse
import base64
import glob
import json
import os
import random
import resource
import shutil
import signal
import string
import subprocess
import sys
from pathlib import Path

from bench_compare import (COMMON, RECORDS, Ports, aggregate, down, etcd_up, etcd_status, etcd_leader_index,
                           fmt_role_table, machine, measure, run_bench, side_args, strata_up)

ROOT = Path(__file__).resolve().parents[1]

# (id, label, concurrency, connections, workload, rate): the shapes of etcd's own benchmark, closed loop
# (rate 0), and one fixed rate below both sides' peak, where the two clients' latencies should agree even
# when they spend different CPU (ghz `--rps`, strata-bench `--rate`).
WORKLOADS = [
    ("put-1", "put, 1 client", 1, 1, "put", 0),
    ("put-100", "put, 100 clients / 10 conns", 100, 10, "put", 0),
    ("put-1000", "put, 1000 clients / 100 conns", 1000, 100, "put", 0),
    ("get-lin", "get linearizable, 100 clients / 10 conns", 100, 10, "get", 0),
    ("put-rate", "put at 500/s, 100 clients / 10 conns", 100, 10, "put", 500),
]

# ghz's template: one of the 10,000 loaded keys, uniform, base64 (bytes fields in protobuf JSON); a Go
# raw string (backquotes), since the template runs over the JSON text, where a quote would be escaped.
KEY_TEMPLATE = "{{ printf `k%07d` (randomInt 0 " + str(RECORDS) + ") | b64enc }}"

# The runs of one round, in this order: (client, side).
RUNS = [("ghz", "etcd-leader"), ("ghz", "strata"), ("strata-bench", "etcd-leader"), ("strata-bench", "strata")]
RUN_LABELS = {("ghz", "etcd-leader"): "ghz, etcd leader-direct", ("ghz", "strata"): "ghz, Strata",
              ("strata-bench", "etcd-leader"): "strata-bench, etcd leader-direct",
              ("strata-bench", "strata"): "strata-bench, Strata"}


def ghz_call(side: str, op: str) -> str:
    if side == "strata":
        return "strata.v1.KV/" + ("Put" if op == "put" else "Get")
    return "etcdserverpb.KV/" + ("Put" if op == "put" else "Range")


def ghz_data(op: str, value: bytes) -> str:
    """The request template: a put of `value` or a linearizable get (the default of both APIs)."""
    data = {"key": KEY_TEMPLATE}
    if op == "put":
        data["value"] = base64.b64encode(value).decode()
    return json.dumps(data)


def ghz_summary(report: dict) -> dict:
    """The figures of one ghz JSON report: successful requests per second, p50/p99 (of the successful
    ones, ghz's default) and the errors by message. Durations in the report are nanoseconds."""
    ok = report.get("statusCodeDistribution", {}).get("OK", 0)
    errors = sum(n for code, n in report.get("statusCodeDistribution", {}).items() if code != "OK")
    total_s = report["total"] / 1e9
    pct = {d["percentage"]: d["latency"] / 1e6 for d in report.get("latencyDistribution") or []}
    return {"ops": ok, "errors": errors, "duration_s": total_s, "ops_per_s": ok / total_s if total_s else 0.0,
            "p50_ms": pct.get(50, 0.0), "p99_ms": pct.get(99, 0.0),
            "error_kinds": dict(report.get("errorDistribution") or {})}


def run_ghz(ghz: Path, argv: list[str], out: Path, limit_s: float) -> tuple[dict, float]:
    """Runs ghz once; returns its summary (in strata-bench's shape) and the client's CPU seconds."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    raw = out.with_suffix(".ghz.json")
    with open(out.with_suffix(".log"), "w") as log:
        p = subprocess.Popen([str(ghz), *argv, "--format", "json", "--output", str(raw)], stdout=log,
                             stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        try:
            rc = p.wait(timeout=limit_s)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(timeout=10)
            raise RuntimeError(f"ghz overran {limit_s:.0f} s: {' '.join(argv)}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if rc != 0 or not raw.exists():
        raise RuntimeError(f"ghz failed ({rc}): {out.with_suffix('.log').read_text()[-2000:]}")
    s = ghz_summary(json.loads(raw.read_text()))
    raw.unlink()  # every request's details; the summary is kept
    out.write_text(json.dumps(s, indent=2))
    return ({"ops": s["ops"], "errors": s["errors"], "duration_s": s["duration_s"],
             "latency": {"p50_us": s["p50_ms"] * 1000, "p99_us": s["p99_ms"] * 1000},
             "error_kinds": s["error_kinds"]},
            (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))


def etcd_proto_dir(given: str | None) -> Path:
    if given:
        return Path(given)
    home = os.environ.get("CARGO_HOME", str(Path.home() / ".cargo"))
    found = sorted(glob.glob(f"{home}/registry/src/*/etcd-client-*/proto"))
    if not found:
        raise SystemExit("no etcd-client crate sources with proto/ (build strata-bench --features etcd once)")
    return Path(found[-1])


def run(args: argparse.Namespace) -> int:
    run_dir = Path(args.run_dir).resolve()
    ports = Ports(args.port_offset)
    bench, ghz, bin_dir = Path(args.bench), Path(args.ghz), Path(args.bin_dir)
    etcd_protos = etcd_proto_dir(args.etcd_proto_dir)
    down(bin_dir, run_dir)
    shutil.rmtree(run_dir, ignore_errors=True)
    (run_dir / "runs").mkdir(parents=True)
    print(f"machine: {machine()}; load average before: {os.getloadavg()[0]:.2f}", flush=True)
    pids = {"etcd-leader": etcd_up(Path(args.etcd), run_dir, ports),
            "strata": strata_up(bin_dir, Path(args.envoy), run_dir, ports)}
    for side in ("etcd", "strata"):
        run_bench(bench, [*side_args(side, ports), *COMMON, "--workload", "c", "--load-only", "--load-clients", "64"],
                  run_dir / "runs" / f"load-{side}.json", 180)
    value = "".join(random.Random(42).choices(string.ascii_letters + string.digits, k=256)).encode()
    proto = {"strata": ["--proto", str(ROOT / "proto/strata/v1/kv.proto"), "--import-paths", str(ROOT / "proto")],
             "etcd-leader": ["--proto", str(etcd_protos / "etcd/api/etcdserverpb/rpc.proto"),
                             "--import-paths", str(etcd_protos)]}
    only = set(args.only.split(",")) if args.only else None
    results = []
    for wi, (wid, label, clients, conns, op, rate) in enumerate(WORKLOADS):
        if only and wid not in only:
            continue
        rounds = {run: [] for run in RUNS}
        for rnd in range(args.rounds):
            for client, side in RUNS:
                out = run_dir / "runs" / f"w{wi}-{client}-{side}-r{rnd}.json"
                if client == "ghz":
                    host = (f"127.0.0.1:{ports.gateway}" if side == "strata" else
                            f"127.0.0.1:{ports.etcd[etcd_leader_index(etcd_status(ports))][0]}")
                    argv = [*proto[side], "--insecure", "--call", ghz_call(side, op), "--data", ghz_data(op, value),
                            "--concurrency", str(clients), "--connections", str(conns),
                            "--duration", f"{args.seconds}s", "--duration-stop", "ignore", "--timeout", "10s",
                            *(["--rps", str(rate)] if rate else []), host]

                    def go(argv=argv, out=out):
                        return run_ghz(ghz, argv, out, args.seconds + 60)
                else:
                    bench_args = [*side_args(side, ports), *COMMON, "--workload", op, "--clients", str(clients),
                                  "--connections", str(conns), "--no-load", "--duration", f"{args.seconds}s",
                                  "--request-timeout", "10s", *(["--rate", str(rate)] if rate else [])]

                    def go(bench_args=bench_args, out=out):
                        return run_bench(bench, bench_args, out, args.seconds + 60)
                summary, cpu = measure(side, run_dir, ports, pids[side], go)
                r = {"ops": summary["ops"], "errors": summary["errors"], "duration_s": summary["duration_s"],
                     "p50_ms": summary["latency"]["p50_us"] / 1000, "p99_ms": summary["latency"]["p99_us"] / 1000,
                     "error_kinds": summary.get("error_kinds", {}), **cpu}
                rounds[(client, side)].append(r)
                moved = " (the leader changed during the run)" if cpu["leader_changed"] else ""
                print(f"  {label:<42} {RUN_LABELS[(client, side)]:<33} round {rnd + 1}: "
                      f"{r['ops'] / r['duration_s']:>9,.0f} ops/s p50 {r['p50_ms']:.2f} ms p99 {r['p99_ms']:.1f} ms, "
                      f"{r['errors']} errors{moved}", flush=True)
        agg = {f"{client}/{side}": aggregate(rs) for (client, side), rs in rounds.items()}
        results.append({"workload": label, "id": wid, "clients": clients, "connections": conns, **agg,
                        "rounds": {f"{c}/{s}": rs for (c, s), rs in rounds.items()}})
    print(f"\nload average after: {os.getloadavg()[0]:.2f}\n")
    print("\n".join(fmt_table(results)))
    print("\nCPU µs per operation by process (ghz runs):\n")
    print("\n".join(fmt_role_table([{"workload": r["workload"], "etcd-leader": r["ghz/etcd-leader"],
                                     "strata": r["ghz/strata"]} for r in results], ("etcd-leader", "strata"))))
    (run_dir / "results.json").write_text(json.dumps({"machine": machine(), "seconds": args.seconds,
                                                       "rounds": args.rounds, "results": results}, indent=2))
    print(f"\nper-run JSON: {run_dir / 'runs'}; table data: {run_dir / 'results.json'}")
    return 0


def spread(runs: list[dict], key: str) -> str:
    vals = [r["ops"] / r["duration_s"] if key == "ops_per_s" else r[key] for r in runs if r["duration_s"]]
    return f"{min(vals):,.0f}–{max(vals):,.0f}" if len(vals) > 1 else ""


def fmt_table(results: list[dict]) -> list[str]:
    """Markdown: both clients against both sides, the Strata/etcd ratios, and ghz / strata-bench."""
    lines = ["| workload | client | etcd leader-direct req/s | p50 / p99 ms | errors | Strata req/s | p50 / p99 ms "
             "| errors | throughput Strata/etcd | p50 Strata/etcd |", "|" + "---|" * 10]
    for r in results:
        for client in ("ghz", "strata-bench"):
            e, s = r[f"{client}/etcd-leader"], r[f"{client}/strata"]
            lines.append(
                f"| {r['workload']} | {client} | {e['ops_per_s']:,.0f} | {e['p50_ms']:.2f} / {e['p99_ms']:.1f} "
                f"| {e['errors']} | {s['ops_per_s']:,.0f} | {s['p50_ms']:.2f} / {s['p99_ms']:.1f} | {s['errors']} "
                f"| {s['ops_per_s'] / e['ops_per_s']:.2f}× | {s['p50_ms'] / e['p50_ms']:.2f}× |")
    lines += ["", "Agreement, ghz / strata-bench on the same side (per-round req/s ranges in brackets):", "",
              "| workload | etcd leader-direct req/s | p50 | Strata req/s | p50 |", "|---|---|---|---|---|"]
    for r in results:
        cells = []
        for side in ("etcd-leader", "strata"):
            g, b = r[f"ghz/{side}"], r[f"strata-bench/{side}"]
            rg, rb = spread(r["rounds"][f"ghz/{side}"], "ops_per_s"), spread(r["rounds"][f"strata-bench/{side}"],
                                                                           "ops_per_s")
            ranges = f" ({rg} vs {rb})" if rg and rb else ""
            cells += [f"{g['ops_per_s'] / b['ops_per_s']:.2f}×{ranges}", f"{g['p50_ms'] / b['p50_ms']:.2f}×"]
        lines.append(f"| {r['workload']} | {' | '.join(cells)} |")
    return lines


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--run-dir", required=True)
    r.add_argument("--bench", required=True, help="strata-bench built with --features etcd")
    r.add_argument("--ghz", required=True, help="ghz v0.120.0")
    r.add_argument("--etcd", required=True)
    r.add_argument("--bin-dir", required=True, help="directory of the release strata-node and strata-cluster")
    r.add_argument("--envoy", required=True)
    r.add_argument("--etcd-proto-dir", help="etcd's .proto root (default: the etcd-client crate's, in CARGO_HOME)")
    r.add_argument("--seconds", type=int, default=10, help="length of each run")
    r.add_argument("--rounds", type=int, default=2, help="interleaved rounds")
    r.add_argument("--only", help="comma-separated workload ids: " + ",".join(w[0] for w in WORKLOADS))
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
