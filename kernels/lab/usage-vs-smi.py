#!/usr/bin/env python3
"""provetop's NVML readings against nvidia-smi sampled beside it (issue 19's fidelity check).

    python3 kernels/lab/usage-vs-smi.py PROVETOP SESSION.ptop SMI.csv

SMI.csv is `nvidia-smi --query-gpu=timestamp,index,uuid,utilization.gpu,memory.used,memory.total
--format=csv,noheader,nounits -lms 100`, with SMI.csv.clock beside it (one line: CLOCK_MONOTONIC
and wall-clock ns read together, to put nvidia-smi's wall-clock stamps on the session's axis),
as drive-modes.py writes them. Both series are averaged per batch mode (the session's
mode_changed events cut the windows; the first 3 s after each switch and the SRS load are left
out: steady state), and per 1 s bin. Prints, per GPU: each window's mean utilisation and memory
by both, their difference, and the spread of the 1 s bins' differences.
"""
import datetime
import json
import statistics
import subprocess
import sys

provetop, session, smi_path = sys.argv[1:4]
SETTLE_NS = 3_000_000_000

with open(smi_path + ".clock") as f:
    mono0, wall0 = map(int, f.read().split())
smi = {}  # index -> [(t_mono_ns, util, used_bytes)]
with open(smi_path) as f:
    for line in f:
        parts = [p.strip() for p in line.split(",")]
        if len(parts) < 6 or not parts[3].isdigit():
            continue
        stamp = datetime.datetime.strptime(parts[0], "%Y/%m/%d %H:%M:%S.%f")
        wall = int(stamp.replace(tzinfo=datetime.timezone.utc).timestamp() * 1e9)
        smi.setdefault(int(parts[1]), []).append(
            (wall - wall0 + mono0, int(parts[3]), int(parts[4]) << 20))

out = subprocess.run([provetop, "export", "--format", "jsonl", session],
                     capture_output=True, text=True, check=True).stdout
ours = {}  # index -> [(t, util or None, used)]
switches = []
ready = None
end = 0
for line in out.splitlines():
    r = json.loads(line)
    t, kind, d = r["t"], r["record"], r["data"]
    end = max(end, t)
    if kind == "sample":
        for g in d.get("gpus", []):
            util = g.get("util")
            ours.setdefault(g["index"], []).append(
                (t, None if util is None or util > 100 else util, g.get("used")))
    elif kind == "event" and d.get("type") == "srs_ready":
        ready = t
    elif kind == "event" and d.get("type") == "mode_changed":
        switches.append((t, d["to"]))

first_mode = "single"
bounds = [(ready or 0, first_mode)] + switches
windows = []
for i, (t0, mode) in enumerate(bounds):
    t1 = bounds[i + 1][0] if i + 1 < len(bounds) else end
    windows.append((mode, t0 + SETTLE_NS, t1))


def mean(xs):
    xs = [x for x in xs if x is not None]
    return statistics.fmean(xs) if xs else None


for idx in sorted(ours):
    mine, theirs = ours[idx], smi.get(idx, [])
    print(f"GPU {idx}: {len(mine)} provetop samples, {len(theirs)} nvidia-smi readings")
    print("| window | s | util provetop | util nvidia-smi | diff | memory provetop | memory nvidia-smi | diff |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for mode, t0, t1 in windows:
        if t1 <= t0:
            continue
        a = [s for s in mine if t0 <= s[0] < t1]
        b = [s for s in theirs if t0 <= s[0] < t1]
        ua, ub = mean(s[1] for s in a), mean(s[1] for s in b)
        ma, mb = mean(s[2] for s in a), mean(s[2] for s in b)
        if None in (ua, ub, ma, mb):
            continue
        print(f"| {mode} | {(t1 - t0) / 1e9:.1f} | {ua:.1f} % | {ub:.1f} % | {ua - ub:+.1f} | "
              f"{ma / 2**30:.3f} GiB | {mb / 2**30:.3f} GiB | {(ma - mb) / mb * 100:+.2f} % |")
    # 1 s bins inside the windows.
    du, dm = [], []
    for mode, t0, t1 in windows:
        t = t0
        while t + 1e9 <= t1:
            a = [s for s in mine if t <= s[0] < t + 1e9]
            b = [s for s in theirs if t <= s[0] < t + 1e9]
            ua, ub = mean(s[1] for s in a), mean(s[1] for s in b)
            ma, mb = mean(s[2] for s in a), mean(s[2] for s in b)
            if None not in (ua, ub):
                du.append(ua - ub)
            if None not in (ma, mb) and mb > 0:
                dm.append((ma - mb) / mb * 100)
            t += 1e9
    if du:
        du.sort()
        dm.sort()
        print(f"1 s bins: {len(du)}; utilisation difference median {statistics.median(du):+.1f}, "
              f"90 % within [{du[len(du) // 20]:+.1f}, {du[-1 - len(du) // 20]:+.1f}] points; "
              f"memory difference median {statistics.median(dm):+.2f} %, largest {max(map(abs, dm)):.2f} %")
