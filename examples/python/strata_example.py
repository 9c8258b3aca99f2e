"""Strata from Python with nothing but the standard library (REST through the gateway).

Writes a key with a request id (and sends it again, as after a 504, to show it is applied
once), reads it back, swaps it with compare-and-swap, updates it in a transaction guarded by
its mod index (and shows the same transaction, now stale, take its failure branch), and
watches the prefix from the first write's raft index, checking that the watch replays
exactly these changes in commit order. Last, a key under a lease goes when the lease does.

    STRATA_URL=http://127.0.0.1:8080 python3 examples/python/strata_example.py
"""

import json
import os
import sys
import time
import urllib.error
import urllib.request

BASE = os.environ.get("STRATA_URL", "http://127.0.0.1:8080")


def call(method, path, body=None, headers=None):
    data = body.encode() if isinstance(body, str) else body
    req = urllib.request.Request(BASE + path, data=data, method=method, headers=headers or {})
    with urllib.request.urlopen(req, timeout=10) as resp:
        return resp.status, resp.read()


def put_once(key, value, request_id):
    """PUT with an x-strata-request-id: a resend gets the first answer, marked "replayed"."""
    _, body = call("PUT", f"/v1/kv/{key}", value, {"x-strata-request-id": request_id})
    return json.loads(body)


def watch(prefix, from_index, until_index):
    """The changes under prefix from a raft index, read from the server-sent event stream."""
    url = f"{BASE}/v1/watch?prefix={prefix}&from_index={from_index}&progress_ms=200"
    changes = []
    with urllib.request.urlopen(url, timeout=10) as stream:
        event, data = None, []
        for raw in stream:
            line = raw.decode().rstrip("\n")
            if line.startswith("event:"):
                event = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].strip())
            elif line == "" and event:
                body = json.loads("\n".join(data))
                if event == "changes":
                    changes += [(body["index"], c["type"], c["key"], c.get("value")) for c in body["changes"]]
                elif event == "ended":
                    raise RuntimeError(f"the watch ended: {body}")
                if body["index"] >= until_index:
                    return changes
                event, data = None, []
    raise RuntimeError("the event stream closed early")


def post_json(path, body, headers=None):
    _, answer = call("POST", path, json.dumps(body), {"content-type": "application/json", **(headers or {})})
    return json.loads(answer)


def get_json(key):
    _, body = call("GET", f"/v1/kv/{key}", headers={"accept": "application/json"})
    return json.loads(body)


def update_if_unchanged(key, mod_index, value):
    """A transaction: put `value` only if nobody wrote `key` since `mod_index`, else read it."""
    return post_json("/v1/txn", {
        "compare": [{"key": key, "mod_index": mod_index}],
        "success": [{"op": "put", "key": key, "value": value}],
        "failure": [{"op": "get", "key": key}],
    })


def main():
    prefix = f"py-example/{int(time.time() * 1000)}/"
    key = prefix + "greeting"
    first = put_once(key, "hello", prefix + "req-1")
    again = put_once(key, "hello", prefix + "req-1")
    assert again.get("replayed") is True and again["index"] == first["index"], again
    _, value = call("GET", f"/v1/kv/{key}")
    assert value == b"hello", value
    _, body = call("POST", "/v1/cas", json.dumps({"key": key, "expected": "hello", "value": "hi"}),
                   {"content-type": "application/json"})
    swap = json.loads(body)
    assert swap["succeeded"] and swap["current"] == "hello", swap
    read = get_json(key)
    assert read["value"] == "hi" and read["mod_index"] == swap["index"], read
    txn = update_if_unchanged(key, read["mod_index"], "hey")
    assert txn["succeeded"], txn
    stale = update_if_unchanged(key, read["mod_index"], "too late")
    assert not stale["succeeded"] and stale["results"][0]["kv"]["value"] == "hey", stale
    changes = watch(prefix, first["index"], txn["index"])
    want = [(first["index"], "put", key, "hello"), (swap["index"], "put", key, "hi"),
            (txn["index"], "put", key, "hey")]
    assert changes == want, (changes, want)

    lease = post_json("/v1/leases", {"ttl": "10s"})
    leased = f"py-example-leased/{prefix}"
    call("PUT", f"/v1/kv/{leased}?lease={lease['id']}", "online")
    assert get_json(leased)["lease"] == lease["id"]
    _, body = call("DELETE", f"/v1/leases/{lease['id']}")
    assert json.loads(body)["keys_deleted"] == 1, body
    try:
        call("GET", f"/v1/kv/{leased}")
        raise AssertionError("the key outlived its lease")
    except urllib.error.HTTPError as e:
        assert e.code == 404, e
    print(f"python example: ok (put at {first['index']} once though sent twice, "
          f"swapped at {swap['index']}, updated in a transaction at {txn['index']}, "
          f"watch replayed {len(changes)} changes, a leased key ended with its lease)")


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # noqa: BLE001 - the example reports any failure and exits non-zero
        print(f"python example: FAILED: {e!r}", file=sys.stderr)
        sys.exit(1)
