#!/usr/bin/env bash
# On the GPU machine, after tools/gpu/run.sh has built build-gpu (same call):
#   bash tools/gpu/profile.sh
# Times every kernel of a few batch-1 decode steps of the 8-layer Flash-Next shape with Nsight Compute (one
# metric pass: no replay, clocks and caches left alone: a kernel finds in L2 what the one before it wrote, as in a real step) and writes $OUT/ncu.csv plus $OUT/profile.md, the per-token GPU
# time and DRAM bytes of each kernel (tools/gpu/ncu_summary.py). Kernels run serialised under ncu, so the sum is
# the step's GPU time without launch overlap; the graph-replayed step's own time is in bench-8layer.md.
#   bash tools/gpu/profile.sh --detail 'hc_up_kernel|down_rows_kernel' [count]
# instead gives Nsight Compute's full section set (occupancy, warp stall reasons, memory workload) for `count`
# (default 6) launches of the kernels matching the regex, from the decode steps (DS4_DETAIL_SKIP matching launches
# before them are skipped, default 60), in $OUT/detail.txt. DS4_DETAIL_PREFILL sets the prompt before the decode
# steps (default 1 token; e.g. 4096 for attention over a full QSA selection, with DS4_DETAIL_SKIP past its launches).
#   bash tools/gpu/profile.sh --prefill 4096
# instead times every kernel of one prefill of that many tokens (no warm-up before it: ds4 bench --no-warmup) and
# writes $OUT/prefill-ncu.csv and $OUT/prefill-profile.md, the kernels summed by name and grid.
# Environment: DS4_GPU_BUILD (default build-gpu), DS4_PROFILE_ARGS (extra ds4 bench arguments).
set -uo pipefail
source "$(dirname "$0")/lib.sh"
root="$gpu_root" out="$gpu_out" build="$gpu_build" libdir="$gpu_libdir"
ncu="$(gpu_ncu)"
[ -z "$ncu" ] && { echo "ncu not found: profile skipped"; exit 0; }
mkdir -p "$out"
bench=(bench --backend cuda --config bench/configs/flash-next-shape.json --random-weights --layers 8 --ple-vocab-base 100000)
if [ "${1:-}" = --detail ]; then
  DS4_CUDA_GRAPHS=0 LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" timeout "${DS4_PROFILE_TIMEOUT:-240}" \
    "$ncu" --set full --cache-control none --clock-control none -k "regex:${2:?kernel regex}" \
    --launch-skip "${DS4_DETAIL_SKIP:-60}" --launch-count "${3:-6}" \
    "$build/ds4" "${bench[@]}" --prefill "${DS4_DETAIL_PREFILL:-1}" --decode 8 ${DS4_PROFILE_ARGS:-} > "$out/detail.txt" 2> "$out/detail.err"
  echo "ncu exit status: $? ($(wc -l < "$out/detail.txt") lines)"
  tail -3 "$out/detail.err"
  exit 0
fi
if [ "${1:-}" = --prefill ]; then
  DS4_CUDA_GRAPHS=0 LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" timeout "${DS4_PROFILE_TIMEOUT:-240}" \
    "$ncu" --clock-control none --cache-control none --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum \
    --csv --print-units base --kernel-name "regex:^(?!.*(fill|random)).*$" \
    "$build/ds4" "${bench[@]}" --prefill "${2:?prompt tokens}" --decode 0 --no-warmup ${DS4_PROFILE_ARGS:-} \
    > "$out/prefill-ncu.csv" 2> "$out/prefill-ncu.err"
  echo "ncu exit status: $? ($(wc -l < "$out/prefill-ncu.csv") lines)"
  tail -3 "$out/prefill-ncu.err"
  python3 "$root/tools/gpu/ncu_summary.py" "$out/prefill-ncu.csv" --all | tee "$out/prefill-profile.md" | head -40
  exit 0
fi
# Every T=1 step is a decode step: a one-token prefill and a few decoded tokens, eager (no graph) so that ncu sees
# each kernel launch.
DS4_CUDA_GRAPHS=0 LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" timeout "${DS4_PROFILE_TIMEOUT:-240}" \
  "$ncu" --clock-control none --cache-control none --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum \
  --csv --print-units base --kernel-name "regex:^(?!.*(fill|random)).*$" \
  "$build/ds4" "${bench[@]}" --prefill 1 --decode 4 ${DS4_PROFILE_ARGS:-} > "$out/ncu.csv" 2> "$out/ncu.err"
echo "ncu exit status: $? ($(wc -l < "$out/ncu.csv") lines)"
tail -3 "$out/ncu.err"
python3 "$root/tools/gpu/ncu_summary.py" "$out/ncu.csv" | tee "$out/profile.md"
