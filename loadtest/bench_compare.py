#!/usr/bin/env python3
"""Strata against etcd on this machine, side by side, with the same bench tool (strata-bench).

`run` starts a fresh 3-member etcd and a fresh 3-node Strata behind Envoy (strata-cluster, the launcher),
loads the same records into both, then runs every workload interleaved over three sides with the same
clients, connections, key/value sizes and request budget:

- etcd balanced: each client balances over all three members (etcd's default client behaviour; two
  thirds of the requests reach a follower, which forwards them to the leader);
- etcd leader-direct: every request goes to etcd's current leader (`--etcd-leader-only`);
- Strata: through Envoy, which routes to Strata's leader.

Ratios are stated against etcd leader-direct, the harder of the two. Around each run it reads the CPU
time (utime + stime from /proc/<pid>/stat) of every process by role: the client, Envoy, the leader
and each follower (which member leads is asked before each run: etcd's maintenance Status through its
HTTP/JSON gateway, Strata's GET /v1/cluster/status). It prints a markdown table with the ratios, a
second one with each process's CPU per operation, and writes every run's JSON summary under the run dir.

`down` stops everything `run` started (by the pids it recorded). `run` also stops it on exit,
on failure and on SIGINT/SIGTERM. Every wait is bounded. Standard library only.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CLK_TCK = os.sysconf("SC_CLK_TCK")

RECORDS = 10_000


@dataclass(frozen=True)
class Ports:
    """The ports of one run; `offset` moves them all (21xxx by default) so two runs can share a host."""
    offset: int = 0

    @property
    def etcd(self) -> list[tuple[int, int]]:  # (client, peer) of each member
        return [(21301 + self.offset + 2 * i, 21302 + self.offset + 2 * i) for i in range(3)]

    @property
    def strata_base(self) -> int:  # node i listens on strata_base + i - 1
        return 21401 + self.offset

    @property
    def gateway(self) -> int:
        return 21480 + self.offset

    @property
    def admin(self) -> int:
        return 21491 + self.offset


# The sides every workload runs on, in this order within a round.
SIDES = ("etcd", "etcd-leader", "strata")
SIDE_LABELS = {"etcd": "etcd balanced", "etcd-leader": "etcd leader-direct", "strata": "Strata"}

# Placeholder in a workload's arguments, replaced by half of etcd's put-100 throughput in this run.
HALF_ETCD_PUT_PEAK = "half-etcd-put-peak"

# (id, label, strata-bench arguments, request budget per run). Clients/connections follow etcd's own
# benchmark (`--clients 100 --conns 10`, `--clients 1000 --conns 100`).
WORKLOADS = [
    ("put-1", "put, 1 client", ["--workload", "put", "--clients", "1", "--connections", "1"], 5_000),
    ("put-100", "put, 100 clients / 10 conns", ["--workload", "put", "--clients", "100", "--connections", "10"], 60_000),
    ("put-1000", "put, 1000 clients / 100 conns",
     ["--workload", "put", "--clients", "1000", "--connections", "100"], 100_000),
    ("get-lin", "get linearizable, 100 clients", ["--workload", "get", "--clients", "100", "--connections", "10"],
     120_000),
    ("get-stale", "get serializable/stale, 100 clients",
     ["--workload", "get", "--clients", "100", "--connections", "10", "--read-consistency", "stale"], 160_000),
    ("ycsb-a", "YCSB A (zipfian), 100 clients", ["--workload", "a", "--clients", "100", "--connections", "10"], 80_000),
    ("ycsb-b", "YCSB B (zipfian), 100 clients", ["--workload", "b", "--clients", "100", "--connections", "10"], 100_000),
    # Open loop at half of the put rate etcd reached with 100 clients earlier in this run (the goal:
    # Strata's p99 at most a third of etcd's at that rate). Needs put-100 in the same run.
    ("put-half", "put at half of etcd's peak, open loop, 100 clients",
     ["--workload", "put", "--clients", "100", "--connections", "10", "--rate", HALF_ETCD_PUT_PEAK], 200_000),
    # Throughput in keys/s is ops/s x 100: each request writes 100 keys (a Strata Batch, an etcd Txn).
    ("batch-100", "batch of 100 puts, 32 clients",
     ["--workload", "batch", "--batch-size", "100", "--clients", "32", "--connections", "8"], 20_000),
]


def http_ok(url: str, timeout: float = 1.0) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status == 200
    except OSError:
        return False


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(") ", 1)[1][0] != "Z"
    except (OSError, IndexError):
        return False


def cpu_seconds(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(") ", 1)[1].split()
        except OSError:
            continue
        # After "pid (comm) ": state is field 3, utime 14, stime 15 (1-based) -> 11, 12 here.
        total += int(fields[11]) + int(fields[12])
    return total / CLK_TCK


def cpu_by_role(roles: dict[str, int]) -> dict[str, float]:
    return {role: cpu_seconds([pid]) for role, pid in roles.items()}


def read_pids(pid_dir: Path, name: str = "*") -> list[int]:
    pids = []
    for f in sorted(pid_dir.glob(f"{name}.pid")):
        try:
            pids.append(int(f.read_text().strip()))
        except ValueError:
            pass
    return pids


# --- etcd ------------------------------------------------------------------------------------

def etcd_up(etcd: Path, run_dir: Path, ports: Ports) -> list[int]:
    base = run_dir / "etcd"
    shutil.rmtree(base, ignore_errors=True)
    (base / "pids").mkdir(parents=True)
    (base / "logs").mkdir(parents=True)
    cluster = ",".join(f"e{i + 1}=http://127.0.0.1:{peer}" for i, (_, peer) in enumerate(ports.etcd))
    for i, (client, peer) in enumerate(ports.etcd):
        name = f"e{i + 1}"
        argv = [str(etcd), "--name", name, "--data-dir", str(base / name),
                "--listen-client-urls", f"http://127.0.0.1:{client}",
                "--advertise-client-urls", f"http://127.0.0.1:{client}",
                "--listen-peer-urls", f"http://127.0.0.1:{peer}",
                "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer}",
                "--initial-cluster", cluster, "--initial-cluster-state", "new",
                "--initial-cluster-token", "strata-bench", "--log-level", "warn"]
        with open(base / "logs" / f"{name}.log", "ab") as log:
            p = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                 start_new_session=True)
        (base / "pids" / f"{name}.pid").write_text(str(p.pid))
    deadline = time.time() + 30
    while time.time() < deadline:
        if all(http_ok(f"http://127.0.0.1:{c}/health") for c, _ in ports.etcd):
            return read_pids(base / "pids")
        time.sleep(0.2)
    raise RuntimeError(f"etcd not healthy after 30 s; logs in {base / 'logs'}")


def etcd_leader_index(status: list[dict]) -> int:
    """Which member leads, from each member's maintenance Status (JSON gateway: uint64s are strings)."""
    for i, st in enumerate(status):
        member, leader = int(st.get("header", {}).get("member_id", 0)), int(st.get("leader", 0))
        if member and member == leader:
            return i
    raise RuntimeError(f"no etcd member reports itself as leader: {status}")


