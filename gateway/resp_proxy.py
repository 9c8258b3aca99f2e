"""The gateway's Redis-protocol listener: Envoy's TCP proxy in front of the nodes' RESP ports.

Part of the gateway generator (gateway/gen_envoy.py calls ``add_arguments``, ``check``, ``clusters``
and ``listener``). Standard library only.

With ``--resp-listen HOST:PORT`` and ``--resp-nodes`` (each node's ``--resp-listen`` address, in the
order of ``--nodes``), Envoy accepts Redis clients (redis-cli, redis-benchmark, client libraries) and
proxies each connection, whole, to a node's RESP port: the leader's while one is healthy, else any
live node's (a follower forwards writes to the leader, so any node serves any command). As for REST
and gRPC, two member clusters and an aggregate over them pick the node: ``resp_leader`` is health
checked on each node's API port with ``/health/leader``, ``resp_any`` with ``/health/live`` (the
health checks go to the API port, ``health_check_config.port_value``, not the RESP port).

A connection stays on the node it reached: after a leadership change it goes on to a follower, which
forwards writes. A node that stops closes its connections; Redis clients reconnect. Roles are the
nodes' (``AUTH`` takes the cluster's tokens); the gateway's HTTP filters (rate limit, token check) do
not apply to a TCP proxy. The members are the ones given: endpoint discovery (``--eds``) covers the
HTTP clusters only.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

Hosts = list[tuple[str, int]]


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--resp-listen", help="gateway host:port for the Redis protocol, proxied over TCP to the "
                                         "nodes' RESP ports (default: none)")
    p.add_argument("--resp-nodes", help="comma-separated host:port of every node's RESP port (its "
                                        "--resp-listen), in the order of --nodes; with --resp-listen")


def check(a: argparse.Namespace, parse_hostport: Callable[[str], tuple[str, int]],
          parse_nodes: Callable[[str], Hosts]) -> str | None:
    """Parses the RESP flags in place; what is wrong with them, if anything."""
    if bool(a.resp_listen) != bool(a.resp_nodes):
        return "--resp-listen and --resp-nodes go together"
    if not a.resp_listen:
        return None
    a.resp_listen = parse_hostport(a.resp_listen)
    a.resp_nodes = parse_nodes(a.resp_nodes)
    if len(a.resp_nodes) != len(a.nodes):
        return (f"--resp-nodes names {len(a.resp_nodes)} RESP ports for {len(a.nodes)} nodes in --nodes: "
                "one each, in the same order")
    if any(host != api_host for (host, _), (api_host, _) in zip(a.resp_nodes, a.nodes)):
        return "--resp-nodes and --nodes name the nodes' hosts in the same order"
    return None


def _member(name: str, a: argparse.Namespace, health_path: str, discovery: Callable[[Hosts], dict],
            health_check: Callable[[str], dict], overprovisioning: int) -> dict:
    endpoints = [{
        "endpoint": {
            "address": {"socket_address": {"address": host, "port_value": port}},
            # Health is the node's, asked on its API port.
            "health_check_config": {"port_value": api_port},
        },
    } for (host, port), (_, api_port) in zip(a.resp_nodes, a.nodes)]
    return {
        "name": name,
        **discovery(a.resp_nodes),
        "connect_timeout": "0.25s",
        "lb_policy": "ROUND_ROBIN",
        "common_lb_config": {"healthy_panic_threshold": {"value": 0.0}, "update_merge_window": "0s"},
        "load_assignment": {
            "cluster_name": name,
            "endpoints": [{"lb_endpoints": endpoints}],
            "policy": {"overprovisioning_factor": overprovisioning},
        },
        "health_checks": [health_check(health_path)],
    }


def clusters(a: argparse.Namespace, discovery: Callable[[Hosts], dict],
             health_check: Callable[[str], dict]) -> list[dict]:
    """The member clusters (leader first, then any live node) and their aggregate, ``resp``."""
    if not a.resp_listen:
        return []
    # One healthy host makes a priority 100 % healthy (gen_envoy.py's module docstring).
    overprovisioning = max(140, 100 * len(a.resp_nodes))
    return [
        _member("resp_leader", a, "/health/leader", discovery, health_check, overprovisioning),
        _member("resp_any", a, "/health/live", discovery, health_check, overprovisioning),
        {
            "name": "resp",
            "connect_timeout": "0.25s",
            "lb_policy": "CLUSTER_PROVIDED",
            "cluster_type": {
                "name": "envoy.clusters.aggregate",
                "typed_config": {
                    "@type": "type.googleapis.com/envoy.extensions.clusters.aggregate.v3.ClusterConfig",
                    "clusters": ["resp_leader", "resp_any"],
                },
            },
        },
    ]


def listener(a: argparse.Namespace, socket_address: Callable[[str, int], dict]) -> list[dict]:
    """The RESP listener, if asked for: each connection proxied whole to the ``resp`` cluster."""
    if not a.resp_listen:
        return []
    host, port = a.resp_listen
    return [{
        "name": "resp",
        "address": socket_address(host, port),
        "filter_chains": [{"filters": [{
            "name": "envoy.filters.network.tcp_proxy",
            "typed_config": {
                "@type": "type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy",
                "stat_prefix": "resp",
                "cluster": "resp",
            },
        }]}],
    }]
