"""Tests of gateway/tcp_proxy.py: the Redis-protocol and memcached listeners in the generated Envoy config.

    python3 -m unittest discover -s gateway -p 'test_*.py'

redis-cli through a real Envoy in front of real nodes, a leader kill included, is tested in
storage/harness/tests/resp.rs.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
import unittest
from pathlib import Path

GATEWAY = Path(__file__).resolve().parent
sys.path.insert(0, str(GATEWAY))

import gen_envoy  # noqa: E402
from test_gen_envoy import EnvoyConfigCheck, build, cluster  # noqa: E402

NODES = "127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003"
# Each protocol's gateway port and its nodes' ports (in the order of NODES).
PROTOCOLS = {
    "resp": ("127.0.0.1:6379", "127.0.0.1:6380,127.0.0.1:6381,127.0.0.1:6382", [6380, 6381, 6382]),
    "memcache": ("127.0.0.1:11211", "127.0.0.1:11212,127.0.0.1:11213,127.0.0.1:11214", [11212, 11213, 11214]),
}


def flags(name: str) -> list[str]:
    """The flags that open protocol `name` at the gateway."""
    listen, nodes, _ = PROTOCOLS[name]
    return [f"--{name}-listen", listen, f"--{name}-nodes", nodes]


def refused(*argv: str) -> str:
    """The generator's complaint about `argv`."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.suppress(SystemExit):
        gen_envoy.parse_args(list(argv))
    return err.getvalue()


def listener_names(config: dict) -> list[str]:
    return [listener["name"] for listener in config["static_resources"]["listeners"]]


def cluster_names(config: dict) -> list[str]:
    return [c["name"] for c in config["static_resources"]["clusters"]]


