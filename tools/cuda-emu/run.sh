#!/usr/bin/env bash
# Runs the GPU tests (tests_cuda/) on the CPU through a CUDA emulator, for checking kernel logic on a machine
# without a GPU: every .cu of src/backend/cuda is rewritten to host C++ (preprocess.py), compiled against fake
# runtime, cuBLAS(Lt) and WMMA headers (include/) with AddressSanitizer and UndefinedBehaviorSanitizer, and run
# with one thread per CUDA thread (emu.h). Slow (minutes per test suite on two cores) and silent about speed;
# the GPU run (tools/gpu/run.sh) remains the judge. Needs nvcc's headers (/usr/local/cuda/include).
#   bash tools/cuda-emu/run.sh ['gtest filter']      e.g. 'CudaTopk*:Shapes/CudaAttention*'
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
emu="$root/tools/cuda-emu"
cuda_inc="${CUDA_HOME:-/usr/local/cuda}/include"
build="${DS4_BUILD_DIR:-$root/build}"
out="$root/build-emu"
mkdir -p "$out/gen" "$out/obj"
# The CPU reference the tests compare against: ds4_core from the regular build.
[ -f "$build/build.ninja" ] || cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" --target ds4_core >/dev/null
flags=(-std=c++20 -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -pthread -Wno-deprecated-declarations
       -I"$emu/include" -I"$root/src" -I"$root/tests" -I"$root/tests_cuda" -I"$cuda_inc")
objs=()
# Any header change rebuilds everything (coarse, but the set is small).
newest_header="$(ls -t "$root"/src/backend/cuda/*.h "$root"/src/backend/cuda/*.cuh "$root"/tests_cuda/*.h "$emu"/emu.h \
  "$emu"/include/*.h | head -1)"
compile() {  # source object
  if [ ! -f "$2" ] || [ "$1" -nt "$2" ] || [ "$newest_header" -nt "$2" ]; then
    g++ "${flags[@]}" -include "$emu/emu.h" -c "$1" -o "$2" &
    while [ "$(jobs -rp | wc -l)" -ge "$(nproc)" ]; do wait -n; done
  fi
  objs+=("$2")
}
for f in "$root"/src/backend/cuda/*.cu; do
  g="$out/gen/$(basename "$f" .cu).cpp"
  python3 "$emu/preprocess.py" "$f" "$g.new"
  cmp -s "$g.new" "$g" 2>/dev/null && rm "$g.new" || mv "$g.new" "$g"
  compile "$g" "$out/obj/kernel_$(basename "$f" .cu).o"
done
for f in "$root"/src/backend/cuda/*.cpp "$root"/tests_cuda/*.cpp "$emu/emu_support.cpp"; do
  compile "$f" "$out/obj/$(basename "$(dirname "$f")")_$(basename "$f" .cpp).o"
done
wait
g++ "${flags[@]}" "${objs[@]}" "$build/libds4_core.a" -fopenmp -lpcre2-8 -lutf8proc -lgtest -lgtest_main \
  -o "$out/ds4_cuda_tests_emu"
exec "$out/ds4_cuda_tests_emu" ${1:+--gtest_filter="$1"}
