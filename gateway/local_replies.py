"""What a client is told when the Strata gateway (Envoy) answers a request by itself.

Part of the gateway generator (gateway/gen_envoy.py builds every Envoy config and puts
``local_reply_config()`` in it). Standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass

RETRYABLE_HEADER = "x-strata-retryable"
# A write that carries its client's request id is applied once however often it is sent.
REQUEST_ID_HEADER = "x-strata-request-id"

# ---- What a client is told when Envoy answers by itself.
#
# The contract has two answers for a request that failed: "not applied, safe to retry" (REST 503
# UNAVAILABLE with x-strata-retryable: true, gRPC UNAVAILABLE) and "outcome unknown" (REST 504
# OUTCOME_UNKNOWN, gRPC DEADLINE_EXCEEDED). Envoy tags every reply it makes itself with response flags
# (%RESPONSE_FLAGS%, "flags" in the access log), and left alone it answers most of them 503 or 504,
# both of which it turns into gRPC UNAVAILABLE, also for a write a node holds and may still commit.
# RESPONSE_FLAGS below gives each of Envoy 1.40's 30 flags one answer, and local_reply_config() is
# generated from it. A flag earns "not applied" only if it proves that no byte of the request reached
# a node; when that is not certain, the answer is "outcome unknown".


@dataclass(frozen=True)
class Answer:
    """What a client is told: the REST status and body code, and the gRPC status."""

    http_status: int
    code: str
    grpc_status: int
    retryable: bool = False
    # With `retryable`: how long to wait before retrying (retry-after-ms).
    retry_after_ms: int = 50


NOT_APPLIED = Answer(503, "UNAVAILABLE", 14, retryable=True)
# A client over its rate (limits.py): refused before any node saw it, safe to retry once its
# bucket has refilled (within a second). gRPC clients read RESOURCE_EXHAUSTED marked retryable as
# a node's OVERLOADED: retry after a pause.
RATE_LIMITED = Answer(429, "RATE_LIMITED", 8, retryable=True, retry_after_ms=1000)
OUTCOME_UNKNOWN = Answer(504, "OUTCOME_UNKNOWN", 4)
# Refused before routing: nothing was applied, but the request itself is at fault, so retrying it
# changes nothing. The gRPC codes are the ones the node gives for the same mistakes.
NO_ROUTE = Answer(404, "NOT_FOUND", 12)
BAD_REQUEST = Answer(400, "INVALID_ARGUMENT", 3)

# Several flags can be set on one reply (a retried request carries the last attempt's flag and URX);
# the first answer in this order that one of them maps to wins, so "outcome unknown" beats the rest.
ANSWER_PRECEDENCE = [OUTCOME_UNKNOWN, NOT_APPLIED, RATE_LIMITED, BAD_REQUEST, NO_ROUTE]

GRPC_CODE_NAMES = {3: "INVALID_ARGUMENT", 4: "DEADLINE_EXCEEDED", 8: "RESOURCE_EXHAUSTED",
                   12: "UNIMPLEMENTED", 14: "UNAVAILABLE"}


@dataclass(frozen=True)
class Flag:
    """One response flag: what Envoy means by it, what a client is told, and why."""

    meaning: str
    # None: the flag cannot occur on our routes; `why` names the feature Envoy would need.
    answer: Answer | None
    why: str


RESPONSE_FLAGS: dict[str, Flag] = {
    # Nothing reached a node.
    "UH": Flag("no healthy upstream host", NOT_APPLIED,
               "Envoy chose no node, so it sent nothing. A write with a request id is answered "
               "outcome unknown instead: a retry that finds no node gets UH too, and Envoy does "
               "not tell it from a first attempt."),
    "UF": Flag("upstream connection failure", NOT_APPLIED,
               "The connection was never established (refused, or not within the 0.25 s connect "
               "timeout). Envoy writes a request only on an established connection, so not a byte "
               "of it left; a connection that fails after it was established is UC."),
    "UO": Flag("upstream overflow (circuit breaker)", NOT_APPLIED,
               "The request was turned away before it had a connection, or a retry was; Envoy "
               "retries only attempts that applied nothing."),
    "URX": Flag("retry limit reached", NOT_APPLIED,
                "Envoy retries only attempts that applied nothing (connect failure, refused stream, "
                "a 503 / UNAVAILABLE marked retryable). The last attempt's own flag comes with URX, "
                "and an outcome-unknown one wins."),
    "NC": Flag("upstream cluster not found", NOT_APPLIED,
               "No cluster, so no node. Our clusters are static: it does not occur in practice."),
    # The request may have reached a node.
    "UT": Flag("upstream request timeout (the route's 10 s, or 5 s per try)", OUTCOME_UNKNOWN,
               "The node has the request and may still commit it: a leader that stalls past the "
               "timeout and then resumes does."),
    "UC": Flag("upstream connection terminated", OUTCOME_UNKNOWN,
               "The connection closed after it was established, and Envoy writes the request as "
               "soon as it is: the node may have it."),
    "UR": Flag("upstream remote reset", OUTCOME_UNKNOWN,
               "The node reset the stream after it was sent. A refused stream (never processed) "
               "carries the same flag, but Envoy retries those first, so the one left may be either."),
    "LR": Flag("local reset of the upstream stream", OUTCOME_UNKNOWN,
               "Envoy reset a stream it had already sent."),
    "UPE": Flag("upstream protocol error", OUTCOME_UNKNOWN,
                "The node's answer was malformed, so the node had the request."),
    "UMSDR": Flag("upstream max stream duration reached", OUTCOME_UNKNOWN,
                  "Not configured on our clusters; if it were, it would cut a stream a node has."),
    "DT": Flag("stream duration reached: the client's grpc-timeout (gRPC routes honour up to 10 s)",
               OUTCOME_UNKNOWN,
               "The client's deadline can pass while the leader holds the write."),
    "SI": Flag("stream idle timeout (300 s)", OUTCOME_UNKNOWN,
               "It can fire while a node holds the request."),
    "DC": Flag("downstream connection terminated", OUTCOME_UNKNOWN,
               "The client is gone and no answer reaches it; a client that loses its connection "
               "must treat its write as outcome unknown."),
    "DR": Flag("downstream remote reset", OUTCOME_UNKNOWN,
               "The client reset its own stream and no answer reaches it; as for DC."),
    "OM": Flag("overload manager terminated the request", OUTCOME_UNKNOWN,
               "No overload action is configured (the connection limit refuses connections, not "
               "requests); an action could reset streams in flight."),
    # Refused before routing.
    "NR": Flag("no route", NO_ROUTE,
               "Never routed. The catch-all route (the console) leaves no path without one."),
    "IH": Flag("invalid value in a strictly-checked x-envoy-* header", BAD_REQUEST,
               "Refused before routing. The router checks no header strictly, so it does not occur."),
    "DPE": Flag("downstream protocol error", BAD_REQUEST,
                "The client broke HTTP. If Envoy can still answer, no complete request reached a "
                "node (a node acts only on a complete request); if the connection is lost, no "
                "answer reaches the client."),
    # Refused by the gateway's own limits.
    "RL": Flag("rate limited: the client's address sent more requests a second than "
               "--rate-limit-rps (and --rate-limit-burst) allow", RATE_LIMITED,
               "Refused by the local rate limit filter before routing, so no node was sent a byte; "
               "the client's bucket refills within a second (retry-after: 1)."),
    # Features we do not configure.
    "LH": Flag("local service failed its health check", None, "no health-check filter"),
    "DI": Flag("delay injected", None, "no fault-injection filter"),
    "FI": Flag("fault injected", None, "no fault-injection filter"),
    "UAEX": Flag("denied by the external authorization service", None, "no ext_authz filter"),
    "RLSE": Flag("rate-limit service error", None, "no rate-limit filter"),
    "RFCF": Flag("response from the cache filter", None, "no cache filter"),
    "NFCF": Flag("no filter config found", None, "no filter configured through discovery (ECDS)"),
    "DF": Flag("DNS resolution failed", None,
               "only the dynamic forward proxy sets it; a DNS cluster whose names do not resolve "
               "has no healthy host (UH)"),
    "DO": Flag("dropped by drop_overloads", None, "no drop_overloads in any load assignment"),
    "UDO": Flag("dropped by drop_overloads set to 100 %", None, "no drop_overloads in any load assignment"),
}

# A local reply with none of the flags above (none is known) is answered by its status. 502, 503
# and 504 would reach gRPC clients as UNAVAILABLE, so they become "outcome unknown".
UNFLAGGED_GATEWAY_ERRORS = [502, 503, 504]
# Bodies for the client errors Envoy answers itself (a request body over the buffer limit, the
# internal raft route); their status stays.
STATUS_CODES = {413: "PAYLOAD_TOO_LARGE", 404: "NOT_FOUND", 400: "INVALID_ARGUMENT",
                # A client too slow to send its request's headers or its whole request (limits.py):
                # no complete request reached a node.
                408: "REQUEST_TIMEOUT",
                # The JWT filter's refusal of a token (a node's own 401s are not local replies).
                401: "UNAUTHENTICATED",
                403: "PERMISSION_DENIED"}


def error_body(code: str) -> dict:
    return {"json_format": {"code": code, "message": "gateway: %LOCAL_REPLY_BODY%"}}


def header(key: str, value: str) -> dict:
    return {"header": {"key": key, "value": value}, "append_action": "OVERWRITE_IF_EXISTS_OR_ADD"}


def status_filter(codes: list[int]) -> dict:
    def status_is(code: int) -> dict:
        return {"status_code_filter": {"comparison": {
            "op": "EQ", "value": {"default_value": code, "runtime_key": f"strata.local_reply.{code}"}}}}

    if len(codes) == 1:
        return status_is(codes[0])
    return {"or_filter": {"filters": [status_is(c) for c in codes]}}


IS_GRPC = {"header_filter": {"header": {"name": "content-type", "string_match": {"prefix": "application/grpc"}}}}


def answer_mappers(answer: Answer, matches: dict) -> list[dict]:
    """Two mappers giving `answer` to the replies `matches` selects: gRPC first, then REST.

    For gRPC, Envoy would derive grpc-status from the HTTP status (502, 503 and 504 all become
    UNAVAILABLE); a grpc-status header set here wins over that. The body becomes grpc-message."""
    headers = []
    if answer.retryable:
        headers = [header(RETRYABLE_HEADER, "true"), header("retry-after-ms", str(answer.retry_after_ms))]
    if answer == RATE_LIMITED:
        # The standard header too, in whole seconds, for clients that know only that one.
        headers.append(header("retry-after", str(-(-answer.retry_after_ms // 1000))))
    common = {"status_code": answer.http_status, "body_format_override": error_body(answer.code)}
    grpc = {
        "filter": {"and_filter": {"filters": [matches, IS_GRPC]}},
        "headers_to_add": [header("grpc-status", str(answer.grpc_status))] + headers,
        **common,
    }
    rest = {"filter": matches, **({"headers_to_add": headers} if headers else {}), **common}
    return [grpc, rest]


# A write that carries a request id is sent again after an attempt that may have reached a node (a
# reset, a 504). When a later attempt then reaches no node, the reply carries only that attempt's
# flag (UH, UF, ...), which proves that this attempt applied nothing, not that the first one did
# not: such a reply is "outcome unknown". Envoy numbers the attempts in x-envoy-attempt-count (the
# virtual host's include_request_attempt_count), which it writes into the request the reply's
# filters read.
ATTEMPT_COUNT_HEADER = "x-envoy-attempt-count"
WITH_A_REQUEST_ID = {"header_filter": {"header": {"name": REQUEST_ID_HEADER, "present_match": True}}}
RETRIED_WITH_A_REQUEST_ID = {"and_filter": {"filters": [
    WITH_A_REQUEST_ID,
    {"header_filter": {"header": {"name": ATTEMPT_COUNT_HEADER,
                                  "string_match": {"safe_regex": {"regex": "^([2-9]|[1-9][0-9]+)$"}}}}},
]}}
# One flag escapes that count: on a retry, Envoy looks for a healthy host before it numbers the
# attempt in the request, and when it finds none it answers UH with the request still reading
# attempt 1. So UH on a write with a request id is "outcome unknown" whatever the count; such a
# write is safe to send again with the same id either way.
NO_HOST_WITH_A_REQUEST_ID = {"and_filter": {"filters": [
    WITH_A_REQUEST_ID, {"response_flag_filter": {"flags": ["UH"]}}]}}


def local_reply_config() -> dict:
    """Replies Envoy makes itself, in the contract's terms: each flag's answer from RESPONSE_FLAGS,
    then the unflagged ones by status, every body in the REST error shape ({"code","message"}).
    First of all, a request id's write retried after an attempt that may have reached a node is
    never "not applied"."""
    not_applied = [name for name, flag in RESPONSE_FLAGS.items() if flag.answer == NOT_APPLIED]
    mappers = answer_mappers(OUTCOME_UNKNOWN, {"or_filter": {"filters": [
        {"and_filter": {"filters": [
            RETRIED_WITH_A_REQUEST_ID, {"response_flag_filter": {"flags": not_applied}}]}},
        NO_HOST_WITH_A_REQUEST_ID]}})
    for answer in ANSWER_PRECEDENCE:
        flags = [name for name, flag in RESPONSE_FLAGS.items() if flag.answer == answer]
        matches = {"response_flag_filter": {"flags": flags}}
        if answer == RATE_LIMITED:
            # The local rate limit filter sets RL only after it has sent its reply, so the reply
            # is known by its status: no other reply Envoy makes itself is a 429.
            matches = {"or_filter": {"filters": [matches, status_filter([answer.http_status])]}}
        mappers += answer_mappers(answer, matches)
    mappers += answer_mappers(OUTCOME_UNKNOWN, status_filter(UNFLAGGED_GATEWAY_ERRORS))
    mappers += [{"filter": status_filter([status]), "body_format_override": error_body(code)}
                for status, code in STATUS_CODES.items()]
    return {"mappers": mappers}


def flags_table() -> str:
    """RESPONSE_FLAGS as the Markdown table docs/reliability.md carries (a test keeps them equal)."""
    rows = ["| flag | meaning | REST answer | gRPC answer | retry safe? | why |",
            "|---|---|---|---|---|---|"]
    for name, flag in RESPONSE_FLAGS.items():
        a = flag.answer
        if a is None:
            rows.append(f"| `{name}` | {flag.meaning} | — | — | cannot occur | {flag.why} |")
            continue
        if a == RATE_LIMITED:
            safe = "yes, after `retry-after` (`x-strata-retryable: true`)"
        elif a.retryable:
            safe = "yes (`x-strata-retryable: true`)"
        elif a == OUTCOME_UNKNOWN:
            safe = "no: may have been applied"
        else:
            safe = "no: not applied, but the request is refused"
        rows.append(f"| `{name}` | {flag.meaning} | {a.http_status} `{a.code}` | "
                    f"`{GRPC_CODE_NAMES[a.grpc_status]}` | {safe} | {flag.why} |")
    return "\n".join(rows) + "\n"
