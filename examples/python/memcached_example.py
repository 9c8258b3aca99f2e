"""Strata from Python through a memcached client library (pymemcache), at the gateway's memcached port.

Stores a key with set and reads it back with get and over REST (one store behind both); takes
its unique with gets and updates it with cas, then shows the same cas, now stale, refused; adds
a key once (the second add is refused); counts with incr; reads several keys in one get; and
stores a key with an expiry time, which is gone once it passed (the node holds it under a lease).

    STRATA_MEMCACHE=127.0.0.1:11311 STRATA_URL=http://127.0.0.1:8080 python examples/python/memcached_example.py
"""

import os
import sys
import time
import urllib.error
import urllib.request

from pymemcache.client.base import Client

HOST, PORT = os.environ.get("STRATA_MEMCACHE", "127.0.0.1:11311").rsplit(":", 1)
BASE = os.environ.get("STRATA_URL", "http://127.0.0.1:8080")


def rest_get(key):
    """The key's value over REST, or None."""
    try:
        with urllib.request.urlopen(f"{BASE}/v1/kv/{key}", timeout=10) as resp:
            return resp.read()
    except urllib.error.HTTPError as e:
        if e.code == 404:
            return None
        raise


def check(ok, what):
    if not ok:
        sys.exit(f"python memcached example: FAILED: {what}")


def main():
    run = str(time.time_ns())
    key = f"example-mc/{run}/greeting"
    mc = Client((HOST, int(PORT)), connect_timeout=5, timeout=15)

    mc.set(key, "hello")
    check(mc.get(key) == b"hello", "get reads what set stored")
    check(rest_get(key) == b"hello", "REST reads what memcached stored")

    value, unique = mc.gets(key)
    check(mc.cas(key, "hello, again", unique), "cas with the unique gets gave")
    check(not mc.cas(key, "stale", unique), "the same cas, now stale, is refused")
    check(mc.get(key) == b"hello, again", "the stale cas changed nothing")

    once = f"example-mc/{run}/once"
    check(mc.add(once, "first", noreply=False), "the first add stores")
    check(not mc.add(once, "second", noreply=False), "the second add is refused")

    counter = f"example-mc/{run}/counter"
    mc.set(counter, "40")
    check(mc.incr(counter, 2) == 42, "incr counts")

    many = mc.get_many([key, once, counter, f"example-mc/{run}/absent"])
    check(many == {key: b"hello, again", once: b"first", counter: b"42"}, f"get of several keys: {many}")

    brief = f"example-mc/{run}/brief"
    mc.set(brief, "soon gone", expire=1)
    check(mc.get(brief) == b"soon gone", "a key with an expiry time reads before it")
    deadline = time.monotonic() + 10
    while mc.get(brief) is not None:
        check(time.monotonic() < deadline, "the key outlived its 1 s expiry time by 9 s")
        time.sleep(0.1)

    print(f"python memcached example: ok (cas with unique {int(unique)}, a stale cas refused, "
          "add once, incr to 42, the key with an expiry time gone once it passed)")


if __name__ == "__main__":
    main()
