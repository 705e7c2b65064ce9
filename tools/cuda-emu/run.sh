#!/usr/bin/env bash
# Runs the GPU tests (tests_cuda/) on the CPU through a CUDA emulator, for checking kernel logic on a machine
# without a GPU: every .cu of src/backend/cuda is rewritten to host C++ (preprocess.py), compiled against fake
# runtime, cuBLAS(Lt) and WMMA headers (include/) with AddressSanitizer and UndefinedBehaviorSanitizer, and run
# with one fiber per CUDA thread, the clusters one after another and the blocks of a cluster together (emu.h).
# Silent about speed; the GPU run (tools/gpu/run.sh) remains the judge. Needs nvcc's headers
# (/usr/local/cuda/include), no GPU.
# State (2026-11-30, main 5720b7a merged, two shared cores, nice 19): the GDN recurrent step's cluster kernel
# (RecurrentFused, clusters of up to 8 blocks), attn_prep, conv1d, the fused hyper-connection mix and the
# linear/GEMV tests pass in both schedules (below); removing either cluster.sync() of gdn_recurrent_fused_kernel
# fails the test or aborts (a read of a block that has exited). The qwen4 text_f32 model fixture
# ('Fixtures/CudaModel.*/0', VerificationRowsEqualDecodeRows included) passes in about 75 s (DraftHead skips: no
# MTP head). Every op test passes (after the merge, forward schedule: '-*CudaModel.*:Shapes/CudaMoeShared.*'
# 103 tests in 2.5 min, 'Shapes/CudaMoeShared.*' in 4 min); fixtures /1../3 not rerun since the merge. Most of
# the time goes to the Flash-Next-sized MoE cases (Shapes/CudaMoe*, gigabytes of expert weights filled and
# compared on the host: page faults and memset, not emulation). Before the merge tiny-flash-next (/3) was slow:
# LogitsMatch 2.5 min, ShortChunks about 14 min.
# Session 10 (main after 6f9e81f, forward schedule, reverse for ConvFolded): 'CudaDelta.*:CudaPle.*:*CudaConv*' pass,
# the new CudaDelta.ConvFoldedIntoTheStepEqualsTheConvKernel (clusters of 3-16 blocks: the emulator now allows 16
# after cudaFuncAttributeNonPortableClusterSizeAllowed) and CudaPle.FusedTailEqualsTheComposition included, and
# 'Fixtures/CudaModel.*/0' with DS4_CUDA_GDN_CONV=fused (the folded conv on the model path, 54 calls). Moving the
# q/k history before the cluster barrier (a race on the GPU) still passes here: the blocks of a cluster advance
# barrier phase by barrier phase, so this emulator cannot show that order.
# A full rebuild (any header) takes about ten minutes with EMU_JOBS=1. EmuSelfTest.* checks the emulator itself
# (the mma fragment layout, the collectives, atomics across blocks, clusters).
#   bash tools/cuda-emu/run.sh ['gtest filter']      e.g. 'CudaTopk*:Shapes/CudaAttention*'
# Parameterised suites carry a prefix (Shapes/, Fixtures/): '-*CudaModel.*' leaves the model tests out.
# EMU_SCHEDULE=reverse resumes the threads (of a cluster) in the opposite order (a missing barrier shows either way
# round); EMU_NO_LT=1 makes the fake cuBLASLt find no algorithm (the cuBLAS fallback); EMU_JOBS=n compiles at
# most n files at a time (default: the number of cores).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
emu="$root/tools/cuda-emu"
cuda_inc="${CUDA_HOME:-/usr/local/cuda}/include"
build="${DS4_BUILD_DIR:-$root/build}"
out="$root/build-emu"
mkdir -p "$out/gen" "$out/obj"
# The CPU reference the tests compare against: ds4_core from the regular build.
[ -f "$build/build.ninja" ] || cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
njobs="${EMU_JOBS:-$(nproc)}"  # parallel compiles (EMU_JOBS=1 on a shared machine)
cmake --build "$build" --target ds4_core -j "$njobs" >/dev/null
flags=(-std=c++20 -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -pthread -Wno-deprecated-declarations
       -DDS4_SOURCE_DIR="\"$root\"" -I"$emu/include" -I"$out/gen-inc" -I"$root/src" -I"$root/tests" -I"$root/tests_cuda" -I"$cuda_inc")
objs=()
failed="$out/failed"
rm -f "$failed"
# The kernel headers get the same rewrite (static __shared__ variables inside them): gen-inc comes before src.
mkdir -p "$out/gen-inc/backend/cuda"
for f in "$root"/src/backend/cuda/*.cuh; do
  g="$out/gen-inc/backend/cuda/$(basename "$f")"
  python3 "$emu/preprocess.py" "$f" "$g.new"
  cmp -s "$g.new" "$g" 2>/dev/null && rm "$g.new" || mv "$g.new" "$g"
done
# Any header change rebuilds everything (coarse, but the set is small).
newest_header="$(ls -t "$root"/src/backend/cuda/*.h "$out"/gen-inc/backend/cuda/*.cuh "$root"/tests_cuda/*.h "$emu"/emu.h \
  "$emu"/include/*.h | head -1)"
compile() {  # source object
  if [ ! -f "$2" ] || [ "$1" -nt "$2" ] || [ "$newest_header" -nt "$2" ]; then
    # A failed compile leaves no object (a stale one would link) and is reported after the others finish.
    { g++ "${flags[@]}" -include "$emu/emu.h" -c "$1" -o "$2" || { rm -f "$2"; echo "$1" >>"$failed"; }; } &
    while [ "$(jobs -rp | wc -l)" -ge "$njobs" ]; do wait -n || true; done
  fi
  objs+=("$2")
}
for f in "$root"/src/backend/cuda/*.cu; do
  g="$out/gen/$(basename "$f" .cu).cpp"
  python3 "$emu/preprocess.py" "$f" "$g.new"
  cmp -s "$g.new" "$g" 2>/dev/null && rm "$g.new" || mv "$g.new" "$g"
  compile "$g" "$out/obj/kernel_$(basename "$f" .cu).o"
done
for f in "$root"/src/backend/cuda/*.cpp "$root"/tests_cuda/*.cpp "$emu/emu_support.cpp" "$emu/emu_selftest.cpp"; do
  compile "$f" "$out/obj/$(basename "$(dirname "$f")")_$(basename "$f" .cpp).o"
done
wait
if [ -f "$failed" ]; then
  echo "cuda-emu: compilation failed:" >&2
  sed 's/^/  /' "$failed" >&2
  exit 1
fi
g++ "${flags[@]}" "${objs[@]}" "$build/libds4_core.a" -fopenmp -lpcre2-8 -lutf8proc -lgtest -lgtest_main \
  -o "$out/ds4_cuda_tests_emu"
exec "$out/ds4_cuda_tests_emu" ${1:+--gtest_filter="$1"}
