#!/usr/bin/env python3
"""CPU time of a process, per thread, from schedstat, until it exits.

    python3 kernels/lab/cpu-of.py PID OUT.json [PERIOD_S]

Reads /proc/PID/task/*/{comm,schedstat,status} every PERIOD_S seconds (default 0.5) and, when
the process is gone, writes the last reading: each thread's name and run time (ns, schedstat's
first field, since the thread started), their sum, and the process's lifetime so far (from
/proc/PID/stat's start time to the last reading), so CPU share = cpu_ns / wall_ns; and each
thread name's wake-ups (voluntary context switches: how often it slept and was woken) and
preemptions (nonvoluntary), per second of that lifetime. Threads
that ended before the last reading keep their last value. The reader itself costs the
measured process nothing (it is another process).
"""
import json
import os
import sys
import time

pid, out = int(sys.argv[1]), sys.argv[2]
period = float(sys.argv[3]) if len(sys.argv) > 3 else 0.5
hz = os.sysconf("SC_CLK_TCK")


def boot_ns_of_start():
    with open(f"/proc/{pid}/stat") as f:
        rest = f.read().rsplit(")", 1)[1].split()
    return int(rest[19]) * 1_000_000_000 // hz  # starttime, field 22


start = boot_ns_of_start()
threads = {}
last = None
while True:
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except FileNotFoundError:
        break
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                name = f.read().strip()
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                ns = int(f.read().split()[0])
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                sw = {k: int(v) for k, v in (l.split(":") for l in f if "ctxt_switches" in l)}
        except (FileNotFoundError, ProcessLookupError, ValueError):
            continue
        threads[tid] = (name, ns, sw.get("voluntary_ctxt_switches", 0),
                        sw.get("nonvoluntary_ctxt_switches", 0))
    try:
        with open(f"/proc/{pid}/stat") as f:
            st = f.read()
        if st.rsplit(")", 1)[1].split()[0] == "Z":
            break
    except FileNotFoundError:
        break
    last = time.clock_gettime_ns(time.CLOCK_BOOTTIME)
    time.sleep(period)

by_name = {}
wakes = {}
for name, ns, vol, invol in threads.values():
    by_name[name] = by_name.get(name, 0) + ns
    w = wakes.setdefault(name, [0, 0])
    w[0] += vol
    w[1] += invol
total = sum(by_name.values())
wall = (last or start) - start
res = {
    "pid": pid,
    "wall_ns": wall,
    "cpu_ns": total,
    "cpu_pct_of_core": 100.0 * total / wall if wall else None,
    "threads": dict(sorted(by_name.items(), key=lambda kv: -kv[1])),
    "wakeups_per_s": {n: round(v * 1e9 / wall, 2) for n, (v, _) in wakes.items()} if wall else None,
    "preempted_per_s": {n: round(i * 1e9 / wall, 2) for n, (_, i) in wakes.items()} if wall else None,
}
with open(out, "w") as f:
    json.dump(res, f, indent=1)
print(json.dumps(res))
