#!/usr/bin/env bash
# Issue 20's acceptance on a GPU machine, in one go (binaries as for gpu-bench.sh: provetop
# and a supraseal provetop-prover in BIN_DIR):
#  1. truth: kernels/lab/pinned-truth.py (40 GiB anonymous, 8 GiB GPU, 18 GiB pinned in
#     steps, 10 GiB of it freed) under `provetop watch --headless --hz 20`, recorded; each step
#     logged with its CLOCK_MONOTONIC time (compare with kernels/lab/compare-truth.py);
#  2. scale: the bundled prover, one sector of SCALE_PARTS x 2^SCALE_K (default 1536 x 2^18,
#     about 64 GiB) under `provetop run --headless --hz 20`, recorded, provetop's CPU per
#     thread from schedstat (kernels/lab/cpu-of.py) over the whole run;
#  3. observer: interleaved proofs of OBS_PARTS x 2^OBS_K alone and under `provetop run
#     --headless --hz 20`, as many pairs as fit before DEADLINE_S seconds since the start;
#  4. idle: `provetop watch --headless --hz 20` of a `sleep` for IDLE_S seconds (default 60),
#     provetop's CPU per thread (the floor: what watching costs when nothing moves).
#
#   bash kernels/lab/scale-run.sh BIN_DIR OUT_DIR
#
# STEPS picks some of "truth scale observer idle"; OUT_DIR gets every log, reading and recording
# (tar it to bring it back: a device call returns at most 8 files).
set -uo pipefail
bin=$(cd "${1:?BIN_DIR}" && pwd)
out=${2:?OUT_DIR}
mkdir -p "$out"
lab=$(cd "$(dirname "$0")" && pwd)
srs=${SRS_DIR:-/tmp/provetop-srs}
mkdir -p "$srs"
begin=$(date +%s)
deadline=${DEADLINE_S:-380}
log() { echo "== +$(( $(date +%s) - begin ))s $*"; }
export XDG_STATE_HOME=/tmp/provetop-state XDG_RUNTIME_DIR=/tmp/provetop-run
mkdir -p "$XDG_STATE_HOME" "$XDG_RUNTIME_DIR"
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; nproc
  uname -r; grep -E "MemTotal|MemAvailable" /proc/meminfo; } | tee "$out/host.txt"

if [[ " ${STEPS:-truth scale observer} " == *" truth "* ]]; then
log "truth"
python3 -u "$lab/pinned-truth.py" "$out/truth-steps.jsonl" "${HOLD_S:-5}" > "$out/truth.log" 2>&1 &
tp=$!
"$bin/provetop" watch --headless --hz 20 --record "$out/truth.ptop" "$tp" > "$out/truth-watch.log" 2>&1 &
wp=$!
python3 "$lab/cpu-of.py" "$wp" "$out/truth-cpu.json" > /dev/null &
cp=$!
wait "$tp"; echo "truth helper exit $?"
sleep 2
kill -TERM "$wp" 2>/dev/null
wait "$wp"; echo "watch exit $?"
wait "$cp"
tail -3 "$out/truth.log"; cat "$out/truth-cpu.json"
fi

if [[ " ${STEPS:-truth scale observer} " == *" scale "* ]]; then
log "scale: ${SCALE_PARTS:-1536} x 2^${SCALE_K:-18}"
"$bin/provetop" run --headless --hz 20 --record "$out/scale.ptop" -- "$bin/provetop-prover" \
  --proofs 1 --partitions "${SCALE_PARTS:-1536}" --constraints $((1 << ${SCALE_K:-18})) \
  --srs-cache "$srs" > "$out/scale.log" 2>&1 &
sp=$!
python3 "$lab/cpu-of.py" "$sp" "$out/scale-cpu.json" > /dev/null &
cp=$!
wait "$sp"; echo "scale exit $?"
wait "$cp"
tail -3 "$out/scale.log"; cat "$out/scale-cpu.json"
fi

if [[ " ${STEPS:-truth scale observer} " == *" observer "* ]]; then
op=${OBS_PARTS:-128}
ok=${OBS_K:-18}
log "observer: $op x 2^$ok, alone / under provetop, interleaved"
"$bin/provetop-prover" --proofs 0 --partitions "$op" --constraints $((1 << ok)) --srs-cache "$srs" > /dev/null 2>&1
i=0
est=${OBS_EST_S:-30}
while (( $(date +%s) - begin + 2 * est < deadline )); do
  i=$((i + 1))
  t0=$(date +%s)
  "$bin/provetop-prover" --proofs 1 --partitions "$op" --constraints $((1 << ok)) \
    --srs-cache "$srs" > "$out/obs-alone-$i.jsonl" 2>/dev/null
  "$bin/provetop" run --headless --hz 20 --record "/tmp/obs-under-$i.ptop" -- "$bin/provetop-prover" \
    --proofs 1 --partitions "$op" --constraints $((1 << ok)) --srs-cache "$srs" > /dev/null 2>&1
  "$bin/provetop" export --format jsonl "/tmp/obs-under-$i.ptop" | grep '"proof_finished"' > "$out/obs-under-$i.jsonl"
  est=$(( ($(date +%s) - t0 + 1) / 2 ))
  log "pair $i: alone $(grep -o '"duration_s":[0-9.]*' "$out/obs-alone-$i.jsonl") under $(grep -o '"duration_s":[0-9.]*' "$out/obs-under-$i.jsonl")"
done
fi
if [[ " ${STEPS:-truth scale observer} " == *" idle "* ]]; then
log "idle: watch of a sleep, ${IDLE_S:-60} s"
sleep $(( ${IDLE_S:-60} + 5 )) &
zp=$!
"$bin/provetop" watch --headless --hz 20 --record "$out/idle.ptop" "$zp" > "$out/idle.log" 2>&1 &
wp=$!
python3 "$lab/cpu-of.py" "$wp" "$out/idle-cpu.json" > /dev/null &
cp=$!
sleep "${IDLE_S:-60}"
kill -TERM "$wp" 2>/dev/null
wait "$wp"; echo "idle watch exit $?"
wait "$cp"; kill "$zp" 2>/dev/null
cat "$out/idle-cpu.json"
fi
log "done"
ls -la "$out"
