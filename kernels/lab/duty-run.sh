#!/usr/bin/env bash
# GPU utilisation against ground truth on a CUDA machine (issue 19's fidelity check):
#
#   bash kernels/lab/duty-run.sh BIN_DIR OUT_DIR [OLD_BIN_DIR]
#
# gpu-duty.py keeps the GPU busy in known bursts (100 ms of 500, then 60 ms of 300, then
# 400 ms of 1000, SECS each, default 30) while `provetop watch --headless --hz 20` records it
# (and the provetop of OLD_BIN_DIR beside it, the build before, when given), with nvidia-smi
# every 100 ms beside them and provetop's CPU per thread (cpu-of.py); then
# duty-vs-provetop.py compares each session with the bursts and with nvidia-smi.
set -uo pipefail
bin=$(cd "${1:?BIN_DIR}" && pwd)
out=${2:?OUT_DIR}
old=${3:-}
lab=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
export XDG_STATE_HOME=/tmp/provetop-state XDG_RUNTIME_DIR=/tmp/provetop-run
mkdir -p "$XDG_STATE_HOME" "$XDG_RUNTIME_DIR"
nvidia-smi --query-gpu=timestamp,index,uuid,utilization.gpu,memory.used,memory.total \
  --format=csv,noheader,nounits -lms 100 > "$out/smi.csv" &
smi=$!
python3 -c 'import time; print(time.clock_gettime_ns(time.CLOCK_MONOTONIC), time.time_ns())' \
  > "$out/smi.csv.clock"
python3 -u "$lab/gpu-duty.py" "$out/bursts.jsonl" "${SECS:-30}" 100 500 60 300 400 1000 \
  > "$out/duty.log" 2>&1 &
dp=$!
"$bin/provetop" watch --headless --hz 20 --record "$out/new.ptop" "$dp" > "$out/new.log" 2>&1 &
np=$!
python3 "$lab/cpu-of.py" "$np" "$out/new-cpu.json" > /dev/null &
cp=$!
if [ -n "$old" ]; then
  "$old/provetop" watch --headless --hz 20 --record "$out/old.ptop" "$dp" > "$out/old.log" 2>&1 &
  op=$!
fi
wait "$dp"; echo "duty helper exit $?"
sleep 1
kill -TERM "$np" ${op:-} 2>/dev/null
wait "$np"; wait "$cp"; [ -n "$old" ] && wait "$op"
kill "$smi"
echo "== this build"
python3 "$lab/duty-vs-provetop.py" "$bin/provetop" "$out/new.ptop" "$out/bursts.jsonl" "$out/smi.csv"
if [ -n "$old" ]; then
  echo "== the build before"
  python3 "$lab/duty-vs-provetop.py" "$bin/provetop" "$out/old.ptop" "$out/bursts.jsonl" "$out/smi.csv"
fi
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(json.dumps(d)[:1500])' "$out/new-cpu.json"
