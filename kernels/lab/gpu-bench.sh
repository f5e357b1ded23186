#!/usr/bin/env bash
# GPU benchmark and recordings on a GPU machine, with binaries built elsewhere.
#
#   bash kernels/lab/gpu-bench.sh BIN_DIR OUT_DIR [SIZES] [PARTITIONS] [RUNS]
#
# RUNS (default: all) lists runs as BACKEND:LOG2:PROOFS[:nopin|:1thread], e.g.
# "cpu:18:2 cuda:20:3:nopin supraseal:18:1:1thread" (nopin: SRS not page-locked; 1thread:
# RAYON_NUM_THREADS=1, synthesis on one core, the reference for how well it spreads).
# Every run is bounded by RUN_TIMEOUT seconds (default 240).
#
# BIN_DIR holds: provetop, provetop-prover-cpu, provetop-prover-cuda, provetop-prover-supraseal
# (release builds; see docs/gpu.md, "Building"). Every run is supervised by `provetop run
# --headless`, so each one leaves a session file (memory at 20 Hz incl. the interval peak,
# pinned = Rss of /dev/nvidia* mappings, per-process GPU memory from NVML, every prover event).
# nvidia-smi is sampled beside the cuda runs to check provetop's NVML numbers.
# SRS (Groth16 parameters) are generated once per size into OUT_DIR/srs and shared by the
# three backends. Summaries: `provetop classify` of each session, in OUT_DIR/*.classify.
set -uo pipefail
bin=$(cd "${1:?BIN_DIR}" && pwd)
out=${2:?OUT_DIR}
sizes=${3:-"16 18 20"}
parts=${4:-10}
runs=${5:-}
mkdir -p "$out/sessions"
srs=${SRS_DIR:-/tmp/provetop-srs}
mkdir -p "$srs"
log() { echo "== $(date +%T) $*"; }

nvidia-smi --query-gpu=name,compute_cap,memory.total,driver_version --format=csv
nproc
# Per-process GPU memory as nvidia-smi sees it, for the whole script (checked against the
# sessions' NVML readings by pid).
nvidia-smi --query-compute-apps=timestamp,pid,used_memory --format=csv,noheader,nounits -lms 200 \
  > "$out/sessions/nvidia-smi.csv" 2>&1 &
smi=$!
trap 'kill $smi 2>/dev/null' EXIT

run() { # NAME BACKEND K PROOFS [ENV...] -- records a headless session
  local name=$1 backend=$2 k=$3 proofs=$4; shift 4
  local n=$((1 << k))
  log "$name: $backend 2^$k x $parts partitions, $proofs proofs"
  env "$@" timeout -k 20 -s TERM "${RUN_TIMEOUT:-240}" "$bin/provetop" run --headless --hz 20 --record "$out/sessions/$name.ptop" -- \
    "$bin/provetop-prover-$backend" --proofs "$proofs" --partitions "$parts" --constraints "$n" \
    --srs-cache "$srs" 2>&1 | tail -3
  "$bin/provetop" classify "$out/sessions/$name.ptop" > "$out/sessions/$name.classify" 2>&1
  sed -n '/prover phases/,$p' "$out/sessions/$name.classify"
}

for k in $sizes; do
  log "SRS 2^$k"
  /usr/bin/time -f "paramgen 2^$k: %e s wall, %M KiB max RSS" \
    "$bin/provetop-prover-cpu" --proofs 0 --partitions "$parts" --constraints $((1 << k)) \
    --srs-cache "$srs" > /dev/null 2> "$out/paramgen-$k.log"
  tail -1 "$out/paramgen-$k.log"
done

if [ -n "$runs" ]; then
  for r in $runs; do
    IFS=: read -r b k p extra <<< "$r"
    case "$extra" in
      nopin) run "$b-$k-nopin" "$b" "$k" "$p" PROVETOP_PIN_SRS=0 ;;
      1thread) run "$b-$k-1thread" "$b" "$k" "$p" RAYON_NUM_THREADS=1 ;;
      *) run "$b-$k" "$b" "$k" "$p" ;;
    esac
  done
  ls -la "$out/sessions"
  exit 0
fi
for k in $sizes; do
  # The CPU path at 2^20 x 10 takes about a minute per proof on 16 cores: one proof there.
  if [ "$k" -ge 20 ]; then cpu_proofs=1; else cpu_proofs=2; fi
  run "cpu-$k" cpu "$k" "$cpu_proofs"
  run "cuda-$k" cuda "$k" 3
  run "supraseal-$k" supraseal "$k" 3
done
# What page-locking the SRS buys the cuda backend (largest size).
k=${sizes##* }
run "cuda-$k-nopin" cuda "$k" 3 PROVETOP_PIN_SRS=0
ls -la "$out/sessions"
