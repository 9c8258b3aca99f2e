"""Unit tests of what the benchmark scripts read from other programs: etcd's maintenance Status (which
member leads), ghz's JSON report, and the request templates ghz is given. No cluster needed."""

import base64
import json
import unittest

from bench_compare import etcd_leader_index, roles_of
from bench_ghz import KEY_TEMPLATE, ghz_call, ghz_data, ghz_summary


def status(member: str, leader: str) -> dict:
    # The shape etcd's HTTP/JSON gateway gives (uint64 fields as strings), trimmed.
    return {"header": {"cluster_id": "14841639068965178418", "member_id": member, "revision": "7",
                       "raft_term": "2"}, "version": "3.6.14", "leader": leader, "raftIndex": "12"}


class EtcdLeaderTest(unittest.TestCase):
    def test_leader_is_the_member_whose_id_is_the_leader_id(self):
        # Proves the leader is found by comparing each member's own id with the leader it reports.
        st = [status("111", "222"), status("222", "222"), status("333", "222")]
        self.assertEqual(etcd_leader_index(st), 1)

    def test_no_leader_is_an_error_not_a_guess(self):
        # Proves that a cluster between elections (leader 0 everywhere) fails instead of picking one.
        with self.assertRaises(RuntimeError):
            etcd_leader_index([status("111", "0"), status("222", "0"), status("333", "0")])

    def test_roles_name_the_leader_and_two_followers(self):
        # Proves the pids are labelled by role, the leader's wherever it sits in the list.
        self.assertEqual(roles_of([10, 20, 30], 2), {"leader": 30, "follower A": 10, "follower B": 20})


class GhzReportTest(unittest.TestCase):
    REPORT = {"count": 1203, "total": 2_000_000_000, "average": 1_600_000, "rps": 601.5,
              "statusCodeDistribution": {"OK": 1200, "Unavailable": 3},
              "errorDistribution": {"rpc error: code = Unavailable desc = no healthy upstream": 3},
              "latencyDistribution": [{"percentage": 10, "latency": 900_000}, {"percentage": 50, "latency": 1_500_000},
                                      {"percentage": 99, "latency": 7_250_000}],
              "details": [{"latency": 1_000_000, "status": "OK"}]}

    def test_summary_counts_only_successes_as_throughput(self):
        # Proves req/s is successful requests over the run's time, errors apart, latencies in ms.
        s = ghz_summary(self.REPORT)
        self.assertEqual((s["ops"], s["errors"]), (1200, 3))
        self.assertAlmostEqual(s["ops_per_s"], 600.0)
        self.assertAlmostEqual(s["p50_ms"], 1.5)
        self.assertAlmostEqual(s["p99_ms"], 7.25)
        self.assertEqual(list(s["error_kinds"].values()), [3])

    def test_a_run_without_answers_has_no_latency(self):
        # Proves a report with no latency distribution (every request failed) still parses.
        s = ghz_summary({"total": 1_000_000_000, "statusCodeDistribution": {"DeadlineExceeded": 5},
                         "latencyDistribution": None})
        self.assertEqual((s["ops"], s["errors"], s["p99_ms"]), (0, 5, 0.0))


class GhzRequestTest(unittest.TestCase):
    def test_put_template_carries_the_value_base64_and_a_key_template(self):
        # Proves the put body is valid JSON with the value base64-encoded and the key left to ghz's
        # template (quoted with backquotes, which JSON does not escape).
        data = json.loads(ghz_data("put", b"v" * 256))
        self.assertEqual(base64.b64decode(data["value"]), b"v" * 256)
        self.assertEqual(data["key"], KEY_TEMPLATE)
        self.assertIn("`k%07d`", json.dumps(data))
        self.assertNotIn("value", json.loads(ghz_data("get", b"v")))

    def test_methods_are_each_systems_put_and_linearizable_read(self):
        # Proves which RPC each side gets: etcd reads with Range, Strata with Get.
        self.assertEqual(ghz_call("strata", "put"), "strata.v1.KV/Put")
        self.assertEqual(ghz_call("strata", "get"), "strata.v1.KV/Get")
        self.assertEqual(ghz_call("etcd-leader", "put"), "etcdserverpb.KV/Put")
        self.assertEqual(ghz_call("etcd-leader", "get"), "etcdserverpb.KV/Range")


if __name__ == "__main__":
    unittest.main()
