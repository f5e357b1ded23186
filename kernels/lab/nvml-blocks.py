#!/usr/bin/env python3
"""The observer effect of provetop's NVML reads on one long-running prover (issue 34), in
alternating blocks: one `provetop-prover` proves PROOFS proofs back to back (its protocol
events on CLOCK_MONOTONIC into OUT/BACKEND-events.jsonl) while `provetop watch --headless --hz 20
--gpu-hz RATE PID` watches it for BLOCK_S seconds at a time, RATE cycling through 0 (NVML off),
2 (provetop's default) and 10 in a rotated order each cycle. The prover is never restarted, so
what differs between blocks is NVML alone (the watch itself runs in every block), and drift
over the run (clocks, heat, a neighbour on the host) falls on adjacent blocks alike.

Each proof's `prove` phase is given to the block it lies wholly inside, skipping the block's
first second (the watch's start: NVML's init, the device handle). Prints, per rate, the mean
prove time, its spread, the proofs counted, and the paired change against the NVML-off block
of the same cycle (mean and standard error over cycles), into OUT/BACKEND-blocks.txt.

    python3 kernels/lab/nvml-blocks.py BIN_DIR OUT_DIR BACKEND CYCLES BLOCK_S [LOG2] [PARTITIONS]

BIN_DIR holds provetop and provetop-prover-BACKEND (docs/gpu.md "Building")."""
import json, os, signal, statistics as st, subprocess, sys, time

bin_dir, out, backend = sys.argv[1], sys.argv[2], sys.argv[3]
cycles, block_s = int(sys.argv[4]), float(sys.argv[5])
k = int(sys.argv[6]) if len(sys.argv) > 6 else 18
parts = int(sys.argv[7]) if len(sys.argv) > 7 else 10
os.makedirs(out, exist_ok=True)
srs = os.environ.get("SRS_DIR", "/tmp/provetop-srs")
events_path = os.path.join(out, f"{backend}-events.jsonl")
rates = [0, 2, 10]

prover = subprocess.Popen(
    [os.path.join(bin_dir, f"provetop-prover-{backend}"), "--proofs", "100000",
     "--partitions", str(parts), "--constraints", str(1 << k), "--srs-cache", srs],
    stdout=open(events_path, "w"), stderr=open(os.path.join(out, f"{backend}-prover.log"), "w"))

def proving():
    try:
        with open(events_path) as f:
            return any('"proof_started"' in line for line in f)
    except OSError:
        return False

while not proving():
    if prover.poll() is not None:
        sys.exit(f"nvml-blocks: the {backend} prover exited {prover.returncode} before proving")
    time.sleep(0.2)
time.sleep(block_s / 2)  # past the first proof (the driver's first kernels)

blocks = []  # (rate, cycle, start_ns, end_ns)
for c in range(cycles):
    for i in range(3):
        rate = rates[(c + i) % 3]
        start = time.monotonic_ns()
        w = subprocess.Popen(
            [os.path.join(bin_dir, "provetop"), "watch", "--headless", "--hz", "20",
             "--gpu-hz", str(rate), str(prover.pid)],
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(out, f"{backend}-watch.log"), "a"))
        time.sleep(block_s)
        end = time.monotonic_ns()
        w.send_signal(signal.SIGTERM)
        w.wait()
        blocks.append((rate, c, start, end))
prover.send_signal(signal.SIGTERM)
try:
    prover.wait(timeout=30)
except subprocess.TimeoutExpired:
    prover.kill()

started = {}
proves = []  # (start_ns, end_ns, duration_s)
for line in open(events_path):
    try:
        e = json.loads(line)
    except ValueError:
        continue
    if e.get("phase") != "prove":
        continue
    if e["type"] == "phase_started":
        started[e["proof_id"]] = e["ts"]
    elif e["type"] == "phase_ended" and e["proof_id"] in started:
        proves.append((started[e["proof_id"]], e["ts"], e["duration_s"]))

per_block = {}
for (rate, c, s, e) in blocks:
    per_block[(rate, c)] = [d for (a, b, d) in proves if a >= s + 1_000_000_000 and b <= e]

lines = [f"{backend}: {parts} x 2^{k}, {cycles} cycles of {block_s:.0f} s blocks, "
         f"{len(proves)} prove phases in all",
         f"{'gpu_hz':>6} {'prove s (mean)':>15} {'sd':>8} {'n':>5} {'paired vs off':>14} {'se':>7}"]
for rate in rates:
    ds = [d for c in range(cycles) for d in per_block.get((rate, c), [])]
    if not ds:
        lines.append(f"{rate:>6}  no proofs inside its blocks")
        continue
    pair = []
    for c in range(cycles):
        a, o = per_block.get((rate, c)), per_block.get((0, c))
        if a and o:
            pair.append((st.mean(a) / st.mean(o) - 1) * 100)
    if rate == 0 or len(pair) < 2:
        pv, se = "-", "-"
    else:
        pv = f"{st.mean(pair):+.2f}%"
        se = f"{st.stdev(pair) / len(pair) ** 0.5:.2f}%"
    sd = st.stdev(ds) if len(ds) > 1 else 0.0
    lines.append(f"{rate:>6} {st.mean(ds):>15.4f} {sd:>8.4f} {len(ds):>5} {pv:>14} {se:>7}")
text = "\n".join(lines)
print(text)
open(os.path.join(out, f"{backend}-blocks.txt"), "w").write(text + "\n")
