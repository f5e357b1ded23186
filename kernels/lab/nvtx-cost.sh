#!/usr/bin/env bash
# What the NVTX injection costs a program that floods it, on an idle machine (docs/nvtx.md):
# tests/nvtx/ranges.c compiled against the vendored NVTX v3 headers, `flood N W` (N push/pop
# pairs, W steps of arithmetic inside each: W=0 as fast as it goes, W=300 about a million
# ranges a second on a current core) with the injection library and without it, interleaved,
# ROUNDS times each; prints each run's `took` and the medians' difference per range pair.
#
#   bash kernels/lab/nvtx-cost.sh BIN_DIR [ROUNDS] [N]
#
# BIN_DIR holds libprovetop_nvtx.so. Needs cc (nvcc's host compiler will do).
set -uo pipefail
bin=$(cd "${1:?BIN_DIR}" && pwd)
rounds=${2:-7}
n=${3:-3000000}
root=$(cd "$(dirname "$0")/../.." && pwd)
prog=$(mktemp -d)/ranges
cc -O2 -I "$root/tests/nvtx/include" "$root/tests/nvtx/ranges.c" -o "$prog" -lpthread -ldl || exit 1
for w in 0 300; do
  with=(); without=()
  for r in $(seq 1 "$rounds"); do
    a=$(NVTX_INJECTION64_PATH="$bin/libprovetop_nvtx.so" PROVETOP_NVTX_FD=9 "$prog" flood "$n" "$w" 9>/dev/null | awk '{print $2}')
    b=$("$prog" flood "$n" "$w" | awk '{print $2}')
    with+=("$a"); without+=("$b")
  done
  python3 - "$w" "$n" "${with[*]}" "${without[*]}" <<'PY'
import statistics, sys
w, n = int(sys.argv[1]), int(sys.argv[2])
a = [int(x) for x in sys.argv[3].split()]; b = [int(x) for x in sys.argv[4].split()]
ma, mb = statistics.median(a), statistics.median(b)
print(f"W={w}: {n} pairs; with injection median {ma/1e6:.1f} ms, without {mb/1e6:.1f} ms; "
      f"{(ma-mb)/n:.1f} ns per pair; {(ma/mb-1)*100:+.2f} % ({mb/n:.0f} ns a pair without; "
      f"{n/(mb/1e9)/1e6:.2f} M ranges/s)")
PY
done
