#!/usr/bin/env bash
# On the GPU machine, after tools/gpu/run.sh has built build-gpu (same call): the GPU time of every launch of the
# kernels matching a regex during a `ds4 bench` run, under Nsight Compute (eager steps, caches and clocks left
# alone), summarised per kernel: number of launches and the last four launches' times (the decode steps).
#   bash tools/gpu/kernel_times.sh 'score_kernel|attn_kernel' [ds4 bench arguments...]
# Default bench arguments: the Flash-Next shape made of 2 attention layers (no PLE), 64 experts, a 4096-token
# prefill and 3 decoded tokens. Writes $OUT/$DS4_KT_TAG.csv (default tag kernel_times: give each call of one
# device run its own).
set -uo pipefail
source "$(dirname "$0")/lib.sh"
ncu="$(gpu_ncu)"
[ -z "$ncu" ] && { echo "ncu not found"; exit 0; }
regex="${1:?kernel regex}"
shift
mkdir -p "$gpu_out"
tag="${DS4_KT_TAG:-kernel_times}"
attn="$(mktemp)"
gpu_one_type_config attn "$attn"
[ $# -eq 0 ] && set -- --config "$attn" --layers 2 --experts 64 --prefill 4096 --decode 3
(cd "$gpu_root" && DS4_CUDA_GRAPHS=0 LD_LIBRARY_PATH="$gpu_libdir" timeout "${DS4_PROFILE_TIMEOUT:-240}" "$ncu" \
  --clock-control none --cache-control none --metrics gpu__time_duration.sum --csv --print-units base \
  --kernel-name "regex:$regex" "$gpu_build/ds4" bench --backend cuda --random-weights --ple-vocab-base 100000 "$@" \
  > "$gpu_out/$tag.csv" 2> "$gpu_out/$tag.err")
echo "ncu exit status: $?"
python3 - "$gpu_out/$tag.csv" <<'PY'
import collections, csv, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
if not rows:
    sys.exit("no kernel rows")
hdr = rows[0]
ki, vi = hdr.index("Kernel Name"), hdr.index("Metric Value")
gi = hdr.index("Grid Size") if "Grid Size" in hdr else None
per = collections.OrderedDict()
for r in rows[1:]:
    name = r[ki].split("(")[0]
    per.setdefault(name, []).append((float(r[vi].replace(",", "")) / 1000, r[gi] if gi is not None else ""))
print("| kernel | launches | last launches, us | grid |\n|---|---:|---|---|")
for n, v in per.items():
    print(f"| {n[-60:]} | {len(v)} | " + " ".join(f"{t:.1f}" for t, _ in v[-4:]) + f" | {v[-1][1]} |")
PY
rm -f "$attn"
