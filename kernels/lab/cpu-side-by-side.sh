#!/bin/bash
# provetop's own CPU, per thread, for several builds at once on the same machine and load:
#
#   bash kernels/lab/cpu-side-by-side.sh SECS BIN [BIN...]
#
# Each BIN (a provetop binary) runs `watch PID --headless --hz 20` of its own `sleep`, all at
# the same time, recording into /tmp/cpu; after 3 s of start-up, every thread's run time is
# read from /proc/PID/task/*/schedstat, again SECS later, and printed as a share of one core.
# RUN=1 with TARGET runs it under `run --headless --hz 20` instead of watching it.
# TARGET='CMD' watches CMD instead of the `sleep` (e.g. a many-threaded process:
# TARGET="python3 -c 'import threading,time; [threading.Thread(target=lambda: [time.sleep(0.05) for _ in iter(int, 1)]).start() for _ in range(60)]'").
mkdir -p /tmp/cpu
secs=$1; shift
pids=(); sl=()
for b in "$@"; do
  if [ -n "$RUN" ]; then
    $b run --headless --hz 20 --record /tmp/cpu/r$RANDOM.ptop -- bash -c "exec $TARGET" 2>/dev/null & pids+=($!)
    continue
  fi
  if [ -n "$TARGET" ]; then bash -c "exec $TARGET" & else sleep 10000 & fi; s=$!; sl+=($s)
  $b watch $s --headless --hz 20 --record /tmp/cpu/t$s.ptop 2>/dev/null & pids+=($!)
done
sleep 3
snap(){ for t in /proc/$1/task/*; do echo "$(cat $t/comm | tr ' ' _) $(cut -d' ' -f1 $t/schedstat)"; done; }
for j in "${!pids[@]}"; do snap ${pids[$j]} > /tmp/cpu/a$j; done
sleep $secs
for j in "${!pids[@]}"; do snap ${pids[$j]} > /tmp/cpu/b$j; done
kill "${pids[@]}"; sleep 1; [ ${#sl[@]} -gt 0 ] && kill "${sl[@]}"
for j in "${!pids[@]}"; do echo "== ${@:$((j+1)):1}"; paste /tmp/cpu/a$j /tmp/cpu/b$j | awk -v s=$secs '{printf "%-18s %.3f%%\n", $1, ($4-$2)/(s*1e7); tot+=($4-$2)} END {printf "all                %.3f%%\n", tot/(s*1e7)}'; done
