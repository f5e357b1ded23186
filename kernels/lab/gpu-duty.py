#!/usr/bin/env python3
"""Ground truth for GPU utilisation: a GPU busy for known bursts in a known rhythm.

    python3 kernels/lab/gpu-duty.py BURSTS.jsonl [SECS] [BURST_MS] [PERIOD_MS] ...

Keeps GPU 0 busy with back-to-back bf16 matrix products for BURST_MS out of every PERIOD_MS
(default 100 of 500: the rhythm a 2 Hz reader catches or misses for a whole window by its
phase), for SECS seconds (default 30); more BURST_MS PERIOD_MS pairs follow for SECS each.
Each burst is one JSON line, {"t0_ns", "t1_ns"} on CLOCK_MONOTONIC (provetop's record clock),
its end taken after the device synchronised, so the GPU ran kernels from t0 to t1 (the gaps
between products are microseconds). duty-vs-provetop.py compares a session with it.
"""
import json
import sys
import time

import torch

path = sys.argv[1]
secs = float(sys.argv[2]) if len(sys.argv) > 2 else 30.0
pairs = [float(x) / 1e3 for x in sys.argv[3:]] or [0.1, 0.5]
a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
for _ in range(10):
    a @ a
torch.cuda.synchronize()
now = time.monotonic_ns
with open(path, "w") as log:
    for burst, period in zip(pairs[::2], pairs[1::2]):
        end = time.monotonic() + secs
        nxt = time.monotonic()
        while time.monotonic() < end:
            t0 = now()
            while now() - t0 < burst * 1e9:
                a @ a
                torch.cuda.synchronize()
            log.write(json.dumps({"t0_ns": t0, "t1_ns": now(), "burst_ms": burst * 1e3,
                                  "period_ms": period * 1e3}) + "\n")
            log.flush()
            nxt += period
            time.sleep(max(0.0, nxt - time.monotonic()))
