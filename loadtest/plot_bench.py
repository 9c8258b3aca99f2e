#!/usr/bin/env python3
"""PNGs from the JSON the benchmark runs write (matplotlib; `./dev bench-plot` installs it).

- curves.json of bench_curves.py: put throughput and p99 against clients and against value size,
  Strata and etcd leader-direct on the same axes (curve-clients.png, curve-value-size.png), and, if
  the run had --failover, every put's latency over time through a kill of the leader
  (failover-timeline.png);
- failover.json of `./dev bench-failover` (the failover probe), if given: the window of each kill
  (failover-windows.png).

Every figure names the machine, date and commit of its run in its title.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402 (the backend is chosen first)

STYLE = {"strata": ("Strata (through Envoy)", "tab:blue", "o"),
         "etcd-leader": ("etcd 3.6.14, leader-direct", "tab:orange", "s")}


def size_label(n: int) -> str:
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
    return f"{n} B"


def curve_figure(doc: dict, axis: str, out: Path) -> None:
    c = doc[axis]
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(7, 7), sharex=True)
    for side, (label, color, marker) in STYLE.items():
        top.plot(c["x"], [p["ops_per_s"] for p in c[side]], marker=marker, color=color, label=label)
        bottom.plot(c["x"], [p["p99_ms"] for p in c[side]], marker=marker, color=color, label=label)
        for x, p in zip(c["x"], c[side]):
            if p["errors"]:
                top.annotate(f"{p['errors']} err", (x, p["ops_per_s"]), fontsize=7, color=color)
    top.set_ylabel("puts/s")
    bottom.set_ylabel("p99 latency (ms)")
    bottom.set_yscale("log")
    for ax in (top, bottom):
        ax.set_xscale("log", base=2 if axis == "clients" else 4)
        ax.grid(True, which="both", alpha=0.3)
    if axis == "clients":
        bottom.set_xlabel("concurrent clients (256-byte values)")
        bottom.set_xticks(c["x"], [str(x) for x in c["x"]])
    else:
        bottom.set_xlabel("value size (16 clients)")
        bottom.set_xticks(c["x"], [size_label(x) for x in c["x"]])
        top.set_ylabel("puts/s (log)")
        top.set_yscale("log")
    top.legend()
    fig.suptitle(f"Durable puts, 3 replicas, {doc['seconds']} s a point x {doc['rounds']} round(s)\n"
                 f"{title_line(doc)}", fontsize=9)
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)


def title_line(doc: dict) -> str:
    return f"{doc['date']}, commit {doc['commit']}, load average {doc['load_average_before']:.1f} before"


def timeline_figure(doc: dict, out: Path) -> None:
    f = doc["failover"]
    fig, ax = plt.subplots(figsize=(8, 4))
    kinds = sorted({p["status"] for p in f["puts"]}, key=lambda k: (k != "ok", k))
    colors = iter(["tab:orange", "tab:purple", "tab:brown", "tab:gray", "tab:olive"])
    for kind in kinds:
        pts = [p for p in f["puts"] if p["status"] == kind]
        ax.scatter([p["t_s"] for p in pts], [p["latency_ms"] for p in pts], s=4 if kind == "ok" else 9,
                   label=f"{'OK' if kind == 'ok' else kind} ({len(pts)})",
                   color="tab:blue" if kind == "ok" else next(colors, "black"))
    ax.axvline(f["killed_at_s"], color="tab:red", linestyle="--", label="kill -9 of the leader")
    ax.set_yscale("log")
    ax.set_xlabel("time the put was sent, since the first (s)")
    ax.set_ylabel("put latency (ms)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(f"A REST put through Envoy every {f['interval_ms']} ms through a leader kill\n"
                 f"{title_line(doc)}", fontsize=9)
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)


def windows_figure(doc: dict, out: Path) -> None:
    ms = doc["windows_ms"]
    fig, ax = plt.subplots(figsize=(7, 3.5))
    ax.bar(range(1, len(ms) + 1), ms, color="tab:blue")
    ax.axhline(doc["median_ms"], color="tab:green", linestyle="--", label=f"median {doc['median_ms']:.0f} ms")
    ax.set_xticks(range(1, len(ms) + 1))
    ax.set_xlabel("kill")
    ax.set_ylabel("longest gap between successful puts (ms)")
    ax.set_title(f"Failover probe: worst {doc['worst_ms']:.0f} ms over {len(ms)} kills", fontsize=9)
    ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--curves", required=True, help="curves.json of bench_curves.py")
    p.add_argument("--failover", help="failover.json of the failover probe (optional)")
    p.add_argument("--out-dir", required=True)
    args = p.parse_args()
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    doc = json.loads(Path(args.curves).read_text())
    written = []
    for axis, name in (("clients", "curve-clients.png"), ("value_size", "curve-value-size.png")):
        if axis not in doc:
            continue
        curve_figure(doc, axis, out / name)
        written.append(out / name)
    if "failover" in doc:
        timeline_figure(doc, out / "failover-timeline.png")
        written.append(out / "failover-timeline.png")
    if args.failover and Path(args.failover).exists():
        windows_figure(json.loads(Path(args.failover).read_text()), out / "failover-windows.png")
        written.append(out / "failover-windows.png")
    for w in written:
        print(f"wrote {w}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