class TcpProxyTest(EnvoyConfigCheck):
    def test_without_the_flags_there_is_no_tcp_listener(self):
        # Proves: each protocol is off unless asked for.
        config = build("--nodes", NODES)
        self.assertEqual(listener_names(config), ["ingress"])
        for name in PROTOCOLS:
            self.assertFalse([c for c in cluster_names(config) if c.startswith(name)], name)

    def test_each_listener_proxies_to_the_leader_first_health_checked_on_the_api_port(self):
        # Proves, for each protocol alone: the listener's TCP proxy goes to the aggregate of the
        # leader's and any live node's ports for that protocol, and the members' health checks ask
        # each node's API port; the other protocol stays off.
        for name, (listen, _, node_ports) in PROTOCOLS.items():
            with self.subTest(protocol=name):
                config = build("--nodes", NODES, *flags(name))
                self.assertEqual(listener_names(config), ["ingress", name])
                listener = config["static_resources"]["listeners"][1]
                proxy = listener["filter_chains"][0]["filters"][0]
                self.assertEqual(proxy["name"], "envoy.filters.network.tcp_proxy")
                self.assertEqual(proxy["typed_config"]["cluster"], name)
                self.assertEqual(proxy["typed_config"]["stat_prefix"], name)
                self.assertEqual(listener["address"]["socket_address"]["port_value"],
                                 int(listen.rsplit(":", 1)[1]))
                self.assertEqual(cluster(config, name)["cluster_type"]["typed_config"]["clusters"],
                                 [f"{name}_leader", f"{name}_any"])
                for member, path in ((f"{name}_leader", "/health/leader"), (f"{name}_any", "/health/live")):
                    c = cluster(config, member)
                    self.assertEqual(c["health_checks"][0]["http_health_check"]["path"], path)
                    endpoints = c["load_assignment"]["endpoints"][0]["lb_endpoints"]
                    self.assertEqual([(e["endpoint"]["address"]["socket_address"]["port_value"],
                                       e["endpoint"]["health_check_config"]["port_value"]) for e in endpoints],
                                     list(zip(node_ports, [7001, 7002, 7003])))
                    self.assertEqual(c["common_lb_config"]["healthy_panic_threshold"]["value"], 0.0)
                for other in (other for other in PROTOCOLS if other != name):
                    self.assertFalse([c for c in cluster_names(config) if c.startswith(other)], other)

    def test_both_protocols_together_have_a_listener_and_clusters_each(self):
        # Proves: with both asked for, each protocol has its own listener, stat prefix and three
        # clusters, the Redis protocol's first.
        config = build("--nodes", NODES, *flags("resp"), *flags("memcache"))
        self.assertEqual(listener_names(config), ["ingress", "resp", "memcache"])
        names = cluster_names(config)
        self.assertEqual([c for c in names if c.startswith(("resp", "memcache"))],
                         ["resp_leader", "resp_any", "resp", "memcache_leader", "memcache_any", "memcache"])
        prefixes = [listener["filter_chains"][0]["filters"][0]["typed_config"]["stat_prefix"]
                    for listener in config["static_resources"]["listeners"][1:]]
        self.assertEqual(prefixes, ["resp", "memcache"])

    def test_envoy_takes_the_config(self):
        # Proves: Envoy itself validates a config with either listener, and with both.
        for argv in (flags("resp"), flags("memcache"), flags("resp") + flags("memcache")):
            with self.subTest(argv=argv):
                self.validate(json.dumps(build("--nodes", NODES, *argv)), suffix=".json")

    def test_with_tls_each_protocol_takes_tls_and_reaches_the_nodes_over_mutual_tls(self):
        # Proves: with the gateway's certificate, each TCP listener takes TLS only (its certificate
        # by SDS, no ALPN: Redis and memcached clients offer none), and with the nodes' TLS each
        # member cluster connects, and health checks, with the HTTP clusters' upstream TLS (the
        # gateway's client certificate and the cluster's CA); without TLS flags, neither. (A real
        # Envoy takes such a config in storage/harness/tests/tls.)
        tls = ["--tls-cert", "/c/gw.pem", "--tls-key", "/c/gw-key.pem", "--tls-sds", "/g/sds.yaml",
               "--node-tls-cert", "/c/gw.pem", "--node-tls-key", "/c/gw-key.pem", "--node-tls-ca", "/c/ca.pem",
               "--node-tls-sds", "/g/node-cert.yaml", "--node-tls-ca-sds", "/h/node-ca.yaml"]
        config = build("--nodes", NODES, *flags("resp"), *flags("memcache"), *tls)
        upstream = cluster(config, "nodes_any")["transport_socket"]
        for name in PROTOCOLS:
            with self.subTest(protocol=name):
                [listener] = [li for li in config["static_resources"]["listeners"] if li["name"] == name]
                [chain] = listener["filter_chains"]
                context = chain["transport_socket"]["typed_config"]
                self.assertTrue(context["@type"].endswith("DownstreamTlsContext"))
                self.assertNotIn("alpn_protocols", context["common_tls_context"])
                self.assertEqual(context["common_tls_context"]["tls_certificate_sds_secret_configs"][0]
                                 ["sds_config"]["path_config_source"]["path"], "/g/sds.yaml")
                for member in (f"{name}_leader", f"{name}_any"):
                    self.assertEqual(cluster(config, member)["transport_socket"], upstream)
        plain = build("--nodes", NODES, *flags("resp"), *flags("memcache"))
        for name in PROTOCOLS:
            [listener] = [li for li in plain["static_resources"]["listeners"] if li["name"] == name]
            self.assertNotIn("transport_socket", listener["filter_chains"][0])
            self.assertNotIn("transport_socket", cluster(plain, f"{name}_any"))

    def test_wrong_flags_are_refused_naming_the_problem(self):
        # Proves, for each protocol: one flag without the other, a count that does not match
        # --nodes, and hosts in another order are each refused with what is wrong, naming the
        # protocol's flags.
        for name, (listen, nodes, _) in PROTOCOLS.items():
            with self.subTest(protocol=name):
                lone_listen = refused("--nodes", NODES, f"--{name}-listen", listen)
                self.assertIn(f"--{name}-listen and --{name}-nodes go together", lone_listen)
                self.assertIn("go together", refused("--nodes", NODES, f"--{name}-nodes", nodes))
                count = refused("--nodes", NODES, f"--{name}-listen", listen,
                                f"--{name}-nodes", nodes.split(",")[0])
                self.assertIn(f"--{name}-nodes names 1", count)
                self.assertIn("one each", count)
                self.assertIn("same order", refused("--nodes", "a:7001,b:7001", f"--{name}-listen", listen,
                                                    f"--{name}-nodes", "b:6380,a:6380"))


if __name__ == "__main__":
    unittest.main()
