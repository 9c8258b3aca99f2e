#!/usr/bin/env bash
# docker-compose.yml started for real and checked (`./dev compose-test` runs this):
#   1. the images, built on this host by deploy/compose/local-images.sh (no registry needed)
#   2. the cluster's keys and tokens (strata auth keygen / token)
#   3. `docker-compose up -d` of every service whose program is here (Grafana is not: see below)
#   4. every node's /health/ready, asked inside its container, and a leader in /v1/cluster/status
#   5. through the gateway with curl: a put and its read-back with a write token, refusals (401)
#      without a token and with one signed by other keys, and (403, by the gateway itself) a
#      write token's member removal; then, at the gateway's Redis and memcached ports, the same key
#      read with redis-cli (AUTH with the token) and a memcached client's sign-in, write and read
#   6. the put's trace in Jaeger (Envoy's span and the nodes'), Prometheus scraping every target
#   7. k6's smoke scenario (loadtest/smoke.js) from the "load" profile's k6 service, inside compose
#   8. `docker-compose kill` of the leader's container while deploy/compose/writer.py puts through
#      the gateway one after another: writes must resume within FAILOVER_LIMIT_S, another node must
#      lead, and the key written before must still read back
# and always (also on failure or Ctrl-C) `docker-compose down -v`, and stops dockerd if it started it.
#
# Skips (prints why, exits 0) when the host cannot run it: not root, Docker's Debian packages not
# installable, or dockerd not starting. Any other failure exits non-zero.
#
# Environment: STRATA_CLI (the strata binary), STRATA_ENVOY_BIN, STRATA_K6, STRATA_JAEGER (see
# local-images.sh); COMPOSE_TEST_DIR (default .run/compose-test); ports published on 127.0.0.1:
# COMPOSE_TEST_GATEWAY_PORT (18680), COMPOSE_TEST_ADMIN_PORT (19961), COMPOSE_TEST_JAEGER_PORT
# (18686), COMPOSE_TEST_PROMETHEUS_PORT (18690), COMPOSE_TEST_RESP_PORT (18679),
# COMPOSE_TEST_MEMCACHE_PORT (18611); SMOKE_DURATION (15s) and SMOKE_VUS (4) of the k6
# run; FAILOVER_LIMIT_S (30).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
DIR="${COMPOSE_TEST_DIR:-$ROOT/.run/compose-test}"
PROJECT=strata-compose-test
DOCKER=/usr/bin/docker
SMOKE_DURATION="${SMOKE_DURATION:-15s}"
SMOKE_VUS="${SMOKE_VUS:-4}"
FAILOVER_LIMIT_S="${FAILOVER_LIMIT_S:-30}"
[ -x "${STRATA_CLI:-}" ] || { echo "compose-test: STRATA_CLI must name the strata binary (got '${STRATA_CLI:-}')" >&2; exit 2; }

export STRATA_GATEWAY_PORT="${COMPOSE_TEST_GATEWAY_PORT:-18680}"
export STRATA_ENVOY_ADMIN_PORT="${COMPOSE_TEST_ADMIN_PORT:-19961}"
export STRATA_JAEGER_UI_PORT="${COMPOSE_TEST_JAEGER_PORT:-18686}"
export STRATA_PROMETHEUS_PORT="${COMPOSE_TEST_PROMETHEUS_PORT:-18690}"
export STRATA_RESP_PORT="${COMPOSE_TEST_RESP_PORT:-18679}"
export STRATA_MEMCACHE_PORT="${COMPOSE_TEST_MEMCACHE_PORT:-18611}"
export STRATA_COMPOSE_AUTH="$DIR/auth"
export STRATA_JAEGER_IMAGE=strata-local/jaeger:bookworm
export STRATA_PROMETHEUS_IMAGE=strata-local/prometheus:bookworm
export STRATA_K6_IMAGE=strata-local/k6:bookworm
GATEWAY="http://127.0.0.1:$STRATA_GATEWAY_PORT"
# Grafana has no image here: no registry to pull grafana/grafana from, and neither the host nor
# Debian bookworm has Grafana. Every other service of the default profile starts.
SERVICES=(node1 node2 node3 envoy jaeger prometheus)

