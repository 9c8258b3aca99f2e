"""The gateway's TCP listeners: Envoy's TCP proxy in front of the nodes' Redis and memcached ports.

Part of the gateway generator (gateway/gen_envoy.py calls ``add_arguments``, ``check``, ``clusters``
and ``listeners``). Standard library only.

Two protocols have a port of their own on every node, and each can have a listener at the gateway,
described by one row of ``PROTOCOLS``:

* ``resp``, the Redis protocol: ``--resp-listen HOST:PORT`` and ``--resp-nodes`` (each node's
  ``strata-node --resp-listen`` address), for redis-cli, redis-benchmark and Redis client libraries;
* ``memcache``, the memcached text protocol: ``--memcache-listen HOST:PORT`` and ``--memcache-nodes``
  (each node's ``strata-node --memcache-listen`` address), for memcached clients.

The nodes' addresses come in the order of ``--nodes``, one for each. Envoy accepts the protocol's
clients and proxies each connection, whole, to a node's port for that protocol: the leader's while
one is healthy, else any live node's (a follower forwards writes to the leader, so any node serves
any command). As for REST and gRPC, two member clusters and an aggregate over them pick the node,
named after the protocol: ``resp_leader`` (``memcache_leader``) is health checked on each node's API
port with ``/health/leader``, ``resp_any`` (``memcache_any``) with ``/health/live``, and ``resp``
(``memcache``) aggregates them (the health checks go to the API port,
``health_check_config.port_value``, not the protocol's port). The listener and its stat prefix take
the protocol's name too.

A connection stays on the node it reached: after a leadership change it goes on to a follower, which
forwards writes. A node that stops closes its connections; clients reconnect. Roles are the nodes'
(Redis's ``AUTH`` takes the cluster's tokens); the gateway's HTTP filters (rate limit, token check)
do not apply to a TCP proxy. The members are the ones given: endpoint discovery (``--eds``) covers
the HTTP clusters only.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass

Hosts = list[tuple[str, int]]


@dataclass(frozen=True)
class Protocol:
    """One protocol the gateway can proxy over TCP."""

    # Its flags (--NAME-listen, --NAME-nodes), its listener and stat prefix, its aggregate cluster
    # and the prefix of its member clusters.
    name: str
    # What it is, in the help text.
    title: str
    # What a node's port for it is called, in the help text and the errors.
    port: str

    def flag(self, what: str) -> str:
        return f"--{self.name}-{what}"

    def listen(self, a: argparse.Namespace) -> tuple[str, int] | None:
        """Where the gateway listens for it (once ``check`` has parsed the flags); none when off."""
        return getattr(a, f"{self.name}_listen")

    def nodes(self, a: argparse.Namespace) -> Hosts | None:
        """Every node's port for it, in the order of ``--nodes`` (once ``check`` has parsed them)."""
        return getattr(a, f"{self.name}_nodes")


