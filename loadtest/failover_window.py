#!/usr/bin/env python3
"""Reads k6's `--out json` points of failover.js and the kill time, and reports the error window.

Figures (ms, relative to the kill):
  failed            requests that failed, and the send times of the first and last of them
  error_window_ms   from the first failed request's send to the last failed request's end (0: none)
  stall_ms          the longest gap between two successful completions around the kill: how long a
                    client saw no write succeed (covers both errors and requests that hung)
  first_ok_after_kill_ms  when the first request sent after the kill completed successfully
Standard library only.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime


def parse_time(s: str) -> float:
    # k6 writes RFC 3339 with nanoseconds and an offset; Python wants at most microseconds.
    head, _, rest = s.partition(".")
    frac, tz = rest, ""
    for sep in ("Z", "+", "-"):
        if sep in rest:
            i = rest.index(sep)
            frac, tz = rest[:i], rest[i:]
            break
    tz = "+00:00" if tz == "Z" else tz
    return datetime.fromisoformat(f"{head}.{(frac or '0')[:6]:0<6}{tz}").timestamp() * 1000.0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("points", help="k6 --out json file")
    p.add_argument("--kill-ms", type=float, required=True, help="unix ms of the SIGKILL")
    p.add_argument("--json", help="write the report here too")
    args = p.parse_args()

    reqs = []  # (send_ms, end_ms, ok)
    with open(args.points) as f:
        for line in f:
            if '"failover_request"' not in line or '"Point"' not in line:
                continue
            d = json.loads(line)
            end = parse_time(d["data"]["time"])
            reqs.append((end - d["data"]["value"], end, d["data"]["tags"].get("ok") == "true"))
    if not reqs:
        print("failover: no requests recorded", file=sys.stderr)
        return 1
    kill = args.kill_ms
    reqs.sort()
    bad = [r for r in reqs if not r[2]]
    ok_ends = sorted(r[1] for r in reqs if r[2])
    around = [e for e in ok_ends if kill - 2000 <= e <= kill + 15000]
    stall = max((b - a for a, b in zip(around, around[1:])), default=0.0)
    after = [r for r in reqs if r[0] >= kill and r[2]]
    report = {
        "requests": len(reqs),
        "failed": len(bad),
        "first_failed_send_ms": round(bad[0][0] - kill, 1) if bad else None,
        "last_failed_send_ms": round(bad[-1][0] - kill, 1) if bad else None,
        "error_window_ms": round(max(r[1] for r in bad) - bad[0][0], 1) if bad else 0.0,
        "stall_ms": round(stall, 1),
        "first_ok_after_kill_ms": round(min(r[1] for r in after) - kill, 1) if after else None,
        "max_latency_ms_sent_within_2s_of_kill": round(
            max((r[1] - r[0] for r in reqs if kill - 500 <= r[0] <= kill + 2000), default=0.0), 1),
    }
    print("failover: " + ", ".join(f"{k}={v}" for k, v in report.items()))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
