"""Checks of docker-compose.yml as docker-compose itself resolves it (`docker-compose config`, so
anchors and merges are applied as they would be when the file is started).

    python3 -m unittest deploy/test_compose.py          # DOCKER_COMPOSE names the binary (default docker-compose)

deploy/validate.sh runs it. Needs docker-compose and PyYAML (the project venv has both).
"""

from __future__ import annotations

import os
import subprocess
import sys
import unittest
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "gateway"))

from test_gen_envoy import build, cluster, dockerfile_argv, endpoints, without_out  # noqa: E402


def resolved_compose() -> dict:
    out = subprocess.run([os.environ.get("DOCKER_COMPOSE", "docker-compose"), "-f", "docker-compose.yml", "config"],
                         cwd=REPO, check=True, capture_output=True, text=True).stdout
    return yaml.safe_load(out)


def envoy_collector() -> str:
    """host:port the gateway image's Envoy exports its spans to (its config's otel_collector)."""
    config = build(*without_out(dockerfile_argv()))
    [endpoint] = endpoints(cluster(config, "otel_collector"))
    return endpoint


class Traces(unittest.TestCase):
    def setUp(self):
        self.services = resolved_compose()["services"]
        self.nodes = {name: s for name, s in self.services.items()
                      if s.get("build", {}).get("dockerfile") == "deploy/Dockerfile.node"}

    def test_every_node_exports_to_the_collector_envoy_exports_to(self):
        # Proves a compose trace does not stop at Envoy: each node gets the standard OTEL_* variables,
        # naming the same OTLP/gRPC receiver as Envoy's tracer, on a port that service exposes, and
        # starts after it.
        self.assertEqual(sorted(self.nodes), ["node1", "node2", "node3"])
        collector = envoy_collector()
        host, port = collector.rsplit(":", 1)
        self.assertIn(host, self.services)
        self.assertIn(port, [str(p) for p in self.services[host].get("expose", [])])
        for name, node in self.nodes.items():
            env = node.get("environment", {})
            with self.subTest(node=name):
                self.assertEqual(env.get("OTEL_EXPORTER_OTLP_ENDPOINT"), f"http://{collector}")
                self.assertEqual(env.get("OTEL_EXPORTER_OTLP_PROTOCOL"), "grpc")
                self.assertEqual(env.get("OTEL_SERVICE_NAME"), "strata-node")
                self.assertIn(host, node.get("depends_on", {}))

    def test_nodes_keep_their_own_identity(self):
        # Proves merging the shared environment kept each node's id and address (a merge that
        # replaced the map instead of extending it would give every node the same one or none).
        ids = {name: node["environment"].get("STRATA_ID") for name, node in self.nodes.items()}
        self.assertEqual(ids, {"node1": "1", "node2": "2", "node3": "3"})
        for name, node in self.nodes.items():
            self.assertEqual(node["environment"].get("STRATA_ADVERTISE"), f"{name}:7001")


if __name__ == "__main__":
    unittest.main()
