"""The Strata gateway's limits against abuse: requests a second per client, connections, and how
long a client may take to send a request.

Part of the gateway generator (gateway/gen_envoy.py puts these in every Envoy config and takes
their flags from ``add_arguments``). Standard library only.

Every default is generous: a benchmark or a k6 run from one machine stays well below it (the
fastest run recorded in docs/benchmarks.md, 1,000 clients on one machine, is about 8,000 requests a
second), and an operator who fronts the gateway with something that already limits can raise or
turn each one off.

* Requests a second, per client address (``--rate-limit-rps``, 20,000; ``--rate-limit-burst``, as
  many): Envoy's local rate limit filter keeps a token bucket for each client address it sees
  (``remote_address``: the TCP peer, as ``use_remote_address`` makes it; behind a proxy that
  rewrites it every client shares one bucket). A request over the limit is answered 429
  ``RATE_LIMITED`` (gRPC RESOURCE_EXHAUSTED marked ``x-strata-retryable``) with ``retry-after``,
  before any node sees it: certainly not applied. One client's flood does not spend another's
  tokens. A stream (a watch, a keep-alive) counts once, when it opens.
* Connections (``--max-connections``, 50,000): Envoy's overload manager closes a connection
  accepted beyond the cap at once, before reading from it; the connections already open are served
  as before. Envoy has no per-client connection cap; the per-client request rate bounds what a
  client's connections can ask for.
* Time to send a request: its headers within ``--request-headers-timeout-s`` (10 s) of their
  first byte, the whole request within ``--request-timeout-s`` (60 s; the timer stops
  once the request is complete or its answer has begun, so a watch or a keep-alive stream, answered
  at once, runs on), else 408 and the connection is closed: a client trickling its headers or its
  body holds a connection for that long at most. A connection without a request in flight (one
  that sends nothing at all too) is closed after ``--idle-timeout-s`` (300 s).
"""

from __future__ import annotations

import argparse

RATE_LIMIT_RPS = 20_000
MAX_DOWNSTREAM_CONNECTIONS = 50_000
REQUEST_HEADERS_TIMEOUT_S = 10
REQUEST_TIMEOUT_S = 60
IDLE_TIMEOUT_S = 300
# Client addresses whose buckets Envoy keeps at once; the least recently seen is dropped first (it
# starts again full).
RATE_LIMIT_CLIENTS = 65_536
# HTTP/2: streams a client may have open on one connection, and its flow-control windows.
MAX_CONCURRENT_STREAMS = 1024
STREAM_WINDOW_BYTES = 4 * 1024 * 1024
CONNECTION_WINDOW_BYTES = 16 * 1024 * 1024

RATE_LIMIT_STAT_PREFIX = "client_rate_limit"


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The flags of every limit, with their defaults."""
    p.add_argument("--rate-limit-rps", type=_non_negative, default=RATE_LIMIT_RPS,
                   help=f"requests a second one client address may send; more are answered 429 "
                        f"(default {RATE_LIMIT_RPS}; 0 turns the limit off)")
    p.add_argument("--rate-limit-burst", type=_non_negative,
                   help="requests one client address may send at once after a quiet spell "
                        "(default: --rate-limit-rps)")
    p.add_argument("--max-connections", type=_positive, default=MAX_DOWNSTREAM_CONNECTIONS,
                   help=f"client connections the gateway holds open at once; one more is closed as "
                        f"soon as it is accepted (default {MAX_DOWNSTREAM_CONNECTIONS})")
    p.add_argument("--request-headers-timeout-s", type=_positive, default=REQUEST_HEADERS_TIMEOUT_S,
                   help=f"seconds a client has to send a request's headers (default "
                        f"{REQUEST_HEADERS_TIMEOUT_S})")
    p.add_argument("--request-timeout-s", type=_positive, default=REQUEST_TIMEOUT_S,
                   help=f"seconds a client has to send a whole request, body included; streams run on "
                        f"once answered (default {REQUEST_TIMEOUT_S})")
    p.add_argument("--idle-timeout-s", type=_positive, default=IDLE_TIMEOUT_S,
                   help=f"seconds a client connection without a request in flight stays open "
                        f"(default {IDLE_TIMEOUT_S})")


def _non_negative(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {value}")
    return value


def _positive(text: str) -> int:
    value = _non_negative(text)
    if value == 0:
        raise argparse.ArgumentTypeError("expected a number > 0, got 0")
    return value


def check(args: argparse.Namespace) -> str | None:
    """What is wrong with the limits' flags together, if anything."""
    if args.rate_limit_burst is not None and args.rate_limit_rps == 0 and args.rate_limit_burst:
        return "--rate-limit-burst needs --rate-limit-rps above 0"
    if args.rate_limit_burst == 0 and args.rate_limit_rps:
        return "--rate-limit-burst must be above 0 (0 would refuse every request)"
    return None


def rate_limit_filter(args: argparse.Namespace) -> list[dict]:
    """Envoy's local rate limit filter with one token bucket per client address, or nothing when
    the limit is off. The buckets fill every second."""
    if args.rate_limit_rps == 0:
        return []
    burst = args.rate_limit_burst if args.rate_limit_burst is not None else args.rate_limit_rps
    per_client = {"max_tokens": burst, "tokens_per_fill": args.rate_limit_rps, "fill_interval": "1s"}
    always = {"default_value": {"numerator": 100, "denominator": "HUNDRED"}}
    return [{
        "name": "envoy.filters.http.local_ratelimit",
        "typed_config": {
            "@type": "type.googleapis.com/envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit",
            "stat_prefix": RATE_LIMIT_STAT_PREFIX,
            # Every request yields a descriptor (its client's address) and takes a token from its
            # bucket only: this one, which Envoy needs all the same, would otherwise be shared by
            # every client.
            "token_bucket": per_client,
            "always_consume_default_token_bucket": False,
            "filter_enabled": always,
            "filter_enforced": always,
            "rate_limits": [{"actions": [{"remote_address": {}}]}],
            # An entry without a value: one bucket for each address seen (dynamic descriptors).
            "descriptors": [{"entries": [{"key": "remote_address"}], "token_bucket": per_client}],
            "max_dynamic_descriptors": RATE_LIMIT_CLIENTS,
            # gRPC clients are told RESOURCE_EXHAUSTED, not the UNAVAILABLE Envoy derives from
            # 429; local_replies.py gives both the API's error shape and retry headers.
            "rate_limited_as_resource_exhausted": True,
        },
    }]


def overload_manager(args: argparse.Namespace) -> dict:
    """The cap on client connections, over every listener but the admin interface's."""
    return {
        "resource_monitors": [{
            "name": "envoy.resource_monitors.global_downstream_max_connections",
            "typed_config": {
                "@type": "type.googleapis.com/envoy.extensions.resource_monitors.downstream_connections.v3.DownstreamConnectionsConfig",
                "max_active_downstream_connections": args.max_connections,
            },
        }],
    }


def connection_manager_limits(args: argparse.Namespace) -> dict:
    """The HTTP connection manager's settings that bound how long and how much a client holds."""
    return {
        "stream_idle_timeout": "300s",
        "request_headers_timeout": f"{args.request_headers_timeout_s}s",
        "request_timeout": f"{args.request_timeout_s}s",
        "common_http_protocol_options": {"idle_timeout": f"{args.idle_timeout_s}s"},
        "http2_protocol_options": {
            "max_concurrent_streams": MAX_CONCURRENT_STREAMS,
            "initial_stream_window_size": STREAM_WINDOW_BYTES,
            "initial_connection_window_size": CONNECTION_WINDOW_BYTES,
        },
    }
