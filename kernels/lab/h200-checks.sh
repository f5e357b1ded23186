#!/usr/bin/env bash
# The GPU-machine checks of issues 16, 19 and 20 in one device call, with binaries built
# elsewhere (BIN_DIR: provetop and provetop-prover-supraseal, release, stripped):
#
#   bash kernels/lab/h200-checks.sh BIN_DIR OUT_DIR [STEPS]
#
# STEPS, in this order (default "truth scale logs modes"):
#  truth, scale, observer, idle: kernels/lab/scale-run.sh (pinned/anon/GPU ground truth; the
#    bundled prover at SCALE_PARTS x 2^SCALE_K with provetop's CPU per thread; interleaved
#    proofs alone and monitored; a watch of an idle process);
#  logs: kernels/lab/logs-vs-protocol.sh for the supraseal build (phases from its bellperson
#    lines against its protocol events, the same proofs);
#  modes: kernels/lab/drive-modes.py, supraseal, MODES_PARTS x 2^MODES_K, the screen drawn in
#    a pseudo-terminal at 20 Hz, every batch mode switched live; provetop's CPU per thread
#    (the screen's cost, NVML's thread) and nvidia-smi every 100 ms beside it (usage-vs-smi.py).
# OUT_DIR gets every session, log and reading; one tarball of it comes back from a device call.
set -uo pipefail
bin=$(cd "${1:?BIN_DIR}" && pwd)
out=${2:?OUT_DIR}
steps=" ${3:-truth scale logs modes} "
lab=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
[ -e "$bin/provetop-prover" ] || ln -s provetop-prover-supraseal "$bin/provetop-prover"
export SRS_DIR=${SRS_DIR:-/tmp/provetop-srs}
begin=$(date +%s)
log() { echo "== +$(( $(date +%s) - begin ))s $*"; }

sr=""
for s in truth scale observer idle; do [[ "$steps" == *" $s "* ]] && sr="$sr $s"; done
if [ -n "$sr" ]; then
  STEPS="$sr" bash "$lab/scale-run.sh" "$bin" "$out/scale" 2>&1 | tee "$out/scale-run.log" | grep -v '^-'
fi
if [[ "$steps" == *" logs "* ]]; then
  log "logs vs protocol, supraseal"
  bash "$lab/logs-vs-protocol.sh" "$bin" "$out/logs" supraseal > "$out/logs.log" 2>&1
  tail -n 4 "$out/logs.log"
fi
if [[ "$steps" == *" modes "* ]]; then
  log "modes, supraseal ${MODES_PARTS:-10} x 2^${MODES_K:-20}, screen at 20 Hz"
  mkdir -p "$out/modes"
  XDG_STATE_HOME=/tmp/provetop-state HZ=20 CPU_OF="$out/modes/cpu.json" SMI_CSV="$out/modes/smi.csv" \
    timeout -k 10 "${MODES_TIMEOUT:-240}" python3 "$lab/drive-modes.py" "$bin" "$out/modes/modes.ptop" \
    supraseal "${MODES_PARTS:-10}" "${MODES_K:-20}" "${MODES_SECS:-20}" 2>&1 | tail -n 8
  cat "$out/modes/cpu.json" 2>/dev/null
fi
log "done"
