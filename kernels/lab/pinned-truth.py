#!/usr/bin/env python3
"""Ground truth for provetop's memory series on a CUDA machine (issue 20's acceptance).

    python3 kernels/lab/pinned-truth.py STEPS.jsonl [HOLD_S]

Holds known amounts of memory, one step at a time, and logs each step as one JSON line with
its CLOCK_MONOTONIC time (the clock of provetop's record times, so the two line up):

  * a CUDA context, then 40 GiB of anonymous memory (4 x 10 GiB, every page written),
  * 8 GiB of GPU memory (written),
  * pinned host memory with cudaHostAlloc (PyTorch pinned tensors): +4, +8, +4, +2 GiB
    (18 GiB), then the 8 GiB and the 2 GiB freed (8 GiB left), each free handed back to the
    driver (PyTorch's host cache emptied; where that call is missing the log says the memory
    stays pinned in the cache, and the truth keeps counting it).

Sizes are powers of two because PyTorch's host allocator rounds up to one. Each step's line
holds what the process holds after it ("pinned", "anon", "gpu", bytes), the step's start and
end ("t0_ns", "t_ns"), and what /proc/self/status says right then (VmRSS, RssShmem, RssAnon,
VmLck, bytes) for reference. HOLD_S seconds (default 6) pass between steps.
"""

import gc
import json
import os
import sys
import time

import torch

GIB = 1 << 30


def now_ns():
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC)


def status():
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmRSS", "RssShmem", "RssAnon", "VmLck"):
                out[k] = int(v.split()[0]) * 1024
    return out


def main():
    path = sys.argv[1]
    hold = float(sys.argv[2]) if len(sys.argv) > 2 else 6.0
    log = open(path, "w")
    held = {"pinned": 0, "anon": 0, "gpu": 0}

    def step(what, t0, **extra):
        rec = dict(t0_ns=t0, t_ns=now_ns(), step=what, pid=os.getpid(), **held)
        rec.update(status())
        rec.update(extra)
        log.write(json.dumps(rec) + "\n")
        log.flush()
        print(f"{rec['t_ns']} {what}", flush=True)
        time.sleep(hold)

    t0 = now_ns()
    torch.zeros(1, device="cuda")
    torch.cuda.synchronize()
    step("cuda context", t0, torch=torch.__version__)

    anon = []
    for _ in range(4):
        t0 = now_ns()
        anon.append(torch.ones(10 * GIB, dtype=torch.uint8))
        held["anon"] += 10 * GIB
        step("anon +10 GiB", t0)

    t0 = now_ns()
    gpu = torch.ones(8 * GIB, dtype=torch.uint8, device="cuda")
    torch.cuda.synchronize()
    held["gpu"] = 8 * GIB
    step("gpu +8 GiB", t0)

    pinned = {}
    for name, gib in (("a", 4), ("b", 8), ("c", 4), ("d", 2)):
        t0 = now_ns()
        pinned[name] = torch.empty(gib * GIB, dtype=torch.uint8, pin_memory=True)
        assert pinned[name].is_pinned()
        held["pinned"] += gib * GIB
        step(f"pin +{gib} GiB ({name})", t0)

    empty = getattr(torch._C, "_host_emptyCache", None)
    for name in ("b", "d"):
        t0 = now_ns()
        n = pinned.pop(name).numel()
        gc.collect()
        if empty is not None:
            empty()
            held["pinned"] -= n
            step(f"free {n // GIB} GiB pinned ({name})", t0, returned=True)
        else:
            step(f"free {n // GIB} GiB pinned ({name}), kept by the host cache", t0, returned=False)

    t0 = now_ns()
    step("end", t0)
    del gpu, anon, pinned


if __name__ == "__main__":
    main()
