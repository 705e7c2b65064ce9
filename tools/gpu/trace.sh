#!/usr/bin/env bash
# On the GPU machine: the timeline of a replayed greedy decode step, kernel by kernel (src/backend/cuda/trace.h).
# Builds the trace build (build-trace, -DDS4_CUDA_TRACE=ON, no tests; incremental, so a tree changed since the last
# call is rebuilt: the device keeps build folders between calls), runs `ds4 bench` with
# DS4_CUDA_TRACE_OUT and writes $OUT/$DS4_TRACE_TAG.txt (the records) and .md (tools/gpu/trace_summary.py --all).
#   bash tools/gpu/trace.sh [ds4 bench arguments]   (default: 8 layers, 16-token prompt, 4 decoded tokens)
# e.g. DS4_TRACE_TAG=t48 bash tools/gpu/trace.sh --experts 64 --prefill 4096 --decode 4
set -uo pipefail
source "$(dirname "$0")/lib.sh"
tb="$gpu_root/build-trace"
DS4_GPU_BUILD="$tb" DS4_GPU_CMAKE_ARGS=-DDS4_CUDA_TRACE=ON DS4_GPU_TESTS=0 DS4_GPU_BENCH=0 DS4_GPU_MODEL_BENCH=0 \
  DS4_GPU_MEMCHECK=0 OUT="$gpu_out/trace-build" bash "$gpu_root/tools/gpu/run.sh" > /dev/null 2>&1 ||
  { echo "trace build FAILED (see $gpu_out/trace-build)"; exit 1; }
mkdir -p "$gpu_out"
tag="${DS4_TRACE_TAG:-trace}"
[ $# -eq 0 ] && set -- --layers 8 --prefill 16 --decode 4
(cd "$gpu_root" && DS4_CUDA_TRACE_OUT="$gpu_out/$tag.txt" LD_LIBRARY_PATH="$gpu_libdir" timeout "${DS4_PROFILE_TIMEOUT:-240}" \
  "$tb/ds4" bench --backend cuda --config "$gpu_shape" --random-weights --ple-vocab-base 100000 "$@" > /dev/null 2>&1)
echo "ds4 bench exit status: $?"
python3 "$gpu_root/tools/gpu/trace_summary.py" "$gpu_out/$tag.txt" --all > "$gpu_out/$tag.md" && sed -n '1p;/| kernel | grids/,$p' "$gpu_out/$tag.md" | head -32
