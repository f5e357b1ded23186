#!/usr/bin/env bash
# Runs every cargo-fuzz target of shared/fuzz for a while each (default 600 s: the acceptance
# runs of docs/testing.md "Fuzzing"), one after another, and says per target how many runs it
# made and whether it crashed. A crash leaves its input under shared/fuzz/artifacts/TARGET/.
#
#   bash shared/fuzz/run-all.sh [SECONDS] [TARGET...]   # default: 600, every target
#
# Needs cargo-fuzz (`cargo install cargo-fuzz`); stable Rust builds it with RUSTC_BOOTSTRAP=1.
# Runs grow the corpora under shared/fuzz/corpus/: commit only minimized ones
# (`cargo fuzz cmin --fuzz-dir fuzz TARGET`).
set -uo pipefail
secs=${1:-600}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(protocol session csv loglines follow chunk)
cd "$(dirname "$0")/.."
export RUSTC_BOOTSTRAP=1
cargo fuzz build --fuzz-dir fuzz || exit 1
logs=$(mktemp -d)
failed=0
for t in "${targets[@]}"; do
  mkdir -p "fuzz/corpus/$t"
  cargo fuzz run --fuzz-dir fuzz "$t" -- -max_total_time="$secs" -rss_limit_mb=2048 \
    >"$logs/$t.log" 2>&1
  rc=$?
  runs=$(grep -oE 'Done [0-9]+ runs' "$logs/$t.log" | tail -1)
  if [ $rc -eq 0 ]; then
    echo "$t: ${runs:-no summary}, no crash"
  else
    failed=1
    echo "$t: CRASHED (exit $rc); log $logs/$t.log"
    grep -E 'panicked|SUMMARY|Test unit written' "$logs/$t.log" | head -5
  fi
done
exit $failed
