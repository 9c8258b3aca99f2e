"""Puts through the gateway, one after another, while deploy/compose/test.sh kills the leader's
container, and says what a client saw: how long it went without a successful write, and which writes
failed.

    python3 deploy/compose/writer.py --url http://127.0.0.1:18680 --token-file T --kill-file K \
        --limit 30 --out result.json

The test writes two lines into K: when it started `docker-compose kill` and when that returned
(nanoseconds since the epoch, as `date +%s%N` prints them). The writer stops once 20 writes that
started after the kill returned have succeeded, or when the limit (seconds after the kill returned,
or 60 s from its own start when K never appears) has passed. It exits 0 only in the first case.
"""

from __future__ import annotations

import argparse
import http.client
import json
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

RESUMED_AFTER = 20   # successful writes started after the kill that end the run
NO_KILL_LIMIT_S = 60
TIMEOUT_S = 2.0


def read_kill(path: Path) -> tuple[int, int] | None:
    try:
        lines = path.read_text(encoding="utf-8").split()
    except FileNotFoundError:
        return None
    return (int(lines[0]), int(lines[1])) if len(lines) >= 2 else None


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--url", required=True)
    p.add_argument("--token-file", required=True, type=Path)
    p.add_argument("--kill-file", required=True, type=Path)
    p.add_argument("--limit", required=True, type=float)
    p.add_argument("--out", required=True, type=Path)
    args = p.parse_args()

    url = urlsplit(args.url)
    headers = {"Authorization": "Bearer " + args.token_file.read_text(encoding="utf-8").strip(),
               "Content-Type": "application/octet-stream"}
    conn = None
    writes = []  # (start_ns, end_ns, status: an HTTP status, or the error's name)
    began = time.time_ns()
    kill = None
    ok = False
    while True:
        kill = kill or read_kill(args.kill_file)
        now = time.time_ns()
        if kill is None and now - began > NO_KILL_LIMIT_S * 1e9:
            break
        if kill is not None:
            after = [w for w in writes if w[0] > kill[1] and w[2] == 200]
            if len(after) >= RESUMED_AFTER:
                ok = True
                break
            if now - kill[1] > args.limit * 1e9:
                break
        start = time.time_ns()
        try:
            if conn is None:
                conn = http.client.HTTPConnection(url.hostname, url.port, timeout=TIMEOUT_S)
            conn.request("PUT", f"/v1/kv/compose/failover/{len(writes)}", body=str(start), headers=headers)
            resp = conn.getresponse()
            resp.read()
            status: int | str = resp.status
        except (OSError, http.client.HTTPException) as e:
            status = type(e).__name__
            conn.close()
            conn = None
        writes.append((start, time.time_ns(), status))
        if status != 200:
            time.sleep(0.01)

    result = {"resumed": ok, "writes": len(writes), "kill": kill}
    if kill is not None:
        # The longest stretch without a successful write's answer, from the last success before
        # the kill started to the first one after, and every write that failed on the way.
        done = [w[1] for w in writes if w[2] == 200]
        before = [t for t in done if t <= kill[0]]
        marks = ([before[-1]] if before else [kill[0]]) + [t for t in done if t > kill[0]]
        gaps = [b - a for a, b in zip(marks, marks[1:])]
        result["longest_gap_ms"] = round(max(gaps) / 1e6, 1) if gaps else None
        failed = [w for w in writes if w[2] != 200 and w[0] >= (before[-1] if before else kill[0])]
        result["failed"] = [{"status": w[2], "at_ms": round((w[0] - kill[0]) / 1e6, 1)} for w in failed]
        slowest = max((w for w in writes if w[0] >= kill[0] and w[2] == 200), key=lambda w: w[1] - w[0], default=None)
        result["slowest_write_ms"] = round((slowest[1] - slowest[0]) / 1e6, 1) if slowest else None
    args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
