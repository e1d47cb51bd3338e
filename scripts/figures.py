#!/usr/bin/env python3
"""Turns the results of beamlet's benchmark runs into the Markdown tables of the docs.

One function per table, each reading the files one run wrote (and that run's meta.json, written
by scripts/run-meta), so that every figure in the docs comes from one named run. Used by
scripts/update-figures (which writes the tables into README.md and docs/*.md) and by
scripts/compare-beam and scripts/bench (which print them).

  figures.py outage DIR        tables of a scripts/compare-beam run (DIR: build-release/outage)
  figures.py bench DIR         tables of a scripts/bench run (DIR: build-release/bench-results)
  figures.py beam-median DIR   the BEAM runs of DIR merged into one CSV (for the plots)
"""
import csv
import glob
import json
import os
import statistics
import sys

UNITS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}


# -- formatting -------------------------------------------------------------------------------

def fmt_ns(ns):
    if ns is None:
        return "—"
    ns = float(ns)
    if ns >= 1e6:
        return f"{ns / 1e6:.2f} ms"
    if ns >= 1e3:
        return f"{ns / 1e3:.1f} µs"
    return f"{ns:.0f} ns"


def fmt_s(s):
    if s is None:
        return "—"
    return f"{s * 1e3:.0f} ms" if s < 1 else f"{s:.2f} s"


def source_line(directory):
    """The italic line under a table: which run, when, where."""
    path = os.path.join(directory, "meta.json")
    if not os.path.exists(path):
        return "_Source: no meta.json next to the results._"
    m = json.load(open(path))
    otp = f", Erlang/OTP {m['otp']}" if m.get("otp") else ""
    return (f"_Source: `{m['command']}`, {m['date']}, {m['machine']}, {m['compiler']}{otp}, "
            f"commit {m['commit']}._")


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


# -- the outage benchmark (bench/spawn_delay, bench/beam/spawn_delay.exs) ---------------------

VARIANTS = ["beam", "beamlet-scan", "beamlet-marker", "caf-await"]


def load_outage(directory):
    """Rows of spawn_delay (beamlet.csv, already medians of fresh-process runs) and of the BEAM
    script (beam-1.csv, beam-2.csv...: one file per fresh VM; merged here into median and
    spread)."""
    rows = []

    def read(path):
        with open(path) as f:
            return list(csv.DictReader(f))

    # spawn_delay writes section 1 (depth sweep) and then section 2 (drains); a P = 1 drain has
    # the same key as a sweep row, so rows are kept in file order with their section.
    def sectioned(raw):
        seen = set()
        out = []
        for r in raw:
            key = (r["variant"], r["partitions"], r["depth"])
            section = 2 if (key in seen or r["partitions"] != "1") else 1
            seen.add(key)
            out.append((section, r))
        return out

    beamlet = os.path.join(directory, "beamlet.csv")
    if os.path.exists(beamlet):
        for section, r in sectioned(read(beamlet)):
            rows.append({
                "section": section, "variant": r["variant"], "partitions": int(r["partitions"]),
                "depth": int(r["depth"]), "p50": float(r["per_spawn_ns_p50"]),
                "p50_min": float(r.get("per_spawn_ns_p50_min") or r["per_spawn_ns_p50"]),
                "p50_max": float(r.get("per_spawn_ns_p50_max") or r["per_spawn_ns_p50"]),
                "runs": int(r.get("repetitions") or 1),
                "drain": float(r["drain_s"]) if r["drain_s"] else None,
                "examined": float(r["examined_per_spawn"]) if r.get("examined_per_spawn") else None,
            })
    beam_files = sorted(glob.glob(os.path.join(directory, "beam-[0-9]*.csv")))
    if beam_files:
        runs = [sectioned(read(p)) for p in beam_files]
        for i, (section, r) in enumerate(runs[0]):
            same = [run[i][1] for run in runs if i < len(run)]
            p50s = [float(x["per_spawn_ns_p50"]) for x in same]
            drains = [float(x["drain_s"]) for x in same if x["drain_s"]]
            rows.append({
                "section": section, "variant": r["variant"], "partitions": int(r["partitions"]),
                "depth": int(r["depth"]), "p50": statistics.median(p50s), "p50_min": min(p50s),
                "p50_max": max(p50s), "runs": len(same),
                "drain": statistics.median(drains) if len(drains) == len(same) else None,
                "examined": None,
            })
    return rows


