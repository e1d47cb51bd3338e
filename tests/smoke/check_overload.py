#!/usr/bin/env python3
"""Checks the CSVs of a small overload run (registered with ctest by bench/CMakeLists.txt):
both files have their documented columns, every configuration ran, every request is accounted
for, each control refused what it is there to refuse (and only that) yet still started
children, the controlled configurations recovered, and the time series is consistent.

usage: check_overload.py SUMMARY_CSV SERIES_CSV SECONDS
"""
import csv
import sys

SUMMARY = ["config", "offered_per_s", "offered", "accepted", "rate_limited", "overloaded",
           "mailbox_full", "other_errors", "unanswered", "goodput_per_s", "p50_ms", "p99_ms",
           "peak_queue", "peak_rss_mb", "peak_sup_mb", "recovered", "recovery_s"]
SERIES = ["config", "t_s", "queue_len", "accepted", "refused", "goodput_per_s", "rss_mb"]
CONFIGS = ["none", "rate_limit", "shedding", "bounded", "partitioned"]
# The refusal column each control must fill; every other refusal column must stay 0.
REFUSAL = {"none": None, "rate_limit": "rate_limited", "shedding": "overloaded",
           "bounded": "mailbox_full", "partitioned": None}


def fail(msg):
    print("check_overload: " + msg)
    sys.exit(1)


def read(path, header):
    with open(path) as f:
        reader = csv.DictReader(f)
        if reader.fieldnames != header:
            fail(f"{path}: header {reader.fieldnames}, expected {header}")
        return list(reader)


def main():
    summary_path, series_path, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
    rows = read(summary_path, SUMMARY)
    if [r["config"] for r in rows] != CONFIGS:
        fail(f"configurations {[r['config'] for r in rows]}, expected {CONFIGS}")
    for r in rows:
        c = r["config"]
        n = {k: float(r[k]) for k in SUMMARY if k not in ("config", "recovery_s")}
        if any(v < 0 for v in n.values()):
            fail(f"{c}: a negative figure in {r}")
        if n["offered"] <= 0 or n["accepted"] <= 0 or n["goodput_per_s"] <= 0:
            fail(f"{c}: nothing offered or nothing accepted: {r}")
        if abs(n["offered_per_s"] * seconds - n["offered"]) > 0.01 * n["offered"] + 1:
            fail(f"{c}: offered_per_s {n['offered_per_s']} does not match {n['offered']} in "
                 f"{seconds} s")
        answered = (n["accepted"] + n["rate_limited"] + n["overloaded"] + n["mailbox_full"] +
                    n["other_errors"] + n["unanswered"])
        if answered != n["offered"]:
            fail(f"{c}: {answered} requests accounted for, {n['offered']} offered")
        if n["other_errors"] != 0:
            fail(f"{c}: {n['other_errors']} unexpected start errors")
        for col in ("rate_limited", "overloaded", "mailbox_full"):
            if col == REFUSAL[c]:
                if n[col] <= 0:
                    fail(f"{c}: no request refused as {col} under a 10x overload")
            elif n[col] != 0:
                fail(f"{c}: {n[col]} requests refused as {col}, which {c} cannot do")
        if not 0 < n["p50_ms"] <= n["p99_ms"]:
            fail(f"{c}: bad latency percentiles p50 {n['p50_ms']} p99 {n['p99_ms']}")
        if n["peak_rss_mb"] <= 0 or n["peak_sup_mb"] <= 0:
            fail(f"{c}: no memory figure")
        if r["recovered"] not in ("0", "1"):
            fail(f"{c}: recovered is {r['recovered']!r}")
        if (r["recovered"] == "1") != (r["recovery_s"] != ""):
            fail(f"{c}: recovery_s {r['recovery_s']!r} with recovered {r['recovered']}")
        if REFUSAL[c] and r["recovered"] != "1":
            fail(f"{c}: a controlled supervisor did not recover")

    by_config = {}
    for s in read(series_path, SERIES):
        by_config.setdefault(s["config"], []).append(s)
    totals = {r["config"]: float(r["accepted"]) for r in rows}
    for c in CONFIGS:
        pts = by_config.get(c, [])
        # One sample per 100 ms of load, with slack for a loaded machine.
        if len(pts) < max(2, int(seconds * 10 * 0.5)):
            fail(f"series: {len(pts)} samples for {c} over {seconds} s")
        prev_t, prev_a = -1.0, 0.0
        for p in pts:
            t, a = float(p["t_s"]), float(p["accepted"])
            if t <= prev_t or a < prev_a or float(p["queue_len"]) < 0:
                fail(f"series: {c} goes back in time or in starts at t={t}")
            prev_t, prev_a = t, a
        if prev_a > totals[c]:
            fail(f"series: {c} counts {prev_a} starts, the summary {totals[c]}")
        if float(pts[-1]["t_s"]) < seconds * 0.9:
            fail(f"series: {c} stops at {pts[-1]['t_s']} s, before the load ends")
    print("check_overload: ok")


if __name__ == "__main__":
    main()
