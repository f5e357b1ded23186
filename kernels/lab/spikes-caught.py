#!/usr/bin/env python3
"""Which of a memhog's logged spikes a session's interval peaks caught.

    provetop export SESSION --format jsonl | python3 kernels/lab/spikes-caught.py SPIKES.log MIB

SPIKES.log is `provetop-memhog --spike MIB …`'s stdout ("spike FULL_NS RELEASE_NS" lines,
CLOCK_MONOTONIC, the clock of the session's record times). A spike is caught when a sample
taken after it was full (the first sample at or after FULL_NS) shows a peak at least 3/4 of
MIB above its RSS: the peak of that sample's interval held the spike. Prints one line per
spike and the count caught.
"""
import json
import sys

spikes = []
with open(sys.argv[1]) as f:
    for line in f:
        w = line.split()
        if len(w) == 3 and w[0] == "spike":
            spikes.append((int(w[1]), int(w[2])))
need = int(sys.argv[2]) * (1 << 20) * 3 // 4
samples = []
for line in sys.stdin:
    r = json.loads(line)
    if r.get("record") == "sample":
        d = r["data"]
        samples.append((r["t"], d.get("rss") or 0, d.get("peak")))
caught = 0
for full, release in spikes:
    after = [s for s in samples if s[0] >= full][:2]
    hit = [s for s in after if s[2] is not None and s[2] - s[1] >= need]
    caught += bool(hit)
    where = f"peak {hit[0][2] >> 20} MiB over rss {hit[0][1] >> 20} MiB" if hit else "missed"
    print(f"spike at {full}, held {(release - full) / 1e6:.1f} ms: {where}")
print(f"{caught} of {len(spikes)} spikes caught")
sys.exit(0 if caught == len(spikes) else 1)
