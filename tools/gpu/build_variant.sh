#!/usr/bin/env bash
# On the GPU machine: builds a variant of this tree for an A/B against it (tools/gpu/ab.sh, layer_cost.sh with
# DS4_AB_BUILD=DIR/build-gpu): copies the tree without its build folders to DIR, applies PATCH there (with -R:
# reverted, e.g. the uncommitted change under test, saved by `git diff > .gpu/change.patch` and carried), and
# builds it with run.sh without tests or benchmarks.
#   bash tools/gpu/build_variant.sh /tmp/old .gpu/change.patch -R
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
dir="${1:?target folder}"; patch_file="${2:?patch}"; shift 2
rm -rf "$dir" && mkdir -p "$dir"
tar -C "$root" --exclude='./build*' --exclude='./gpu-out' -cf - . | tar -C "$dir" -xf -
(cd "$dir" && patch -p1 "$@" < "$root/$patch_file") || { echo "patch failed"; exit 1; }
OUT="$dir/gpu-out" DS4_GPU_TESTS=0 DS4_GPU_BENCH=0 DS4_GPU_MODEL_BENCH=0 DS4_GPU_MEMCHECK=0 \
  bash "$dir/tools/gpu/run.sh" > "$dir/build.log" 2>&1
[ -x "$dir/build-gpu/ds4" ] && echo "variant built: $dir/build-gpu" || { echo "variant build FAILED"; tail -20 "$dir/build.log"; exit 1; }