def spread(r):
    if r["runs"] < 2:
        return ""
    return f" ({fmt_ns(r['p50_min'])}–{fmt_ns(r['p50_max'])})"


def outage_sweep(directory):
    rows = [r for r in load_outage(directory) if r["section"] == 1]
    if not rows:
        return "_No depth sweep in this run._"
    variants = [v for v in VARIANTS if any(r["variant"] == v for r in rows)]
    depths = sorted({r["depth"] for r in rows})
    at = {(r["variant"], r["depth"]): r for r in rows}
    out = ["| requests queued | " + " | ".join(variants) + " |", "|---|" + "---|" * len(variants)]
    for d in depths:
        cells = []
        for v in variants:
            r = at.get((v, d))
            if not r:
                cells.append("—")
                continue
            cell = fmt_ns(r["p50"]) + spread(r)
            if r["examined"] is not None:
                cell += f"<br>{r['examined']:,.0f} examined"
            cells.append(cell)
        out.append(f"| {d:,} | " + " | ".join(cells) + " |")
    out.append("")
    out.append("Per-spawn delay: the median gap between consecutive child inits over the first "
               "1,000 spawns (all of them for drained runs), median over the runs (each in a fresh "
               "OS process; BEAM: each in a fresh VM), their range in parentheses. \"examined\": "
               "messages the supervisor's receives examined per spawn, counted by the runtime "
               "(deterministic; BEAM and CAF do not expose it).")
    out.append("")
    fits = []
    for v in variants:
        f = fit([(float(d), at[(v, d)]["p50"]) for d in depths if (v, d) in at])
        if f:
            fits.append(f"{v} {f[0]:.1f} ns per queued request (r² {f[2]:.3f})")
    if fits:
        out.append("Growth of the per-spawn delay with the queue (least-squares slope over the "
                   "depths above): " + "; ".join(fits) + ".")
        out.append("")
    out.append(source_line(directory))
    return "\n".join(out)


def outage_drains(directory):
    rows = [r for r in load_outage(directory) if r["section"] == 2]
    if not rows:
        return "_No partitioned drains in this run._"
    variants = [v for v in VARIANTS if any(r["variant"] == v for r in rows)]
    parts = sorted({r["partitions"] for r in rows})
    backlog = max(r["depth"] for r in rows)
    at = {(r["variant"], r["partitions"]): r for r in rows}
    out = [f"| partitions (P) | " + " | ".join(variants) + " |", "|---|" + "---|" * len(variants)]
    for p in parts:
        cells = []
        for v in variants:
            r = at.get((v, p))
            if not r:
                cells.append("—")
                continue
            cell = fmt_s(r["drain"]) if r["drain"] is not None else f"first spawns {fmt_ns(r['p50'])}"
            if r["examined"] is not None:
                cell += f"<br>{r['examined']:,.0f} examined"
            cells.append(cell)
        out.append(f"| {p} | " + " | ".join(cells) + " |")
    out.append("")
    out.append(f"Time from the release to the last of {backlog:,} child inits, median over the "
               "runs; \"examined\": messages examined per spawn, averaged over the whole drain "
               "(about backlog / 2P for scan).")
    s1, s16 = at.get(("beamlet-scan", 1)), at.get(("beamlet-scan", max(parts)))
    if s1 and s16 and s1["drain"] and s16["drain"] and max(parts) > 1:
        out.append(f"With scan, P = {max(parts)} drains {s1['drain'] / s16['drain']:.1f}× faster "
                   f"than P = 1 on beamlet")
        b1, b16 = at.get(("beam", 1)), at.get(("beam", max(parts)))
        if b1 and b16 and b1["drain"] and b16["drain"]:
            out[-1] += f" and {b1['drain'] / b16['drain']:.1f}× on BEAM"
        out[-1] += "."
    out.append("")
    out.append(source_line(directory))
    return "\n".join(out)


