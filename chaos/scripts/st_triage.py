#!/usr/bin/env python3
"""Sorts schemathesis failures from its NDJSON report.

A 503 {"code":"UNAVAILABLE"} is the contract's "not applied, retry": on a
loaded 2-core machine an election can happen during the run, and Envoy's
retries may run out. Those are printed and not counted (unless --strict).
A 504 {"code":"OUTCOME_UNKNOWN"} is the contract's honest answer to a write
caught by a leader change; it is forgiven only when the cluster's term
moved during the run (--terms BEFORE AFTER, read from the nodes), never
otherwise. Any other failure counts. Exit status 1 when something counts.
"""

import base64
import json
import sys


def body_of(resp: dict) -> str:
    c = resp.get("content") or resp.get("body") or ""
    if isinstance(c, dict) and "$base64" in c:
        return base64.b64decode(c["$base64"]).decode("utf-8", "replace")
    return str(c)


def main() -> int:
    path, strict = sys.argv[1], "--strict" in sys.argv
    term_moved = False
    if "--terms" in sys.argv:
        i = sys.argv.index("--terms")
        before, after = int(sys.argv[i + 1]), int(sys.argv[i + 2])
        term_moved = before > 0 and after > before
    counted, transient = [], []
    with open(path) as f:
        for line in f:
            ev = json.loads(line).get("ScenarioFinished")
            if not ev or ev.get("status") != "failure":
                continue
            rec = ev["recorder"]
            for cid, checks in rec.get("checks", {}).items():
                for c in checks:
                    if c.get("status") != "failure":
                        continue
                    case = rec["cases"][cid]["value"]
                    resp = (rec.get("interactions", {}).get(cid, {}) or {}).get("response") or {}
                    status, body = resp.get("status_code"), body_of(resp)
                    what = f'{rec["label"]}: {c["name"]}: {case["method"]} {case["path"]} -> {status} {body[:160]}'
                    if not strict and status == 503 and '"UNAVAILABLE"' in body:
                        transient.append(what)
                    elif (not strict and term_moved and status == 504
                          and '"OUTCOME_UNKNOWN"' in body):
                        transient.append(what + " (the term moved during the run)")
                    else:
                        counted.append(what)
    for t in transient:
        print(f"schemathesis: transient, not counted: {t}")
    for c in counted:
        print(f"schemathesis: FAILURE: {c}")
    return 1 if counted else 0


if __name__ == "__main__":
    sys.exit(main())
