"""Scrapes a running cluster with Prometheus' own parsers.

Needs a cluster behind Envoy (`./dev test-metrics` starts one, with nodes that
flush and compact early): STRATA_URL is the gateway, STRATA_NODES the nodes'
URLs (comma-separated), STRATA_ENVOY_ADMIN Envoy's admin address. Every node's
`/metrics` must parse as OpenMetrics and Envoy's `/stats/prometheus` as the
Prometheus text format; the families must move with the work done; and every
name the Grafana dashboard queries must be one a scrape really has.
"""

from __future__ import annotations

import json
import os
import re
import time
import unittest
import urllib.request
from pathlib import Path

import yaml
from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse_openmetrics
from prometheus_client.parser import text_string_to_metric_families as parse_prometheus

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
GATEWAY = os.environ.get("STRATA_URL", "http://127.0.0.1:8080")
NODES = [u for u in os.environ.get("STRATA_NODES", "").split(",") if u]
ENVOY_ADMIN = os.environ.get("STRATA_ENVOY_ADMIN", "http://127.0.0.1:9901")
WRITES = 600


def get(url: str) -> tuple[str, str]:
    with urllib.request.urlopen(url, timeout=10) as r:
        return r.headers.get("content-type", ""), r.read().decode()


def put(key: str, value: bytes) -> int:
    req = urllib.request.Request(f"{GATEWAY}/v1/kv/{key}", data=value, method="PUT")
    with urllib.request.urlopen(req, timeout=10) as r:
        return r.status


def samples(families) -> dict[tuple[str, tuple], float]:
    """Every sample as {(name, sorted labels): value}."""
    out = {}
    for family in families:
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def scrape(url: str) -> dict[tuple[str, tuple], float]:
    content_type, text = get(f"{url}/metrics")
    assert content_type.startswith("application/openmetrics-text"), content_type
    return samples(parse_openmetrics(text))


def value(scraped: dict, name: str, **labels) -> float:
    key = (name, tuple(sorted(labels.items())))
    if key not in scraped:
        raise AssertionError(f"no sample {name}{labels}; have {sorted({n for n, _ in scraped})}")
    return scraped[key]


def leader_url() -> str:
    _, text = get(f"{GATEWAY}/v1/cluster/status")
    status = json.loads(text)
    leader = status["leader_id"]
    for node in status["nodes"]:
        if node["id"] == leader:
            return f"http://{node['address']}"
    raise AssertionError(f"leader {leader} not among {status['nodes']}")


def names_in_dashboard() -> set[str]:
    dashboard = json.loads((HERE / "grafana/strata-dashboard.json").read_text())
    exprs = [
        t["expr"]
        for panel in dashboard["panels"]
        for t in panel.get("targets", [])
    ]
    assert exprs, "the dashboard has no queries"
    # Label names (in `by (...)` and `{...}`) are not metric names.
    bare = [re.sub(r"by \([^)]*\)|\{[^}]*\}", "", e) for e in exprs]
    return {m for e in bare for m in re.findall(r"\b((?:strata|envoy)_[a-z0-9_]+)", e)}


