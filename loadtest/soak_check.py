#!/usr/bin/env python3
"""Soak check: a fresh 3-node cluster (release build) behind Envoy, the k6 soak scenario at a fixed
arrival rate, and every 10 s a sample of what the gateway answered (Envoy's downstream counters)
and of each node's resident memory (VmRSS from /proc). At the end it prints one row per window and
two verdicts:

  throughput  every later window keeps >= 90 % of the first 10-second window's 2xx rate
  memory      each node's peak RSS in the second half of the run stays within 10 % (plus 16 MiB) of
              its peak in the first half after a one-minute warm-up: a memtable fills and is
              flushed in cycles, so memory is a sawtooth, and it must not climb from cycle to cycle

It writes samples.csv and result.json into --out and stops everything it started, also on error.
`--from-samples samples.csv` recomputes the verdicts of an earlier run without running anything.

  python3 loadtest/soak_check.py --k6 .tools/bin/k6 --bin-dir <target>/release --envoy <envoy> \\
      --rate 1000 --duration 10m --out .run/soak
"""

import argparse
import csv
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WINDOW_S = 10
BASE_PORT, GATEWAY_PORT, ADMIN_PORT = 17101, 18180, 19991


def gateway_counters(admin: str) -> dict[str, int]:
    url = f"{admin}/stats?format=json&filter=^http\\.ingress\\.downstream_rq_(2xx|4xx|5xx|completed)$"
    with urllib.request.urlopen(url, timeout=2) as resp:
        stats = json.load(resp)["stats"]
    return {s["name"].rsplit("_", 1)[-1]: int(s["value"]) for s in stats if "value" in s}


def rss_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def seconds(duration: str) -> int:
    units = {"s": 1, "m": 60, "h": 3600}
    return int(float(duration[:-1]) * units[duration[-1]]) if duration[-1] in units else int(duration)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--k6")
    p.add_argument("--bin-dir", help="directory with a release strata-node and strata-cluster (the launcher)")
    p.add_argument("--envoy")
    p.add_argument("--rate", type=int, required=True, help="arrivals/s (YCSB A over REST)")
    p.add_argument("--duration", default="10m")
    p.add_argument("--out", required=True)
    p.add_argument("--from-samples", help="recompute the verdicts from this samples.csv and exit")
    args = p.parse_args()
    if args.from_samples:
        return from_samples(Path(args.from_samples), args.rate, args.duration)
    if not (args.k6 and args.bin_dir and args.envoy):
        p.error("--k6, --bin-dir and --envoy are needed to run a soak")

    out = Path(args.out).resolve()
    run_dir = out / "cluster"
    out.mkdir(parents=True, exist_ok=True)
    admin = f"http://127.0.0.1:{ADMIN_PORT}"
    gateway = f"http://127.0.0.1:{GATEWAY_PORT}"
    k6 = None

    launcher = str(Path(args.bin_dir) / "strata-cluster")

    def stop(*_):
        if k6 and k6.poll() is None:
            k6.kill()
        subprocess.run([launcher, "down", "--run-dir", str(run_dir)], check=False)

    signal.signal(signal.SIGTERM, lambda *_: (stop(), sys.exit(143)))
    try:
        subprocess.run([launcher, "up", "--fresh", "--run-dir", str(run_dir),
                        "--node-bin", str(Path(args.bin_dir) / "strata-node"), "--envoy", args.envoy,
                        "--base-port", str(BASE_PORT), "--gateway-port", str(GATEWAY_PORT),
                        "--admin-port", str(ADMIN_PORT)], check=True)
        pids = {f.stem: int(f.read_text()) for f in sorted((run_dir / "pids").glob("node*.pid"))}
        env = dict(os.environ, STRATA_URL=gateway, RATE=str(args.rate), DURATION=args.duration)
        k6 = subprocess.Popen([args.k6, "run", "--quiet", "--summary-export", str(out / "k6-summary.json"),
                               str(ROOT / "loadtest" / "soak.js")], env=env, stdout=open(out / "k6.log", "w"),
                              stderr=subprocess.STDOUT)
        rows = []
        last = gateway_counters(admin)
        start = time.time()
        # k6 runs setup (loading records) first; windows start once requests flow, and the run is
        # bounded by the scenario's duration plus a margin.
        deadline = start + seconds(args.duration) + 120
        while k6.poll() is None and time.time() < deadline:
            time.sleep(WINDOW_S)
            now = gateway_counters(admin)
            row = {"t_s": round(time.time() - start)}
            for k in ("2xx", "4xx", "5xx"):
                row[f"{k}_per_s"] = round((now.get(k, 0) - last.get(k, 0)) / WINDOW_S, 1)
            for name, pid in pids.items():
                row[f"{name}_rss_mib"] = round(rss_kib(pid) / 1024, 1)
            rows.append(row)
            last = now
            print(", ".join(f"{k}={v}" for k, v in row.items()), flush=True)
        if k6.poll() is None:
            k6.kill()
            raise SystemExit("soak: k6 did not finish in time")
        k6_code = k6.wait()
    finally:
        stop()

    with open(out / "samples.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)
    return verdict(rows, args.rate, args.duration, k6_code, out)


def verdict(rows: list[dict], rate: int, duration: str, k6_code: int, out: Path) -> int:
    # Windows while the scenario ran at its rate: drop the setup phase (no 2xx yet or the load
    # of records) and the last, partial window.
    active = [r for r in rows if r["2xx_per_s"] > 0.5 * rate][:-1]
    if len(active) < 6:
        print(f"soak: only {len(active)} windows at the target rate; the cluster did not keep up", file=sys.stderr)
        return 1
    first = active[0]["2xx_per_s"]
    worst = min(r["2xx_per_s"] for r in active)
    errors = sum(r["5xx_per_s"] for r in active) * WINDOW_S
    warm = 60 // WINDOW_S
    after_warmup = active[warm:] or active
    half = len(after_warmup) // 2
    memory = {}
    for key in [k for k in rows[0] if k.endswith("_rss_mib")]:
        early = max(r[key] for r in after_warmup[:half] or after_warmup)
        late = max(r[key] for r in after_warmup[half:])
        memory[key.removesuffix("_rss_mib")] = {"first_half_peak_mib": early, "second_half_peak_mib": late,
                                                "flat": late <= early * 1.1 + 16}
    result = {
        "rate": rate, "duration": duration, "windows": len(active),
        "first_window_2xx_per_s": first, "worst_window_2xx_per_s": worst,
        "mean_2xx_per_s": round(sum(r["2xx_per_s"] for r in active) / len(active), 1),
        "worst_over_first": round(worst / first, 3), "throughput_kept": worst >= 0.9 * first,
        "server_errors": errors, "memory": memory, "k6_exit": k6_code,
    }
    (out / "result.json").write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))
    ok = result["throughput_kept"] and all(m["flat"] for m in memory.values()) and k6_code == 0
    return 0 if ok else 1


def from_samples(path: Path, rate: int, duration: str) -> int:
    with open(path) as f:
        rows = [{k: float(v) for k, v in r.items()} for r in csv.DictReader(f)]
    return verdict(rows, rate, duration, 0, path.parent)

if __name__ == "__main__":
    sys.exit(main())
