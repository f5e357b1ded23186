#!/usr/bin/env bash
# The H200 check of docs/logs.md: the bundled prover's GPU builds at RUST_LOG=debug under
# `provetop run --headless`, their protocol events written to a side file (fd 5) instead of
# to provetop, so provetop's phases come from their bellperson lines alone; then each once
# more with PROVETOP_EVENTS=off (no protocol at all). Compare afterwards, anywhere:
#
#   bash kernels/lab/logs-vs-protocol.sh BIN_DIR OUT_DIR [BACKENDS]
#   python3 kernels/lab/logs-vs-protocol.py provetop OUT_DIR/cuda.ptop OUT_DIR/cuda-events.ndjson
#
# BIN_DIR holds provetop and provetop-prover-cuda / provetop-prover-supraseal (as for
# gpu-bench.sh). BACKENDS: "cuda supraseal" (default). Three files a backend and run: keep
# OUT_DIR's count in mind where a transfer limits it (the device tool returns 8 files).
set -uo pipefail
bin=$(cd "${1:?BIN_DIR}" && pwd)
out=${2:?OUT_DIR}
mkdir -p "$out"
export XDG_STATE_HOME=${XDG_STATE_HOME:-/tmp/st} XDG_CACHE_HOME=${XDG_CACHE_HOME:-/tmp/ca}
for b in ${3:-cuda supraseal}; do
  echo "== $b: logs and protocol (to a side file)"
  RUST_LOG=debug timeout 120 "$bin/provetop" run --headless --record "$out/$b.ptop" -- \
    sh -c "exec '$bin/provetop-prover-$b' --proofs 3 --partitions 4 --constraints 65536 --events-fd 5 5>'$out/$b-events.ndjson'"
  echo "rc=$?"
  echo "== $b: PROVETOP_EVENTS=off"
  PROVETOP_EVENTS=off RUST_LOG=debug timeout 120 "$bin/provetop" run --headless --record "$out/$b-off.ptop" -- \
    "$bin/provetop-prover-$b" --proofs 2 --partitions 4 --constraints 65536
  echo "rc=$?"
done
