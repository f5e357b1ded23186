#!/usr/bin/env python3
"""What each file the sampler reads costs against one process, at a given size.

    read-costs.py PID OUT.json [MIN_GIB ...]

For each MIN_GIB (default 0), waits until PID's RSS reaches it, then times N re-reads of
every file the sampler's tick and its usage reading read, each kept open and re-read with
pread (as provetop does), and appends one entry to OUT.json. The times are wall time per read
from this process (the kernel's seq_file work dominates; Python's own overhead is measured
on /proc/self/statm's fd and reported as `baseline`).
"""
import json
import os
import sys
import time

N = 2000


def rss_gib(pid):
    with open(f"/proc/{pid}/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**30


def timed(path, n=N):
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError as e:
        return f"unreadable: {e.strerror}"
    try:
        os.pread(fd, 65536, 0)
        t0 = time.perf_counter_ns()
        for _ in range(n):
            os.pread(fd, 65536, 0)
        return (time.perf_counter_ns() - t0) / n / 1e3
    except OSError as e:
        return f"unreadable: {e.strerror}"
    finally:
        os.close(fd)


def cgroup_of(pid):
    with open(f"/proc/{pid}/cgroup") as f:
        for line in f:
            if line.startswith("0::"):
                return "/sys/fs/cgroup" + line.strip()[3:]
    return None


def main():
    pid = int(sys.argv[1])
    out = sys.argv[2]
    sizes = [float(a) for a in sys.argv[3:]] or [0.0]
    entries = []
    for want in sizes:
        while rss_gib(pid) < want:
            time.sleep(0.2)
        e = {"rss_gib": round(rss_gib(pid), 2), "us_per_read": {}}
        r = e["us_per_read"]
        r["baseline (/proc/self/statm)"] = timed("/proc/self/statm")
        for f in ["status", "statm", "stat", "schedstat", "io", "smaps_rollup"]:
            r[f"/proc/PID/{f}"] = timed(f"/proc/{pid}/{f}", 200 if f == "smaps_rollup" else N)
        r["/proc/meminfo"] = timed("/proc/meminfo")
        r["/proc/loadavg"] = timed("/proc/loadavg")
        r["/proc/stat"] = timed("/proc/stat")
        cg = cgroup_of(pid)
        if cg:
            r["cgroup memory.current"] = timed(cg + "/memory.current")
            r["cgroup memory.max"] = timed(cg + "/memory.max")
        tids = os.listdir(f"/proc/{pid}/task")
        e["threads"] = len(tids)
        t0 = time.perf_counter_ns()
        for _ in range(200):
            os.listdir(f"/proc/{pid}/task")
        r["listdir task/"] = (time.perf_counter_ns() - t0) / 200 / 1e3
        per = [timed(f"/proc/{pid}/task/{t}/schedstat", 200) for t in tids[:16]]
        per = [p for p in per if isinstance(p, float)]
        r["task/TID/schedstat (mean of 16)"] = sum(per) / max(len(per), 1)
        per = [timed(f"/proc/{pid}/task/{t}/status", 200) for t in tids[:16]]
        per = [p for p in per if isinstance(p, float)]
        r["task/TID/status (mean of 16)"] = sum(per) / max(len(per), 1)
        entries.append(e)
        print(json.dumps(e), flush=True)
    with open(out, "w") as f:
        json.dump(entries, f, indent=1)


if __name__ == "__main__":
    main()
