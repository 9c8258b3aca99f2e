"""What the gateway answered, counted: the Strata gateway (Envoy) keeps a counter of the failed
answers it sent its clients, by status, so that the nodes' stats (and the console's Elections and
Incident views) can show what clients were told during a failover.

Part of the gateway generator (gateway/gen_envoy.py puts ``answers_counter()`` among the public
listener's access loggers). Standard library only.

Envoy's own counters do not say it: a cluster's ``upstream_rq_<code>`` counts the members' answers
and the router's own replies before the local reply mappers change their status (a UC reply counted
503 reaches the client as 504 OUTCOME_UNKNOWN, see local_replies.py), one per attempt where a
member answered, and counts gRPC answers as HTTP 200. The stats access logger counts each answer
as it was sent: its HTTP status, its gRPC status, its response flags and the cluster its route
named, for the answers that failed on the server's side only (HTTP 5xx; gRPC UNAVAILABLE,
DEADLINE_EXCEEDED, INTERNAL, UNKNOWN), which keeps the set of tag values small.
"""

from __future__ import annotations

# Prometheus: envoy_gateway_answers_answered{code, grpc, flags, cluster}; the nodes read it
# (storage/server/src/stats/gateway.rs).
STATS_PREFIX = "gateway_answers"
COUNTER = "answered"
GRPC_FAILURES = ["UNAVAILABLE", "DEADLINE_EXCEEDED", "INTERNAL", "UNKNOWN"]


def answers_counter() -> dict:
    """An access logger that counts every failed answer the gateway sends (see the module's text)."""
    tags = [
        {"name": "code", "value_format": "%RESPONSE_CODE%"},
        {"name": "grpc", "value_format": "%GRPC_STATUS_NUMBER%"},
        {"name": "flags", "value_format": "%RESPONSE_FLAGS%"},
        {"name": "cluster", "value_format": "%UPSTREAM_CLUSTER%"},
    ]
    failed = {"or_filter": {"filters": [
        {"status_code_filter": {"comparison": {
            "op": "GE", "value": {"default_value": 500, "runtime_key": "strata.answers.counted_from"}}}},
        {"grpc_status_filter": {"statuses": GRPC_FAILURES}},
    ]}}
    return {
        "name": "envoy.access_loggers.stats",
        "filter": failed,
        "typed_config": {
            "@type": "type.googleapis.com/envoy.extensions.access_loggers.stats.v3.Config",
            "stats_scope": {"prefix": STATS_PREFIX},
            "counters": [{"stat": {"name": COUNTER, "tags": tags}, "value_fixed": 1}],
        },
    }
