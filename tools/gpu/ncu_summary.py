#!/usr/bin/env python3
"""Per-token kernel table from an Nsight Compute CSV of T=1 decode steps (tools/gpu/profile.sh).

Steps end at the lm_head launches (the largest reader of the final decode steps); the table is the last complete step
(between the last two lm_head launches), so a warm-up prefill or the first step's one-off work does not blur
it. Every kernel's duration and DRAM bytes are summed by (name, grid).
With --all (profile.sh --prefill: one forward, no warm-up) the table sums every launch of the CSV instead."""
import csv
import collections
import sys


def main(path, whole=False):
    rows = []
    with open(path, newline="") as f:
        lines = [l for l in f if l.startswith('"')]
    for r in csv.DictReader(lines):
        rows.append(r)
    if not rows:
        print("no kernels in", path)
        return
    launches = collections.OrderedDict()
    for r in rows:
        name = r["Kernel Name"].split("(")[0].replace("void ", "")
        key = (name, r.get("Grid Size", ""), r.get("Block Size", ""))
        m = r["Metric Name"]
        val = float(r["Metric Value"].replace(",", "") or 0)
        launches.setdefault(r["ID"], {"key": key, "ns": 0.0, "rd": 0.0, "wr": 0.0})
        rec = launches[r["ID"]]
        if m == "gpu__time_duration.sum":
            rec["ns"] = val
        elif m == "dram__bytes_read.sum":
            rec["rd"] = val
        elif m == "dram__bytes_write.sum":
            rec["wr"] = val
    order = list(launches.values())
    # The lm_head: the largest reader among the last quarter of the launches (decode steps come last; a warm-up
    # prefill before them reads more per launch).
    head = max(order[len(order) * 3 // 4:], key=lambda x: x["rd"])["key"]
    ends = [i for i, x in enumerate(order) if x["key"] == head]
    step = order[ends[-2] + 1:ends[-1] + 1] if len(ends) >= 2 and not whole else order
    agg = collections.OrderedDict()
    for x in step:
        a = agg.setdefault(x["key"], [0, 0.0, 0.0, 0.0])
        a[0] += 1
        a[1] += x["ns"]
        a[2] += x["rd"]
        a[3] += x["wr"]
    steps = 1
    total_ns = sum(a[1] for a in agg.values())
    total_rd = sum(a[2] for a in agg.values())
    what = "Every launch" if whole else f"One decode step (the last of {len(ends)} profiled)"
    print(f"{what}: {len(step)} kernels, {total_ns / 1e3:.1f} us of "
          f"kernel time, {total_rd / 1e6:.1f} MB read from DRAM\n")
    print("| kernel | grid | block | launches | us | MB read | GB/s |")
    print("|---|---|---|---:|---:|---:|---:|")
    for (name, grid, block), a in sorted(agg.items(), key=lambda kv: -kv[1][1]):
        us = a[1] / steps / 1e3
        mb = a[2] / steps / 1e6
        gbs = (a[2] / a[1]) if a[1] else 0
        print(f"| {name[:60]} | {grid} | {block} | {a[0] / steps:.1f} | {us:.1f} | {mb:.2f} | {gbs:.0f} |")


if __name__ == "__main__":
    main(sys.argv[1], "--all" in sys.argv[2:])