def etcd_status(ports: Ports) -> list[dict]:
    """Each member's maintenance Status, through etcd's HTTP/JSON gateway."""
    status = []
    for client, _ in ports.etcd:
        req = urllib.request.Request(f"http://127.0.0.1:{client}/v3/maintenance/status", data=b"{}",
                                     headers={"Content-Type": "application/json"}, method="POST")
        with urllib.request.urlopen(req, timeout=5) as r:
            status.append(json.load(r))
    return status


def etcd_roles(run_dir: Path, ports: Ports) -> dict[str, int]:
    """etcd's processes by role now: {"leader": pid, "follower A": pid, "follower B": pid}."""
    leader = etcd_leader_index(etcd_status(ports))
    pids = [int((run_dir / "etcd" / "pids" / f"e{i + 1}.pid").read_text()) for i in range(len(ports.etcd))]
    return roles_of(pids, leader)


def roles_of(pids: list[int], leader: int) -> dict[str, int]:
    roles = {"leader": pids[leader]}
    for name, pid in zip(("follower A", "follower B"), [p for i, p in enumerate(pids) if i != leader]):
        roles[name] = pid
    return roles


def etcd_down(run_dir: Path) -> None:
    pid_dir = run_dir / "etcd" / "pids"
    if not pid_dir.is_dir():
        return
    pids = read_pids(pid_dir)
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.time() + 5
    while time.time() < deadline and any(alive(p) for p in pids):
        time.sleep(0.1)
    for pid in pids:
        if alive(pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    for f in pid_dir.glob("*.pid"):
        f.unlink()


# --- Strata ----------------------------------------------------------------------------------

def strata_up(bin_dir: Path, envoy: Path, run_dir: Path, ports: Ports) -> list[int]:
    sdir = run_dir / "strata"
    subprocess.run([str(bin_dir / "strata-cluster"), "up", "--fresh", "--run-dir", str(sdir),
                    "--node-bin", str(bin_dir / "strata-node"), "--envoy", str(envoy),
                    "--base-port", str(ports.strata_base), "--gateway-port", str(ports.gateway),
                    "--admin-port", str(ports.admin), "--timeout", "60", "--no-canary"], check=True, timeout=90)
    return read_pids(sdir / "pids")


def strata_roles(run_dir: Path, ports: Ports) -> dict[str, int]:
    """Strata's processes by role now: Envoy, the leader (GET /v1/cluster/status) and the followers."""
    with urllib.request.urlopen(f"http://127.0.0.1:{ports.strata_base}/v1/cluster/status", timeout=5) as r:
        leader_id = int(json.load(r)["leader_id"])
    pid_dir = run_dir / "strata" / "pids"
    pids = [int((pid_dir / f"node{i}.pid").read_text()) for i in (1, 2, 3)]
    if leader_id not in (1, 2, 3):
        raise RuntimeError(f"Strata has no leader among nodes 1-3 (leader_id {leader_id})")
    return {"Envoy": read_pids(pid_dir, "envoy")[0], **roles_of(pids, leader_id - 1)}


def side_roles(side: str, run_dir: Path, ports: Ports, wait_s: float = 10.0) -> dict[str, int]:
    """The side's processes by role; waits (bounded) through an election, when no member leads."""
    deadline = time.time() + wait_s
    while True:
        try:
            return strata_roles(run_dir, ports) if side == "strata" else etcd_roles(run_dir, ports)
        except (OSError, RuntimeError, KeyError, ValueError):
            if time.time() >= deadline:
                raise
            time.sleep(0.2)


def strata_down(bin_dir: Path, run_dir: Path) -> None:
    if (run_dir / "strata" / "pids").is_dir():
        subprocess.run([str(bin_dir / "strata-cluster"), "down", "--run-dir", str(run_dir / "strata")],
                       timeout=30, check=False)


def down(bin_dir: Path, run_dir: Path) -> None:
    etcd_down(run_dir)
    strata_down(bin_dir, run_dir)


# --- runs ------------------------------------------------------------------------------------

def side_args(side: str, ports: Ports) -> list[str]:
    etcd = ["--target", "etcd", "--endpoints", ",".join(f"127.0.0.1:{c}" for c, _ in ports.etcd)]
    if side == "etcd":
        return etcd
    if side == "etcd-leader":
        return [*etcd, "--etcd-leader-only"]
    return ["--target", "grpc", "--endpoints", f"http://127.0.0.1:{ports.gateway}"]


COMMON = ["--records", str(RECORDS), "--key-size", "8", "--value-size", "256", "--no-progress", "--threads", "2"]


def run_bench(bench: Path, args: list[str], out: Path, limit_s: float) -> tuple[dict, float]:
    """Runs strata-bench once; returns its JSON summary and the client's CPU seconds."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with open(out.with_suffix(".log"), "w") as log:
        p = subprocess.Popen([str(bench), *args, "--json", str(out)], stdout=log, stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL)
        try:
            rc = p.wait(timeout=limit_s)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(timeout=10)
            raise RuntimeError(f"strata-bench overran {limit_s:.0f} s: {' '.join(args)}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if rc != 0:
        raise RuntimeError(f"strata-bench failed ({rc}): {out.with_suffix('.log').read_text()[-2000:]}")
    client_cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return json.loads(out.read_text()), client_cpu


def machine() -> str:
    model = "unknown CPU"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return f"{os.cpu_count()} vCPU ({model}), {mem_gib:.0f} GiB, {platform.system()} {platform.release()}"


def fmt_side(r: dict) -> tuple[str, str, str, str]:
    return (f"{r['ops_per_s']:,.0f}" + (f" ({r['errors']} err)" if r["errors"] else ""),
            f"{r['p50_ms']:.2f} / {r['p99_ms']:.1f}",
            f"{r['cores']:.2f}",
            f"{r['cpu_us_per_op']:.0f}")


def aggregate(runs: list[dict]) -> dict:
    ops = sum(r["ops"] for r in runs)
    secs = sum(r["duration_s"] for r in runs)
    cpu = sum(r["server_cpu_s"] for r in runs)
    n = len(runs)
    roles = sorted({role for r in runs for role in r.get("cpu_by_role", {})})
    by_role = {role: sum(r.get("cpu_by_role", {}).get(role, 0.0) for r in runs) / ops * 1e6 if ops else 0.0
               for role in roles}
    return {
        "cpu_us_per_op_by_role": by_role,
        "ops": ops, "errors": sum(r["errors"] for r in runs),
        "ops_per_s": ops / secs if secs else 0.0,
        "p50_ms": sum(r["p50_ms"] for r in runs) / n, "p99_ms": sum(r["p99_ms"] for r in runs) / n,
        "cores": cpu / secs if secs else 0.0,
        "cpu_us_per_op": cpu / ops * 1e6 if ops else 0.0,
        "client_cpu_s": sum(r["client_cpu_s"] for r in runs),
        "gateway_us_per_op": sum(r["gateway_cpu_s"] for r in runs) / ops * 1e6 if ops else 0.0,
        "client_us_per_op": sum(r["client_cpu_s"] for r in runs) / ops * 1e6 if ops else 0.0,
    }


def measure(side: str, run_dir: Path, ports: Ports, pids: list[int], go) -> tuple[dict, dict]:
    """Runs `go()` (which returns the client's summary and CPU seconds) with the CPU of every process
    of `side` read around it; returns the summary and the CPU figures (server total, Envoy, by role)."""
    roles = side_roles(side, run_dir, ports)
    cpu0, role0 = cpu_seconds(pids), cpu_by_role(roles)
    summary, client_cpu = go()
    cpu1, role1 = cpu_seconds(pids), cpu_by_role(roles)
    if not all(alive(p) for p in pids):
        raise RuntimeError(f"a {side} process died during the run")
    by_role = {"client": client_cpu, **{role: role1[role] - role0[role] for role in roles}}
    try:
        changed = side_roles(side, run_dir, ports)["leader"] != roles["leader"]
    except (OSError, RuntimeError, KeyError, ValueError):
        changed = True  # no leader within the wait: an election was still going on
    cpu = {"server_cpu_s": cpu1 - cpu0, "gateway_cpu_s": by_role.get("Envoy", 0.0), "client_cpu_s": client_cpu,
           "cpu_by_role": by_role, "leader_pid": roles["leader"], "leader_changed": changed}
    return summary, cpu


def fmt_role_table(results: list[dict], sides: tuple[str, ...]) -> list[str]:
    """Markdown: CPU µs per operation of each process (client, Envoy, leader, followers) per side."""
    roles = ["client", "Envoy", "leader", "follower A", "follower B"]
    lines = ["| workload | side | " + " | ".join(roles) + " | servers (all but client) |", "|" + "---|" * 8]
    for r in results:
        for side in sides:
            by = r[side]["cpu_us_per_op_by_role"]
            cells = [f"{by[x]:.0f}" if x in by else "–" for x in roles]
            servers = sum(v for k, v in by.items() if k != "client")
            lines.append(f"| {r['workload']} | {SIDE_LABELS[side]} | {' | '.join(cells)} | {servers:.0f} |")
    return lines


def run(args: argparse.Namespace) -> int:
    run_dir = Path(args.run_dir).resolve()
    bench, etcd = Path(args.bench), Path(args.etcd)
    ports = Ports(args.port_offset)
    for path in (bench, etcd, Path(args.bin_dir) / "strata-node", Path(args.bin_dir) / "strata-cluster",
                 Path(args.envoy)):
        if not path.exists():
            print(f"bench-compare: {path} is missing", file=sys.stderr)
            return 1
    down(Path(args.bin_dir), run_dir)
    shutil.rmtree(run_dir, ignore_errors=True)
    (run_dir / "runs").mkdir(parents=True)
    print(f"machine: {machine()}; load average before: {os.getloadavg()[0]:.2f}", flush=True)
    etcd_pids = etcd_up(etcd, run_dir, ports)
    strata_pids = strata_up(Path(args.bin_dir), Path(args.envoy), run_dir, ports)
    pids = {"etcd": etcd_pids, "etcd-leader": etcd_pids, "strata": strata_pids}
    print(f"etcd pids {etcd_pids}, strata pids (3 nodes + envoy) {strata_pids}", flush=True)
    for side in ("etcd", "strata"):
        summary, _ = run_bench(bench, [*side_args(side, ports), *COMMON, "--workload", "c", "--load-only",
                                       "--load-clients", "64"], run_dir / "runs" / f"load-{side}.json", 180)
        print(f"loaded {RECORDS} records into {side} in {summary['load']['duration_s']:.1f} s", flush=True)

    only = set(args.only.split(",")) if args.only else None
    if only and only - {w[0] for w in WORKLOADS}:
        raise SystemExit(f"unknown workload ids {sorted(only - {w[0] for w in WORKLOADS})}")
    selected = [w for w in WORKLOADS if not only or w[0] in only]
    results = []
    peak = {}
    for wi, (wid, label, wargs, budget) in enumerate(selected):
        if HALF_ETCD_PUT_PEAK in wargs:
            if "put-100" not in peak:
                print(f"  {label}: skipped, it needs put-100 in the same run", flush=True)
                continue
            rate = round(peak["put-100"] / 2)
            wargs = [str(rate) if a == HALF_ETCD_PUT_PEAK else a for a in wargs]
            label = f"{label} ({rate:,}/s)"
        rounds = {side: [] for side in SIDES}
        for rnd in range(args.rounds):
            for side in SIDES:
                out = run_dir / "runs" / f"w{wi}-{side}-r{rnd}.json"
                bench_args = [*side_args(side, ports), *COMMON, *wargs, "--no-load", "--ops", str(budget),
                              "--duration", f"{args.seconds}s", "--request-timeout", "10s"]
                summary, cpu = measure(side, run_dir, ports, pids[side],
                                       lambda: run_bench(bench, bench_args, out, args.seconds + 60))
                r = {"ops": summary["ops"], "errors": summary["errors"], "duration_s": summary["duration_s"],
                     "p50_ms": summary["latency"]["p50_us"] / 1000, "p99_ms": summary["latency"]["p99_us"] / 1000,
                     **cpu}
                # Open loop: how late the client sent requests (no free worker, or no CPU for it).
                lag = summary.get("send_lag")
                if lag:
                    r["send_lag_p99_ms"] = lag["p99_us"] / 1000
                rounds[side].append(r)
                lag_note = f", client send lag p99 {r['send_lag_p99_ms']:.1f} ms" if lag else ""
                moved = " (the leader changed during the run)" if cpu["leader_changed"] else ""
                print(f"  {label:<40} {side:<11} round {rnd + 1}: {summary['throughput_ops_per_s']:>9,.0f} ops/s "
                      f"p50 {r['p50_ms']:.2f} ms p99 {r['p99_ms']:.1f} ms{lag_note}, {r['errors']} errors, "
                      f"server CPU {r['server_cpu_s']:.1f} s, client CPU {cpu['client_cpu_s']:.1f} s{moved}",
                      flush=True)
        agg = {side: aggregate(rounds[side]) for side in SIDES}
        e, el, s = agg["etcd"], agg["etcd-leader"], agg["strata"]
        peak[wid] = el["ops_per_s"]
        results.append({"workload": label, "args": wargs, "budget": budget, **agg, "rounds": rounds,
                        "throughput_ratio": s["ops_per_s"] / el["ops_per_s"] if el["ops_per_s"] else None,
                        "cpu_per_op_ratio": s["cpu_us_per_op"] / el["cpu_us_per_op"] if el["cpu_us_per_op"] else None,
                        "throughput_ratio_balanced": s["ops_per_s"] / e["ops_per_s"] if e["ops_per_s"] else None,
                        "cpu_per_op_ratio_balanced":
                            s["cpu_us_per_op"] / e["cpu_us_per_op"] if e["cpu_us_per_op"] else None})

    print(f"\nload average after: {os.getloadavg()[0]:.2f}\n")
    print("Ratios are Strata / etcd leader-direct (in brackets: Strata / etcd balanced).\n")
    head = ("| workload | etcd balanced ops/s | p50 / p99 ms | CPU µs/op "
            "| etcd leader-direct ops/s | p50 / p99 ms | CPU µs/op "
            "| Strata ops/s | p50 / p99 ms | CPU µs/op "
            "| throughput Strata/etcd | CPU per op Strata/etcd |")
    print(head)
    print("|" + "---|" * 12)

    def ratio(x, y):
        return f"{x:.2f}× ({y:.2f}×)" if x and y else "n/a"

    for r in results:
        cells = []
        for side in SIDES:
            ops, lat, _, cpu = fmt_side(r[side])
            cells += [ops, lat, cpu]
        print(f"| {r['workload']} | {' | '.join(cells)} "
              f"| {ratio(r['throughput_ratio'], r['throughput_ratio_balanced'])} "
              f"| {ratio(r['cpu_per_op_ratio'], r['cpu_per_op_ratio_balanced'])} |")
    print("\nWhere the CPU goes, µs per operation by process (the whole host is the limit: 2 cores run both "
          "sides' servers, Envoy and the client):\n")
    print("\n".join(fmt_role_table(results, SIDES)))
    open_loop = [r for r in results if all("send_lag_p99_ms" in x for side in SIDES for x in r["rounds"][side])]
    if open_loop:
        print("\nOpen loop, the client's own send lag p99 per round (ms; it includes waiting for a free worker, "
              "so a slow target's backlog shows here too):\n")
        for r in open_loop:
            lags = {side: ", ".join(f"{x['send_lag_p99_ms']:.1f}" for x in r["rounds"][side]) for side in SIDES}
            print(f"- {r['workload']}: " + "; ".join(f"{SIDE_LABELS[s]} {lags[s]}" for s in SIDES))
    (run_dir / "results.json").write_text(json.dumps({"machine": machine(), "seconds": args.seconds,
                                                       "rounds": args.rounds, "results": results}, indent=2))
    print(f"\nper-run JSON summaries: {run_dir / 'runs'}; table data: {run_dir / 'results.json'}")
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--run-dir", required=True)
    r.add_argument("--bench", required=True, help="strata-bench built with --features etcd")
    r.add_argument("--etcd", required=True)
    r.add_argument("--bin-dir", required=True, help="directory of the release strata-node and strata-cluster")
    r.add_argument("--envoy", required=True)
    r.add_argument("--seconds", type=int, default=20, help="upper bound of each run")
    r.add_argument("--rounds", type=int, default=2, help="interleaved rounds per side and workload")
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
