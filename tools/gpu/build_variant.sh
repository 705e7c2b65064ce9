#!/usr/bin/env bash
# On the GPU machine: builds a variant of this tree for an A/B against it (tools/gpu/ab.sh, layer_cost.sh with
# DS4_AB_BUILD=DIR/build-gpu): copies the tree without its build folders to DIR, applies PATCH there (with -R:
# reverted, e.g. the uncommitted change under test, saved by `git diff > .gpu/change.patch` and carried), and
# builds it with run.sh without tests or benchmarks.
#   bash tools/gpu/build_variant.sh /tmp/old .gpu/change.patch -R
# In the background while run.sh builds the tree itself (the two builds share the 16 cores), wait on a file, never on
# `pgrep -f build_variant`, which matches the device call's own command line and never ends (session 16 lost 8
# minutes of device time to that):
#   (bash tools/gpu/build_variant.sh /tmp/old .gpu/change.patch -R > /tmp/bv.log 2>&1; touch /tmp/bv.done) &
#   ... bash tools/gpu/run.sh ...; while [ ! -e /tmp/bv.done ]; do sleep 2; done
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
dir="${1:?target folder}"; patch_file="${2:?patch}"; shift 2
rm -rf "$dir" && mkdir -p "$dir"
tar -C "$root" --exclude='./build*' --exclude='./gpu-out' -cf - . | tar -C "$dir" -xf -
(cd "$dir" && patch -p1 "$@" < "$root/$patch_file") || { echo "patch failed"; exit 1; }
OUT="$dir/gpu-out" DS4_GPU_TESTS=0 DS4_GPU_BENCH=0 DS4_GPU_MODEL_BENCH=0 DS4_GPU_MEMCHECK=0 \
  bash "$dir/tools/gpu/run.sh" > "$dir/build.log" 2>&1
[ -x "$dir/build-gpu/ds4" ] && echo "variant built: $dir/build-gpu" || { echo "variant build FAILED"; tail -20 "$dir/build.log"; exit 1; }