def exposed_names(text: str) -> set[str]:
    """The sample names as a scrape writes them, which is how Prometheus
    stores them (its Python parser adds `_total` to the Prometheus text
    format's counters, which Prometheus itself does not)."""
    return {m.group(1) for m in re.finditer(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)", text, re.M)}


class NodeMetrics(unittest.TestCase):
    def test_families_exist_parse_and_move_with_writes(self):
        # Proves that a leader's scrape parses as OpenMetrics, holds the API,
        # raft, engine and process families, and that they move: proposals,
        # fsyncs, appended bytes and answered PUTs grow by the writes made,
        # and compaction bytes grow once the writes forced flushes.
        url = leader_url()
        before = scrape(url)
        for i in range(WRITES):
            self.assertEqual(put(f"metrics-{i}", b"x" * 200), 200)
        self.assertEqual(leader_url(), url, "the leader changed during the test")
        deadline = time.monotonic() + 20
        while True:
            after = scrape(url)
            compacted = value(after, "strata_engine_compaction_written_bytes_total") > value(
                before, "strata_engine_compaction_written_bytes_total"
            )
            if compacted or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        self.assertTrue(compacted, "no compaction ran after the writes")

        def grew(name, by=1, **labels):
            delta = value(after, name, **labels) - value(before, name, **labels)
            self.assertGreaterEqual(delta, by, f"{name}{labels} grew by {delta}")

        grew("strata_raft_proposals_total", WRITES)
        grew("strata_raft_proposal_batch_size_count")
        grew("strata_raft_commit_seconds_count", WRITES)
        grew("strata_raft_append_seconds_count")
        grew("strata_raft_log_syncs_total")
        grew("strata_raft_appended_bytes_total", WRITES * 200)
        grew("strata_raft_appended_entries_total", WRITES)
        grew("strata_raft_applied_entries_total", WRITES)
        grew("strata_engine_flushes_total")
        grew("strata_engine_compactions_total")
        grew("strata_engine_compaction_read_bytes_total")
        grew("strata_engine_user_written_bytes_total", WRITES * 200)
        put_route = "PUT /v1/kv/{key}"  # the documented template
        answered_before = before.get(
            ("strata_api_requests_total", (("code", "200"), ("protocol", "rest"), ("route", put_route))), 0
        )
        answered = value(after, "strata_api_requests_total", protocol="rest", route=put_route, code="200")
        self.assertGreaterEqual(answered - answered_before, WRITES)
        self.assertGreaterEqual(
            value(after, "strata_api_request_duration_seconds_count", protocol="rest", route=put_route), WRITES
        )
        self.assertEqual(value(after, "strata_raft_role", role="leader"), 1)
        self.assertGreaterEqual(value(after, "strata_raft_term"), 1)
        followers = {dict(labels)["member"] for name, labels in after if name == "strata_raft_member_lag_entries"}
        self.assertEqual(len(followers), len(NODES) - 1, f"lag per follower: {followers}")
        self.assertGreater(value(after, "strata_process_resident_memory_bytes"), 1 << 20)
        self.assertGreater(value(after, "strata_process_cpu_seconds_total"), 0)
        self.assertGreater(value(after, "strata_process_open_fds"), 0)
        self.assertGreater(value(after, "strata_process_data_dir_free_bytes"), 0)

    def test_every_node_parses_and_followers_count_their_role(self):
        # Proves that each node's scrape parses, and that exactly one of
        # them reports itself leader.
        self.assertTrue(NODES, "STRATA_NODES is empty")
        leaders = sum(value(scrape(u), "strata_raft_role", role="leader") for u in NODES)
        self.assertEqual(leaders, 1)

    def test_unknown_routes_share_one_label(self):
        # Proves that a client cannot grow the label set: unknown paths all
        # count as one route.
        url = NODES[0]
        for path in ("/no/such/route", "/another/made/up/path"):
            try:
                get(f"{url}{path}")
            except urllib.error.HTTPError as e:
                self.assertEqual(e.code, 404)
        scraped = scrape(url)
        routes = {dict(labels).get("route") for name, labels in scraped if name == "strata_api_requests_total"}
        self.assertIn("unmatched", routes)
        self.assertFalse([r for r in routes if r and "made/up" in r], routes)


class EnvoyAndDashboard(unittest.TestCase):
    def test_envoy_stats_parse_as_prometheus_text(self):
        # Proves that Envoy's own metrics, which the compose Prometheus
        # scrapes too, parse and count upstream requests to the nodes.
        _, text = get(f"{ENVOY_ADMIN}/stats/prometheus")
        scraped = samples(parse_prometheus(text))
        clusters = {dict(labels).get("envoy_cluster_name") for name, labels in scraped if name == "envoy_cluster_upstream_rq_total"}
        self.assertIn("nodes", clusters)

    def test_every_name_the_dashboard_queries_is_scraped(self):
        # Proves that the dashboard is built on names the node and Envoy
        # really export (a renamed metric would leave a panel empty).
        have = set()
        for url in NODES:
            scrape(url)  # parses, or fails
            have |= exposed_names(get(f"{url}/metrics")[1])
        _, text = get(f"{ENVOY_ADMIN}/stats/prometheus")
        list(parse_prometheus(text))
        have |= exposed_names(text)
        missing = sorted(names_in_dashboard() - have)
        self.assertFalse(missing, f"the dashboard queries names no scrape has: {missing}")

    def test_scrape_config_targets_the_compose_services(self):
        # Proves that the Prometheus configuration scrapes every node and
        # Envoy of docker-compose.yml, on the paths they serve.
        config = yaml.safe_load((HERE / "prometheus.yml").read_text())
        compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
        services = compose["services"]
        jobs = {job["job_name"]: job for job in config["scrape_configs"]}
        nodes = [t for sc in jobs["strata"]["static_configs"] for t in sc["targets"]]
        self.assertEqual(jobs["strata"]["metrics_path"], "/metrics")
        self.assertEqual(
            sorted(t.split(":")[0] for t in nodes),
            sorted(s for s in services if re.fullmatch(r"node\d+", s)),
        )
        self.assertEqual(jobs["envoy"]["metrics_path"], "/stats/prometheus")
        self.assertIn("prometheus", services)
        self.assertIn("grafana", services)


if __name__ == "__main__":
    unittest.main()