say() { printf 'compose-test: %s\n' "$*"; }
skip() { say "SKIPPED: $*"; exit 0; }
fail() { printf 'compose-test: FAIL: %s\n' "$*" >&2; exit 1; }
now() { date +%s%N; }
secs() { awk -v ns="$(( $(now) - $1 ))" 'BEGIN { printf "%.1f", ns / 1e9 }'; }
compose() { docker-compose -p "$PROJECT" -f docker-compose.yml "$@"; }

# -- can this host run it?
[ "$(id -u)" = 0 ] || skip "needs root (to install Docker's packages and start dockerd); run it as root"
if ! command -v dockerd >/dev/null || [ ! -x "$DOCKER" ] || ! command -v docker-compose >/dev/null \
   || ! command -v debootstrap >/dev/null; then
  say "installing docker.io, docker-compose and debootstrap"
  { apt-get update -qq && apt-get install -y -qq --no-install-recommends docker.io docker-compose debootstrap >/dev/null; } \
    || skip "Docker's Debian packages (docker.io docker-compose debootstrap) could not be installed"
fi

dockerd_pid=""
writer_pid=""
started=0
rm -rf "$DIR"
mkdir -p "$DIR"
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  if [ -n "$writer_pid" ]; then kill "$writer_pid" 2>/dev/null || true; wait "$writer_pid" 2>/dev/null || true; fi
  if [ "$started" = 1 ]; then
    compose logs --no-color > "$DIR/compose.log" 2>&1 || true
    say "docker-compose down -v (the services' logs: $DIR/compose.log)"
    compose --profile load down -v --remove-orphans >/dev/null 2>&1 || say "docker-compose down failed"
  fi
  if [ -n "$dockerd_pid" ]; then
    say "stopping dockerd (pid $dockerd_pid), which this test started"
    kill "$dockerd_pid" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$dockerd_pid" 2>/dev/null || break; sleep 0.2; done
    if kill -0 "$dockerd_pid" 2>/dev/null; then kill -9 "$dockerd_pid" 2>/dev/null || true; fi
    wait "$dockerd_pid" 2>/dev/null || true
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if "$DOCKER" info >/dev/null 2>&1; then
  say "using the Docker engine that is already running"
else
  dockerd > "$DIR/dockerd.log" 2>&1 &
  dockerd_pid=$!
  for _ in $(seq 60); do "$DOCKER" info >/dev/null 2>&1 && break; kill -0 "$dockerd_pid" 2>/dev/null || break; sleep 0.5; done
  if ! "$DOCKER" info >/dev/null 2>&1; then
    tail -5 "$DIR/dockerd.log" >&2
    skip "dockerd did not start (its log: $DIR/dockerd.log)"
  fi
  say "started dockerd (pid $dockerd_pid)"
fi
compose --profile load down -v --remove-orphans >/dev/null 2>&1 || true  # a run that was killed

# -- 1. images
t=$(now)
LOG="$DIR/images.log" WORK="$DIR/images" deploy/compose/local-images.sh
build_s=$(secs "$t")
say "images ready in $build_s s"

# -- 2. keys and tokens (and a token from keys the cluster does not trust)
"$STRATA_CLI" auth keygen --out "$DIR/auth" >/dev/null
"$STRATA_CLI" auth keygen --out "$DIR/other-auth" >/dev/null
write_token="$("$STRATA_CLI" auth token --key "$DIR/auth/signing-key.pem" --role write --subject compose-test)"
admin_token="$("$STRATA_CLI" auth token --key "$DIR/auth/signing-key.pem" --role admin --subject compose-test)"
stranger_token="$("$STRATA_CLI" auth token --key "$DIR/other-auth/signing-key.pem" --role admin --subject stranger)"

# -- 3. up
t=$(now)
started=1
compose up -d --no-build "${SERVICES[@]}"
say "not started: grafana (no grafana/grafana image can be pulled here, and neither this host nor Debian has Grafana)"

