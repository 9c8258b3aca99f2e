"""Tests of gateway/limits.py: the limits against abuse in the generated Envoy config.

    python3 -m unittest discover -s gateway -p 'test_*.py'

What a client meets at each limit is tested against real Envoy and nodes in
storage/harness/tests/gateway_limits.rs.
"""

from __future__ import annotations

import os
import sys
import unittest
from pathlib import Path

GATEWAY = Path(__file__).resolve().parent
sys.path.insert(0, str(GATEWAY))

import gen_envoy  # noqa: E402
import limits  # noqa: E402
import local_replies  # noqa: E402
from test_gen_envoy import build, hcm, local_reply  # noqa: E402


def rate_limit(config: dict) -> dict | None:
    return next((f["typed_config"] for f in hcm(config)["http_filters"]
                 if f["name"] == "envoy.filters.http.local_ratelimit"), None)


def refused(argv: list[str]) -> bool:
    with open(os.devnull, "w") as devnull:
        stderr, sys.stderr = sys.stderr, devnull
        try:
            gen_envoy.parse_args(argv)
        except SystemExit:
            return True
        finally:
            sys.stderr = stderr
    return False


class RateLimit(unittest.TestCase):
    def test_one_bucket_per_client_address_by_default(self):
        # Proves the default: every request takes a token from its client address's bucket only
        # (not from one shared by every client), 20,000 a second with as large a burst, first of
        # the filters, and gRPC is told RESOURCE_EXHAUSTED.
        config = build()
        self.assertEqual(hcm(config)["http_filters"][0]["name"], "envoy.filters.http.local_ratelimit")
        rl = rate_limit(config)
        self.assertEqual(rl["rate_limits"], [{"actions": [{"remote_address": {}}]}])
        self.assertEqual(rl["descriptors"], [{"entries": [{"key": "remote_address"}], "token_bucket": {
            "max_tokens": 20_000, "tokens_per_fill": 20_000, "fill_interval": "1s"}}])
        self.assertGreater(rl["max_dynamic_descriptors"], 0)
        self.assertIs(rl["always_consume_default_token_bucket"], False)
        self.assertIs(rl["rate_limited_as_resource_exhausted"], True)

    def test_rate_and_burst_come_from_their_flags_and_zero_turns_it_off(self):
        rl = rate_limit(build("--rate-limit-rps", "5", "--rate-limit-burst", "12"))
        self.assertEqual(rl["descriptors"][0]["token_bucket"],
                         {"max_tokens": 12, "tokens_per_fill": 5, "fill_interval": "1s"})
        self.assertIsNone(rate_limit(build("--rate-limit-rps", "0")))

    def test_bad_limits_are_refused(self):
        for argv in (["--rate-limit-rps", "-1"], ["--rate-limit-rps", "x"], ["--rate-limit-burst", "0"],
                     ["--rate-limit-rps", "0", "--rate-limit-burst", "5"], ["--max-connections", "0"],
                     ["--request-timeout-s", "0"], ["--request-headers-timeout-s", "-3"],
                     ["--idle-timeout-s", "1.5"]):
            with self.subTest(argv=argv):
                self.assertTrue(refused(argv))
        self.assertFalse(refused(["--rate-limit-rps", "0"]))

    def test_a_rate_limited_reply_is_429_with_retry_headers(self):
        # Proves the filter's own reply (429, whose RL flag Envoy sets only after the reply is
        # made) gets the API's shape: 429 RATE_LIMITED over REST, RESOURCE_EXHAUSTED (8) over gRPC,
        # marked retryable, with retry-after.
        config = build()
        want = {"x-strata-retryable": "true", "retry-after-ms": "1000", "retry-after": "1"}
        for flags in (set(), {"RL"}):
            with self.subTest(flags=flags):
                rest = local_reply(config, flags, 429, grpc=False)
                self.assertEqual((rest["status"], rest["code"], rest["headers"]), (429, "RATE_LIMITED", want))
                grpc = local_reply(config, flags, 429, grpc=True)
                self.assertEqual((grpc["grpc_status"], grpc["code"], grpc["headers"]), (8, "RATE_LIMITED", want))
        self.assertEqual(local_replies.RESPONSE_FLAGS["RL"].answer, local_replies.RATE_LIMITED)


class ConnectionsAndTimeouts(unittest.TestCase):
    def test_defaults(self):
        # Proves the documented defaults (docs/operations.md) are the generated ones.
        config = build()
        monitor = config["overload_manager"]["resource_monitors"][0]
        self.assertEqual(monitor["name"], "envoy.resource_monitors.global_downstream_max_connections")
        self.assertEqual(monitor["typed_config"]["max_active_downstream_connections"], 50_000)
        h = hcm(config)
        self.assertEqual((h["request_headers_timeout"], h["request_timeout"]), ("10s", "60s"))
        self.assertEqual(h["common_http_protocol_options"], {"idle_timeout": "300s"})
        self.assertEqual(h["http2_protocol_options"]["max_concurrent_streams"], limits.MAX_CONCURRENT_STREAMS)

    def test_flags(self):
        config = build("--max-connections", "12", "--request-headers-timeout-s", "2",
                       "--request-timeout-s", "4", "--idle-timeout-s", "30")
        monitor = config["overload_manager"]["resource_monitors"][0]
        self.assertEqual(monitor["typed_config"]["max_active_downstream_connections"], 12)
        h = hcm(config)
        self.assertEqual((h["request_headers_timeout"], h["request_timeout"]), ("2s", "4s"))
        self.assertEqual(h["common_http_protocol_options"], {"idle_timeout": "30s"})

    def test_request_timeout_reply_has_the_error_shape(self):
        rest = local_reply(build(), set(), 408, grpc=False)
        self.assertEqual((rest["status"], rest["code"]), (408, "REQUEST_TIMEOUT"))


if __name__ == "__main__":
    unittest.main()
