"""Checks of docker-compose.yml as docker-compose itself resolves it (`docker-compose config`, so
anchors and merges are applied as they would be when the file is started).

    python3 -m unittest deploy/test_compose.py          # DOCKER_COMPOSE names the binary (default docker-compose)

deploy/validate.sh runs it. Needs docker-compose and PyYAML (the project venv has both).
"""

from __future__ import annotations

import os
import re
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


def node_variables() -> set[str]:
    """The environment variables the node reads: the names its sources spell as string literals
    (clap's `env = "..."`, `std::env::var("...")`), and the OpenTelemetry SDK's variables that its
    telemetry module says the SDK reads for it (in backquotes in the module's docs)."""
    src = REPO / "storage/server/src"
    names = set()
    for path in src.rglob("*.rs"):
        names |= set(re.findall(r'"((?:STRATA|OTEL|RUST)_[A-Z0-9_]+)"', path.read_text(encoding="utf-8")))
    docs = "\n".join(line for line in (src / "telemetry.rs").read_text(encoding="utf-8").splitlines()
                     if line.startswith("//!"))
    return names | set(re.findall(r"`(OTEL_[A-Z0-9_]+)`", docs))


def dockerfile_env(path: str) -> dict[str, str]:
    """The ENV of a Dockerfile's last stage (one `ENV K=V \\` block, as deploy/Dockerfile.node has)."""
    text = (REPO / path).read_text(encoding="utf-8")
    last = text[text.rindex("\nFROM "):]
    env = {}
    for block in re.findall(r"^ENV ((?:.*\\\n)*.*)$", last, re.MULTILINE):
        for pair in block.replace("\\\n", " ").split():
            key, _, value = pair.partition("=")
            env[key] = value
    return env


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
                self.assertEqual(env.get("OTEL_SERVICE_NAME"), "strata-node")
                self.assertIn(host, node.get("depends_on", {}))

    def test_nodes_keep_their_own_identity(self):
        # Proves merging the shared environment kept each node's id and address (a merge that
        # replaced the map instead of extending it would give every node the same one or none).
        ids = {name: node["environment"].get("STRATA_ID") for name, node in self.nodes.items()}
        self.assertEqual(ids, {"node1": "1", "node2": "2", "node3": "3"})
        for name, node in self.nodes.items():
            self.assertEqual(node["environment"].get("STRATA_ADVERTISE"), f"{name}:7001")


class NodeEnvironment(unittest.TestCase):
    def test_every_variable_given_to_a_node_is_one_it_reads(self):
        # Proves compose and the node's image configure the node only through variables it reads: a
        # misspelt or foreign name (RUST_LOG where the node's own is STRATA_LOG, an OTLP setting the
        # exporter takes from code) would be silently ignored by the node.
        reads = node_variables()
        self.assertIn("STRATA_LOG", reads)
        self.assertIn("OTEL_TRACES_SAMPLER", reads)
        self.assertNotIn("OTEL_EXPORTER_OTLP_PROTOCOL", reads)
        image = dockerfile_env("deploy/Dockerfile.node")
        for name in image:
            with self.subTest(dockerfile=name):
                self.assertTrue(name in reads, f"deploy/Dockerfile.node sets {name}, which the node does not read")
        nodes = {name: s for name, s in resolved_compose()["services"].items()
                 if s.get("build", {}).get("dockerfile") == "deploy/Dockerfile.node"}
        self.assertEqual(len(nodes), 3)
        for service, node in nodes.items():
            for name in node.get("environment", {}):
                with self.subTest(service=service, variable=name):
                    self.assertTrue(name in reads, f"docker-compose.yml gives {service} {name}, which the node does not read")
        self.assertEqual(image.get("STRATA_LOG"), "info")


if __name__ == "__main__":
    unittest.main()