# -- 4. healthy: every node ready, a leader the gateway can reach
ready() {  # ready NODE: the node's /health/ready answers 200, asked inside its container
  compose exec -T "$1" bash -c 'exec 3<>/dev/tcp/127.0.0.1/7001 &&
    printf "GET /health/ready HTTP/1.0\r\nHost: localhost\r\n\r\n" >&3 && head -n1 <&3' 2>/dev/null | grep -q ' 200'
}
status() {  # status: /v1/cluster/status through the gateway
  curl -fsS -m 3 -H "Authorization: Bearer $admin_token" "$GATEWAY/v1/cluster/status"
}
code() { curl -sS -m 5 -o "$DIR/body" -w '%{http_code}' "$@"; }
leader_of() { python3 -c 'import json, sys; print(json.load(sys.stdin).get("leader_id") or "")'; }
deadline=$(( $(date +%s) + 120 ))
pending=(node1 node2 node3)
while [ "${#pending[@]}" -gt 0 ]; do
  [ "$(date +%s)" -lt "$deadline" ] || fail "not ready after 120 s: ${pending[*]}"
  still=()
  for n in "${pending[@]}"; do ready "$n" || still+=("$n"); done
  pending=("${still[@]}")
  [ "${#pending[@]}" -eq 0 ] || sleep 1
done
leader=""
while :; do
  got=$(code -H "Authorization: Bearer $admin_token" "$GATEWAY/v1/cluster/status" || true)
  case "$got" in
    200) leader="$(leader_of < "$DIR/body")"; [ -z "$leader" ] || break ;;
    401|403) fail "GET /v1/cluster/status with the admin token answered $got: $(cat "$DIR/body")" ;;
  esac
  [ "$(date +%s)" -lt "$deadline" ] || fail "no leader through the gateway after 120 s (last answer: $got)"
  sleep 0.5
done
healthy_s=$(secs "$t")
say "healthy in $healthy_s s: node1..3 ready, leader node$leader"

# -- 5. a put and its read-back through the gateway, and the refusals
value="compose-$(date +%s%N)"
trace_id="$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
got=$(code -X PUT --data-binary "$value" -H "Authorization: Bearer $write_token" \
  -H "traceparent: 00-$trace_id-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')-01" "$GATEWAY/v1/kv/compose/greeting")
[ "$got" = 200 ] || fail "PUT through the gateway answered $got: $(cat "$DIR/body")"
got=$(code -H "Authorization: Bearer $write_token" "$GATEWAY/v1/kv/compose/greeting")
[ "$got" = 200 ] && [ "$(cat "$DIR/body")" = "$value" ] || fail "GET answered $got '$(cat "$DIR/body")', not 200 '$value'"
got=$(code -X PUT --data-binary x "$GATEWAY/v1/kv/compose/anonymous")
[ "$got" = 401 ] || fail "a PUT without a token answered $got, not 401"
got=$(code -X PUT --data-binary x -H "Authorization: Bearer $stranger_token" "$GATEWAY/v1/kv/compose/stranger")
[ "$got" = 401 ] || fail "a PUT with a token of other keys answered $got, not 401"
say "put and read back through the gateway; without a token and with a stranger's: 401"
# The gateway checks roles itself (it mounts the same keys): a write token's removal of a member
# is refused there ("gateway: ..."), before any node sees it, and the member stays.
got=$(code -X DELETE -H "Authorization: Bearer $write_token" "$GATEWAY/v1/cluster/members/3")
[ "$got" = 403 ] && grep -q 'gateway: ' "$DIR/body" \
  || fail "a write token's DELETE /v1/cluster/members/3 answered $got '$(cat "$DIR/body")', not the gateway's 403"
