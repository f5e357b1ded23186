# Compare provetop's log-derived synthesis/prove spans (a session of logs-vs-protocol.sh,
# exported as JSONL) with the protocol's (the prover's events, written to a side file) for
# the same proofs, in order. Usage: python3 logs-vs-protocol.py PROVETOP SESSION EVENTS
import json, subprocess, sys
provetop, session, events = sys.argv[1:4]
recs = [json.loads(l) for l in subprocess.run([provetop, "export", "--format", "jsonl", session],
        capture_output=True, text=True, check=True).stdout.splitlines() if l.strip()]
def spans(evs):
    # (proof, phase) -> [start, end]; synthesis over all partitions: first start, last end.
    out, order = {}, []
    for t, e in evs:
        if e.get("type") not in ("phase_started", "phase_ended"): continue
        k = (e["proof_id"], e["phase"])
        if e["phase"] not in ("synthesis", "prove"): continue
        if k not in out: out[k] = [None, None]; order.append(k)
        if e["type"] == "phase_started":
            out[k][0] = t if out[k][0] is None else min(out[k][0], t)
        else:
            out[k][1] = t if out[k][1] is None else max(out[k][1], t)
    res = {"synthesis": [], "prove": []}
    for k in order: res[k[1]].append(out[k])
    return res
derived = spans([(r["t"], r["data"]["event"]) for r in recs if r["record"] == "derived"])
proto = spans([(e["ts"], e) for e in (json.loads(l) for l in open(events) if l.strip())])
worst = 0
for ph in ("synthesis", "prove"):
    for i, (d, p) in enumerate(zip(derived[ph], proto[ph])):
        ds, de = (d[0] - p[0]) / 1e6, (d[1] - p[1]) / 1e6
        dd = ((d[1] - d[0]) - (p[1] - p[0])) / 1e6
        worst = max(worst, abs(ds), abs(de))
        print(f"{ph} proof {i+1}: protocol {(p[1]-p[0])/1e6:.1f} ms, from logs {(d[1]-d[0])/1e6:.1f} ms; start {ds:+.2f} ms, end {de:+.2f} ms, length {dd:+.2f} ms")
    print(f"{ph}: {len(derived[ph])} from logs, {len(proto[ph])} from the protocol")
print(f"worst edge difference: {worst:.2f} ms")
