"""The gateway's count of the failed answers it sent (answers.py), against a running Envoy.

    ENVOY=/path/to/envoy python3 -m unittest discover -s gateway -p 'test_*.py'
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.request
from collections import Counter

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import answers  # noqa: E402
import gen_envoy  # noqa: E402
from test_gen_envoy import build, free_ports  # noqa: E402


class Config(unittest.TestCase):
    def test_the_public_listener_counts_its_failed_answers_first(self):
        for argv in ((), ("--access-log", "-")):
            hcm = build(*argv)["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]["typed_config"]
            self.assertEqual(hcm["access_log"][0], answers.answers_counter(), argv)
        self.assertEqual(build("--access-log", "-")["static_resources"]["listeners"][0]["filter_chains"][0]
                         ["filters"][0]["typed_config"]["access_log"][1]["name"], "envoy.access_loggers.stdout")


SAMPLE = re.compile(r'^envoy_gateway_answers_answered\{(?P<labels>[^}]*)\} (?P<value>\d+)$', re.M)


def counted(text: str) -> Counter:
    """(code, grpc) -> count, from Envoy's Prometheus page."""
    out: Counter = Counter()
    for m in SAMPLE.finditer(text):
        labels = dict(re.findall(r'(\w+)="([^"]*)"', m["labels"]))
        out[(labels["code"], labels["grpc"])] += int(m["value"])
    return out


@unittest.skipUnless(os.environ.get("ENVOY"), "set ENVOY=/path/to/envoy to run Envoy")
class Running(unittest.TestCase):
    def test_each_failed_answer_is_counted_as_the_client_got_it(self):
        # Proves, against a running Envoy whose one node does not listen: the REST writes answered
        # by the gateway itself are counted under the status the client got (after the local reply
        # mappers), a gRPC write's under its gRPC status (its HTTP status is 200), and an answer
        # that is the caller's fault (UNIMPLEMENTED for the raft transport) is not counted at all.
        listen, admin_port, node = free_ports(3)
        admin = f"127.0.0.1:{admin_port}"
        d = tempfile.mkdtemp()
        self.addCleanup(subprocess.run, ["rm", "-rf", d])
        path = os.path.join(d, "envoy.yaml")
        gen_envoy.main(["--listen", f"127.0.0.1:{listen}", "--admin", admin, "--nodes", f"127.0.0.1:{node}",
                        "--out", path])
        log = open(os.path.join(d, "envoy.log"), "w")
        self.addCleanup(log.close)
        envoy = subprocess.Popen([os.environ["ENVOY"], "-c", path, "-l", "warning", "--use-dynamic-base-id"],
                                 stdout=log, stderr=subprocess.STDOUT)
        self.addCleanup(envoy.wait, 10)
        self.addCleanup(envoy.terminate)
        gateway = f"http://127.0.0.1:{listen}"
        deadline = time.monotonic() + 15
        while True:
            try:
                urllib.request.urlopen(f"http://{admin}/ready", timeout=1)
                break
            except OSError:
                if time.monotonic() > deadline:
                    self.fail("Envoy did not start; see " + log.name)
                time.sleep(0.05)

        got: Counter = Counter()
        for i in range(3):
            req = urllib.request.Request(f"{gateway}/v1/kv/k{i}", data=b"v", method="PUT")
            try:
                urllib.request.urlopen(req, timeout=10)
                self.fail("a node that does not listen answered")
            except urllib.error.HTTPError as e:
                got[(str(e.code), "")] += 1
        for i in range(2):
            out = subprocess.run(["curl", "-s", "-o", "/dev/null", "--http2-prior-knowledge", "-X", "POST",
                                  "-H", "content-type: application/grpc", "-H", "te: trailers",
                                  "-w", "%{http_code} %header{grpc-status}", f"{gateway}/strata.v1.KV/Put"],
                                 capture_output=True, text=True, check=True, timeout=20).stdout.split()
            got[(out[0], out[1])] += 1
        internal = subprocess.run(["curl", "-s", "-o", "/dev/null", "--http2-prior-knowledge", "-X", "POST",
                                   "-H", "content-type: application/grpc", "-H", "te: trailers",
                                   "-w", "%{http_code} %header{grpc-status}", f"{gateway}/strata.v1.Raft/Send"],
                                  capture_output=True, text=True, check=True, timeout=20).stdout.split()
        self.assertEqual(internal, ["200", "12"], "the raft transport is not routed: UNIMPLEMENTED")
        self.assertEqual(sum(got.values()), 5)
        self.assertTrue(all(code in ("503", "504") for code, grpc in got if not grpc), got)
        self.assertTrue(all(code == "200" for code, grpc in got if grpc), got)
        text = urllib.request.urlopen(f"http://{admin}/stats/prometheus?usedonly", timeout=5).read().decode()
        print(f"answers the clients got: {dict(got)}", file=sys.stderr)
        self.assertEqual(counted(text), got, text[-2000:])


if __name__ == "__main__":
    unittest.main()
