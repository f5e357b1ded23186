#!/bin/bash
# provetop's own CPU, per thread, for several builds at once on the same machine and load:
#
#   bash kernels/lab/cpu-side-by-side.sh SECS BIN [BIN...]
#
# Each BIN (a provetop binary) runs `watch PID --headless --hz 20` of its own `sleep`, all at
# the same time, recording into /tmp/cpu; after 3 s of start-up, every thread's run time is
# read from /proc/PID/task/*/schedstat, again SECS later, and printed as a share of one core.
mkdir -p /tmp/cpu
secs=$1; shift
pids=(); sl=()
for b in "$@"; do sleep 10000 & s=$!; sl+=($s); $b watch $s --headless --hz 20 --record /tmp/cpu/t$s.ptop 2>/dev/null & pids+=($!); done
sleep 3
snap(){ for t in /proc/$1/task/*; do echo "$(cat $t/comm | tr ' ' _) $(cut -d' ' -f1 $t/schedstat)"; done; }
for j in "${!pids[@]}"; do snap ${pids[$j]} > /tmp/cpu/a$j; done
sleep $secs
for j in "${!pids[@]}"; do snap ${pids[$j]} > /tmp/cpu/b$j; done
kill "${pids[@]}"; sleep 1; kill "${sl[@]}"
for j in "${!pids[@]}"; do echo "== ${@:$((j+1)):1}"; paste /tmp/cpu/a$j /tmp/cpu/b$j | awk -v s=$secs '{printf "%-18s %.3f%%\n", $1, ($4-$2)/(s*1e7); tot+=($4-$2)} END {printf "all                %.3f%%\n", tot/(s*1e7)}'; done
