#!/usr/bin/env python3
"""Write the Envoy (v3 API) configuration of the Strata gateway.

Dependency-free (Python 3 standard library only), so it runs anywhere the repo is checked out.
Every Envoy config comes from this script, generated where it is used:

    python3 gateway/gen_envoy.py --eds --out .run/demo/envoy.yaml   # local clusters: strata-cluster
                                                                    # runs it at start, with their ports
    python3 gateway/gen_envoy.py --compose --out /envoy.yaml    # docker-compose: deploy/Dockerfile.envoy
                                                                # runs it while building the image
    python3 gateway/gen_envoy.py --k8s --configmap strata/strata-envoy --out deploy/k8s/envoy-configmap.yaml

The Kubernetes ConfigMap is the one generated file kept in the repository (kustomize cannot run a
generator); a test keeps it identical to this script's output.

TLS (``--tls-cert``/``--tls-key`` for clients, ``--node-tls-*`` for mutual TLS to the nodes) is
added by gateway_tls.py, which says what each end checks. With certificates the script writes
more files beside the config: SDS files naming the certificates and the CA, one secret each
(``--tls-sds``, by default gateway-tls-sds.yaml beside ``--out``; with ``--node-tls-*``,
``--node-tls-sds`` and ``--node-tls-ca-sds``, gateway-node-tls-sds.yaml and gateway-node-ca-sds.yaml),
from which Envoy takes them and reloads them when they are replaced.

Output is YAML when the output file ends in .yaml/.yml (or goes to stdout), JSON when it ends in
.json; Envoy picks its parser from the extension.

How the leader-aware routing works (read this before changing any number below)
-----------------------------------------------------------------------------
Every storage node serves REST, gRPC and the internal raft transport on one port, speaking HTTP/1.1
and h2c. Envoy talks HTTP/2 (h2c) to all of them, so one set of clusters serves REST and gRPC.

* ``nodes_leader``: every node, actively health-checked on ``GET /health/leader``, which answers 200
  only on the raft leader. So at most one host (two for a moment around an election) is healthy.
* ``nodes_any``: the same nodes, health-checked on ``GET /health/live``.
* ``nodes``: an aggregate cluster ``[nodes_leader, nodes_any]``.

Which nodes: with ``--eds`` (local clusters, compose and Kubernetes) the two member clusters take their endpoints
from the nodes themselves. Every node serves Envoy's EndpointDiscoveryService (state-of-the-world gRPC)
on its one port, answering both clusters with the members of the raft configuration it applied and
pushing a new version when membership changes; Envoy keeps one stream to a seed of the ``xds`` cluster
(the nodes given with ``--nodes``, health-checked on ``/health/live``), and moves it to another seed when
its node dies or refuses (a node refuses once it is not a member, or has known no leader for a second).
So members added with ``--join`` or removed reach the gateway without a restart; a removed member leaves
at once (``ignore_health_on_host_removal``), even while its health check still passes. In Kubernetes
the seeds are the StatefulSet's first three pods (DNS names, re-resolved as pods move), and the nodes
resolve the members' pod names into the addresses they send. Without ``--eds`` the clusters list
``--nodes``.

The aggregate cluster linearises the priority levels of its members: nodes_leader's P0 becomes
priority 0 and nodes_any's P0 becomes priority 1. Envoy then spreads load over priorities by their
"health": ``min(100, healthy_hosts / all_hosts * overprovisioning_factor)`` percent, where the
overprovisioning factor is the member cluster's own ``load_assignment.policy.overprovisioning_factor``
(default 140; with ``--eds`` the nodes send it, by the same rule, with each assignment). With the
default, one healthy leader out of three nodes gives priority 0 a health of only 33 % * 1.4 = 47 %,
and 53 % of the requests would spill to any node, each paying a forwarding hop. We therefore give
both member clusters an overprovisioning factor of ``100 * len(nodes)`` (at least 140): a single
healthy host makes its priority 100 % healthy, so

* leader healthy        -> 100 % of the traffic goes to priority 0, i.e. to the leader only;
* no leader healthy     -> priority 0 has health 0 and 100 % goes to priority 1: any live node,
                           which forwards to the leader once one exists or answers
                           503 UNAVAILABLE + ``x-strata-retryable: true`` during an election, and the
                           route's retry policy retries that;
* no node live at all   -> Envoy answers 503 locally (``no healthy upstream``). Envoy does NOT retry
                           such a local reply, whatever the retry policy says; clients must.

Panic mode would undo all of this (by default, below 50 % healthy hosts Envoy ignores health and
spreads traffic over every host), so ``healthy_panic_threshold`` is 0 on the member clusters and on
the aggregate (the aggregate's own load balancer applies its own ``common_lb_config``).
``update_merge_window: 0s`` makes health flips reach the worker threads at once (the default batches
them for 1 s), and ``no_traffic_interval`` equals ``interval`` (the default is 60 s until a cluster
has carried traffic, so a fresh gateway would take up to a minute to find the leader).

Retries: a 503 from a node, or an ``UNAVAILABLE`` / ``RESOURCE_EXHAUSTED`` gRPC status marked
``x-strata-retryable: true``, always means "not applied, safe to retry"; a 504 / DEADLINE_EXCEEDED
means "outcome unknown" and is never retried. The gateway retries at once only what a node marks
``x-strata-gateway-retry: true``: UNAVAILABLE (no leader yet, not the leader, stopping), which
another try, on the new leader, soon answers. OVERLOADED (the node's budget of writes in flight is
spent, or its storage is behind) goes back to the client, which retries after a pause: retried at
once it only adds load, and five quick retries of refused 15 MiB writes used the whole route
timeout, which then fell with a try in flight and had to be answered "outcome unknown". We also never retry on ``reset`` (a reset after the request was sent may have
been applied). Replies Envoy makes itself follow the same contract: ``RESPONSE_FLAGS`` (local_replies.py) gives each
of Envoy's response flags one answer ("not applied" only when no byte of the request reached a
node), and ``local_reply_config`` is generated from it. Left alone, Envoy would answer a stream
cut off after it was sent with 503, and an upstream timeout with 504, and gRPC clients would read
both as UNAVAILABLE, "safe to retry", for a write the node may still commit.
``python3 gateway/gen_envoy.py --flags-table`` prints the table docs/reliability.md carries.

Limits against abuse (a rate per client address, a connection cap, request and idle timeouts) are
in limits.py, with their flags; the role checks made with --jwks, from the nodes' own table, in roles.py;
the TCP listeners of the Redis and memcached protocols (--resp-*, --memcache-*) in tcp_proxy.py.
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import os
import re
import sys

import answers  # the script's own folder is on sys.path
import limits
import roles
import tcp_proxy
from presets import CONSOLE_ON_NODES, PRESETS
from gateway_tls import (
    NODE_CA_SDS_FILE,
    NODE_SDS_FILE,
    SDS_FILE,
    downstream_transport_socket,
    render_sds,
    tls_listener,
    upstream_transport_socket,
    write_by_rename,
)
from local_replies import (
    REQUEST_ID_HEADER,
    RETRYABLE_HEADER,
    flags_table,
    local_reply_config,
)
from yaml_text import to_yaml

# Matches a generated file to its generator; the test regenerates and compares byte for byte.
HEADER = (
    "# GENERATED by gateway/gen_envoy.py -- do not edit by hand.\n"
    "# Regenerate: python3 gateway/gen_envoy.py {args}\n"
)

HC_INTERVAL = "0.1s"  # Leader health-check period: bounds how long traffic goes to a deposed leader.
HC_TIMEOUT = "0.2s"  # Generous against a busy node on 2 cores; a timeout counts as one failure.
XDS_CLUSTER = "xds"  # --eds: the seed nodes serving the member clusters' endpoints.
XDS_HC_INTERVAL = "0.5s"  # Only picks the seed a new discovery stream goes to.
CONNECT_TIMEOUT = "0.25s"
# The concurrent streams a node accepts on one HTTP/2 connection (hyper's server default, which the
# nodes keep). Envoy otherwise opens up to 2^31 - 1 and spreads streams over new connections only
# past that: with more than this many requests in flight to a node, the node refused the excess
# (RST_STREAM REFUSED_STREAM), and after 1,024 refusals on one connection it closed it
# (GOAWAY ENHANCE_YOUR_CALM), failing every request still on it as "outcome unknown".
NODE_MAX_CONCURRENT_STREAMS = 200
REQUEST_BUFFER_BYTES = 16 * 1024 * 1024  # Bodies up to this size are buffered so they can be retried.
# Sized for ~1000 concurrent clients, with room for retries during a failover.
CB_MAX_CONNECTIONS = 8192
CB_MAX_PENDING = 8192
CB_MAX_REQUESTS = 8192
CB_MAX_RETRIES = 4096  # Envoy's default is 3 concurrent retries, far too few during an election.
RETRIES = 8  # Retries of what a node marks retryable; see retry_policy().
RETRY_BASE_INTERVAL = "0.025s"
RETRY_MAX_INTERVAL = "0.1s"

KV_RETRY_GRPC = "connect-failure,refused-stream,unavailable,retriable-headers"
KV_RETRY_REST = "connect-failure,refused-stream,retriable-headers"
GATEWAY_RETRY_HEADER = "x-strata-gateway-retry"
# A write that carries its client's request id is applied once however often it is sent (the
# nodes answer a retry with the first attempt's outcome), so for those the gateway also retries
# what means "outcome unknown": a node's 504 / DEADLINE_EXCEEDED, its own per-try timeout, and a
# reset after the request was sent.
ONCE_RETRY_GRPC = KV_RETRY_GRPC + ",deadline-exceeded,reset"
ONCE_RETRY_REST = KV_RETRY_REST + ",retriable-status-codes,reset"


def parse_hostport(text: str) -> tuple[str, int]:
    """Split "host:port" (IPv6 as "[::1]:7001") into (host, port)."""
    m = re.fullmatch(r"\[([0-9A-Fa-f:.]+)\]:(\d+)|([^:\[\]]+):(\d+)", text.strip())
    if not m:
        raise argparse.ArgumentTypeError(f"expected host:port, got {text!r}")
    host = m.group(1) or m.group(3)
    port = int(m.group(2) or m.group(4))
    if not 0 < port < 65536:
        raise argparse.ArgumentTypeError(f"port out of range in {text!r}")
    return host, port


def parse_nodes(text: str) -> list[tuple[str, int]]:
    nodes = [parse_hostport(part) for part in text.split(",") if part.strip()]
    if not nodes:
        raise argparse.ArgumentTypeError("--nodes needs at least one host:port")
    if len(set(nodes)) != len(nodes):
        raise argparse.ArgumentTypeError("--nodes has duplicates")
    return nodes


def is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        return False


def socket_address(host: str, port: int) -> dict:
    return {"socket_address": {"address": host, "port_value": port}}


def duration_ms(ms: int) -> str:
    return f"{ms / 1000:g}s"


def discovery(hosts: list[tuple[str, int]]) -> dict:
    """STATIC for literal IPs; a strict DNS cluster for names (docker-compose services, Kubernetes pod DNS).

    STRICT_DNS keeps one endpoint per name and re-resolves it, so a restarted container or pod
    with a new IP is picked up without restarting Envoy."""
    if all(is_ip(h) for h, _ in hosts):
        return {"type": "STATIC"}
    return {"cluster_type": {
        "name": "envoy.cluster.dns",
        "typed_config": {
            "@type": "type.googleapis.com/envoy.extensions.clusters.dns.v3.DnsCluster",
            "dns_lookup_family": "V4_PREFERRED",
            "dns_refresh_rate": "1s",
            "respect_dns_ttl": False,
        },
    }}


def load_assignment(name: str, hosts: list[tuple[str, int]], overprovisioning: int | None = None) -> dict:
    la = {
        "cluster_name": name,
        "endpoints": [{"lb_endpoints": [{"endpoint": {"address": socket_address(h, p)}} for h, p in hosts]}],
    }
    if overprovisioning is not None:
        la["policy"] = {"overprovisioning_factor": overprovisioning}
    return la


def circuit_breakers() -> dict:
    limits = {
        "max_connections": CB_MAX_CONNECTIONS,
        "max_pending_requests": CB_MAX_PENDING,
        "max_requests": CB_MAX_REQUESTS,
        "max_retries": CB_MAX_RETRIES,
    }
    return {"thresholds": [dict(priority="DEFAULT", **limits), dict(priority="HIGH", **limits)]}


def h2_upstream() -> dict:
    """Upstream HTTP/2 over cleartext (h2c) with keep-alive pings to notice a dead peer, and no more
    streams on a connection than a node takes (``NODE_MAX_CONCURRENT_STREAMS``)."""
    return {
        "envoy.extensions.upstreams.http.v3.HttpProtocolOptions": {
            "@type": "type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions",
            "explicit_http_config": {
                "http2_protocol_options": {
                    "max_concurrent_streams": NODE_MAX_CONCURRENT_STREAMS,
                    "connection_keepalive": {"interval": "5s", "timeout": "1s"},
                    "initial_stream_window_size": 4 * 1024 * 1024,
                    "initial_connection_window_size": 16 * 1024 * 1024,
                }
            },
        }
    }


def outlier_detection() -> dict:
    """Takes a node out of a member cluster at the first connection to it that fails (refused, reset,
    timed out: Envoy's own, "local origin" errors), for a second, without waiting for its next
    health check (up to HC_INTERVAL later). A killed leader is otherwise still the one healthy host of
    nodes_leader for up to 0.1 s, and every write sent meanwhile spends its tries on it, each refused.
    Only local-origin errors count: a node's 503 (no leader yet, overloaded) or 504 says nothing about
    whether it is reachable, so those detectors are off, as is the success-rate one."""
    return {
        "split_external_local_origin_errors": True,
        "consecutive_local_origin_failure": 1,
        "enforcing_consecutive_local_origin_failure": 100,
        "enforcing_consecutive_5xx": 0,
        "enforcing_consecutive_gateway_failure": 0,
        "enforcing_success_rate": 0,
        "enforcing_local_origin_success_rate": 0,
        "enforcing_failure_percentage": 0,
        "enforcing_failure_percentage_local_origin": 0,
        "base_ejection_time": "1s",
        "max_ejection_time": "1s",
        # Every host may be out at once: with no healthy host left in nodes_leader the aggregate
        # sends to nodes_any, which is what should happen when the leader is gone.
        "max_ejection_percent": 100,
    }


def health_check(path: str, interval: str = HC_INTERVAL) -> dict:
    return {
        "timeout": HC_TIMEOUT,
        "interval": interval,
        "unhealthy_interval": interval,
        "no_traffic_interval": interval,
        "interval_jitter": "0s",
        "unhealthy_threshold": 1,
        "healthy_threshold": 1,
        "reuse_connection": True,
        "http_health_check": {"path": path, "codec_client_type": "HTTP2"},
    }


def eds_source() -> dict:
    """Where a member cluster's endpoints come from with --eds: the nodes' own EndpointDiscoveryService
    (state-of-the-world gRPC), reached through the ``xds`` cluster of seed nodes."""
    return {
        "resource_api_version": "V3",
        "api_config_source": {
            "api_type": "GRPC",
            "transport_api_version": "V3",
            "grpc_services": [{"envoy_grpc": {
                "cluster_name": XDS_CLUSTER,
                # A stream that ends (its node stopped, or could not vouch for its member list) is opened
                # again on another seed within a second, not after Envoy's default backoff (up to 30 s).
                "retry_policy": {"retry_back_off": {"base_interval": "0.1s", "max_interval": "1s"}},
            }}],
            "set_node_on_first_message_only": True,
        },
    }


def node_cluster(name: str, nodes: list[tuple[str, int]], health_path: str, eds: bool = False,
                 tls: dict | None = None) -> dict:
    """A member cluster: its endpoints from the nodes (``eds``) or ``nodes``; ``tls``
    (gateway_tls.upstream_transport_socket) makes it, and its health checks, connect with TLS."""
    if eds:
        # The members come from the nodes (EDS), with the overprovisioning factor of the rule above,
        # which the nodes compute from the member count. A member removed from the cluster leaves at
        # once, even while it still answers its health check (Envoy's default keeps it until it fails).
        membership = {
            "type": "EDS",
            "eds_cluster_config": {"eds_config": eds_source()},
            "ignore_health_on_host_removal": True,
        }
    else:
        membership = discovery(nodes)
    cluster = {
        "name": name,
        **membership,
        "connect_timeout": CONNECT_TIMEOUT,
        "lb_policy": "ROUND_ROBIN",
        "per_connection_buffer_limit_bytes": 4 * 1024 * 1024,
        "common_lb_config": {
            # Never spread traffic over unhealthy hosts (the default threshold is 50 %).
            "healthy_panic_threshold": {"value": 0.0},
            # Health flips reach the workers at once (the default merges updates for 1 s).
            "update_merge_window": "0s",
        },
        "circuit_breakers": circuit_breakers(),
        "typed_extension_protocol_options": h2_upstream(),
    }
    if not eds:
        # One healthy host makes the priority 100 % healthy; see the module docstring.
        cluster["load_assignment"] = load_assignment(name, nodes, max(140, 100 * len(nodes)))
    cluster["health_checks"] = [health_check(health_path)]
    cluster["outlier_detection"] = outlier_detection()
    if tls:
        cluster["transport_socket"] = tls
    return cluster


def xds_cluster(seeds: list[tuple[str, int]], tls: dict | None = None) -> dict:
    """The seed nodes Envoy asks for the member clusters' endpoints (--eds). Any member serves them;
    health checks on /health/live move Envoy's discovery stream to a live seed when its node dies.
    ``tls`` as for the member clusters: a node with TLS takes no connection without a certificate."""
    return {
        "name": XDS_CLUSTER,
        **discovery(seeds),
        "connect_timeout": CONNECT_TIMEOUT,
        "lb_policy": "ROUND_ROBIN",
        "typed_extension_protocol_options": h2_upstream(),
        "load_assignment": load_assignment(XDS_CLUSTER, seeds),
        "health_checks": [health_check("/health/live", XDS_HC_INTERVAL)],
        **({"transport_socket": tls} if tls else {}),
    }


def aggregate_cluster() -> dict:
    return {
        "name": "nodes",
        "connect_timeout": CONNECT_TIMEOUT,
        "lb_policy": "CLUSTER_PROVIDED",
        # The aggregate load balancer uses this cluster's own common_lb_config for panic decisions.
        "common_lb_config": {"healthy_panic_threshold": {"value": 0.0}},
        "circuit_breakers": circuit_breakers(),
        "cluster_type": {
            "name": "envoy.clusters.aggregate",
            "typed_config": {
                "@type": "type.googleapis.com/envoy.extensions.clusters.aggregate.v3.ClusterConfig",
                # Order is priority: the leader first, any live node as the fallback.
                "clusters": ["nodes_leader", "nodes_any"],
            },
        },
    }


def plain_cluster(name: str, host: str, port: int) -> dict:
    """A single HTTP/1.1 upstream (console static server, k6 REST API). No health check: if it is
    down the request simply fails with 503."""
    return {
        "name": name,
        **discovery([(host, port)]),
        "connect_timeout": "1s",
        "lb_policy": "ROUND_ROBIN",
        "load_assignment": load_assignment(name, [(host, port)]),
    }


def otel_cluster(hosts: list[tuple[str, int]]) -> dict:
    """The OTLP/gRPC collector the tracer exports to: one host, or none when there is no collector."""
    return {
        "name": "otel_collector",
        **discovery(hosts),
        "connect_timeout": "1s",
        "lb_policy": "ROUND_ROBIN",
        "typed_extension_protocol_options": {
            "envoy.extensions.upstreams.http.v3.HttpProtocolOptions": {
                "@type": "type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions",
                "explicit_http_config": {"http2_protocol_options": {}},
            }
        },
        "load_assignment": load_assignment("otel_collector", hosts),
    }


def retry_policy(retry_on: str) -> dict:
    return {
        "retry_on": retry_on,
        # During an election every try is answered 503 UNAVAILABLE at once, and the back-off decides
        # how long after the new leader a waiting write gets there: each wait is drawn from
        # [0, min(RETRY_MAX_INTERVAL, base * (2^n - 1))]. A cap of 0.1 s keeps that within 0.1 s of
        # the leader's arrival (0.25 s made the slowest put of each failover 225-357 ms when the
        # window was 140), and eight tries span about what five did with the higher cap.
        "num_retries": RETRIES,
        "retry_back_off": {"base_interval": RETRY_BASE_INTERVAL, "max_interval": RETRY_MAX_INTERVAL},
        # What a node marks for the gateway to retry (UNAVAILABLE), not every 503: an OVERLOADED
        # write goes back to the client, and a 504 means "outcome unknown".
        "retriable_headers": [{"name": GATEWAY_RETRY_HEADER, "string_match": {"exact": "true"}}],
    }


def grpc_route(prefix: str, cluster: str) -> dict:
    return {
        "match": {"prefix": prefix, "grpc": {}},
        "route": {
            "cluster": cluster,
            "timeout": "10s",
            # Honour a shorter grpc-timeout sent by the client.
            "max_stream_duration": {"grpc_timeout_header_max": "10s"},
            "retry_policy": dict(retry_policy(KV_RETRY_GRPC), per_try_timeout="5s"),
        },
    }


def once_route(route: dict) -> dict:
    """`route`, for requests that carry a request id only, retrying "outcome unknown" too."""
    match = dict(route["match"], headers=[{"name": REQUEST_ID_HEADER, "present_match": True}])
    grpc = "grpc" in match
    policy = dict(route["route"]["retry_policy"], retry_on=ONCE_RETRY_GRPC if grpc else ONCE_RETRY_REST)
    if not grpc:
        policy["retriable_status_codes"] = [504]
    return {"match": match, "route": dict(route["route"], retry_policy=policy)}


def rest_route(match: dict, cluster: str) -> dict:
    return {
        "match": match,
        "route": {
            "cluster": cluster,
            "timeout": "10s",
            # A per-try timeout ends the attempt with 504 and is not retried (no "5xx" /
            # "gateway-error" in retry_on): the node answers 504 itself well before this.
            "retry_policy": dict(retry_policy(KV_RETRY_REST), per_try_timeout="5s"),
        },
    }


STREAM_RETRY = "connect-failure,refused-stream,retriable-headers"


def stream_route(match: dict) -> dict:
    """An endless response (Server-Sent Events, a gRPC server stream) from any live node. No route
    timeout and no idle timeout (the node sends a keep-alive or progress message every 10 s
    anyway), and no retry once it has started: a client resumes a watch itself, from the last index
    it was sent. Before it starts, a node that refuses it for the gateway to retry (a removed node
    asked for the cluster's events) is left for another node."""
    return {
        "match": match,
        "route": {
            "cluster": "nodes_any",
            "timeout": "0s",
            "idle_timeout": "0s",
            "retry_policy": {
                "retry_on": STREAM_RETRY, "num_retries": 3,
                "retry_back_off": {"base_interval": "0.025s", "max_interval": "0.25s"},
                "retriable_headers": [{"name": GATEWAY_RETRY_HEADER, "string_match": {"exact": "true"}}],
                "retry_host_predicate": [{
                    "name": "envoy.retry_host_predicates.previous_hosts",
                    "typed_config": {"@type": "type.googleapis.com/envoy.extensions.retry.host."
                                              "previous_hosts.v3.PreviousHostsPredicate"}}],
                "host_selection_retry_max_attempts": 3,
            },
        },
    }




def console_route(console) -> dict:
    """The catch-all route: the console's bundle, from its own server or from any live node."""
    if console == CONSOLE_ON_NODES:
        return {"match": {"prefix": "/"}, "route": {
            "cluster": "nodes_any", "timeout": "15s",
            # Static files: safe to try another node when the first cannot be reached.
            "retry_policy": {"retry_on": "connect-failure,refused-stream", "num_retries": 2}}}
    return {"match": {"prefix": "/"}, "route": {"cluster": "console", "timeout": "15s"}}


def routes(console=CONSOLE_ON_NODES) -> list[dict]:
    return [
        # The raft transport is internal: never reachable through the gateway.
        {"match": {"prefix": "/strata.v1.Raft/"},
         "direct_response": {"status": 404, "body": {"inline_string": "the raft transport is internal"}}},
        # So are the calls members make on each other (Cluster/LocalStatus, LocalStats,
        # LocalCompact, LocalSnapshot, LocalTransferLeader), which the nodes do not check: a
        # client asks any node for the cluster-wide call (Status, Compact, ...), which checks its
        # role.
        {"match": {"prefix": "/strata.v1.Cluster/Local"},
         "direct_response": {"status": 404, "body": {"inline_string": "members' own calls are internal"}}},
        # And the endpoint discovery the nodes serve this gateway (--eds), which they do not check
        # either: Envoy's own discovery client reaches it through the xds cluster, never a route.
        {"match": {"prefix": "/envoy.service."},
         "direct_response": {"status": 404, "body": {"inline_string": "the gateway's endpoint discovery is internal"}}},
        stream_route({"path": "/strata.v1.KV/Watch", "grpc": {}}),
        stream_route({"path": "/strata.v1.KV/Backup", "grpc": {}}),
        once_route(grpc_route("/strata.v1.KV/", "nodes")),
        grpc_route("/strata.v1.KV/", "nodes"),
        # A keep-alive stream lasts as long as its client keeps the lease; the node it reaches
        # sends each keep-alive on to the leader.
        stream_route({"path": "/strata.v1.Lease/KeepAlive", "grpc": {}}),
        once_route(grpc_route("/strata.v1.Lease/", "nodes")),
        grpc_route("/strata.v1.Lease/", "nodes"),
        grpc_route("/strata.v1.Cluster/", "nodes_any"),
        grpc_route("/grpc.health.v1.Health/", "nodes_any"),
        grpc_route("/grpc.reflection.v1.ServerReflection/", "nodes_any"),
        grpc_route("/grpc.reflection.v1alpha.ServerReflection/", "nodes_any"),
        # Long responses: the cluster's events and watches over Server-Sent Events, the gRPC
        # watch stream, and backups (REST and gRPC). Any node serves them.
        stream_route({"path": "/v1/cluster/events"}),
        stream_route({"path": "/v1/watch"}),
        stream_route({"path": "/v1/backup"}),
        once_route(rest_route({"prefix": "/v1/"}, "nodes")),
        rest_route({"prefix": "/v1/"}, "nodes"),
        rest_route({"path": "/openapi.json"}, "nodes"),
        # One node's metrics, whichever answers; Prometheus scrapes every node on its own port.
        rest_route({"path": "/metrics"}, "nodes_any"),
        rest_route({"prefix": "/health/"}, "nodes"),
        {
            # k6's live figures (its web dashboard's server-sent events, K6_WEB_DASHBOARD=true): one
            # aggregate a second, percentiles included, for as long as the run lasts; absent when no
            # load test runs.
            "match": {"path": "/k6/events"},
            "route": {"cluster": "k6_dashboard", "prefix_rewrite": "/events", "timeout": "0s",
                      "idle_timeout": "0s"},
        },
        {
            # k6's REST API (k6 run --address 127.0.0.1:6565), to read; absent when no load test
            # runs. Its controls (pause, scale, stop) are not routed: runs are started and stopped
            # through the load runner (/load/run), which needs an admin token.
            "match": {"prefix": "/k6/", "headers": [{"name": ":method", "string_match": {"exact": "GET"}}]},
            "route": {"cluster": "k6", "prefix_rewrite": "/", "timeout": "5s"},
        },
        {"match": {"prefix": "/k6/"},
         "direct_response": {"status": 403, "body": {"inline_string": (
             "k6's controls are not routed: start and stop runs through the load runner (/load/run)")}}},
        console_route(console),
    ]


def with_load_runner(route_list: list[dict]) -> list[dict]:
    """The routes with the load runner's (strata-cluster load-runner) under /load/, before the catch-all.

    Only local clusters run one (strata-cluster passes --load-runner); it starts the bundled k6 scenarios
    against this gateway, and k6's own REST API is the /k6/ route. Its answers are quick (5 s), but
    for /load/run/events: the run's state as server-sent events, for as long as the console follows
    it (no route or idle timeout; the runner sends the state at least every 5 s anyway).
    """
    events = {"match": {"path": "/load/run/events"},
              "route": {"cluster": "load_runner", "timeout": "0s", "idle_timeout": "0s"}}
    route = {"match": {"prefix": "/load/"}, "route": {"cluster": "load_runner", "timeout": "5s"}}
    catch_all = next((i for i, r in enumerate(route_list) if r["match"] == {"prefix": "/"}), len(route_list))
    return route_list[:catch_all] + [events, route] + route_list[catch_all:]


def access_log(target: str) -> list[dict]:
    fmt = {"json_format": {
        "start": "%START_TIME%", "method": "%REQ(:METHOD)%", "path": "%REQ(X-ENVOY-ORIGINAL-PATH?:PATH)%",
        "protocol": "%PROTOCOL%", "status": "%RESPONSE_CODE%", "grpc_status": "%GRPC_STATUS%",
        "flags": "%RESPONSE_FLAGS%", "details": "%RESPONSE_CODE_DETAILS%",
        "duration_ms": "%DURATION%", "upstream_ms": "%RESP(X-ENVOY-UPSTREAM-SERVICE-TIME)%",
        "attempts": "%UPSTREAM_REQUEST_ATTEMPT_COUNT%", "cluster": "%UPSTREAM_CLUSTER%",
        "upstream": "%UPSTREAM_HOST%", "node": "%RESP(X-STRATA-NODE)%", "leader": "%RESP(X-STRATA-LEADER)%",
        "bytes_in": "%BYTES_RECEIVED%", "bytes_out": "%BYTES_SENT%", "request_id": "%REQ(X-REQUEST-ID)%",
        "traceparent": "%REQ(TRACEPARENT)%",
    }}
    if target == "-":
        return [{"name": "envoy.access_loggers.stdout", "typed_config": {
            "@type": "type.googleapis.com/envoy.extensions.access_loggers.stream.v3.StdoutAccessLog",
            "log_format": fmt}}]
    return [{"name": "envoy.access_loggers.file", "typed_config": {
        "@type": "type.googleapis.com/envoy.extensions.access_loggers.file.v3.FileAccessLog",
        "path": target, "log_format": fmt}}]


def jwt_filters(jwks_path: str) -> list[dict]:
    """Envoy's JWT filter, checking a token where a request carries one against the cluster's public
    keys (`strata auth keygen`'s jwks.json, read from `jwks_path`): a token that is expired, changed
    or signed by another key is refused here (401) before any node sees it. A request without one
    goes on (what it may do is the nodes' anonymous role), except to a route that needs admin.
    Then the RBAC filter refuses (403) what the token's role does not allow (roles.py). The token
    is forwarded, and every node checks it again and decides what its role allows, so the gateway
    is a first check, not the only one."""
    table = roles.load()
    return [{
        "name": roles.JWT_FILTER,
        "typed_config": {
            "@type": "type.googleapis.com/envoy.extensions.filters.http.jwt_authn.v3.JwtAuthentication",
            "providers": {roles.PROVIDER: {
                "issuer": "strata",
                "local_jwks": {"filename": jwks_path},
                "from_headers": [{"name": "authorization", "value_prefix": "Bearer "}],
                "forward": True,
                "clock_skew_seconds": 30,
                # The verified claims, for the RBAC filter's role checks.
                "payload_in_metadata": roles.PAYLOAD_KEY,
            }},
            "rules": roles.jwt_rules(table),
        },
    }, roles.rbac_filter(table)]


def build(args: argparse.Namespace) -> dict:
    nodes = args.nodes
    listen_host, listen_port = args.listen
    admin_host, admin_port = args.admin

    hcm: dict = {
        "@type": "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
        "stat_prefix": "ingress",
        # AUTO: HTTP/1.1 (REST, SSE, console) and h2c (gRPC) on the same listener.
        "codec_type": "AUTO",
        "use_remote_address": True,
        "generate_request_id": True,
        # Keys are path segments and may contain "/", "//", "." or an encoded "%2F": leave the path
        # exactly as the client sent it (no normalisation, no slash merging, no unescaping).
        "normalize_path": False,
        "merge_slashes": False,
        "path_with_escaped_slashes_action": "KEEP_UNCHANGED",
        # Timeouts on a client's request and connection, HTTP/2 limits (limits.py).
        **limits.connection_manager_limits(args),
        "route_config": {
            "name": "strata",
            "virtual_hosts": [{
                "name": "strata",
                "domains": ["*"],
                "request_body_buffer_limit": REQUEST_BUFFER_BYTES,
                # Numbers each attempt in x-envoy-attempt-count (see RETRIED_WITH_A_REQUEST_ID).
                "include_request_attempt_count": True,
                "routes": with_load_runner(routes(args.console)) if args.load_runner else routes(args.console),
            }],
        },
        "local_reply_config": local_reply_config(),
        # Cheapest refusal first: a client over its rate is refused before its token is checked.
        "http_filters": limits.rate_limit_filter(args) + (jwt_filters(args.jwks) if args.jwks else []) + [{
            "name": "envoy.filters.http.router",
            "typed_config": {"@type": "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"},
        }],
    }
    # The tracer is always on: every request starts or continues a trace (W3C traceparent) and the
    # nodes get the traceparent, so their spans join it and their log lines name it. It exports only
    # to a collector. Envoy's tracer must have an exporter (Envoy 1.40 refuses one without), so
    # without --otlp its exporter's cluster has no hosts and the traces Envoy starts are unsampled
    # (sampling 0 %): no span is exported, and the export of a trace a client sent already sampled
    # fails inside Envoy without opening a connection.
    sampling = args.trace_sampling if args.trace_sampling is not None else (100.0 if args.otlp else 0.0)
    hcm["tracing"] = {
        "random_sampling": {"value": sampling},
        "spawn_upstream_span": True,
        "provider": {
            "name": "envoy.tracers.opentelemetry",
            "typed_config": {
                "@type": "type.googleapis.com/envoy.config.trace.v3.OpenTelemetryConfig",
                "grpc_service": {"envoy_grpc": {"cluster_name": "otel_collector"}, "timeout": "1s"},
                "service_name": "strata-gateway",
            },
        },
    }
    hcm["access_log"] = [answers.answers_counter()]
    if args.access_log:
        hcm["access_log"] += access_log(args.access_log)

    node_tls = upstream_transport_socket(args.node_tls_sds, args.node_tls_ca_sds) if args.node_tls_cert else None
    clusters = [
        node_cluster("nodes_leader", nodes, "/health/leader", args.eds, node_tls),
        node_cluster("nodes_any", nodes, "/health/live", args.eds, node_tls),
        aggregate_cluster(),
        plain_cluster("k6", *args.k6),
        plain_cluster("k6_dashboard", *args.k6_dashboard),
    ]
    if args.console != CONSOLE_ON_NODES:
        clusters.insert(3, plain_cluster("console", *args.console))
    if args.load_runner:
        clusters.append(plain_cluster("load_runner", *args.load_runner))
    clusters.append(otel_cluster([args.otlp] if args.otlp else []))
    if args.eds:
        clusters.append(xds_cluster(nodes, node_tls))
    clusters += tcp_proxy.clusters(args, discovery, health_check, node_tls)

    listener = {
        "name": "ingress",
        "address": socket_address(listen_host, listen_port),
        "per_connection_buffer_limit_bytes": 4 * 1024 * 1024,
        "filter_chains": [{"filters": [{
            "name": "envoy.filters.network.http_connection_manager",
            "typed_config": hcm,
        }]}],
    }
    if args.tls_cert:
        listener = tls_listener(listener, args.tls_sds)

    return {
        "node": {"id": "strata-gateway", "cluster": "strata-gateway"},
        "admin": {"address": socket_address(admin_host, admin_port)},
        "overload_manager": limits.overload_manager(args),
        "static_resources": {
            "listeners": [listener, *tcp_proxy.listeners(
                args, socket_address, downstream_transport_socket(args.tls_sds, alpn=[]) if args.tls_cert else None)],
            "clusters": clusters,
        },
    }


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--preset", choices=sorted(PRESETS), help="start from a preset (compose, k8s); other flags override it")
    p.add_argument("--compose", dest="preset", action="store_const", const="compose", help="same as --preset compose")
    p.add_argument("--k8s", dest="preset", action="store_const", const="k8s", help="same as --preset k8s")
    p.add_argument("--nodes", help="comma-separated host:port of every storage node, or with --eds of the seed nodes "
                   "Envoy asks for the members (default 127.0.0.1:7001..7003)")
    eds_presets = " and ".join(f"--{name}" for name, preset in sorted(PRESETS.items()) if preset.get("eds"))
    p.add_argument("--eds", action=argparse.BooleanOptionalAction,
                   help="take the member clusters' endpoints from the nodes (EDS over gRPC, from the seeds in "
                        "--nodes), so members added or removed reach the gateway without a restart (default: "
                        f"on with {eds_presets}, and off otherwise, where --nodes lists every node)")
    p.add_argument("--listen", help="gateway listener host:port (default 127.0.0.1:8080)")
    p.add_argument("--admin", help="Envoy admin host:port (default 127.0.0.1:9901)")
    p.add_argument("--console", help="console static server host:port, or 'nodes' when the storage nodes serve "
                   "it themselves (strata-node --console-dir; the default)")
    p.add_argument("--k6", help="k6 REST API host:port, proxied under /k6/ (default 127.0.0.1:6565)")
    p.add_argument("--k6-dashboard", help="k6 web dashboard host:port (K6_WEB_DASHBOARD_PORT), whose event "
                   "stream is proxied as /k6/events (default 127.0.0.1:6567)")
    p.add_argument("--load-runner", help="load runner host:port, proxied under /load/ (default: no such route)")
    p.add_argument("--otlp", help="OTLP/gRPC collector host:port the OpenTelemetry tracer exports to "
                   "(without it the tracer still starts and forwards traces, and exports nothing)")
    p.add_argument("--trace-sampling", type=float,
                   help="percent of requests without a sampled traceparent that start a sampled trace "
                        "(default 100 with --otlp, else 0)")
    p.add_argument("--access-log", help="access log file path, or - for stdout (default: none)")
    p.add_argument("--jwks", help="the cluster's public keys (jwks.json, as the nodes' --auth-jwks): tokens "
                   "and their roles are then checked at the gateway too (roles.py), and a refused request "
                   "never reaches a node (default: not checked here; the nodes always check)")
    limits.add_arguments(p)
    tcp_proxy.add_arguments(p)
    p.add_argument("--tls-cert", help="the gateway's certificate (PEM): clients then connect with TLS 1.2+ "
                   "(ALPN h2, http/1.1); needs --tls-key (gateway_tls.py)")
    p.add_argument("--tls-key", help="the private key of --tls-cert")
    p.add_argument("--tls-sds", metavar="FILE",
                   help=f"with --tls-cert: the SDS file naming --tls-cert and --tls-key, which this script "
                        f"writes (with --configmap: a second key of the ConfigMap, named as FILE) and Envoy "
                        f"reads at FILE, watching its directory and the certificate's, so a certificate "
                        f"renamed over the old one is served without a restart (default: {SDS_FILE} "
                        f"beside --out; needed when --out is stdout or with --configmap)")
    p.add_argument("--node-tls-cert", help="the gateway's client certificate for the nodes (PEM): Envoy then "
                   "connects to the nodes, health checks and endpoint discovery included, with mutual TLS; "
                   "needs --node-tls-key and --node-tls-ca")
    p.add_argument("--node-tls-key", help="the private key of --node-tls-cert")
    p.add_argument("--node-tls-ca", help="the cluster's CA (ca.pem): a node's certificate must be issued by it")
    p.add_argument("--node-tls-sds", metavar="FILE",
                   help=f"with --node-tls-cert: the SDS file naming --node-tls-cert and --node-tls-key, written "
                        f"and read as --tls-sds's, so a certificate renamed over the old one is shown to the "
                        f"nodes on new connections without a restart (default: {NODE_SDS_FILE} beside --out; "
                        f"needed when --out is stdout or with --configmap)")
    p.add_argument("--node-tls-ca-sds", metavar="FILE",
                   help=f"with --node-tls-ca: the SDS file naming --node-tls-ca, likewise (default: "
                        f"{NODE_CA_SDS_FILE} beside --out; needed when --out is stdout or with --configmap)")
    p.add_argument("--format", choices=["yaml", "json"], help="output format (default: from --out's extension, else yaml)")
    p.add_argument("--configmap", metavar="NAMESPACE/NAME",
                   help="wrap the YAML config in a Kubernetes ConfigMap (data key envoy.yaml)")
    p.add_argument("--out", default="-", help="output file (default stdout)")
    p.add_argument("--flags-table", action="store_true",
                   help="write the table of Envoy response flags and what a client is told (Markdown) instead")
    a = p.parse_args(argv)

    defaults = dict(nodes="127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003", listen="127.0.0.1:8080",
                    admin="127.0.0.1:9901", console=CONSOLE_ON_NODES, k6="127.0.0.1:6565",
                    k6_dashboard="127.0.0.1:6567", otlp=None, access_log=None, jwks=None, eds=False)
    if a.preset:
        defaults.update(PRESETS[a.preset])
    for k, v in defaults.items():
        if getattr(a, k) is None:
            setattr(a, k, v)
    try:
        a.nodes = parse_nodes(a.nodes)
        for k in ("listen", "admin", "k6", "k6_dashboard"):
            setattr(a, k, parse_hostport(getattr(a, k)))
        if a.console != CONSOLE_ON_NODES:
            a.console = parse_hostport(a.console)
        a.otlp = parse_hostport(a.otlp) if a.otlp else None
        a.load_runner = parse_hostport(a.load_runner) if a.load_runner else None
    except argparse.ArgumentTypeError as e:
        p.error(str(e))
    problem = limits.check(a) or tcp_proxy.check(a, parse_hostport, parse_nodes)
    if problem:
        p.error(problem)
    if bool(a.tls_cert) != bool(a.tls_key):
        p.error("--tls-cert and --tls-key go together")
    if a.tls_sds and not a.tls_cert:
        p.error("--tls-sds goes with --tls-cert")
    if a.tls_cert and not a.tls_sds and not a.flags_table:
        if a.out == "-" or a.configmap:
            p.error("--tls-cert needs --tls-sds FILE (where Envoy reads the SDS file naming the certificate) "
                    "when the config goes to stdout or into a ConfigMap")
        a.tls_sds = os.path.join(os.path.dirname(a.out), SDS_FILE)
    node_tls = (a.node_tls_cert, a.node_tls_key, a.node_tls_ca)
    if any(node_tls) and not all(node_tls):
        p.error("--node-tls-cert, --node-tls-key and --node-tls-ca go together")
    for flag, attr, default in (("--node-tls-sds", "node_tls_sds", NODE_SDS_FILE),
                                ("--node-tls-ca-sds", "node_tls_ca_sds", NODE_CA_SDS_FILE)):
        if getattr(a, attr) and not a.node_tls_cert:
            p.error(f"{flag} goes with --node-tls-cert")
        if a.node_tls_cert and not getattr(a, attr) and not a.flags_table:
            if a.out == "-" or a.configmap:
                p.error(f"--node-tls-cert needs {flag} FILE (where Envoy reads an SDS file naming a "
                        f"certificate or the CA) when the config goes to stdout or into a ConfigMap")
            setattr(a, attr, os.path.join(os.path.dirname(a.out), default))
    if not a.flags_table:
        files = [f for f in (a.tls_sds, a.node_tls_sds, a.node_tls_ca_sds) if f]
        # Each file holds one secret (gateway_tls.py); a ConfigMap keys them by name, beside envoy.yaml.
        if a.configmap:
            names, config = [os.path.basename(f) for f in files], "envoy.yaml"
        else:
            names, config = [os.path.abspath(f) for f in files], os.path.abspath(a.out)
        if len(set(names)) < len(names) or config in names:
            p.error("--tls-sds, --node-tls-sds and --node-tls-ca-sds must be different files, and not the "
                    "config" + (" (with --configmap: different names, none envoy.yaml)" if a.configmap else ""))
    if a.format is None:
        a.format = "json" if a.out.endswith(".json") else "yaml"
    return a


def render(argv: list[str]) -> tuple[str, argparse.Namespace]:
    args = parse_args(argv)
    if args.flags_table:
        return flags_table(), args
    config = build(args)
    if args.format == "json":
        return json.dumps(config, indent=2) + "\n", args
    header = HEADER.format(args=" ".join(argv)).replace(" \n", "\n")
    if args.configmap:
        namespace, _, name = args.configmap.rpartition("/")
        meta = {"name": name, "labels": {"app.kubernetes.io/name": "strata-gateway", "app.kubernetes.io/part-of": "strata"}}
        if namespace:
            meta = {"name": name, "namespace": namespace, "labels": meta["labels"]}
        cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta}
        data = {"envoy.yaml": to_yaml(config) + "\n"}
        for path, sds in render_sds(args).items():
            # Mounted beside envoy.yaml: --tls-sds (and --node-tls-sds, --node-tls-ca-sds) is its
            # path in the pod.
            data[os.path.basename(path)] = sds
        text = header + to_yaml(cm) + "\ndata:\n"
        for key, value in data.items():
            text += f"  {key}: |\n" + "".join("    " + line + "\n" for line in value.splitlines())
        return text, args
    return header + to_yaml(config) + "\n", args


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    text, args = render(argv)
    sds = {} if args.flags_table or args.configmap else render_sds(args)
    for path, content in sds.items():
        # First, so the config never names a file that is not there yet.
        write_by_rename(path, content)
    if args.out == "-":
        sys.stdout.write(text)
    else:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