PROTOCOLS = (
    Protocol("resp", "the Redis protocol", "RESP"),
    Protocol("memcache", "the memcached text protocol", "memcached"),
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    for proto in PROTOCOLS:
        p.add_argument(proto.flag("listen"),
                       help=f"gateway host:port for {proto.title}, proxied over TCP to the nodes' "
                            f"{proto.port} ports (default: none)")
        p.add_argument(proto.flag("nodes"),
                       help=f"comma-separated host:port of every node's {proto.port} port (its "
                            f"{proto.flag('listen')}), in the order of --nodes; with {proto.flag('listen')}")


def check(a: argparse.Namespace, parse_hostport: Callable[[str], tuple[str, int]],
          parse_nodes: Callable[[str], Hosts]) -> str | None:
    """Parses every protocol's flags in place; what is wrong with them, if anything."""
    for proto in PROTOCOLS:
        problem = _check(proto, a, parse_hostport, parse_nodes)
        if problem:
            return problem
    return None


def _check(proto: Protocol, a: argparse.Namespace, parse_hostport: Callable[[str], tuple[str, int]],
           parse_nodes: Callable[[str], Hosts]) -> str | None:
    listen, nodes = proto.flag("listen"), proto.flag("nodes")
    if bool(proto.listen(a)) != bool(proto.nodes(a)):
        return f"{listen} and {nodes} go together"
    if not proto.listen(a):
        return None
    setattr(a, f"{proto.name}_listen", parse_hostport(proto.listen(a)))
    setattr(a, f"{proto.name}_nodes", parse_nodes(proto.nodes(a)))
    if len(proto.nodes(a)) != len(a.nodes):
        return (f"{nodes} names {len(proto.nodes(a))} {proto.port} ports for {len(a.nodes)} nodes in "
                "--nodes: one each, in the same order")
    if any(host != api_host for (host, _), (api_host, _) in zip(proto.nodes(a), a.nodes)):
        return f"{nodes} and --nodes name the nodes' hosts in the same order"
    return None


def _member(name: str, hosts: Hosts, a: argparse.Namespace, health_path: str,
            discovery: Callable[[Hosts], dict], health_check: Callable[[str], dict],
            overprovisioning: int, node_tls: dict | None) -> dict:
    endpoints = [{
        "endpoint": {
            "address": {"socket_address": {"address": host, "port_value": port}},
            # Health is the node's, asked on its API port.
            "health_check_config": {"port_value": api_port},
        },
    } for (host, port), (_, api_port) in zip(hosts, a.nodes)]
    return {
        "name": name,
        **discovery(hosts),
        "connect_timeout": "0.25s",
        "lb_policy": "ROUND_ROBIN",
        "common_lb_config": {"healthy_panic_threshold": {"value": 0.0}, "update_merge_window": "0s"},
        "load_assignment": {
            "cluster_name": name,
            "endpoints": [{"lb_endpoints": endpoints}],
            "policy": {"overprovisioning_factor": overprovisioning},
        },
        "health_checks": [health_check(health_path)],
        # With the nodes on TLS, their protocol ports take the gateway's client certificate as
        # their API port does, and the health checks (HTTP/2 to that API port) go over the same TLS.
        **({"transport_socket": node_tls} if node_tls else {}),
    }


def clusters(a: argparse.Namespace, discovery: Callable[[Hosts], dict],
             health_check: Callable[[str], dict], node_tls: dict | None = None) -> list[dict]:
    """For each protocol asked for: its member clusters (leader first, then any live node) and their
    aggregate, named after the protocol; over ``node_tls`` (the HTTP clusters' upstream TLS) when
    given."""
    out = []
    for proto in PROTOCOLS:
        if not proto.listen(a):
            continue
        hosts = proto.nodes(a)
        # One healthy host makes a priority 100 % healthy (gen_envoy.py's module docstring).
        overprovisioning = max(140, 100 * len(hosts))
        leader, any_node = f"{proto.name}_leader", f"{proto.name}_any"
        out += [
            _member(leader, hosts, a, "/health/leader", discovery, health_check, overprovisioning,
                    node_tls),
            _member(any_node, hosts, a, "/health/live", discovery, health_check, overprovisioning,
                    node_tls),
            {
                "name": proto.name,
                "connect_timeout": "0.25s",
                "lb_policy": "CLUSTER_PROVIDED",
                "cluster_type": {
                    "name": "envoy.clusters.aggregate",
                    "typed_config": {
                        "@type": "type.googleapis.com/envoy.extensions.clusters.aggregate.v3.ClusterConfig",
                        "clusters": [leader, any_node],
                    },
                },
            },
        ]
    return out


def listeners(a: argparse.Namespace, socket_address: Callable[[str, int], dict],
              tls: dict | None = None) -> list[dict]:
    """For each protocol asked for, its listener: each connection proxied whole to the protocol's
    aggregate cluster; over ``tls`` (a downstream TLS transport socket) when given, so a client
    without TLS fails its handshake."""
    out = []
    for proto in PROTOCOLS:
        if not proto.listen(a):
            continue
        host, port = proto.listen(a)
        out.append({
            "name": proto.name,
            "address": socket_address(host, port),
            "filter_chains": [{"filters": [{
                "name": "envoy.filters.network.tcp_proxy",
                "typed_config": {
                    "@type": "type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy",
                    "stat_prefix": proto.name,
                    "cluster": proto.name,
                },
            }], **({"transport_socket": tls} if tls else {})}],
        })
    return out
