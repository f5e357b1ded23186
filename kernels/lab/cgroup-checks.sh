#!/usr/bin/env bash
# What the kernel enforces, checked on a real host (the lent GPU machine's cgroup v2; a v1
# host works too where the memory controller is mounted), with release binaries provetop,
# provetop-prover and provetop-memhog in BIN_DIR. As root: it makes memory cgroups.
#  host:    the hierarchy (stat -fc %T /sys/fs/cgroup), controllers, PSI, kernel, memory;
#  alert:   memhog growing ~640 MiB/s in a 1 GiB cgroup under `watch PID --headless`: the
#           default rss > 90% fires naming the cgroup, the kill reads OOM-killed, alerts clear;
#  quick:   a child that joins a 64 MiB cgroup and allocates 256 MiB at once under
#           `run --headless`: an OOM kill, the victim named;
#  reclaim: memory.high just above a working set that memhog then outgrows: pressure moves;
#  removal: `watch --cgroup` of a cgroup then removed: said once, the session ends;
#  peak:    256 MiB held 20 ms every 3 s under `watch PID --headless --hz 20` with no peak
#           reset: every spike caught (memory.peak through provetop's own file, v2 only),
#           the process's VmHWM untouched;
#  cgwatch: `watch --cgroup` of a 1 GiB cgroup, empty when the watch starts: a member spiking
#           256 MiB for 20 ms every 3 s (the interval peak from the cgroup's memory.peak,
#           v2), then a second one growing until the limit kills it (the default alert names
#           memory.max, the kill is named, the alert clears), then the cgroup removed;
#  prover:  the bundled prover, PROVER_PARTS x 2^PROVER_K, in a cgroup whose memory.max is
#           PROVER_MAX_GIB: the binding limit named, time to OOM before the kill, the kill named.
#
#   bash kernels/lab/cgroup-checks.sh BIN_DIR OUT_DIR
#
# STEPS picks some of "host alert quick reclaim removal peak cgwatch prover". OUT_DIR gets every log
# and recording: `provetop export` or `replay` them (docs/kernel.md says what each step shows).
set -uo pipefail
bin=$(cd "${1:?BIN_DIR}" && pwd)
out=${2:?OUT_DIR}
mkdir -p "$out"
steps=" ${STEPS:-host alert quick reclaim removal peak cgwatch prover} "
export XDG_STATE_HOME=/tmp/provetop-state XDG_RUNTIME_DIR=/tmp/provetop-run
mkdir -p "$XDG_STATE_HOME" "$XDG_RUNTIME_DIR"
chmod 700 "$XDG_RUNTIME_DIR"
begin=$(date +%s)
log() { echo "== +$(( $(date +%s) - begin ))s $*"; }

