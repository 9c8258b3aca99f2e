#!/usr/bin/env bash
# Hostile REST input: schemathesis against proto/openapi.json through Envoy
# ($STRATA_URL, set by `strata-chaos exec`). Every response must be a non-5xx
# that conforms to the schema. /v1/cluster/events never ends and is excluded;
# so are the membership and leadership changes (add/remove/promote member,
# transfer leader) and range splits: they change the topology under the
# test and belong in a membership nemesis once they land. A split's bad
# input is tested where it is served (server/tests/in_process/ranges.rs).
# Usage: schemathesis.sh <repo root> <max examples per operation> <seed> <strict>
# Without strict, failures recorded in chaos/schemathesis-baseline.json
# (known findings, reported) are accepted and only new ones fail.
# $SCHEMATHESIS_EXTRA is added to schemathesis' arguments (the suite's run
# uses it to leave out the endless watch stream). The
# stateful phase is off: it chains membership changes (DELETE
# /v1/cluster/members/{id}), which is cluster administration, not input.
# The nodes check roles (requests without a token may read and write keys);
# every request carries the admin token ($STRATA_ADMIN_TOKEN, set by
# `strata-chaos exec`), so that the admin routes (compaction, snapshots,
# backups) are explored past the role check rather than all answered 401.
# The refusals themselves are `strata-chaos hostile`'s auth cases.
set -euo pipefail
: "${STRATA_ADMIN_TOKEN:?an admin token (strata-chaos exec sets it)}"
root="$1"; examples="${2:-30}"; seed="${3:-1}"; strict="${4:-false}"
out="${STRATA_RUN_DIR:-$root/.run/chaos-schemathesis}/schemathesis"
mkdir -p "$out"
venv="${STRATA_TOOLS_DIR:-$root/.tools}/venv"
baseline=()
if [ "$strict" != "true" ]; then
  baseline=(--baseline "$root/chaos/schemathesis-baseline.json")
fi
# Run from the run directory so hypothesis' caches stay out of the tree.
cd "$out"
# The highest term any node reports, read through the gateway: a 504 is an
# honest answer only if leadership moved while the run went on.
term() {
  curl -s --max-time 5 "$STRATA_URL/v1/cluster/status" \
    | python3 -c 'import json,sys; print(max(n.get("term") or 0 for n in json.load(sys.stdin)["nodes"]))' \
    2>/dev/null || echo 0
}
term_before="$(term)"
rc=0
nice "$venv/bin/schemathesis" run "$root/proto/openapi.json" \
  --url "$STRATA_URL" \
  -H "Authorization: Bearer $STRATA_ADMIN_TOKEN" \
  --checks not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance,response_headers_conformance \
  --exclude-operation-id clusterEvents --exclude-operation-id addMember --exclude-operation-id removeMember \
  --exclude-operation-id promoteMember --exclude-operation-id transferLeader \
  --exclude-operation-id splitRange \
  --phases examples,coverage,fuzzing \
  --max-examples "$examples" --seed "$seed" --workers 2 --request-timeout 15 \
  --suppress-health-check all --report junit,ndjson --report-dir "$out" --no-color \
  "${baseline[@]}" ${SCHEMATHESIS_EXTRA:-} || rc=$?
if [ "$rc" = 1 ]; then
  # Failures: only what an election under load explains may be forgiven.
  report="$(ls -t "$out"/ndjson-*.ndjson | head -1)"
  term_after="$(term)"
  python3 "$root/chaos/scripts/st_triage.py" "$report" --terms "$term_before" "$term_after" \
    $([ "$strict" = true ] && echo --strict)
  exit $?
fi
exit "$rc"
