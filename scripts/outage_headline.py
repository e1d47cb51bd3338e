#!/usr/bin/env python3
"""The headline of scripts/demo: per-spawn delay at 100k queued requests for each variant, and
whether each catches up with a 1M backlog plus 100 new requests per second.

usage: outage_headline.py BEAMLET_CSV TRAJECTORY_CSV [BEAM_CSV]
"""
import csv
import sys


def rows(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def fmt_ns(ns):
    ns = float(ns)
    if ns >= 1e6:
        return f"{ns / 1e6:.2f} ms"
    if ns >= 1e3:
        return f"{ns / 1e3:.1f} µs"
    return f"{ns:.0f} ns"


def main(beamlet_csv, trajectory_csv, beam_csv=None):
    data = rows(beamlet_csv) + (rows(beam_csv) if beam_csv else [])
    print("Per-spawn delay with 100,000 start_child requests queued: median gap between child\n"
          "inits (median of the runs, each in a fresh process, and their spread), and the messages\n"
          "the supervisor examined per spawn (deterministic: the cost model itself):")
    seen = set()
    for r in data:
        if int(r["depth"]) != 100000:
            continue
        key = (r["variant"], r["partitions"])
        if key in seen:
            continue
        seen.add(key)
        label = r["variant"] if r["partitions"] == "1" else f"{r['variant']}, {r['partitions']} partitions"
        spread = ""
        if r.get("per_spawn_ns_p50_min"):
            spread = f" ({fmt_ns(r['per_spawn_ns_p50_min'])}..{fmt_ns(r['per_spawn_ns_p50_max'])})"
        examined = r.get("examined_per_spawn") or ""
        examined = f"   {float(examined):>9,.0f} examined/spawn" if examined else ""
        drain = f"   drained in {float(r['drain_s']):.2f} s" if r["drain_s"] else ""
        print(f"  {label:32} {fmt_ns(r['per_spawn_ns_p50']):>10}{spread:24}{examined}{drain}")
    if not beam_csv:
        print("  beam                             (not measured: elixir not installed)")

    print("\nA 1,000,000 backlog plus 100 new requests per second:")
    traj = {}
    for r in rows(trajectory_csv):
        if int(r["backlog"]) == 1000000 and float(r["rate_per_s"]) == 100:
            traj.setdefault((r["variant"], r["partitions"]), []).append((float(r["t_s"]), int(r["waiting"])))
    for (v, p), pts in traj.items():
        label = v if p == "1" else f"{v}, {p} partitions"
        drained = next((t for t, w in pts if w <= 0), None)
        if drained is not None:
            verdict = f"catches up: drained in {drained:.1f} s"
        else:
            first, last = pts[0][1], pts[-1][1]
            verdict = (f"never catches up: {last:,} waiting after {pts[-1][0]:.0f} s (from {first:,})"
                       if last >= first else f"shrinking slowly: {last:,} waiting after {pts[-1][0]:.0f} s")
        print(f"  {label:32} {verdict}")


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4):
        print(__doc__)
        sys.exit(2)
    main(*sys.argv[1:])
