#!/usr/bin/env bash
# Build the supraseal prover against a copy of supraseal-c2 0.1.2 that prints, on stderr, a
# timestamp at each stage of its proving call (the NTT and MSM of H per partition, the batch
# additions, each tail MSM, the CPU pre-processing and the B-in-G2 tail): where SupraSeal's
# prove step goes, measured (docs/gpu.md, "Where SupraSeal's prove step goes"). A diagnostic only:
# the project never ships this copy; the workspace's Cargo.toml is left untouched (the patch
# goes in through `cargo --config`).
#
#   bash kernels/lab/supraseal-timing.sh OUT_BINARY
#
# Needs the CUDA toolchain of a `--features supraseal` build (kernels/setup-cuda-toolchain.sh).
set -euo pipefail
out=${1:?OUT_BINARY}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)   # the workspace: this script is in kernels/lab/
cd "$root"
cargo fetch --quiet
src=$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/supraseal-c2-0.1.2 | head -1)
[ -d "$src" ] || { echo "supraseal-timing: supraseal-c2 0.1.2 not in the cargo registry" >&2; exit 1; }
work=${TMPDIR:-/tmp}/provetop-supraseal-c2-timing
rm -rf "$work"
cp -r "$src" "$work"
patch --quiet -d "$work" -p1 < "$here/supraseal-timing.patch"
# The patch rewrites supraseal-c2's entry in Cargo.lock: put the project's lock file back after.
cp Cargo.lock "$work.lock"
trap 'cp "$work.lock" "$root/Cargo.lock"' EXIT
target=${CARGO_TARGET_DIR:-$root/target/supraseal-timing}
CARGO_TARGET_DIR=$target cargo build --release -p provetop-prover --features supraseal \
  --config "patch.crates-io.supraseal-c2.path=\"$work\""
cp "$target/release/provetop-prover" "$out"
echo "supraseal-timing: $out (stage timestamps on stderr, lines starting with \"[ss\")"
