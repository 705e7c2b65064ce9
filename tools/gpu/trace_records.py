"""Reads the records of a -DDS4_CUDA_TRACE=ON build (src/backend/cuda/trace.h) for trace_summary.py and
trace_blocks.py: the step's kernel names in launch order, and per grid (ordered by %gridid, i.e. launch order)
its blocks as (block, sm, entry, release, exit, marks), times in ns (%globaltimer), exit and marks 0 when not
stamped.
"""
import collections


def load(path):
    names, grids = [], collections.defaultdict(list)
    for line in open(path):
        f = line.rstrip("\n").split("\t")
        if f[0] == "name":
            names.append(f[1])
        elif f[0] == "rec":
            v = [int(x) for x in f[1:]]
            grids[v[0]].append((v[1], v[2], v[3], v[4], v[5] if len(v) > 5 else 0, tuple(v[6:])))
    return names, grids, sorted(grids)
