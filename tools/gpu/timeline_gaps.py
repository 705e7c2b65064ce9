#!/usr/bin/env python3
"""Idle time inside and between decode steps, from `nsys stats -r cuda_gpu_trace -f csv` (tools/gpu/timeline.sh).

A step starts at a host-to-device copy of at most 64 bytes (the step's token ids); the last STEPS steps are taken
(the decode phase of the bench run). Per step: span to the next step's start, busy time (the union of operation
intervals, so overlapping kernels count once), idle time, and over all steps the largest kinds of gaps keyed by
the operations before and after them.
usage: timeline_gaps.py trace.csv [STEPS]
"""
import collections
import csv
import statistics
import sys

rows = list(csv.DictReader(open(sys.argv[1])))
steps_wanted = int(sys.argv[2]) if len(sys.argv) > 2 else 32
if not rows:
    sys.exit("no operations in the trace")
key = {k.split(" (")[0]: k for k in rows[0]}
ops = []
for r in rows:
    name = r[key["Name"]]
    b = r.get(key.get("Bytes", ""), "") or "0"
    ops.append((int(r[key["Start"]]), int(r[key["Duration"]]), name.split("(")[0][-48:], float(b or 0)))
ops.sort()
starts = [i for i, (s, d, n, b) in enumerate(ops) if "Host-to-Device" in n and b * 1e6 <= 64]
if len(starts) < 3:
    sys.exit("fewer than 3 step starts found")
starts = starts[-(steps_wanted + 1):]
spans, busys, gaps = [], [], collections.defaultdict(list)
for a, b in zip(starts, starts[1:]):
    t0, t1 = ops[a][0], ops[b][0]
    busy, end, prev = 0, t0, None
    for s, d, n, _ in ops[a:b]:
        if s > end and prev is not None:
            gaps[(prev, n)].append(s - end)
        busy += max(0, s + d - max(s, end))
        if s + d > end:
            end, prev = s + d, n
        elif prev is None:
            prev = n
    if t1 > end:
        gaps[(prev, "(next step) " + ops[b][2])].append(t1 - end)
    spans.append(t1 - t0)
    busys.append(busy)
n = len(spans)
med = lambda v: statistics.median(v) / 1000
print(f"{n} steps: span {med(spans):.1f} us, busy {med(busys):.1f} us, idle {med([s - b for s, b in zip(spans, busys)]):.1f} us (medians)\n")
print("| gap after | before | per step | median us | total us per step |\n|---|---|---:|---:|---:|")
top = sorted(gaps.items(), key=lambda kv: -sum(kv[1]))[:20]
for (p, q), v in top:
    print(f"| {p} | {q} | {len(v) / n:.1f} | {statistics.median(v) / 1000:.2f} | {sum(v) / n / 1000:.2f} |")
