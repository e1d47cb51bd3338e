#!/usr/bin/env python3
"""Joins the spawn_delay CSVs of BEAM, beamlet and CAF (same columns) into the tables of the
README, with ratios, and checks the figures against the targets of the outage benchmark.

usage: outage_table.py CSV [CSV...]   (rows: variant,partitions,depth,p50,p90,drain_s)
"""
import csv
import sys

VARIANTS = ["beam", "beamlet-scan", "beamlet-marker", "caf-await"]


def load(paths):
    rows = []
    for p in paths:
        with open(p) as f:
            for r in csv.DictReader(f):
                rows.append({
                    "variant": r["variant"],
                    "partitions": int(r["partitions"]),
                    "depth": int(r["depth"]),
                    "p50": float(r["per_spawn_ns_p50"]),
                    "p90": float(r["per_spawn_ns_p90"]),
                    "drain": float(r["drain_s"]) if r["drain_s"] else None,
                })
    return rows


def fmt_ns(ns):
    if ns is None:
        return "—"
    if ns >= 1e6:
        return f"{ns / 1e6:.2f} ms"
    if ns >= 1e3:
        return f"{ns / 1e3:.1f} µs"
    return f"{ns:.0f} ns"


def fmt_s(s):
    if s is None:
        return "—"
    return f"{s * 1e3:.0f} ms" if s < 1 else f"{s:.2f} s"


def fit(points):
    n = len(points)
    if n < 2:
        return None
    sx = sum(x for x, _ in points)
    sy = sum(y for _, y in points)
    sxx = sum(x * x for x, _ in points)
    sxy = sum(x * y for x, y in points)
    den = n * sxx - sx * sx
    if den == 0:
        return None
    slope = (n * sxy - sx * sy) / den
    icpt = (sy - slope * sx) / n
    mean = sy / n
    ss_tot = sum((y - mean) ** 2 for _, y in points)
    ss_res = sum((y - (slope * x + icpt)) ** 2 for x, y in points)
    return slope, icpt, (1 - ss_res / ss_tot) if ss_tot else 1.0


def main(paths):
    rows = load(paths)
    # spawn_delay writes the depth sweep first, then the partitioned drains; a P = 1 drain has
    # the same depth as a sweep row, so the second (variant, depth) row at P = 1 is the drain.
    sweep = {}
    drains = {}
    for r in rows:
        key = (r["variant"], r["depth"])
        if r["partitions"] == 1 and key not in sweep:
            sweep[key] = r
        elif r["partitions"] == 1:
            drains[(r["variant"], 1)] = r
        else:
            drains[(r["variant"], r["partitions"])] = r
    variants = [v for v in VARIANTS if any(k[0] == v for k in sweep)]
    depths = sorted({d for (_, d) in sweep})

    print("Per-spawn delay (median gap between child inits) with D start_child requests queued:\n")
    head = "| depth | " + " | ".join(variants)
    if "beam" in variants and "beamlet-scan" in variants:
        head += " | scan / BEAM | marker / BEAM"
    print(head + " |")
    print("|" + "---|" * (head.count("|")))
    for d in depths:
        cells = [fmt_ns(sweep[(v, d)]["p50"]) if (v, d) in sweep else "—" for v in variants]
        line = f"| {d:,} | " + " | ".join(cells)
        if "beam" in variants and "beamlet-scan" in variants:
            b = sweep.get(("beam", d))
            s = sweep.get(("beamlet-scan", d))
            m = sweep.get(("beamlet-marker", d))
            line += " | " + (f"{s['p50'] / b['p50']:.2f}×" if b and s else "—")
            line += " | " + (f"{m['p50'] / b['p50']:.3f}×" if b and m else "—")
        print(line + " |")

    print("\nLinear fit of the per-spawn delay against depth (all depths of the sweep):\n")
    print("| variant | slope (ns per queued request) | intercept | r² |")
    print("|---|---|---|---|")
    fits = {}
    for v in variants:
        f = fit([(float(d), sweep[(v, d)]["p50"]) for d in depths if (v, d) in sweep])
        fits[v] = f
        if f:
            print(f"| {v} | {f[0]:.3f} | {fmt_ns(f[1])} | {f[2]:.3f} |")

    parts = sorted({p for (_, p) in drains})
    if parts:
        backlog = max(r["depth"] for r in drains.values())
        print(f"\nDraining {backlog:,} queued requests through P partitions (drain time; "
              "median gap between consecutive inits system-wide):\n")
        dv = [v for v in VARIANTS if any(k[0] == v for k in drains)]
        print("| P | " + " | ".join(dv) + " |")
        print("|---|" + "---|" * len(dv))
        for p in parts:
            cells = []
            for v in dv:
                r = drains.get((v, p))
                cells.append(f"{fmt_s(r['drain'])} ({fmt_ns(r['p50'])})" if r else "—")
            print(f"| {p} | " + " | ".join(cells) + " |")

    # -- targets -----------------------------------------------------------------------------
    print("\nTargets:")

    def check(name, ok, detail):
        print(f"  [{'met' if ok else 'MISSED' if ok is not None else 'n/a'}] {name}: {detail}")

    f = fits.get("beamlet-scan")
    check("scan is linear in depth (r² ≥ 0.95)", f[2] >= 0.95 if f else None,
          f"r² = {f[2]:.3f}" if f else "no data")
    s100, b100 = sweep.get(("beamlet-scan", 100000)), sweep.get(("beam", 100000))
    if s100 and b100:
        ratio = s100["p50"] / b100["p50"]
        check("scan at 100k within 0.2×–2× of BEAM", 0.2 <= ratio <= 2,
              f"{fmt_ns(s100['p50'])} vs BEAM {fmt_ns(b100['p50'])} = {ratio:.2f}×")
    else:
        check("scan at 100k within 0.2×–2× of BEAM", None, "BEAM not measured in this run")
    m0 = sweep.get(("beamlet-marker", 0))
    mmax = max((d for (v, d) in sweep if v == "beamlet-marker"), default=None)
    if m0 and mmax:
        mm = sweep[("beamlet-marker", mmax)]
        check(f"marker at {mmax:,} ≤ 2× marker at 0", mm["p50"] <= 2 * m0["p50"],
              f"{fmt_ns(mm['p50'])} vs {fmt_ns(m0['p50'])} = {mm['p50'] / m0['p50']:.2f}×")
    md = drains.get(("beamlet-marker", 1))
    if md and md["drain"] is not None:
        check("marker drains 100k in ≤ 100 ms", md["drain"] <= 0.1, fmt_s(md["drain"]))
    s1, s16 = drains.get(("beamlet-scan", 1)), drains.get(("beamlet-scan", 16))
    if s1 and s16 and s1["drain"] and s16["drain"]:
        check("scan P=16 drains ≥ 10× faster than P=1", s1["drain"] / s16["drain"] >= 10,
              f"{fmt_s(s1['drain'])} / {fmt_s(s16['drain'])} = {s1['drain'] / s16['drain']:.1f}×")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print(__doc__)
        sys.exit(2)
    main(sys.argv[1:])