def outage_catch_up(directory):
    path = os.path.join(directory, "trajectory.csv")
    if not os.path.exists(path):
        return "_No catch-up runs in this run._"
    traj = {}
    with open(path) as f:
        for r in csv.DictReader(f):
            key = (r["variant"], int(r["partitions"]), int(r["backlog"]), float(r["rate_per_s"]))
            traj.setdefault(key, []).append((float(r["t_s"]), int(r["waiting"])))
    out = ["| variant | P | backlog | arrivals/s | after the run | verdict |", "|---|---|---|---|---|---|"]
    for (v, p, b, rate), pts in traj.items():
        drained = next((t for t, w in pts if w <= 0), None)
        first, last = pts[0][1], pts[-1][1]
        if drained is not None:
            verdict = f"drained in {drained:.1f} s"
        elif last < first:
            verdict = "shrinking, not drained"
        else:
            verdict = "growing: never catches up"
        out.append(f"| {v} | {p} | {b:,} | {rate:,.0f} | {last:,} waiting after {pts[-1][0]:.0f} s "
                   f"| {verdict} |")
    out.append("")
    out.append(source_line(directory))
    return "\n".join(out)


# -- Google Benchmark (scripts/bench) ----------------------------------------------------------

# name -> (what one iteration is, goal); goals are the ones the project set for itself.
BENCH = {
    "BM_SpawnExit": ("spawn a process that exits at once, wait for its DOWN", "≤ 150 ns"),
    "BM_SendReceive": ("one message, one sender, one receiver", "≤ 25 ns"),
    "BM_PingPong": ("one round trip between two processes", "≤ 150 ns"),
    "BM_FanIn/senders:4": ("one message, 4 senders to one receiver", ""),
    "BM_Monitor": ("monitor + demonitor of a live process", "≤ 50 ns"),
    "BM_DownFanOut/100000/manual_time": ("100k watchers of one process, all DOWNs delivered", "≤ 5 ms"),
    "BM_DownFanIn/100000/manual_time": ("one watcher of 100k processes, all DOWNs delivered", "≤ 10 ms"),
    "BM_SelectiveScan/100000/manual_time": ("a receive that skips 100k queued messages (per message)", "≤ 2 ns"),
    "BM_SelectiveScanScattered/100000/manual_time": ("the same backlog in recycled memory (per message)", ""),
    "BM_MarkerReceive/0/manual_time": ("a marked receive, empty queue", ""),
    "BM_MarkerReceive/1000000/manual_time": ("a marked receive behind 1M queued messages", "≤ 2× the empty queue"),
    "BM_IdleProcessBytes/100000/iterations:1": ("memory per idle process (100k processes)", "≤ 512 B"),
    "BM_GenServerCall": ("gen_server call round trip", "≤ 300 ns"),
    "BM_StartChild/manual_time": ("DynamicSupervisor start_child of a GenServer, idle supervisor", "≤ 500 ns"),
    "BM_StartChildBacklog/mode:0/backlog:0/iterations:3/manual_time": ("start_child, scan ack wait, empty queue", ""),
    "BM_StartChildBacklog/mode:0/backlog:100000/iterations:3/manual_time": ("start_child, scan ack wait, 100k queued", "≥ 30× the empty queue"),
    "BM_StartChildBacklog/mode:1/backlog:0/iterations:3/manual_time": ("start_child, marker ack wait, empty queue", ""),
    "BM_StartChildBacklog/mode:1/backlog:100000/iterations:3/manual_time": ("start_child, marker ack wait, 100k queued", "≤ 2× the empty queue"),
    "BM_SupervisorRestart/manual_time": ("a child crashes and is restarted", "≤ 2 µs"),
    "BM_ProcessInfo/queued:1000000": ("process_info of a process holding 1M messages", "< 1 ms"),
    "BM_MetricsScrape/processes:1000000": ("a Prometheus scrape, 1M processes alive", ""),
    "BM_TopPass/processes:1000000": ("top(10) by queue length over 1M processes", ""),
    "BM_LoggerEvents/real_time": ("one event logged by a process and written as text by the logger", ""),
    "BM_CrashLoop/per_s:100000/iterations:1/real_time": ("one second of 100k crashes/s, each a crash report", "responsive; drops counted"),
}


