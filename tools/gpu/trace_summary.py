#!/usr/bin/env python3
"""The decode-step timeline written by a -DDS4_CUDA_TRACE=ON build (src/backend/cuda/trace.h) as a table.

Each grid of the step (ordered by %gridid, i.e. launch order) is matched with the step's kernel names. Per grid:
its blocks, when its first block became resident ("in"), when the grid before it had completed ("go": the first
block's release from griddepcontrol.wait), "run": go to the last exit of a block's thread 0 (when the trace
recorded exits), and "chain": the time from its go to the next grid's go, which is its share of the step's
critical path (its own work, then the "hand-off": completion, memory flush and the next grid's release). The second
table sums them by kernel name; "early" is how long before its go the first block was resident (programmatic
dependent launch at work: 0 means the blocks only found room when the grid before finished).
usage: trace_summary.py TRACE [--all]
"""
import collections
import re
import sys

import trace_records

names, grids, order = trace_records.load(sys.argv[1])
if not order:
    sys.exit("no records")
if len(order) != len(names):
    print(f"note: {len(order)} grids recorded, {len(names)} kernel names: names may be off")


def short(n):
    n = n.replace("(anonymous namespace)::", "").replace("ds4::cuda::", "")
    n = re.sub(r"^void ", "", re.sub(r"\(.*", "", n))
    return n[-44:]


t0 = min(min(x[3] for x in grids[g]) for g in order)
rows = []
for i, g in enumerate(order):
    v = grids[g]
    first_in = min(x[2] for x in v)
    go = min(x[3] for x in v)
    last_go = max(x[3] for x in v)
    exits = [x[4] for x in v if x[4]]
    run = max(exits) - go if exits else 0  # release to the last block's exit (thread 0's)
    rows.append([i, short(names[i]) if i < len(names) else "?", len(v), first_in - t0, go - t0, last_go - go, run])
for i in range(len(rows)):
    rows[i].append((rows[i + 1][4] - rows[i][4]) if i + 1 < len(rows) else 0)
span = rows[-1][4] - rows[0][4] if rows else 0
print(f"{len(rows)} grids, {span / 1000:.1f} us from the first grid's go to the last grid's go\n")
if "--all" in sys.argv:
    print("| # | kernel | blocks | in us | go us | blocks released over us | run us | chain us |\n|---:|---|---:|---:|---:|---:|---:|---:|")
    for i, n, b, fi, go, spread, run, ch in rows:
        print(f"| {i} | {n} | {b} | {fi / 1000:.1f} | {go / 1000:.1f} | {spread / 1000:.1f} | {run / 1000:.2f} | {ch / 1000:.2f} |")
    print()
agg = collections.OrderedDict()
for i, n, b, fi, go, spread, run, ch in rows:
    a = agg.setdefault(n, [0, 0, 0, 0, 0, b])
    a[0] += 1
    a[1] += ch
    a[2] += go - fi
    a[3] += spread
    a[4] += run
print("| kernel | grids | chain us total | chain us each | run us each | hand-off us each | early us each | release spread us each | blocks |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
for n, (k, ch, early, spread, run, b) in sorted(agg.items(), key=lambda kv: -kv[1][1]):
    print(f"| {n} | {k} | {ch / 1000:.1f} | {ch / k / 1000:.2f} | {run / k / 1000:.2f} | {(ch - run) / k / 1000:.2f} | "
          f"{early / k / 1000:.2f} | {spread / k / 1000:.2f} | {b} |")
