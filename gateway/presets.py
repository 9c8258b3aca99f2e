"""The gateway generator's presets: the settings of the deployments kept in this repository.

Part of the gateway generator (gateway/gen_envoy.py reads ``PRESETS`` for ``--preset``, ``--compose``
and ``--k8s``; any flag given overrides its preset's value). Standard library only.

Both deployments open the Redis protocol and the memcached text protocol at the gateway, on their
standard ports (6379, 11211), proxied to the same ports of every node (strata-node
``--resp-listen``, ``--memcache-listen``; gateway/tcp_proxy.py).
"""

from __future__ import annotations

# `--console nodes`: the storage nodes serve the console's bundle themselves (strata-node
# --console-dir), so `/` goes to any live node.
CONSOLE_ON_NODES = "nodes"

# The ports the nodes and the gateway of both deployments serve the TCP protocols on.
RESP_PORT = 6379
MEMCACHE_PORT = 11211


def _tcp_protocols(hosts: list[str]) -> dict:
    """The gateway's RESP and memcached listeners, proxied to those ports of each of `hosts`."""
    return dict(
        resp_listen=f"0.0.0.0:{RESP_PORT}", resp_nodes=",".join(f"{h}:{RESP_PORT}" for h in hosts),
        memcache_listen=f"0.0.0.0:{MEMCACHE_PORT}",
        memcache_nodes=",".join(f"{h}:{MEMCACHE_PORT}" for h in hosts))


_COMPOSE_HOSTS = ["node1", "node2", "node3"]
_K8S_HOSTS = [f"strata-{i}.strata-peer.strata.svc.cluster.local" for i in range(3)]

PRESETS = {
    # Services of docker-compose.yml.
    "compose": dict(nodes=",".join(f"{h}:7001" for h in _COMPOSE_HOSTS), listen="0.0.0.0:8080",
                    admin="0.0.0.0:9901", console=CONSOLE_ON_NODES, k6="k6:6565", k6_dashboard="k6:5665",
                    otlp="jaeger:4317", access_log="-", eds=True,
                    # The cluster's public keys, the compose secret strata-jwks: roles checked here too.
                    jwks="/run/secrets/strata-jwks",
                    **_tcp_protocols(_COMPOSE_HOSTS)),
    # Pods of deploy/k8s (StatefulSet "strata" behind the headless Service "strata-peer").
    "k8s": dict(nodes=",".join(f"{h}:7001" for h in _K8S_HOSTS),
                listen="0.0.0.0:8080", admin="0.0.0.0:9901",
                console=CONSOLE_ON_NODES, k6="127.0.0.1:6565", k6_dashboard="127.0.0.1:6567", otlp=None,
                access_log="-", eds=True,
                # The cluster's public keys, from the Secret strata-auth (deploy/k8s/gateway.yaml).
                jwks="/etc/strata/auth/jwks.json",
                **_tcp_protocols(_K8S_HOSTS)),
}