def load_bench(directory):
    figures = {}
    for path in sorted(glob.glob(os.path.join(directory, "bench_*.json"))):
        data = json.load(open(path))
        for b in data["benchmarks"]:
            if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
                continue
            name = b.get("run_name", b["name"]).replace("/repeats:1", "")
            if name in BENCH:
                figures[name] = b
    return figures


def bench_table(directory):
    figures = load_bench(directory)
    if not figures:
        return "_No Google Benchmark results in this run._"
    out = ["| benchmark | one iteration is | median | goal |", "|---|---|---|---|"]
    for name, (what, goal) in BENCH.items():
        b = figures.get(name)
        if not b:
            continue
        t = b["real_time"] * UNITS[b.get("time_unit", "ns")]
        if "bytes_per_process" in b:
            fig = f"{b['bytes_per_process']:.0f} B"
        elif "worst_ping_us" in b:
            fig = (f"{b['crashes']:,.0f} crashes; {b['reports_handled']:,.0f} reports written, "
                   f"{b['reports_dropped']:,.0f} dropped and counted; worst ping "
                   f"{fmt_ns(b['worst_ping_us'] * 1e3)}")
        elif "skipped" in b and "Scan" in name:
            fig = f"{b['skipped'] * 1e9:.2f} ns"
        else:
            fig = fmt_ns(t) if t >= 1e3 else f"{t:.1f} ns"
        label = name.replace("/manual_time", "").replace("/real_time", "").replace("/iterations:1", "").replace("/iterations:3", "")
        label = label.replace("mode:0", "scan").replace("mode:1", "marker").replace("backlog:", "")
        out.append(f"| `{label}` | {what} | {fig} | {goal or '—'} |")
    out.append("")
    out.append("Medians of the repetitions of one run (real time). " + source_line(directory))
    return "\n".join(out)


def peers_table(directory):
    path = os.path.join(directory, "peers.csv")
    if not os.path.exists(path):
        return "_No bench/peers results in this run._"
    with open(path) as f:
        rows = list(csv.DictReader(f))
    names = {
        "spawn_exit_ns": "spawn + exit (per process)",
        "send_receive_ns_per_msg": "send + receive, one pair (per message)",
        "ping_pong_ns_per_round_trip": "ping-pong (per round trip)",
        "monitor_demonitor_ns": "monitor + demonitor",
        "down_fan_out_1x100k_ms": "DOWN fan-out, 1 × 100k watchers (ms)",
        "down_fan_in_100kx1_ms": "DOWN fan-in, 100k × 1 watcher (ms)",
    }
    out = ["| workload | beamlet | CAF, default (work stealing) | CAF, work sharing | CAF best / beamlet |",
           "|---|---|---|---|---|"]
    for r in rows:
        unit = "ms" if r["metric"].endswith("_ms") else "ns"
        fmt = (lambda v: f"{float(v):.2f} ms") if unit == "ms" else (lambda v: fmt_ns(v))
        out.append(f"| {names.get(r['metric'], r['metric'])} | {fmt(r['beamlet'])} | "
                   f"{fmt(r['caf_default'])} | {fmt(r['caf_sharing'])} | {float(r['ratio']):.1f}× "
                   f"(vs {r['best_policy']}) |")
    out.append("")
    out.append("Medians of interleaved runs in one process, 2 scheduler threads for each runtime, "
               "one 64-bit integer per message. Above 1× beamlet is faster than CAF at its best "
               "setting for that workload. " + source_line(directory))
    return "\n".join(out)


