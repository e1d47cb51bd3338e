#!/usr/bin/env python3
"""Checks the CSVs of a small spawn_delay run (registered with ctest by bench/CMakeLists.txt):
every expected row is there, drained runs have a drain time, the figures are sane, and with the
scan wait the per-spawn delay at depth grows over the idle one, and the deterministic cost
(messages examined per spawn) is what the cost model says: about the queue length for scan,
about 1 for marker, divided by P for P partitions.

usage: check_spawn_delay.py SPAWN_DELAY_CSV TRAJECTORY_CSV DEPTH PARTITIONS...
"""
import csv
import sys


def fail(msg):
    print("check_spawn_delay: " + msg)
    sys.exit(1)


def main():
    rows_path, traj_path, depth = sys.argv[1], sys.argv[2], int(sys.argv[3])
    parts = [int(p) for p in sys.argv[4:]]
    with open(rows_path) as f:
        reader = csv.DictReader(f)
        want = ["variant", "partitions", "depth", "per_spawn_ns_p50", "per_spawn_ns_p90", "drain_s",
                "repetitions", "per_spawn_ns_p50_min", "per_spawn_ns_p50_max",
                "examined_per_spawn"]
        if reader.fieldnames != want:
            fail(f"header {reader.fieldnames}, expected {want}")
        rows = list(reader)
    index = {(r["variant"], int(r["partitions"]), int(r["depth"])): r for r in rows}
    for variant in ("beamlet-scan", "beamlet-marker", "caf-await"):
        for d in (0, depth):
            if (variant, 1, d) not in index:
                fail(f"missing row {variant} P=1 depth={d}")
        r = index[(variant, 1, depth)]
        if not r["drain_s"] or float(r["drain_s"]) <= 0:
            fail(f"{variant} P=1 depth={depth}: no drain time")
    for p in parts:
        for variant in ("beamlet-scan", "beamlet-marker"):
            if (variant, p, depth) not in index:
                fail(f"missing drain row {variant} P={p}")
    for r in rows:
        p50, p90 = float(r["per_spawn_ns_p50"]), float(r["per_spawn_ns_p90"])
        if not (0 < p50 <= p90):
            fail(f"bad percentiles in {r}")
    scan0 = float(index[("beamlet-scan", 1, 0)]["per_spawn_ns_p50"])
    scan_d = float(index[("beamlet-scan", 1, depth)]["per_spawn_ns_p50"])
    if scan_d <= scan0:
        fail(f"scan: {scan_d} ns at depth {depth} is not above {scan0} ns at 0")
    def examined(variant, p):
        v = index[(variant, p, depth)]["examined_per_spawn"]
        if not v:
            fail(f"{variant} P={p}: no examined_per_spawn")
        return float(v)
    scan_e, marker_e = examined("beamlet-scan", 1), examined("beamlet-marker", 1)
    # A drained scan run examines the remaining queue on each spawn: depth/2 on average.
    if not (0.4 * depth <= scan_e <= 0.6 * depth):
        fail(f"scan examined {scan_e} per spawn at depth {depth}, expected about {depth / 2}")
    if marker_e > 4:
        fail(f"marker examined {marker_e} per spawn, expected about 2 (request + ack)")
    for p in parts:
        if p > 1:
            e = examined("beamlet-scan", p)
            if not (0.5 * scan_e / p <= e <= 2 * scan_e / p):
                fail(f"scan with {p} partitions examined {e} per spawn, expected about {scan_e / p}")
    for r in rows:
        if not (float(r["per_spawn_ns_p50_min"]) <= float(r["per_spawn_ns_p50"]) <= float(r["per_spawn_ns_p50_max"])):
            fail(f"median outside its spread in {r}")
    with open(traj_path) as f:
        traj = list(csv.DictReader(f))
    if not traj:
        fail("empty trajectory")
    marker = [t for t in traj if t["variant"] == "beamlet-marker"]
    if not marker or int(marker[-1]["waiting"]) > int(marker[0]["waiting"]):
        fail("marker trajectory does not shrink")
    print(f"check_spawn_delay: {len(rows)} rows, {len(traj)} trajectory points, "
          f"scan {scan0:.0f} ns -> {scan_d:.0f} ns at depth {depth}, examined {scan_e:.0f} "
          f"(marker {marker_e:.0f}) per spawn")


if __name__ == "__main__":
    main()
