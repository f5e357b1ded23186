#!/usr/bin/env bash
# Recordings on a GPU machine (binaries as for gpu-bench.sh):
#  1. supraseal daemon, a proof every 2 s of idle, for RESIDENT_SECS: the SRS stays pinned
#     between proofs (the pinned series), GPU memory and phases visible; replayable anywhere.
#  2. the field's memory wave at tens of GiB: a sector of WAVE_PARTS partitions of 2^WAVE_K
#     constraints on supraseal, two proofs 8 s of idle apart (the second is queued by
#     --repeat-every): SRS floor between proofs, the synthesis peak, the fall after proving.
#
#   bash kernels/lab/gpu-record.sh BIN_DIR OUT_DIR [STEPS]
#
# STEPS: "resident wave" (default), or one of them.
set -uo pipefail
bin=$(cd "${1:?BIN_DIR}" && pwd)
out=${2:?OUT_DIR}
mkdir -p "$out"
srs=${SRS_DIR:-/tmp/provetop-srs}
mkdir -p "$srs"
log() { echo "== $(date +%T) $*"; }
steps=${3:-"resident wave"}

if [[ " $steps " == *" resident "* ]]; then
k=${RESIDENT_K:-18}
log "resident supraseal daemon, 10 x 2^$k, ${RESIDENT_SECS:-45} s"
timeout -s TERM "${RESIDENT_SECS:-45}" "$bin/provetop" run --headless --hz 20 \
  --record "$out/h200-supraseal-resident.ptop" -- "$bin/provetop-prover-supraseal" --daemon \
  --proofs 1 --repeat-every 2 --partitions 10 --constraints $((1 << k)) --srs-cache "$srs" 2>&1 | tail -3
"$bin/provetop" classify "$out/h200-supraseal-resident.ptop" > "$out/h200-supraseal-resident.classify" 2>&1
cat "$out/h200-supraseal-resident.classify"
fi
[[ " $steps " == *" wave "* ]] || exit 0

wk=${WAVE_K:-20}
wp=${WAVE_PARTS:-128}
log "memory wave: $wp x 2^$wk on supraseal"
"$bin/provetop-prover-cpu" --proofs 0 --partitions "$wp" --constraints $((1 << wk)) \
  --srs-cache "$srs" > /dev/null 2>&1
timeout -s TERM "${WAVE_SECS:-300}" "$bin/provetop" run --headless --hz 10 \
  --record "$out/h200-wave.ptop" -- "$bin/provetop-prover-supraseal" --daemon --proofs 1 \
  --repeat-every 8 --partitions "$wp" --constraints $((1 << wk)) --srs-cache "$srs" 2>&1 | tail -3 &
rec=$!
# Stop after the second proof and a few seconds of idle floor.
for _ in $(seq 1 "${WAVE_SECS:-300}"); do
  sleep 1
  n=$("$bin/provetop" export "$out/h200-wave.ptop" --format jsonl 2>/dev/null | grep -c '"proof_finished"')
  [ "${n:-0}" -ge 2 ] && { sleep 6; pkill -TERM -f "provetop run --headless --hz 10" ; break; }
done
wait $rec
"$bin/provetop" classify --thresholds "${WAVE_THRESHOLDS:-2,8,16,32}" "$out/h200-wave.ptop" \
  > "$out/h200-wave.classify" 2>&1
cat "$out/h200-wave.classify"
ls -la "$out"