got=$(code -H "Authorization: Bearer $admin_token" "$GATEWAY/v1/cluster/members")
grep -q '"id":3' "$DIR/body" || fail "member 3 is gone after a refused removal: $(cat "$DIR/body")"
say "a write token's member removal: 403 from the gateway itself; member 3 still listed"
# The Redis protocol at the gateway: refused without AUTH, the key REST wrote read with the token.
got="$(redis-cli -p "$STRATA_RESP_PORT" GET compose/greeting 2>&1 || true)"
case "$got" in UNAUTHENTICATED*) ;; *) fail "redis-cli GET without AUTH answered '$got'" ;; esac
got="$(redis-cli -p "$STRATA_RESP_PORT" --no-auth-warning -a "$write_token" GET compose/greeting 2>&1)"
[ "$got" = "$value" ] || fail "redis-cli GET through the gateway answered '$got', not '$value'"
# The memcached text protocol at the gateway: refused before sign-in, then a write REST reads.
python3 - "$STRATA_MEMCACHE_PORT" "$write_token" "$value" <<'PY' || fail "memcached through the gateway (above)"
import socket
import sys

port, token, value = int(sys.argv[1]), sys.argv[2], sys.argv[3]
conn = socket.create_connection(("127.0.0.1", port), timeout=10)
replies = conn.makefile("rb")


def ask(request):
    conn.sendall(request)
    return replies.readline().decode().rstrip("\r\n")


def check(got, want, what):
    if got != want:
        sys.exit(f"compose-test: {what}: {got!r}, not {want!r}")


check(ask(b"get compose/greeting\r\n"), "CLIENT_ERROR unauthenticated", "a get before sign-in")
sign_in = f"compose-test {token}".encode()
check(ask(b"set auth 0 0 %d\r\n%s\r\n" % (len(sign_in), sign_in)), "STORED", "the sign-in")
check(ask(b"get compose/greeting\r\n"), f"VALUE compose/greeting 0 {len(value)}", "the key REST wrote")
check(replies.readline().decode().rstrip("\r\n"), value, "its value")
check(replies.readline().decode().rstrip("\r\n"), "END", "the get's end")
check(ask(b"set compose/memcached 0 0 2\r\nmc\r\n"), "STORED", "a set")
PY
got=$(code -H "Authorization: Bearer $write_token" "$GATEWAY/v1/kv/compose/memcached")
[ "$got" = 200 ] && [ "$(cat "$DIR/body")" = mc ] \
  || fail "the key memcached wrote reads $got '$(cat "$DIR/body")' over REST, not 200 'mc'"
say "Redis (AUTH with the token) and memcached (its sign-in) at the gateway read the key REST wrote; REST reads memcached's"

# -- 6. the put's trace in Jaeger, Prometheus' targets
jaeger="http://127.0.0.1:$STRATA_JAEGER_UI_PORT"
traced_by() {  # traced_by SERVICE...: the put's trace in Jaeger has spans of every SERVICE
  local s
  for s in "$@"; do case " $services " in *" $s "*) ;; *) return 1 ;; esac; done
}
services=""
for _ in $(seq 60); do
  services="$(curl -fsS -m 3 "$jaeger/api/traces/$trace_id" 2>/dev/null | python3 -c '
import json, sys
data = json.load(sys.stdin).get("data") or []
print(" ".join(sorted({p["serviceName"] for t in data for p in t["processes"].values()})))' 2>/dev/null || true)"
  traced_by strata-gateway strata-node && break
  sleep 0.5
done
traced_by strata-gateway strata-node \
  || fail "trace $trace_id in Jaeger has spans of '$services', not of both strata-gateway and strata-node"
say "trace $trace_id in Jaeger, with spans of: $services"
prometheus="http://127.0.0.1:$STRATA_PROMETHEUS_PORT"
up=""
for _ in $(seq 60); do
  up="$(curl -fsS -m 3 "$prometheus/api/v1/targets" 2>/dev/null | python3 -c '
import json, sys
ts = json.load(sys.stdin)["data"]["activeTargets"]
print(sum(t["health"] == "up" for t in ts), len(ts))' 2>/dev/null || true)"
  [ "$up" = "4 4" ] && break
  sleep 1
done
[ "$up" = "4 4" ] || fail "Prometheus scrapes '$up' (up, all) targets, not all 4 up (3 nodes, Envoy)"
say "Prometheus scrapes all 4 targets (3 nodes, Envoy)"

