#!/usr/bin/env bash
# On the GPU machine, after tools/gpu/run.sh has built build-gpu (same call): where the GPU idles in replayed
# batch-1 decode steps. Runs `ds4 bench` under Nsight Systems (CUDA trace, graph nodes traced one by one) and
# splits the GPU's operations into decode steps at each step's token copy (host to device), then reports per
# step: the span, the time some operation ran (the union of their intervals), the idle rest, and the largest idle
# gaps with the operations around them (tools/gpu/timeline_gaps.py). Node-level tracing adds its own cost to each
# kernel: read the gaps between steps, not the span, as the figure to act on.
#   bash tools/gpu/timeline.sh [ds4 bench arguments]   (default: 8 layers, 16-token prompt, 48 decoded tokens)
set -uo pipefail
source "$(dirname "$0")/lib.sh"
nsys="$(command -v nsys || ls /usr/local/cuda/bin/nsys /opt/nvidia/nsight-systems/*/bin/nsys 2>/dev/null | head -1 || true)"
[ -z "$nsys" ] && { echo "nsys not found: timeline skipped"; exit 0; }
mkdir -p "$gpu_out"
[ $# -eq 0 ] && set -- --config "$gpu_shape" --layers 8 --prefill 16 --decode 48
rep="$gpu_out/timeline"
(cd "$gpu_root" && LD_LIBRARY_PATH="$gpu_libdir" timeout "${DS4_PROFILE_TIMEOUT:-240}" "$nsys" profile -t cuda \
  --cuda-graph-trace=node --force-overwrite true -o "$rep" "$gpu_build/ds4" bench --backend cuda --random-weights \
  --ple-vocab-base 100000 "$@" > "$gpu_out/timeline.log" 2>&1)
echo "nsys exit status: $?"
"$nsys" stats -q -r cuda_gpu_trace -f csv -o "$rep" --force-export true "$rep.nsys-rep" > /dev/null 2>&1
python3 "$gpu_root/tools/gpu/timeline_gaps.py" "${rep}_cuda_gpu_trace.csv" "${DS4_TL_STEPS:-32}" | tee "$gpu_out/timeline.md"
rm -f "$rep.sqlite"