def headline(outage_dir, bench_dir):
    rows = load_outage(outage_dir) if os.path.isdir(outage_dir) else []
    at1 = {(r["variant"], r["depth"]): r for r in rows if r["section"] == 1}
    at2 = {(r["variant"], r["partitions"]): r for r in rows if r["section"] == 2}
    out = ["| measured | beamlet | BEAM | CAF 0.17 |", "|---|---|---|---|"]

    def cell(r, drain=False):
        if not r:
            return "—"
        if drain:
            return fmt_s(r["drain"])
        return fmt_ns(r["p50"])
    d = 100000
    if ("beamlet-scan", d) in at1:
        out.append(f"| per spawn, 100k requests queued, OTP's ack wait (scan) | "
                   f"{cell(at1.get(('beamlet-scan', d)))} | {cell(at1.get(('beam', d)))} | "
                   f"{cell(at1.get(('caf-await', d)))} |")
        out.append(f"| per spawn, 100k queued, marker ack wait (the fix inside the supervisor) | "
                   f"{cell(at1.get(('beamlet-marker', d)))} | — | — |")
    if ("beamlet-scan", 16) in at2:
        out.append(f"| drain 100k queued, 16 partitions, scan (the fix that shipped) | "
                   f"{cell(at2.get(('beamlet-scan', 16)), True)} | {cell(at2.get(('beam', 16)), True)} | "
                   f"{cell(at2.get(('caf-await', 16)), True)} |")
    peers = os.path.join(bench_dir, "peers.csv")
    if os.path.exists(peers):
        with open(peers) as f:
            for r in csv.DictReader(f):
                if r["metric"] in ("spawn_exit_ns", "ping_pong_ns_per_round_trip", "down_fan_out_1x100k_ms"):
                    unit = "ms" if r["metric"].endswith("_ms") else "ns"
                    fmt = (lambda v: f"{float(v):.1f} ms") if unit == "ms" else fmt_ns
                    label = {"spawn_exit_ns": "spawn + exit", "ping_pong_ns_per_round_trip": "ping-pong round trip",
                             "down_fan_out_1x100k_ms": "DOWN to 100k watchers"}[r["metric"]]
                    out.append(f"| {label} | {fmt(r['beamlet'])} | — | {fmt(r['caf_best'])} |")
    out.append("")
    out.append("Details, method and the other figures: [docs/outage.md](docs/outage.md) and "
               "[docs/benchmarks.md](docs/benchmarks.md).")
    srcs = []
    if rows:
        srcs.append(source_line(outage_dir))
    if os.path.exists(peers):
        srcs.append(source_line(bench_dir))
    out.append("")
    out.extend(srcs)
    return "\n".join(out)


def beam_median_csv(directory):
    """The merged BEAM rows as a spawn_delay-shaped CSV (for scripts/plot-outage)."""
    out = ["variant,partitions,depth,per_spawn_ns_p50,per_spawn_ns_p90,drain_s"]
    for r in load_outage(directory):
        if r["variant"] == "beam":
            out.append(f"beam,{r['partitions']},{r['depth']},{r['p50']:.0f},,"
                       f"{'' if r['drain'] is None else r['drain']}")
    return "\n".join(out)


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "beam-median":
        print(beam_median_csv(sys.argv[2]))
        return
    if len(sys.argv) != 3 or sys.argv[1] not in ("outage", "bench"):
        print(__doc__)
        sys.exit(2)
    d = sys.argv[2]
    if sys.argv[1] == "outage":
        print(outage_sweep(d), "\n")
        print(outage_drains(d), "\n")
        print(outage_catch_up(d))
    else:
        print(bench_table(d), "\n")
        print(peers_table(d))


if __name__ == "__main__":
    main()