# -- 7. k6's smoke scenario inside compose, through Envoy
mkdir -p "$DIR/k6" && chmod 0777 "$DIR/k6"
t=$(now)
STRATA_TOKEN="$write_token" compose --profile load run --rm --no-deps -v "$DIR/k6:/out" \
  -e SMOKE_DURATION="$SMOKE_DURATION" -e SMOKE_VUS="$SMOKE_VUS" \
  k6 run --quiet --summary-export /out/summary.json /work/loadtest/smoke.js > "$DIR/k6.log" 2>&1 \
  || { tail -30 "$DIR/k6.log" >&2; fail "k6 smoke run failed (its output: $DIR/k6.log)"; }
k6_figures="$(python3 - "$DIR/k6/summary.json" <<'EOF'
import json, sys
m = json.load(open(sys.argv[1]))["metrics"]
d = m["http_req_duration"]
print(f'{m["iterations"]["count"]} iterations, {m["http_reqs"]["count"]} requests '
      f'({m["http_reqs"]["rate"]:.0f}/s), failed {m["http_req_failed"]["value"]:.2%}, checks {m["checks"]["value"]:.2%}, '
      f'http_req_duration avg {d["avg"]:.1f} ms p90 {d["p(90)"]:.1f} ms p95 {d["p(95)"]:.1f} ms max {d["max"]:.1f} ms')
EOF
)"
say "k6 smoke ($SMOKE_VUS VUs, $SMOKE_DURATION) in $(secs "$t") s: $k6_figures"

# -- 8. kill the leader's container while a client writes through the gateway
printf '%s' "$write_token" > "$DIR/write.token"
python3 deploy/compose/writer.py --url "$GATEWAY" --token-file "$DIR/write.token" --kill-file "$DIR/kill" \
  --limit "$FAILOVER_LIMIT_S" --out "$DIR/failover.json" &
writer_pid=$!
sleep 1
issued=$(now)
compose kill "node$leader" >/dev/null 2>&1
killed=$(now)
printf '%s\n%s\n' "$issued" "$killed" > "$DIR/kill.tmp" && mv "$DIR/kill.tmp" "$DIR/kill"
writer_ok=1
wait "$writer_pid" || writer_ok=0
writer_pid=""
failover="$(python3 - "$DIR/failover.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
failed = ", ".join(f'{f["status"]} at {f["at_ms"]} ms' for f in r.get("failed", [])) or "none"
print(f'longest time without a successful write {r.get("longest_gap_ms")} ms, slowest write {r.get("slowest_write_ms")} ms, '
      f'{r["writes"]} writes, failed: {failed}')
EOF
)"
[ "$writer_ok" = 1 ] || fail "writes through the gateway did not resume within $FAILOVER_LIMIT_S s of killing node$leader: $failover"
killed_state="$("$DOCKER" inspect -f '{{.State.Status}}' "$(compose ps -q "node$leader")")"
new_leader="$(status | leader_of)"
[ "$killed_state" != running ] && [ -n "$new_leader" ] && [ "$new_leader" != "$leader" ] \
  || fail "after the kill node$leader is '$killed_state' and node'$new_leader' leads: no failover happened"
got=$(code -H "Authorization: Bearer $write_token" "$GATEWAY/v1/kv/compose/greeting")
[ "$got" = 200 ] && [ "$(cat "$DIR/body")" = "$value" ] || fail "after the failover GET answered $got '$(cat "$DIR/body")'"
say "killed node$leader's container (docker-compose kill took $(awk -v ns="$((killed - issued))" 'BEGIN { printf "%.1f", ns / 1e9 }') s; it stays $killed_state), node$new_leader leads; $failover; the key written before reads back"

cat > "$DIR/summary.txt" <<EOF
images ready:        $build_s s
up to healthy:       $healthy_s s
failover:            node$leader killed, node$new_leader leads; $failover
k6 smoke:            $k6_figures
EOF
say "passed"
cat "$DIR/summary.txt"
