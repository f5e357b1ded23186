#!/usr/bin/env python3
"""For nvtx-torch.sh: each NVTX range of a session (`provetop export --format jsonl`) with the
GPU utilisation and memory of the samples inside it, its boundaries against the program's own
`at NS push|pop NAME` lines, and the last usage record's GPU details (health fields).

    python3 kernels/lab/nvtx-vs-gpu.py SESSION.jsonl
"""
import json, sys

recs = [json.loads(l) for l in open(sys.argv[1])]
ranges, opened, samples, logged, usage, warnings = [], {}, [], [], None, []
for r in recs:
    kind, d, t = r.get("record"), r.get("data") or {}, r.get("t")
    if kind == "derived" and d.get("nvtx"):
        e, o = d["event"], d["nvtx"]
        key = (e["proof_id"], e["phase"], e.get("partition"))
        if e["type"] == "phase_started":
            opened[key] = (t, o)
        elif e["type"] == "phase_ended" and key in opened:
            t0, o0 = opened.pop(key)
            ranges.append((t0, t, o0))
    elif kind == "sample":
        samples.append((t, d))
    elif kind == "output" and d.get("text", "").startswith("at "):
        f = d["text"].split()
        if len(f) >= 4:
            logged.append((int(f[1]), f[2], f[3]))
    elif kind == "usage":
        usage = d
    elif kind == "mark" and "warning" in json.dumps(d):
        warnings.append(d)

print(f"{'range':<14} {'depth':>5} {'thread':>8} {'secs':>7} {'util% mean':>10} {'GPU MiB max':>11} {'start skew ms':>13} {'end skew ms':>11}")
for t0, t1, o in ranges:
    inside = [s for (ts, s) in samples if t0 <= ts <= t1]
    utils = [g["util"] for s in inside for g in s.get("gpus", []) if g.get("util", 255) <= 100]
    mem = max((s.get("gpu_used") or 0 for s in inside), default=0)
    push = min((abs(ns - t0) for ns, w, n in logged if n == o["name"] and w == "push"), default=None)
    pop = min((abs(ns - t1) for ns, w, n in logged if n == o["name"] and w == "pop"), default=None)
    f = lambda v: f"{v / 1e6:.3f}" if v is not None else "-"
    u = f"{sum(utils) / len(utils):.0f}" if utils else "-"
    print(f"{o['name']:<14} {str(o.get('depth', '-')):>5} {o['thread']:>8} {(t1 - t0) / 1e9:>7.2f} {u:>10} {mem / 2**20:>11.0f} {f(push):>13} {f(pop):>11}")
print(f"{len(ranges)} ranges; the program logged {len(logged)} boundaries")
if usage:
    for g in usage.get("gpus", []):
        print("GPU", json.dumps(g))
    for c in usage.get("nvml_calls", []):
        print(f"NVML {c['call']}: {c['count']} calls, mean {c['sum_ns'] / max(c['count'], 1) / 1e3:.0f} us, max {c['max_ns'] / 1e6:.2f} ms")
for w in warnings[:10]:
    print("warning:", json.dumps(w))
