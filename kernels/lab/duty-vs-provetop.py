#!/usr/bin/env python3
"""A session's GPU utilisation against gpu-duty.py's bursts (and nvidia-smi beside it).

    python3 kernels/lab/duty-vs-provetop.py PROVETOP SESSION.ptop BURSTS.jsonl [SMI.csv]

For each rhythm of the burst log (its first 3 s left out), over the same window: the GPU's
true busy share (the bursts' union), provetop's mean utilisation over its samples (each
sample carries the latest GPU reading, so the mean is time-weighted), and nvidia-smi's mean
when SMI.csv (with SMI.csv.clock, as drive-modes.py writes them) is given. Prints a markdown
table; the difference is in percentage points.
"""
import datetime
import json
import statistics
import subprocess
import sys

provetop, session, bursts_path = sys.argv[1:4]
smi_path = sys.argv[4] if len(sys.argv) > 4 else None
SETTLE_NS = 3_000_000_000

bursts = [json.loads(line) for line in open(bursts_path) if line.strip()]
rhythms = {}
for b in bursts:
    rhythms.setdefault((b["burst_ms"], b["period_ms"]), []).append((b["t0_ns"], b["t1_ns"]))

smi = []
if smi_path:
    mono0, wall0 = map(int, open(smi_path + ".clock").read().split())
    for line in open(smi_path):
        parts = [p.strip() for p in line.split(",")]
        if len(parts) < 6 or not parts[3].isdigit() or parts[1] != "0":
            continue
        stamp = datetime.datetime.strptime(parts[0], "%Y/%m/%d %H:%M:%S.%f")
        wall = int(stamp.replace(tzinfo=datetime.timezone.utc).timestamp() * 1e9)
        smi.append((wall - wall0 + mono0, int(parts[3])))

out = subprocess.run([provetop, "export", "--format", "jsonl", session],
                     capture_output=True, text=True, check=True).stdout
ours = []
for line in out.splitlines():
    r = json.loads(line)
    if r["record"] == "sample":
        for g in r["data"].get("gpus", []):
            u = g.get("util")
            if g["index"] == 0 and u is not None and u <= 100:
                ours.append((r["t"], u))


def mean(xs):
    xs = list(xs)
    return statistics.fmean(xs) if xs else float("nan")


print("| rhythm | s | truth | provetop | diff | nvidia-smi | diff |")
print("|---|---:|---:|---:|---:|---:|---:|")
for (burst, period), spans in rhythms.items():
    t0, t1 = spans[0][0] + SETTLE_NS, spans[-1][0]
    busy = sum(max(0, min(b, t1) - max(a, t0)) for a, b in spans)
    truth = 100 * busy / (t1 - t0)
    mine = mean(u for t, u in ours if t0 <= t < t1)
    theirs = mean(u for t, u in smi if t0 <= t < t1)
    print(f"| {burst:.0f} ms of {period:.0f} | {(t1 - t0) / 1e9:.1f} | {truth:.1f} % | "
          f"{mine:.1f} % | {mine - truth:+.1f} | {theirs:.1f} % | {theirs - truth:+.1f} |")
