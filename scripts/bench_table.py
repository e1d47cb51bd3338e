#!/usr/bin/env python3
"""Prints the median of each benchmark from Google Benchmark JSON files as a Markdown table,
next to the peers' figures and beamlet's target (from the issue that set them)."""
import json
import sys

# name -> (BEAM, CAF 0.17, target, how to read the figure)
TARGETS = {
    "BM_SpawnExit": ("1.2 µs", "~2.8 µs", "≤ 150 ns", "time"),
    "BM_SendReceive": ("150 ns/msg", "120–215 ns/msg", "≤ 25 ns/msg", "time"),
    "BM_PingPong": ("380 ns", "—", "≤ 150 ns", "time"),
    "BM_FanIn/senders:1": ("—", "—", "—", "time"),
    "BM_FanIn/senders:2": ("—", "—", "—", "time"),
    "BM_FanIn/senders:4": ("—", "122–213 ns/msg", "—", "time"),
    "BM_FanIn/senders:8": ("—", "—", "—", "time"),
    "BM_Monitor": ("780 ns", "~900 ns", "≤ 50 ns", "time"),
    "BM_DownFanOut/100000/manual_time": ("125 ms", "97 ms", "≤ 5 ms", "time"),
    "BM_DownFanIn/100000/manual_time": ("159 ms", "807 ms", "≤ 10 ms", "time"),
    "BM_SelectiveScan/1000/manual_time": ("", "", "", "skipped"),
    "BM_SelectiveScan/10000/manual_time": ("", "", "", "skipped"),
    "BM_SelectiveScan/100000/manual_time": ("8.7–13 ns", "—", "≤ 2 ns", "skipped"),
    "BM_SelectiveScan/1000000/manual_time": ("", "", "", "skipped"),
    "BM_SelectiveScanScattered/1000/manual_time": ("", "", "", "skipped"),
    "BM_SelectiveScanScattered/10000/manual_time": ("", "", "", "skipped"),
    "BM_SelectiveScanScattered/100000/manual_time": ("8.7–13 ns", "—", "(no target)", "skipped"),
    "BM_SelectiveScanScattered/1000000/manual_time": ("", "", "", "skipped"),
    "BM_MarkerReceive/0/manual_time": ("", "", "baseline", "time"),
    "BM_MarkerReceive/1000/manual_time": ("", "", "", "time"),
    "BM_MarkerReceive/10000/manual_time": ("", "", "", "time"),
    "BM_MarkerReceive/100000/manual_time": ("", "", "", "time"),
    "BM_MarkerReceive/1000000/manual_time": ("—", "—", "≤ 2× /0", "time"),
    "BM_IdleProcessBytes/100000/iterations:1": ("~2.6 KB", "~1 KB", "≤ 512 B", "bytes"),
    "BM_GenServerCall": ("~1–2 µs", "—", "≤ 300 ns", "time"),
    "BM_StartChild/manual_time": ("5.4 µs", "3.7 µs", "≤ 500 ns", "time"),
    "BM_StartChildBacklog/mode:0/backlog:0/iterations:3/manual_time": ("", "", "baseline", "time"),
    "BM_StartChildBacklog/mode:0/backlog:10000/iterations:3/manual_time": ("46 µs", "", "", "time"),
    "BM_StartChildBacklog/mode:0/backlog:100000/iterations:3/manual_time": (
        "0.87 ms", "1.6 ms", "≥ 30× /0 (O(n) reproduced)", "time"),
    "BM_StartChildBacklog/mode:1/backlog:0/iterations:3/manual_time": ("", "", "baseline", "time"),
    "BM_StartChildBacklog/mode:1/backlog:10000/iterations:3/manual_time": ("—", "—", "", "time"),
    "BM_StartChildBacklog/mode:1/backlog:100000/iterations:3/manual_time": (
        "—", "—", "≤ 2× /0", "time"),
    "BM_SupervisorRestart/manual_time": ("—", "—", "≤ 2 µs", "time"),
}

UNITS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}


def fmt_ns(ns):
    if ns >= 1e6:
        return f"{ns / 1e6:.2f} ms"
    if ns >= 1e3:
        return f"{ns / 1e3:.2f} µs"
    return f"{ns:.1f} ns"


def main(paths):
    rows = []
    context = None
    for path in paths:
        with open(path) as f:
            data = json.load(f)
        context = context or data.get("context", {})
        for b in data["benchmarks"]:
            # With repetitions, keep the median aggregate; a single run has no aggregates.
            if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
                continue
            name = b.get("run_name", b["name"]).replace("/repeats:1", "")
            if name not in TARGETS:
                continue
            beam, caf, target, kind = TARGETS[name]
            time_ns = b["real_time"] * UNITS[b.get("time_unit", "ns")]
            if kind == "bytes":
                figure = f"{b['bytes_per_process']:.0f} B/process"
            elif kind == "skipped":
                figure = f"{b['skipped'] * 1e9:.2f} ns/skipped msg ({fmt_ns(time_ns)}/receive)"
            else:
                figure = fmt_ns(time_ns)
            label = name.replace("/manual_time", "").replace("/iterations:1", "")
            label = label.replace("/iterations:3", "").replace("mode:0", "scan")
            label = label.replace("mode:1", "marker").replace("backlog:", "")
            rows.append((label,
                         figure, beam, caf, target))
    print("| benchmark | beamlet (median) | BEAM | CAF 0.17 | target |")
    print("|---|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(r) + " |")
    if context:
        print(f"\n{context.get('num_cpus')} CPUs, {context.get('date', '')}, "
              f"{context.get('executable', '')}")


if __name__ == "__main__":
    main(sys.argv[1:])
