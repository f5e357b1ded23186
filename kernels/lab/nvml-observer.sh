#!/usr/bin/env bash
# The observer effect of provetop's NVML reads on the bundled prover's GPU work (issue 34):
# prove time with NVML at its default rate, at 10 Hz and off, in interleaved runs, for the
# cuda and the supraseal builds.
#
#   bash kernels/lab/nvml-observer.sh BIN_DIR OUT_DIR [ROUNDS] [LOG2] [PARTITIONS] [PROOFS]
#
# BIN_DIR holds provetop, provetop-prover-cuda, provetop-prover-supraseal (release builds,
# docs/gpu.md "Building"). Each round runs every backend at every rate once, the rates in a
# rotated order (round r starts at rate r mod 3), so drift over the session (clocks, heat)
# falls on every rate alike. One warm-up run per backend first (SRS generation, the driver's
# first context), not counted. Every run is `provetop run --headless --gpu-hz RATE`, its
# session kept; nvml-observer.py reads the prover's own `prove` phase durations from them
# (`provetop export --format jsonl`) and the NVML call histograms provetop recorded, and
# prints the table (mean, sd, runs, change against off) into OUT_DIR/observer.txt.
# BACKENDS (default "cuda supraseal") picks the builds, e.g. one per call where a call's time
# is bounded; the table is over every session in OUT_DIR/sessions, so calls add up.
set -uo pipefail
bin=$(cd "${1:?BIN_DIR}" && pwd)
out=${2:?OUT_DIR}
rounds=${3:-5}
k=${4:-20}
parts=${5:-10}
proofs=${6:-3}
mkdir -p "$out/sessions"
srs=${SRS_DIR:-/tmp/provetop-srs}
mkdir -p "$srs"
log() { echo "== $(date +%T) $*"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv
rates=(2 10 0)   # 2: provetop's default gpu_hz
run() { # BACKEND RATE NAME
  log "$3"
  timeout -k 20 -s TERM "${RUN_TIMEOUT:-600}" "$bin/provetop" run --headless --gpu-hz "$2" \
    --record "$out/sessions/$3.ptop" -- "$bin/provetop-prover-$1" --proofs "$proofs" \
    --partitions "$parts" --constraints $((1 << k)) --srs-cache "$srs" > "$out/sessions/$3.log" 2>&1
  "$bin/provetop" export "$out/sessions/$3.ptop" --format jsonl -o "$out/sessions/$3.jsonl"
}
backends=${BACKENDS:-cuda supraseal}
for b in $backends; do run "$b" 2 "warmup-$b"; done
for r in $(seq 1 "$rounds"); do
  for i in 0 1 2; do
    rate=${rates[$(( (r + i) % 3 ))]}
    for b in $backends; do run "$b" "$rate" "$b-hz$rate-r$r"; done
  done
done
python3 "$(dirname "$0")/nvml-observer.py" "$out/sessions" | tee "$out/observer.txt"
