#!/usr/bin/env bash
# Records assets/foreign/filecoin-seal-2kib.ptop: provetop supervising rust-fil-proofs'
# filecoin-proofs 19.1.0 sealing a 2 KiB sector (fil-seal seal: PC1, PC2, C1, C2, verify) with
# fil_logger at RUST_LOG=info, as lotus runs it. Nothing of provetop is in the prover: the
# phases in the session are those provetop derived from its log lines (tests/foreign.rs
# replays them).
#
#   tests/foreign/filecoin/record.sh [OUT.ptop]
#
# Environment: CARGO_TARGET_DIR for the prover's build (default target/foreign, its own
# workspace and lock), FIL_PROOFS_PARAMETER_CACHE (default $CARGO_TARGET_DIR/fil-params; the
# 2 KiB PoRep parameters are generated there once, ~11-27 min on the 2-core VM, 1.1 GB),
# PROVETOP (default: target/debug/provetop, built if missing). docs/foreign.md has the numbers.
set -euo pipefail
repo="$(cd "$(dirname "$0")/../../.." && pwd)"
out="${1:-$repo/assets/foreign/filecoin-seal-2kib.ptop}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$repo/target/foreign}"
export FIL_PROOFS_PARAMETER_CACHE="${FIL_PROOFS_PARAMETER_CACHE:-$CARGO_TARGET_DIR/fil-params}"
export FIL_PROOFS_PARENT_CACHE="${FIL_PROOFS_PARENT_CACHE:-$CARGO_TARGET_DIR/fil-parents}"
provetop="${PROVETOP:-$repo/target/debug/provetop}"

cargo build --release --manifest-path "$repo/tests/foreign/filecoin/Cargo.toml"
seal="$CARGO_TARGET_DIR/release/fil-seal"
if [ ! -x "$provetop" ]; then
  (cd "$repo" && cargo build -p provetop)
fi
# Parameters first, outside the recording (a half-written params file makes bellperson panic
# on read: generate to completion or delete it).
RUST_LOG=info "$seal" params
rm -f "$out"
RUST_LOG=info "$provetop" run --headless --record "$out" -- "$seal" seal
echo "recorded $out"
