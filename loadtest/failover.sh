#!/usr/bin/env bash
# Kills the leader of a running cluster (started by strata-cluster, the launcher) in the middle of
# a failover.js run and reports the error window.
#
#   loadtest/failover.sh --url http://127.0.0.1:8080 --run-dir .run/demo [--protocol rest|grpc]
#       [--rate 200] [--duration 20s] [--kill-after 8] [--k6 PATH] [--cluster PATH] [--out DIR]
#
# The killed node stays down (restart the cluster afterwards). Exits non-zero when k6's threshold
# (error rate) fails. Every process this script starts is stopped by pid.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
url=http://127.0.0.1:8080 run_dir="" protocol=rest rate=200 duration=20s kill_after=8
k6="${K6:-k6}" cluster="${STRATA_CLUSTER:-strata-cluster}" out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --url) url="$2"; shift 2 ;;
    --run-dir) run_dir="$2"; shift 2 ;;
    --protocol) protocol="$2"; shift 2 ;;
    --rate) rate="$2"; shift 2 ;;
    --duration) duration="$2"; shift 2 ;;
    --kill-after) kill_after="$2"; shift 2 ;;
    --k6) k6="$2"; shift 2 ;;
    --cluster) cluster="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    *) echo "failover.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ -n "$run_dir" ] || { echo "failover.sh: --run-dir is required (the cluster's run directory)" >&2; exit 2; }
out="${out:-$run_dir/failover}"
mkdir -p "$out"

k6_pid=""
cleanup() { if [ -n "$k6_pid" ] && kill -0 "$k6_pid" 2>/dev/null; then kill "$k6_pid" 2>/dev/null || true; fi; }
trap cleanup EXIT

STRATA_URL="$url" PROTOCOL="$protocol" RATE="$rate" DURATION="$duration" \
  "$k6" run --quiet --out "json=$out/points.json" --summary-export "$out/summary.json" "$here/failover.js" \
  >"$out/k6.log" 2>&1 &
k6_pid=$!

sleep "$kill_after"
leader=""
for _ in $(seq 1 20); do
  leader=$(curl -sf --max-time 1 "$url/v1/cluster/status" | python3 -c 'import json,sys; print(json.load(sys.stdin).get("leader_id") or "")' || true)
  [ -n "$leader" ] && [ "$leader" != 0 ] && break
  sleep 0.2
done
[ -n "$leader" ] || { echo "failover.sh: no leader found at $url" >&2; exit 1; }
# The time is taken just before: stop-node sends SIGKILL within milliseconds of starting, then
# waits for the process to be gone.
kill_ms=$(date +%s%3N)
"$cluster" stop-node --run-dir "$run_dir" --id "$leader" --kill
echo "failover.sh: killed leader node $leader at $kill_ms"

# k6 ends by itself after DURATION (+ gracefulStop); bound the wait anyway.
rc=0
for _ in $(seq 1 600); do kill -0 "$k6_pid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$k6_pid" 2>/dev/null; then echo "failover.sh: k6 overran; stopping it" >&2; kill "$k6_pid"; fi
wait "$k6_pid" || rc=$?
k6_pid=""
tail -n 25 "$out/k6.log"
python3 "$here/failover_window.py" "$out/points.json" --kill-ms "$kill_ms" --json "$out/window.json"
exit "$rc"
