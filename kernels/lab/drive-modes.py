#!/usr/bin/env python3
"""Record a session that goes through every batch mode, switched live from provetop's screen.

    python3 kernels/lab/drive-modes.py BIN_DIR SESSION.ptop [BACKEND] [PARTITIONS] [LOG2_CONSTRAINTS] [SECS_PER_MODE]

Runs `provetop run` on the prover `BIN_DIR/provetop-prover-BACKEND` (cpu, cuda, supraseal;
`BIN_DIR/provetop-prover` when BACKEND is omitted) in a pseudo-terminal of 120x36, with a
queue deep enough never to run dry, and presses 2, 3, 4, 1 (batch:2, sps, pipelined:2,
single) SECS_PER_MODE apart, then q. The SRS is generated beforehand (SRS_DIR, default
/tmp/provetop-srs; by BIN_DIR/provetop-prover-cpu when present), so the session starts with
a load from disk. The environment is passed on (RAYON_NUM_THREADS sizes synthesis).

Optional, from the environment: HZ (provetop's sample rate, default 10; 20 is its default),
CPU_OF=OUT.json (provetop's own CPU per thread over the run, by cpu-of.py beside this file:
the cost of the screen), SMI_CSV=OUT.csv (nvidia-smi's GPU utilisation and memory every
100 ms beside it, to check provetop's NVML readings: usage-vs-smi.py).
"""
import fcntl
import os
import pty
import select
import struct
import subprocess
import sys
import termios
import time

if len(sys.argv) < 3:
    sys.exit(__doc__)
bin_dir, session = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
backend = sys.argv[3] if len(sys.argv) > 3 else ""
partitions = sys.argv[4] if len(sys.argv) > 4 else "8"
log2 = int(sys.argv[5]) if len(sys.argv) > 5 else 13
per_mode = float(sys.argv[6]) if len(sys.argv) > 6 else 20.0
prover = os.path.join(bin_dir, "provetop-prover" + (f"-{backend}" if backend else ""))
srs = os.environ.get("SRS_DIR", "/tmp/provetop-srs")
os.makedirs(srs, exist_ok=True)
args = ["--partitions", partitions, "--constraints", str(1 << log2), "--srs-cache", srs]

# Parameters are the same for every backend; generate them on the CPU build when present.
cpu = os.path.join(bin_dir, "provetop-prover-cpu")
t0 = time.time()
subprocess.run([cpu if os.path.exists(cpu) else prover, "--proofs", "0"] + args,
               stdout=subprocess.DEVNULL, check=True)
print(f"== SRS ready after {time.time() - t0:.0f} s", flush=True)

pid, fd = pty.fork()
if pid == 0:
    os.environ.setdefault("TERM", "xterm-256color")
    os.execv(os.path.join(bin_dir, "provetop"),
             ["provetop", "run", "--hz", os.environ.get("HZ", "10"), "--record", session, "--",
              prover, "--daemon", "--proofs", "100"] + args)
fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 36, 120, 0, 0))
here = os.path.dirname(os.path.abspath(__file__))
beside = []
# `provetop run` with a screen is two processes: the one started here waits, its child draws
# the screen and runs the session; CPU_OF measures that child, found once it exists.
cpu_of = os.environ.get("CPU_OF")


def measure_session():
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            kids = [int(k) for k in f.read().split()]
    except OSError:
        return False
    for k in kids:
        try:
            with open(f"/proc/{k}/comm") as f:
                if f.read().strip() != "provetop":
                    continue
        except OSError:
            continue
        beside.append(subprocess.Popen([sys.executable, os.path.join(here, "cpu-of.py"), str(k),
                                        cpu_of], stdout=subprocess.DEVNULL))
        return True
    return False


if os.environ.get("SMI_CSV"):
    beside.append(subprocess.Popen(
        ["nvidia-smi", "--query-gpu=timestamp,index,uuid,utilization.gpu,memory.used,memory.total",
         "--format=csv,noheader,nounits", "-lms", "100"],
        stdout=open(os.environ["SMI_CSV"], "w"), stderr=subprocess.STDOUT))
    # Beside it, CLOCK_MONOTONIC against the wall clock once, to put nvidia-smi's wall-clock
    # stamps on provetop's time axis.
    with open(os.environ["SMI_CSV"] + ".clock", "w") as f:
        f.write(f"{time.clock_gettime_ns(time.CLOCK_MONOTONIC)} {time.time_ns()}\n")
# SRS load, then single; each key a mode; q at the end.
plan = [(per_mode * (i + 1), k) for i, k in enumerate([b"2", b"3", b"4", b"1"])]
plan.append((per_mode * 5.5, b"q"))
start = time.time()
while True:
    ready, _, _ = select.select([fd], [], [], 0.2)
    if ready:
        try:
            if not os.read(fd, 1 << 16):
                break
        except OSError:  # the child side closed
            break
    if cpu_of and time.time() - start >= 1.0 and measure_session():
        cpu_of = None
    if plan and time.time() - start >= plan[0][0]:
        os.write(fd, plan[0][1])
        print(f"== {time.time() - start:6.1f} s key {plan[0][1].decode()}", flush=True)
        plan.pop(0)
    if time.time() - start > per_mode * 5.5 + 120:
        os.write(fd, b"q")
_, status = os.waitpid(pid, 0)
code = os.waitstatus_to_exitcode(status)
for p in beside:
    if p.args[0] == "nvidia-smi":
        p.terminate()
    p.wait()
print(f"== provetop exited {code} after {time.time() - start:.0f} s; {os.path.getsize(session)} bytes")
sys.exit(code)
