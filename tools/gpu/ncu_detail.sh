#!/usr/bin/env bash
# On the GPU machine, after tools/gpu/run.sh has built build-gpu (same call):
#   bash tools/gpu/ncu_detail.sh 'hc_up_kernel|down_rows_kernel' [count]
# Nsight Compute's full section set (occupancy, warp stall reasons, memory workload) for `count` (default 6)
# launches of the kernels whose names match the regex, taken from the decode steps of the 8-layer Flash-Next shape
# (launches of the matching kernels before the decode steps are skipped). Writes $OUT/detail.txt.
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
out="${OUT:-$root/gpu-out}"
build="${DS4_GPU_BUILD:-$root/build-gpu}"
libdir=/tmp/ds4-gpu-prefix/usr/lib/x86_64-linux-gnu
ncu="$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1 || true)"
[ -z "$ncu" ] && { echo "ncu not found: detail skipped"; exit 0; }
mkdir -p "$out"
DS4_CUDA_GRAPHS=0 LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" timeout "${DS4_PROFILE_TIMEOUT:-240}" \
  "$ncu" --set full --cache-control none --clock-control none -k "regex:${1:?kernel regex}" \
  --launch-skip "${DS4_DETAIL_SKIP:-60}" --launch-count "${2:-6}" \
  "$build/ds4" bench --backend cuda --config bench/configs/flash-next-shape.json --random-weights --layers 8 \
  --ple-vocab-base 100000 --prefill 1 --decode 8 > "$out/detail.txt" 2> "$out/detail.err"
echo "ncu exit status: $? ($(wc -l < "$out/detail.txt") lines)"
tail -3 "$out/detail.err"
