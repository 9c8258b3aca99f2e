"""Tests for gateway/gen_envoy.py (standard library only; run with `python3 -m unittest` or pytest).

    python3 -m unittest discover -s gateway -p 'test_*.py'
    ENVOY=/path/to/envoy python3 -m unittest discover -s gateway -p 'test_*.py'   # also runs envoy --mode validate
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

GATEWAY = Path(__file__).resolve().parent
REPO = GATEWAY.parent
sys.path.insert(0, str(GATEWAY))

import gen_envoy  # noqa: E402

# Every committed file that gen_envoy.py writes. Each starts with a "# Regenerate: ..." line.
GENERATED = ["gateway/envoy.yaml", "deploy/envoy-compose.yaml", "deploy/k8s/envoy-configmap.yaml"]


def regenerate_argv(path: Path) -> list[str]:
    for line in path.read_text(encoding="utf-8").splitlines()[:5]:
        prefix = "# Regenerate: python3 gateway/gen_envoy.py"
        if line.startswith(prefix):
            return shlex.split(line[len(prefix):])
    raise AssertionError(f"{path} has no '# Regenerate:' header")


def build(*argv: str) -> dict:
    return gen_envoy.build(gen_envoy.parse_args(list(argv)))


def cluster(config: dict, name: str) -> dict:
    return next(c for c in config["static_resources"]["clusters"] if c["name"] == name)


def routes(config: dict) -> list[dict]:
    hcm = config["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]["typed_config"]
    return hcm["route_config"]["virtual_hosts"][0]["routes"]


def route_for(config: dict, path: str, grpc: bool = False) -> dict:
    """First route whose path/prefix matches, as Envoy would pick it (grpc: content-type is gRPC)."""
    for r in routes(config):
        m = r["match"]
        if "grpc" in m and not grpc:
            continue
        if ("path" in m and m["path"] == path) or ("prefix" in m and path.startswith(m["prefix"])):
            return r
    raise AssertionError(f"no route for {path}")


def endpoints(c: dict) -> list[str]:
    eps = c["load_assignment"]["endpoints"][0]["lb_endpoints"]
    return [f'{e["endpoint"]["address"]["socket_address"]["address"]}:'
            f'{e["endpoint"]["address"]["socket_address"]["port_value"]}' for e in eps]


class CommittedFilesAreFresh(unittest.TestCase):
    def test_default_envoy_yaml_equals_fresh_generation_with_default_args(self):
        # Proves the committed demo config is exactly what the script writes with default arguments.
        text, _ = gen_envoy.render(["--out", "gateway/envoy.yaml"])
        self.assertEqual((REPO / "gateway/envoy.yaml").read_text(encoding="utf-8"), text,
                         "gateway/envoy.yaml is stale: python3 gateway/gen_envoy.py --out gateway/envoy.yaml")

    def test_every_generated_file_equals_its_regenerate_command(self):
        # Proves no generated file (demo, compose, Kubernetes) drifted from the generator.
        for rel in GENERATED:
            with self.subTest(file=rel):
                path = REPO / rel
                self.assertTrue(path.exists(), f"{rel} missing")
                argv = regenerate_argv(path)
                text, _ = gen_envoy.render(argv)
                self.assertEqual(path.read_text(encoding="utf-8"), text,
                                 f"{rel} is stale: python3 gateway/gen_envoy.py {' '.join(argv)}")


class Routing(unittest.TestCase):
    def setUp(self):
        self.config = build()

    def test_leader_and_any_clusters_health_check_their_paths_fast(self):
        # Proves the failover timings the design relies on (see the generator's docstring).
        for name, path in (("nodes_leader", "/health/leader"), ("nodes_any", "/health/live")):
            c = cluster(self.config, name)
            hc = c["health_checks"][0]
            self.assertEqual(hc["http_health_check"], {"path": path, "codec_client_type": "HTTP2"})
            self.assertEqual(hc["interval"], "0.1s")
            self.assertEqual(hc["no_traffic_interval"], hc["interval"])
            self.assertEqual(hc["interval_jitter"], "0s")
            self.assertEqual((hc["unhealthy_threshold"], hc["healthy_threshold"]), (1, 1))
            self.assertEqual(c["common_lb_config"]["healthy_panic_threshold"], {"value": 0.0})
            self.assertEqual(c["common_lb_config"]["update_merge_window"], "0s")
            self.assertEqual(c["type"], "STATIC")
            self.assertEqual(endpoints(c), ["127.0.0.1:7001", "127.0.0.1:7002", "127.0.0.1:7003"])
            # One healthy host out of three must count as a fully healthy priority.
            self.assertGreaterEqual(c["load_assignment"]["policy"]["overprovisioning_factor"], 300)
            self.assertIn("http2_protocol_options", c["typed_extension_protocol_options"][
                "envoy.extensions.upstreams.http.v3.HttpProtocolOptions"]["explicit_http_config"])

    def test_aggregate_cluster_prefers_the_leader(self):
        agg = cluster(self.config, "nodes")
        self.assertEqual(agg["lb_policy"], "CLUSTER_PROVIDED")
        self.assertEqual(agg["cluster_type"]["typed_config"]["clusters"], ["nodes_leader", "nodes_any"])
        self.assertEqual(agg["common_lb_config"]["healthy_panic_threshold"], {"value": 0.0})

    def test_routes_send_each_path_to_the_right_cluster(self):
        cases = [
            ("/strata.v1.KV/Put", True, "nodes"),
            ("/strata.v1.Cluster/Status", True, "nodes_any"),
            ("/grpc.health.v1.Health/Check", True, "nodes_any"),
            ("/grpc.reflection.v1.ServerReflection/ServerReflectionInfo", True, "nodes_any"),
            ("/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo", True, "nodes_any"),
            ("/v1/cluster/events", False, "nodes_any"),
            ("/v1/kv/a/b", False, "nodes"),
            ("/v1/cluster/status", False, "nodes"),
            ("/openapi.json", False, "nodes"),
            ("/health/leader", False, "nodes"),
            ("/k6/v1/status", False, "k6"),
            ("/", False, "console"),
            ("/assets/index.js", False, "console"),
        ]
        for path, grpc, want in cases:
            with self.subTest(path=path):
                self.assertEqual(route_for(self.config, path, grpc)["route"]["cluster"], want)
        self.assertEqual(route_for(self.config, "/k6/v1/status")["route"]["prefix_rewrite"], "/")
        self.assertEqual(route_for(self.config, "/strata.v1.Raft/Send", True)["direct_response"]["status"], 404)

    def test_retries_cover_not_applied_errors_only(self):
        # 503 / UNAVAILABLE means "not applied" and is retried; 504 and resets mean "outcome unknown" and are not.
        kv = route_for(self.config, "/strata.v1.KV/Put", True)["route"]
        rest = route_for(self.config, "/v1/kv/a")["route"]
        self.assertEqual(kv["retry_policy"]["retry_on"], "connect-failure,refused-stream,unavailable,retriable-headers")
        self.assertEqual(rest["retry_policy"]["retry_on"],
                         "connect-failure,refused-stream,retriable-status-codes,retriable-headers")
        self.assertEqual(rest["retry_policy"]["retriable_status_codes"], [503])
        for r in (kv, rest):
            p = r["retry_policy"]
            self.assertEqual(p["num_retries"], 5)
            self.assertEqual(p["retry_back_off"], {"base_interval": "0.025s", "max_interval": "0.25s"})
            self.assertEqual(p["retriable_headers"][0]["name"], "x-strata-retryable")
            for bad in ("5xx", "reset", "gateway-error", "deadline-exceeded"):
                self.assertNotIn(bad, p["retry_on"].split(","))
            self.assertEqual(r["timeout"], "10s")

    def test_envoy_local_replies_keep_the_error_contract(self):
        # Proves a request cut off after it reached a node is reported as "outcome unknown" (504 /
        # DEADLINE_EXCEEDED), never as the retryable 503 / UNAVAILABLE Envoy would answer by default.
        hcm = self.config["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]["typed_config"]
        grpc_died, rest_died, unavailable = hcm["local_reply_config"]["mappers"][:3]
        self.assertEqual(rest_died["filter"]["response_flag_filter"]["flags"], ["UC", "UR", "UPE", "LR"])
        self.assertEqual(rest_died["status_code"], 504)
        self.assertEqual(rest_died["body_format_override"]["json_format"]["code"], "OUTCOME_UNKNOWN")
        self.assertEqual(grpc_died["headers_to_add"][0]["header"], {"key": "grpc-status", "value": "4"})
        self.assertEqual(unavailable["body_format_override"]["json_format"]["code"], "UNAVAILABLE")
        self.assertEqual({h["header"]["key"] for h in unavailable["headers_to_add"]}, {"x-strata-retryable", "retry-after-ms"})

    def test_sse_route_never_times_out(self):
        r = route_for(self.config, "/v1/cluster/events")["route"]
        self.assertEqual((r["timeout"], r["idle_timeout"]), ("0s", "0s"))

    def test_optional_tracing_and_access_log(self):
        self.assertNotIn("otel_collector", [c["name"] for c in self.config["static_resources"]["clusters"]])
        cfg = build("--otlp", "jaeger:4317", "--access-log", "-")
        hcm = cfg["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]["typed_config"]
        self.assertEqual(hcm["tracing"]["provider"]["name"], "envoy.tracers.opentelemetry")
        self.assertEqual(endpoints(cluster(cfg, "otel_collector")), ["jaeger:4317"])
        self.assertEqual(hcm["access_log"][0]["name"], "envoy.access_loggers.stdout")


class NodeCounts(unittest.TestCase):
    def test_five_nodes(self):
        nodes = ",".join(f"127.0.0.1:{7001 + i}" for i in range(5))
        cfg = build("--nodes", nodes)
        for name in ("nodes_leader", "nodes_any"):
            c = cluster(cfg, name)
            self.assertEqual(len(endpoints(c)), 5)
            self.assertGreaterEqual(c["load_assignment"]["policy"]["overprovisioning_factor"], 500)
        text, _ = gen_envoy.render(["--nodes", nodes, "--format", "json"])
        self.assertEqual(json.loads(text), cfg)

    def test_host_names_use_a_dns_cluster(self):
        c = cluster(build("--nodes", "node1:7001,node2:7001,node3:7001"), "nodes_leader")
        self.assertNotIn("type", c)
        self.assertEqual(c["cluster_type"]["name"], "envoy.cluster.dns")
        self.assertEqual(endpoints(c), ["node1:7001", "node2:7001", "node3:7001"])

    def test_bad_node_lists_are_rejected(self):
        for bad in ("", "127.0.0.1", "a:1,a:1", "a:99999"):
            with self.subTest(nodes=bad), self.assertRaises(SystemExit):
                with open(os.devnull, "w") as devnull:
                    stderr, sys.stderr = sys.stderr, devnull
                    try:
                        gen_envoy.parse_args(["--nodes", bad])
                    finally:
                        sys.stderr = stderr


@unittest.skipUnless(os.environ.get("ENVOY"), "set ENVOY=/path/to/envoy to run envoy --mode validate")
class EnvoyValidates(unittest.TestCase):
    def validate(self, text: str, suffix: str = ".yaml"):
        with tempfile.NamedTemporaryFile("w", suffix=suffix, delete=False) as f:
            f.write(text)
        try:
            out = subprocess.run([os.environ["ENVOY"], "--mode", "validate", "-c", f.name, "-l", "warning"],
                                 capture_output=True, text=True, timeout=60)
            self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
            self.assertNotIn("Deprecated field", out.stdout + out.stderr)
        finally:
            os.unlink(f.name)

    def test_variants_validate(self):
        variants = [
            [],
            ["--nodes", ",".join(f"127.0.0.1:{7001 + i}" for i in range(5))],
            ["--otlp", "127.0.0.1:4317", "--access-log", "-"],
            ["--compose"],
            ["--k8s"],
        ]
        for argv in variants:
            with self.subTest(argv=argv):
                self.validate(gen_envoy.render(argv)[0])
        with self.subTest(argv="--format json"):
            self.validate(gen_envoy.render(["--format", "json"])[0], ".json")

    def test_committed_configmap_payload_validates(self):
        lines = (REPO / "deploy/k8s/envoy-configmap.yaml").read_text(encoding="utf-8").splitlines()
        start = lines.index("  envoy.yaml: |") + 1
        self.validate("\n".join(line[4:] for line in lines[start:]) + "\n")


if __name__ == "__main__":
    unittest.main()