# The memory hierarchy: v2 (enable the memory controller for children) or v1's memory mount.
if [ "$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs ]; then
  root=/sys/fs/cgroup
  echo +memory > "$root/cgroup.subtree_control" 2>/dev/null
  v=2
else
  root=/sys/fs/cgroup/memory
  v=1
fi
mk() { # mk NAME LIMIT [HIGH]: a fresh cgroup with a hard limit (and v2 memory.high)
  local d="$root/$1"
  [ -d "$d" ] && rmdir "$d" 2>/dev/null
  mkdir -p "$d"
  if [ $v = 2 ]; then
    echo "$2" > "$d/memory.max"
    [ -n "${3:-}" ] && echo "$3" > "$d/memory.high"
    echo 0 > "$d/memory.swap.max" 2>/dev/null
  else
    echo "$2" > "$d/memory.limit_in_bytes"
  fi
  echo "$d"
}
join() { echo "exec sh -c 'echo \$\$ > $1/cgroup.procs && exec \"\$0\" \"\$@\"'"; }

if [[ $steps == *" host "* ]]; then
  log host
  { echo "hierarchy $(stat -fc %T /sys/fs/cgroup) (v$v)"; uname -r; nproc
    cat /sys/fs/cgroup/cgroup.controllers 2>/dev/null
    ls /proc/pressure 2>&1; grep -E "MemTotal|MemAvailable" /proc/meminfo
    cat /proc/self/cgroup; } | tee "$out/host.txt"
fi

if [[ $steps == *" alert "* ]]; then
  log "alert: 1 GiB cgroup, memhog growing"
  cg=$(mk ptop-alert 1073741824)
  ( for i in $(seq 1 40); do echo "anon 64"; sleep 0.25; done; sleep 5 ) |
    sh -c "echo \$\$ > $cg/cgroup.procs && exec $bin/provetop-memhog --stdin" > "$out/alert-hog.log" 2>&1 &
  sleep 0.3
  hog=$(pgrep -n -f provetop-memhog)
  "$bin/provetop" watch --headless --hz 20 --record "$out/alert.ptop" "$hog" > "$out/alert.log" 2>&1
  echo "watch exit $?"; cat "$out/alert.log"
  wait; rmdir "$cg"
fi

if [[ $steps == *" quick "* ]]; then
  log "quick: 64 MiB cgroup, 256 MiB at once"
  cg=$(mk ptop-quick 67108864)
  "$bin/provetop" run --headless --hz 20 --record "$out/quick.ptop" -- sh -c \
    "sleep 0.2; echo \$\$ > $cg/cgroup.procs && sleep 0.05 && exec $bin/provetop-memhog --anon 256" \
    > "$out/quick.log" 2>&1
  echo "run exit $?"; cat "$out/quick.log"
  rmdir "$cg"
fi

if [[ $steps == *" reclaim "* ]]; then
  log "reclaim: memory.high 300 MiB, working set growing past it"
  if [ $v = 2 ]; then cg=$(mk ptop-reclaim max 314572800); else cg=$(mk ptop-reclaim 314572800); fi
  # Throttled at memory.high the hog may never get through its list: it is killed at 20 s.
  ( echo "anon 256"; sleep 4; for i in $(seq 1 8); do echo "anon 64"; sleep 0.5; done; sleep 30 ) |
    sh -c "echo \$\$ > $cg/cgroup.procs && exec $bin/provetop-memhog --stdin" > "$out/reclaim-hog.log" 2>&1 &
  sleep 0.3
  hog=$(pgrep -n -f provetop-memhog)
  "$bin/provetop" watch --headless --hz 20 --record "$out/reclaim.ptop" "$hog" > "$out/reclaim.log" 2>&1 &
  w=$!
  sleep 20; kill -9 "$hog"; wait $w
  echo "watch exit $?"; tail -5 "$out/reclaim.log"
  rmdir "$cg" 2>/dev/null
fi

if [[ $steps == *" removal "* ]]; then
  log "removal: watch --cgroup, then rmdir"
  cg=$(mk ptop-removal 1073741824)
  sh -c "echo \$\$ > $cg/cgroup.procs && exec $bin/provetop-memhog --anon 32" > /dev/null 2>&1 &
  hog=$!
  "$bin/provetop" watch --headless --hz 20 --record "$out/removal.ptop" --cgroup "$cg" > "$out/removal.log" 2>&1 &
  w=$!
  sleep 3; kill $hog; wait $hog 2>/dev/null; sleep 0.5; rmdir "$cg"
  wait $w; echo "watch exit $?"; cat "$out/removal.log"
fi

if [[ $steps == *" peak "* ]]; then
  log "peak: 256 MiB for 20 ms every 3 s"
  cg=$(mk ptop-peak 4294967296)
  sh -c "echo \$\$ > $cg/cgroup.procs && exec $bin/provetop-memhog --anon 64 --spike 256 --hold-ms 20 --every-ms 3000 --count 10" \
    > "$out/peak-hog.log" 2>&1 &
  sleep 0.3
  hog=$(pgrep -n -f provetop-memhog)
  "$bin/provetop" watch --headless --hz 20 --record "$out/peak.ptop" "$hog" > "$out/peak.log" 2>&1 &
  w=$!
  sleep 31
  # Its spikes are over (it sleeps on until killed): its VmHWM is the spikes' own, untouched.
  grep VmHWM "/proc/$hog/status" > "$out/peak-vmhwm.txt"
  kill "$hog"; wait $w; echo "watch exit $?"; cat "$out/peak.log" "$out/peak-vmhwm.txt"
  rmdir "$cg" 2>/dev/null
fi

if [[ $steps == *" cgwatch "* ]]; then
  log "cgwatch: watch --cgroup, spikes, then a member grown to its OOM kill"
  cg=$(mk ptop-cgwatch 1073741824)
  "$bin/provetop" watch --headless --hz 20 --record "$out/cgwatch.ptop" --cgroup "$cg" > "$out/cgwatch.log" 2>&1 &
  w=$!
  sleep 1
  sh -c "echo \$\$ > $cg/cgroup.procs && exec $bin/provetop-memhog --anon 64 --spike 256 --hold-ms 20 --every-ms 3000 --count 5" \
    > "$out/cgwatch-spikes.log" 2>&1 &
  spiker=$!
  sleep 16
  ( for i in $(seq 1 40); do echo "anon 64"; sleep 0.25; done; sleep 5 ) |
    sh -c "echo \$\$ > $cg/cgroup.procs && exec $bin/provetop-memhog --stdin" > "$out/cgwatch-hog.log" 2>&1
  sleep 2; kill $spiker; wait $spiker 2>/dev/null; sleep 0.5; rmdir "$cg"
  wait $w; echo "watch exit $?"; cat "$out/cgwatch.log" "$out/cgwatch-spikes.log"
fi

if [[ $steps == *" prover "* ]]; then
  max=$(( ${PROVER_MAX_GIB:-34} << 30 ))
  log "prover: ${PROVER_PARTS:-1536} x 2^${PROVER_K:-18} under memory.max ${PROVER_MAX_GIB:-34} GiB"
  cg=$(mk ptop-prover $max)
  timeout "${PROVER_TIMEOUT_S:-240}" "$bin/provetop" run --headless --hz 20 --record "$out/prover.ptop" -- sh -c \
    "echo \$\$ > $cg/cgroup.procs && exec $bin/provetop-prover --proofs 1 --partitions ${PROVER_PARTS:-1536} --constraints $((1 << ${PROVER_K:-18})) --srs-cache /tmp/provetop-srs" \
    > "$out/prover.log" 2>&1
  echo "run exit $?"; tail -20 "$out/prover.log"
  rmdir "$cg" 2>/dev/null
fi
log done
