"""Tests of gateway/resp_proxy.py: the Redis-protocol listener in the generated Envoy config.

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
RESP_NODES = "127.0.0.1:6380,127.0.0.1:6381,127.0.0.1:6382"


def refused(*argv: str) -> str:
    """The generator's complaint about `argv`."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.suppress(SystemExit):
        gen_envoy.parse_args(list(argv))
    return err.getvalue()


class RespProxyTest(EnvoyConfigCheck):
    def test_without_the_flags_there_is_no_resp_listener(self):
        # Proves: the Redis protocol is off unless asked for.
        config = build("--nodes", NODES)
        names = [listener["name"] for listener in config["static_resources"]["listeners"]]
        self.assertEqual(names, ["ingress"])
        self.assertFalse([c for c in config["static_resources"]["clusters"] if c["name"].startswith("resp")])

    def test_the_resp_listener_proxies_to_the_leader_first_health_checked_on_the_api_port(self):
        # Proves: the listener's TCP proxy goes to the aggregate of the leader's and any live node's
        # RESP ports, and the members' health checks ask each node's API port.
        config = build("--nodes", NODES, "--resp-listen", "127.0.0.1:6379", "--resp-nodes", RESP_NODES)
        listener = next(x for x in config["static_resources"]["listeners"] if x["name"] == "resp")
        proxy = listener["filter_chains"][0]["filters"][0]
        self.assertEqual(proxy["name"], "envoy.filters.network.tcp_proxy")
        self.assertEqual(proxy["typed_config"]["cluster"], "resp")
        self.assertEqual(listener["address"]["socket_address"]["port_value"], 6379)
        self.assertEqual(cluster(config, "resp")["cluster_type"]["typed_config"]["clusters"],
                         ["resp_leader", "resp_any"])
        for name, path in (("resp_leader", "/health/leader"), ("resp_any", "/health/live")):
            member = cluster(config, name)
            self.assertEqual(member["health_checks"][0]["http_health_check"]["path"], path)
            endpoints = member["load_assignment"]["endpoints"][0]["lb_endpoints"]
            self.assertEqual([(e["endpoint"]["address"]["socket_address"]["port_value"],
                               e["endpoint"]["health_check_config"]["port_value"]) for e in endpoints],
                             [(6380, 7001), (6381, 7002), (6382, 7003)])
            self.assertEqual(member["common_lb_config"]["healthy_panic_threshold"]["value"], 0.0)

    def test_envoy_takes_the_config(self):
        # Proves: Envoy itself validates a config with the RESP listener.
        config = build("--nodes", NODES, "--resp-listen", "127.0.0.1:6379", "--resp-nodes", RESP_NODES)
        self.validate(json.dumps(config), suffix=".json")

    def test_wrong_flags_are_refused_naming_the_problem(self):
        # Proves: one flag without the other, a count that does not match --nodes, and hosts in another
        # order are each refused with what is wrong.
        self.assertIn("go together", refused("--nodes", NODES, "--resp-listen", "127.0.0.1:6379"))
        self.assertIn("go together", refused("--nodes", NODES, "--resp-nodes", RESP_NODES))
        self.assertIn("one each", refused("--nodes", NODES, "--resp-listen", "127.0.0.1:6379",
                                          "--resp-nodes", "127.0.0.1:6380"))
        self.assertIn("same order", refused("--nodes", "a:7001,b:7001", "--resp-listen", "127.0.0.1:6379",
                                            "--resp-nodes", "b:6380,a:6380"))


if __name__ == "__main__":
    unittest.main()
