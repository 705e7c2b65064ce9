#!/usr/bin/env bash
# On the GPU machine, after tools/gpu/run.sh has built build-gpu (same call): the OpenAI server on the CUDA backend
# against the same server on the CPU backend, with the model shipped in the repository (needs cpp-httplib carried:
# DS4_GPU_HTTP=1 bash tools/gpu/fetch-debs.sh). Each backend's `ds4 serve` answers the same requests (chat and
# completions, plain and streamed, greedy, a session reused over two turns, a malformed body, seeded sampling);
# tools/gpu/serve_check.py compares the texts and prints a table. Exit status 0 when every required answer is the
# same on both backends.
#   bash tools/gpu/serve_check.sh [model dir]   (default: models/tiny-flash-next)
set -uo pipefail
source "$(dirname "$0")/lib.sh"
model="${1:-$gpu_root/models/tiny-flash-next}"
mkdir -p "$gpu_out"
pids=()
trap 'kill "${pids[@]}" 2>/dev/null' EXIT
start() {  # backend port
  LD_LIBRARY_PATH="$gpu_libdir" "$gpu_build/ds4" serve --model "$model" --backend "$1" --port "$2" \
    > "$gpu_out/serve-$1.log" 2>&1 &
  pids+=($!)
}
start cpu 18081
start cuda 18082
python3 "$gpu_root/tools/gpu/serve_check.py" http://127.0.0.1:18081 http://127.0.0.1:18082
status=$?
kill "${pids[@]}" 2>/dev/null
wait 2>/dev/null
echo "server logs: $gpu_out/serve-cpu.log, $gpu_out/serve-cuda.log"
exit $status
