#!/usr/bin/env python3
"""Compare a recorded session with the ground truth of kernels/lab/pinned-truth.py.

    python3 kernels/lab/compare-truth.py PROVETOP SESSION.ptop STEPS.jsonl

For every step of the helper: what it holds after the step (pinned, anonymous, GPU), and the
first sample after the step's start (its CLOCK_MONOTONIC time, the session's clock too) from
which each series stays within 2 % of the truth until the next step begins: the lag from the
step's end (negative: the series was right before the helper finished logging the step).
The truth of each series: pinned = the pinned bytes held plus what the process had pinned
before the first pinned step (the CUDA context's own buffers); RSS = the VmRSS the helper read
from /proc/self/status at the step's end; GPU = the GPU bytes held plus the context's
memory before the GPU step. Also: the share of samples with a pinned reading, the sample
rate, and the session's notes about pinned memory.
"""
import json
import subprocess
import sys

provetop, session, steps_path = sys.argv[1:4]
GIB = 1 << 30
TOL = 0.02

recs = [json.loads(l) for l in subprocess.run(
    [provetop, "export", "--format", "jsonl", session], check=True, capture_output=True, text=True
).stdout.splitlines() if l.strip()]
samples = [(r["t"], r["data"]) for r in recs if r["record"] == "sample"]
notes = [r["data"].get("text", "") for r in recs if r["record"] == "mark"
         and r["data"].get("kind") in ("note", "warning")]
steps = [json.loads(l) for l in open(steps_path)]


def at(t):
    """The last sample at or before t."""
    best = None
    for ts, s in samples:
        if ts > t:
            break
        best = s
    return best


# Baselines: pinned before the first pin step, GPU before the GPU step.
first_pin = next(i for i, s in enumerate(steps) if s["step"].startswith("pin"))
gpu_step = next(i for i, s in enumerate(steps) if s["step"].startswith("gpu"))
base_pinned = (at(steps[first_pin]["t0_ns"]) or {}).get("pinned") or 0
base_gpu = (at(steps[gpu_step]["t0_ns"]) or {}).get("gpu_used") or 0


def truth(i, key):
    s = steps[i]
    if key == "pinned":
        return base_pinned + s["pinned"]
    if key == "rss":
        return s["VmRSS"]
    if key == "gpu_used":
        return base_gpu + s["gpu"] if i >= gpu_step else None
    return None


def settle(i, key, want):
    """Lag (s) from the step's end to the first sample from which `key` stays within TOL of
    `want` until the next step starts; None if it never does."""
    t0 = steps[i]["t0_ns"]
    t_end = steps[i]["t_ns"]
    t_next = steps[i + 1]["t0_ns"] if i + 1 < len(steps) else samples[-1][0]
    window = [(ts, s.get(key)) for ts, s in samples if t0 <= ts < t_next]
    ok_from = None
    for ts, v in window:
        good = v is not None and abs(v - want) <= TOL * max(want, 1)
        if good and ok_from is None:
            ok_from = ts
        elif not good:
            ok_from = None
    return None if ok_from is None else (ok_from - t_end) / 1e9


rows = []
worst = {}
for i, s in enumerate(steps):
    row = [f"{i:2d}", s["step"]]
    for key in ("pinned", "rss", "gpu_used"):
        want = truth(i, key)
        if want is None or want == 0:
            row.append("—")
            continue
        lag = settle(i, key, want)
        row.append(f"{want / GIB:.2f} GiB, " + ("never within 2 %" if lag is None else f"lag {lag:+.2f} s"))
        if lag is not None:
            worst[key] = max(worst.get(key, -9e9), lag)
        else:
            worst[key] = float("inf")
    rows.append(row)

print("| # | step | pinned | RSS | GPU |")
print("|---|---|---|---|---|")
for r in rows:
    print("| " + " | ".join(r) + " |")
n = len(samples)
with_pinned = sum(1 for _, s in samples if s.get("pinned") is not None)
span = (samples[-1][0] - samples[0][0]) / 1e9
print(f"\n{n} samples over {span:.1f} s ({n / span:.2f} Hz); {with_pinned} with a pinned reading "
      f"({100 * with_pinned / n:.1f} %); baseline pinned {base_pinned / 2**20:.1f} MiB, GPU {base_gpu / 2**20:.0f} MiB")
print("worst lag per series (s): " + ", ".join(f"{k} {v:+.2f}" for k, v in worst.items()))
for t in notes:
    if "pinned" in t or "smaps" in t:
        print("note:", t)
