#!/usr/bin/env python3
"""What each NVML call provetop could make costs, and how NVML samples utilisation.

    python3 kernels/lab/nvml-costs.py OUT.json [SECS]

Through ctypes against the driver's libnvidia-ml.so.1, on GPU 0, each call repeated while a
load runs beside it (`gpu-duty.py`-style bursts from a child: 100 ms of matrix products every
500 ms, the rhythm that a 2 Hz reader aliases), timing each call's CPU on this thread
(`time.thread_time_ns`; ctypes' own overhead is a few µs):

  * nvmlDeviceGetUtilizationRates, nvmlDeviceGetMemoryInfo,
    nvmlDeviceGetComputeRunningProcesses_v3 (the calls of provetop's 2 Hz round);
  * nvmlDeviceGetSamples(NVML_GPU_UTILIZATION_SAMPLES): the count query alone, one call into
    a kept buffer with lastSeenTimeStamp 0 (the whole buffer), and one with the newest stamp
    seen 0.5 s and 2 s before (only the new samples);

then, for SECS seconds (default 20), how the buffer's samples are spaced, how many it holds,
and the window's mean utilisation three ways: the instant value read at 2 Hz (every phase of
the 2 Hz grid taken from a 10 Hz reading), the mean of the buffer's samples, and the load's
own busy share (its bursts timed with CUDA synchronisation). Prints a summary, writes it all.
"""
import ctypes
import json
import statistics
import subprocess
import sys
import time

out_path = sys.argv[1]
secs = float(sys.argv[2]) if len(sys.argv) > 2 else 20.0

nvml = ctypes.CDLL("libnvidia-ml.so.1")
assert nvml.nvmlInit_v2() == 0
dev = ctypes.c_void_p()
assert nvml.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(dev)) == 0


class Util(ctypes.Structure):
    _fields_ = [("gpu", ctypes.c_uint), ("memory", ctypes.c_uint)]


class Mem(ctypes.Structure):
    _fields_ = [("total", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong),
                ("used", ctypes.c_ulonglong)]


class Proc(ctypes.Structure):
    _fields_ = [("pid", ctypes.c_uint), ("used", ctypes.c_ulonglong),
                ("gi", ctypes.c_uint), ("ci", ctypes.c_uint)]


class Sample(ctypes.Structure):
    _fields_ = [("ts", ctypes.c_ulonglong), ("value", ctypes.c_ulonglong)]


GPU_UTILIZATION_SAMPLES = 1
u, m = Util(), Mem()
procs = (Proc * 64)()
nprocs = ctypes.c_uint()
vtype = ctypes.c_int()
count = ctypes.c_uint()
buf = (Sample * 1024)()


def get_samples(last_seen, with_buf=True):
    count.value = len(buf) if with_buf else 0
    rc = nvml.nvmlDeviceGetSamples(dev, GPU_UTILIZATION_SAMPLES, ctypes.c_ulonglong(last_seen),
                                   ctypes.byref(vtype), ctypes.byref(count),
                                   buf if with_buf else None)
    if rc not in (0, 6):  # 6: NVML_ERROR_NOT_FOUND (no sample since last_seen)
        raise RuntimeError(f"nvmlDeviceGetSamples: {rc}")
    n = count.value if rc == 0 and with_buf else 0
    return [(buf[i].ts, buf[i].value & 0xFFFFFFFF) for i in range(n)]


def cost(fn, n=200, gap=0.0):
    cpu = []
    for _ in range(n):
        t0 = time.thread_time_ns()
        fn()
        cpu.append(time.thread_time_ns() - t0)
        if gap:
            time.sleep(gap)
    return {"median_us": statistics.median(cpu) / 1e3, "mean_us": statistics.fmean(cpu) / 1e3,
            "p90_us": sorted(cpu)[int(0.9 * len(cpu))] / 1e3}


load = subprocess.Popen([sys.executable, "-c", r"""
import sys, time, torch, json
a = torch.randn(8192, 8192, device='cuda', dtype=torch.bfloat16)
torch.cuda.synchronize()
t_end = time.monotonic() + float(sys.argv[1])
nxt = time.monotonic()
while time.monotonic() < t_end:
    t0 = time.monotonic()
    while time.monotonic() - t0 < 0.1:
        for _ in range(4):
            a @ a
        torch.cuda.synchronize()
    print(t0, time.monotonic(), flush=True)
    nxt += 0.5
    time.sleep(max(0.0, nxt - time.monotonic()))
""", str(secs + 40)], stdout=subprocess.PIPE, text=True)
time.sleep(8)  # the child's CUDA context and first products

res = {"calls": {}}
res["calls"]["utilization_rates"] = cost(lambda: nvml.nvmlDeviceGetUtilizationRates(dev, ctypes.byref(u)))
res["calls"]["memory_info"] = cost(lambda: nvml.nvmlDeviceGetMemoryInfo(dev, ctypes.byref(m)))


def running():
    nprocs.value = 64
    nvml.nvmlDeviceGetComputeRunningProcesses_v3(dev, ctypes.byref(nprocs), procs)


res["calls"]["compute_processes"] = cost(running)
res["calls"]["samples_count_only"] = cost(lambda: get_samples(0, with_buf=False))
res["calls"]["samples_whole_buffer"] = cost(lambda: get_samples(0))
newest = [max(ts for ts, _ in get_samples(0))]


def since(gap):
    def f():
        s = get_samples(newest[0])
        if s:
            newest[0] = max(ts for ts, _ in s)
    return cost(f, n=20, gap=gap)


res["calls"]["samples_since_0.5s"] = since(0.5)
res["calls"]["samples_since_2s"] = since(2.0)

whole = get_samples(0)
stamps = sorted(ts for ts, _ in whole)
res["buffer_len"] = len(whole)
res["sample_spacing_ms"] = statistics.median(
    (b - a) / 1e3 for a, b in zip(stamps, stamps[1:])) if len(stamps) > 1 else None

# The window: instant readings at 10 Hz, the buffer drained every 2 s.
t0_wall, t0_mono = time.time(), time.monotonic()
instant, drained = [], []
last = max(stamps) if stamps else 0
k, nxt_drain = 0, t0_mono + 2.0
while time.monotonic() < t0_mono + secs:
    nvml.nvmlDeviceGetUtilizationRates(dev, ctypes.byref(u))
    instant.append(u.gpu)
    if time.monotonic() >= nxt_drain:
        s = get_samples(last)
        if s:
            last = max(ts for ts, _ in s)
            drained.extend(s)
        nxt_drain += 2.0
    k += 1
    time.sleep(max(0.0, t0_mono + 0.1 * k - time.monotonic()))
t1_mono = time.monotonic()
load.terminate()
busy = [tuple(map(float, line.split())) for line in load.communicate()[0].splitlines() if line]
truth = sum(max(0.0, min(b, t1_mono) - max(a, t0_mono)) for a, b in busy) / (t1_mono - t0_mono)
phases = [statistics.fmean(instant[p::5]) for p in range(5)]
res["window_s"] = t1_mono - t0_mono
res["util_truth_pct"] = 100 * truth
res["util_instant_10hz_pct"] = statistics.fmean(instant)
res["util_instant_2hz_by_phase_pct"] = phases
res["util_buffer_mean_pct"] = statistics.fmean(v for _, v in drained) if drained else None
res["buffer_samples_in_window"] = len(drained)
with open(out_path, "w") as f:
    json.dump(res, f, indent=1)
print(json.dumps(res, indent=1))
