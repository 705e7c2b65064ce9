#!/usr/bin/env python3
"""Per-block detail of the grids of one kernel in a -DDS4_CUDA_TRACE=ON record (trace.sh's $TAG.txt): how long
before the grid's go its blocks became resident, when they were released and when they left, relative to the go
(us; min / median / 90th percentile / max), and whether the blocks that became resident last also left last (then
a persistent grid with fixed rows per block waits for its late blocks), and the median time of each point the
kernel stamps (pdl.mark(k), common.cuh) after the go. usage: trace_blocks.py TRACE KERNEL_SUBSTRING [MAX_GRIDS]
"""
import collections
import statistics
import sys

import trace_records

names, grids, order = trace_records.load(sys.argv[1])
want, limit = sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 6


def q(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(p * len(v)))]


def fmt(v):
    return f"{min(v) / 1e3:6.2f} {q(v, .5) / 1e3:6.2f} {q(v, .9) / 1e3:6.2f} {max(v) / 1e3:6.2f}"


print(f"grids of '{want}': enter - go, exit - go (us: min median p90 max); late: exit - go of the 10 % of blocks "
      f"resident last against the rest; per-SM blocks")
shown = 0
for i, g in enumerate(order):
    n = names[i] if i < len(names) else "?"
    if want not in n:
        continue
    v = grids[g]
    go = min(x[3] for x in v)
    enter = [x[2] - go for x in v]
    exits = [x[4] - go for x in v if x[4]]
    by_enter = sorted(v, key=lambda x: x[2])
    k = max(1, len(v) // 10)
    late = [x[4] - go for x in by_enter[-k:] if x[4]] or [0]
    rest = [x[4] - go for x in by_enter[:-k] if x[4]] or [0]
    per_sm = collections.Counter(x[1] for x in v)
    nm = max(len(x[5]) for x in v)
    mk = []
    for k in range(nm):
        t = [x[5][k] - go for x in v if len(x[5]) > k and x[5][k]]
        if t:
            mk.append(f"m{k} {statistics.median(t) / 1e3:.2f}")
    hist = collections.Counter(per_sm.values())
    print(f"grid {i} blocks {len(v)} | enter {fmt(enter)} | exit {fmt(exits)} | late exit median "
          f"{statistics.median(late) / 1e3:.2f} vs {statistics.median(rest) / 1e3:.2f} | SMs {len(per_sm)} "
          f"{dict(sorted(hist.items()))}" + (" | marks " + " ".join(mk) if mk else ""))
    shown += 1
    if shown >= limit:
        break
