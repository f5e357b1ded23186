#!/usr/bin/env python3
"""Independent pinned truth: every PERIOD_S seconds, the Rss of a process's /dev/nvidia*
mappings (not nvidia-uvm) and, when it has any, of its shared /dev/zero mappings, summed from
/proc/PID/smaps, logged as JSON lines {"t_ns": CLOCK_MONOTONIC, "pid", "pinned"} until the
process is gone.

    python3 kernels/lab/smaps-truth.py NAME OUT.jsonl [PERIOD_S]

NAME: the first process whose command line contains it (waited for up to 30 s).
"""
import json
import os
import sys
import time

name, out = sys.argv[1], sys.argv[2]
period = float(sys.argv[3]) if len(sys.argv) > 3 else 2.0
me = os.getpid()


def find():
    for p in os.listdir("/proc"):
        if not p.isdigit() or int(p) == me:
            continue
        try:
            with open(f"/proc/{p}/cmdline", "rb") as f:
                argv0 = f.read().split(b"\0")[0]
        except OSError:
            continue
        if name.encode() in os.path.basename(argv0):
            return int(p)
    return None


pid = None
for _ in range(300):
    pid = find()
    if pid:
        break
    time.sleep(0.1)
log = open(out, "w")
while pid:
    try:
        text = open(f"/proc/{pid}/smaps").read()
    except OSError:
        break
    nv = zero = 0
    kind = None
    has_nv = False
    for line in text.splitlines():
        f = line.split()
        if f and "-" in f[0] and not f[0].endswith(":"):
            path = f[5] if len(f) > 5 else ""
            if path.startswith("/dev/nvidia-uvm"):
                kind, has_nv = None, True
            elif path.startswith("/dev/nvidia"):
                kind, has_nv = "nv", True
            elif path == "/dev/zero" and f[1].endswith("s"):
                kind = "zero"
            else:
                kind = None
        elif kind and line.startswith("Rss:"):
            kb = int(f[1]) * 1024
            if kind == "nv":
                nv += kb
            else:
                zero += kb
    log.write(json.dumps({"t_ns": time.clock_gettime_ns(time.CLOCK_MONOTONIC), "pid": pid,
                          "pinned": nv + (zero if has_nv else 0)}) + "\n")
    log.flush()
    time.sleep(period)
