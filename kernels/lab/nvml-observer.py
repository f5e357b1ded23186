#!/usr/bin/env python3
"""Reads the sessions of nvml-observer.sh (their `provetop export --format jsonl`): per backend
and NVML rate, the prover's own `prove` phase durations (the GPU phase), and what provetop's
NVML calls cost (the last usage record's histograms). Prints a table: mean prove seconds,
standard deviation, proofs, change against NVML off, NVML calls per second of session and
their mean and longest times.

    python3 kernels/lab/nvml-observer.py SESSIONS_DIR
"""
import glob, json, os, re, statistics, sys

d = sys.argv[1]
rows = {}
for path in sorted(glob.glob(os.path.join(d, "*-hz*-r*.jsonl"))):
    m = re.match(r"(\w+)-hz(\d+)-r\d+\.jsonl", os.path.basename(path))
    if not m:
        continue
    key = (m.group(1), int(m.group(2)))
    row = rows.setdefault(key, {"prove": [], "calls": {}, "secs": 0.0})
    first = last = None
    calls = None
    for line in open(path):
        r = json.loads(line)
        t = r.get("t")
        if t is not None:
            first = t if first is None else first
            last = t
        data = r.get("data") or {}
        if r.get("record") == "event" and data.get("type") == "phase_ended" and data.get("phase") == "prove":
            row["prove"].append(data["duration_s"])
        if r.get("record") == "usage" and data.get("nvml_calls"):
            calls = data["nvml_calls"]
    if first is not None:
        row["secs"] += (last - first) / 1e9
    for c in calls or []:
        agg = row["calls"].setdefault(c["call"], {"count": 0, "sum_ns": 0, "max_ns": 0})
        agg["count"] += c["count"]
        agg["sum_ns"] += c["sum_ns"]
        agg["max_ns"] = max(agg["max_ns"], c["max_ns"])

print(f"{'backend':<10} {'gpu_hz':>6} {'prove s (mean)':>15} {'sd':>8} {'n':>4} {'vs off':>8}  NVML calls")
for (b, hz) in sorted(rows, key=lambda k: (k[0], -k[1])):
    row = rows[(b, hz)]
    p = row["prove"]
    if not p:
        print(f"{b:<10} {hz:>6}  no prove phases")
        continue
    mean = statistics.mean(p)
    sd = statistics.stdev(p) if len(p) > 1 else 0.0
    off = rows.get((b, 0), {}).get("prove") or []
    vs = f"{(mean / statistics.mean(off) - 1) * 100:+.2f}%" if off and hz != 0 else "-"
    total = sum(c["count"] for c in row["calls"].values())
    per_s = total / row["secs"] if row["secs"] else 0
    worst = sorted(row["calls"].items(), key=lambda kv: -kv[1]["sum_ns"])[:3]
    desc = "; ".join(f"{k} mean {v['sum_ns'] / max(v['count'], 1) / 1e3:.0f} us max {v['max_ns'] / 1e6:.2f} ms" for k, v in worst)
    print(f"{b:<10} {hz:>6} {mean:>15.4f} {sd:>8.4f} {len(p):>4} {vs:>8}  {per_s:.0f}/s: {desc}")
print("goal: <= 0.5 % on the prove time at the default rate (issue 34)")
