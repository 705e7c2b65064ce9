#!/usr/bin/env bash
# On the GPU machine (Ubuntu 24.04, gcc 13, nvcc 13.0 at /usr/local/cuda, no network), from any checkout path:
#   bash tools/gpu/run.sh
# with .gpu/debs (tools/gpu/fetch-debs.sh) carried. Unpacks the carried Debian packages into a private prefix,
# builds the CUDA backend's tests and benchmark for sm_90a, runs the tests, the benchmark and a
# compute-sanitizer memcheck pass, and writes everything under $OUT (default: ./gpu-out):
#   run.log (everything), ds4_cuda_tests.xml (gtest: the ops), ds4_cuda_model_tests.xml (gtest: the whole model
#   against the CPU backend), bench.md (op timings), bench-8layer.md and bench-48layer.md (`ds4 bench --backend cuda`
#   on the Flash-Next shape with transformers' figure from the same run), memcheck.log.
# Environment: DS4_GPU_BUILD (build folder, default build-gpu), DS4_GPU_TESTS=0 / DS4_GPU_BENCH=0 / DS4_GPU_MODEL_BENCH=quick (8 layers, no reference) / DS4_GPU_MODEL_BENCH=0 /
# DS4_GPU_MEMCHECK=0 skip those steps, DS4_GPU_CMAKE_ARGS (more CMake arguments, e.g. a variant's -DCMAKE_CUDA_FLAGS), DS4_GPU_MEMCHECK_FILTER (gtest filter of the memcheck pass), DS4_GPU_DEADLINE (seconds the whole script may take, default 570; memcheck
# gets what is left).
# Exit status: that of the test binary (0 when every GPU test passed).
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
out="${OUT:-$root/gpu-out}"
mkdir -p "$out"
build="${DS4_GPU_BUILD:-$root/build-gpu}"
deadline="${DS4_GPU_DEADLINE:-570}"
step() { echo; echo "=== [$SECONDS s] $*"; }

main() {

step "machine"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv 2>&1 || true
export PATH="/usr/local/cuda/bin:$PATH"
nvcc --version | tail -2
cmake --version | head -1
g++ --version | head -1
echo "cores: $(nproc)"

step "unpack carried Debian packages"
prefix=/tmp/ds4-gpu-prefix
rm -rf "$prefix"
mkdir -p "$prefix"
shopt -s nullglob
debs=("$root"/.gpu/debs/*.deb)
if [ ${#debs[@]} -eq 0 ]; then
  echo "no .gpu/debs/*.deb here: run 'bash tools/gpu/fetch-debs.sh' on the development machine and carry .gpu"
fi
for d in "${debs[@]}"; do dpkg -x "$d" "$prefix"; done
echo "unpacked ${#debs[@]} packages into $prefix"
# pkg-config files name /usr; point them at the prefix.
for pc in "$prefix"/usr/lib/x86_64-linux-gnu/pkgconfig/*.pc "$prefix"/usr/share/pkgconfig/*.pc; do
  sed -i -E "s#^(prefix|exec_prefix|libdir|includedir)=/usr#\1=$prefix/usr#" "$pc"
done
# Development symlinks that point to absolute paths (libz.so -> /lib/...) must point into the prefix.
while IFS= read -r link; do
  target="$(readlink "$link")"
  case "$target" in /*) [ -e "$prefix$target" ] && ln -sfn "$prefix$target" "$link" ;; esac
done < <(find "$prefix" -type l)
libdir="$prefix/usr/lib/x86_64-linux-gnu"
export PKG_CONFIG_PATH="$libdir/pkgconfig:$prefix/usr/share/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
pkgconfig="$(command -v pkg-config || true)"
if [ -z "$pkgconfig" ] && [ -x "$prefix/usr/bin/pkgconf" ]; then
  # No pkg-config on the machine: the carried pkgconf, with its library found in the prefix.
  mkdir -p "$prefix/bin"
  printf '#!/bin/sh\nLD_LIBRARY_PATH="%s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "%s" "$@"\n' "$libdir" \
    "$prefix/usr/bin/pkgconf" > "$prefix/bin/pkg-config"
  chmod +x "$prefix/bin/pkg-config"
  pkgconfig="$prefix/bin/pkg-config"
fi
echo "pkg-config: ${pkgconfig:-none}"
for m in libpcre2-8 libutf8proc libzstd; do
  "$pkgconfig" --exists "$m" && echo "  $m $("$pkgconfig" --modversion "$m")" || echo "  $m NOT FOUND"
done
extra_cxx=""
# libssl-dev keeps openssl/configuration.h in the multiarch include folder, which the compiler only searches under /usr.
[ -d "$prefix/usr/include/x86_64-linux-gnu" ] && extra_cxx="-isystem $prefix/usr/include/x86_64-linux-gnu"

# The carried shared libraries that others need in turn (libcpp-httplib: libssl, brotli, zlib) are found at
# link time through -rpath-link; the build tools themselves keep the machine's own libraries.
link_flags="-Wl,-rpath-link,$libdir:$prefix/lib/x86_64-linux-gnu"

step "configure"
# The HTTP server when cpp-httplib was carried (fetch-debs.sh with DS4_GPU_HTTP=1).
http=OFF
"$pkgconfig" --exists cpp-httplib 2>/dev/null && http=ON
echo "HTTP server: $http"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDS4_TESTS=ON -DDS4_CUDA=ON -DDS4_HTTP=$http \
  -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc -DCMAKE_PREFIX_PATH="$prefix/usr" \
  -DPKG_CONFIG_EXECUTABLE="$pkgconfig" -DCMAKE_CXX_FLAGS="$extra_cxx" -DCMAKE_EXE_LINKER_FLAGS="$link_flags" \
  ${DS4_GPU_CMAKE_ARGS:-} || { echo "configure FAILED"; return 2; }

step "build (ds4, ds4_cuda_tests, bench_cuda_ops) on $(nproc) cores"
cmake --build "$build" -j"$(nproc)" --target ds4 ds4_cuda_tests bench_cuda_ops || { echo "build FAILED"; return 2; }

# Only the programs built here see the carried libraries (their RPATH already names the folder; this covers
# libraries those load in turn). Tools such as compute-sanitizer keep the machine's own.
with_libs=(env LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
export OMP_NUM_THREADS="$(nproc)"  # the CPU reference the tests compare against
tests_rc=0
if [ "${DS4_GPU_TESTS:-1}" != 0 ]; then
step "GPU tests: ops"
timeout 300 "${with_libs[@]}" "$build/ds4_cuda_tests" --gtest_filter='-CudaModel*' --gtest_output="xml:$out/ds4_cuda_tests.xml"
tests_rc=$?
echo "ds4_cuda_tests (ops) exit status: $tests_rc"
step "GPU tests: the whole model against the CPU backend"
timeout 300 "${with_libs[@]}" "$build/ds4_cuda_tests" --gtest_filter='CudaModel*' --gtest_output="xml:$out/ds4_cuda_model_tests.xml"
model_rc=$?
echo "ds4_cuda_tests (model) exit status: $model_rc"
[ $tests_rc -eq 0 ] && tests_rc=$model_rc
fi

if [ "${DS4_GPU_BENCH:-1}" != 0 ]; then
  step "benchmark"
  timeout 150 "${with_libs[@]}" "$build/bench_cuda_ops" | tee "$out/bench.md"
fi

if [ "${DS4_GPU_MODEL_BENCH:-1}" = quick ]; then
  # Decode only, ds4 alone: the figure to watch while working on kernels.
  step "model benchmark (quick): 8 layers, decode"
  timeout 120 "${with_libs[@]}" "$build/ds4" bench --backend cuda --config bench/configs/flash-next-shape.json \
    --random-weights --layers 8 --ple-vocab-base 100000 --prefill 512 --decode 64 | tee "$out/bench-8layer.md"
elif [ "${DS4_GPU_MODEL_BENCH:-1}" != 0 ]; then
  # The Flash-Next shape with random weights generated on the device; the PLE table shrunk for timing (the full
  # one is about 100 GB). 8 layers keep all 512 experts; the 48-layer run keeps 64 experts per layer so that ds4
  # and transformers both fit the GPU (a batch-1 decode step reads the same top-10 expert bytes either way).
  shape=bench/configs/flash-next-shape.json
  step "model benchmark: 8 layers"
  timeout 240 "${with_libs[@]}" "$build/ds4" bench --backend cuda --config "$shape" --random-weights --layers 8 \
    --ple-vocab-base 100000 --prefill 512,4096,32768 --decode 64 --reference --reference-prefill 512,4096 \
    | tee "$out/bench-8layer.md"
  step "model benchmark: 48 layers, 64 experts"
  timeout 300 "${with_libs[@]}" "$build/ds4" bench --backend cuda --config "$shape" --random-weights --experts 64 \
    --ple-vocab-base 100000 --prefill 512,4096,32768 --decode 32 --reference --reference-prefill 512 \
    | tee "$out/bench-48layer.md"
fi

if [ "${DS4_GPU_MEMCHECK:-1}" != 0 ]; then
  left=$((deadline - SECONDS))
  sanitizer="$(command -v compute-sanitizer || true)"
  if [ -z "$sanitizer" ]; then
    echo "compute-sanitizer not found: memcheck skipped"
  elif [ "$left" -lt 30 ]; then
    echo "only ${left}s left before the deadline: memcheck skipped"
  else
    step "compute-sanitizer memcheck (${left}s budget)"
    # API errors are off: the error tests provoke failed cudaMalloc / cudaSetDevice calls on purpose.
    timeout "$left" "$sanitizer" --tool memcheck --leak-check no --report-api-errors no --print-limit 20 \
      "$build/ds4_cuda_tests" --gtest_brief=1 --gtest_filter="${DS4_GPU_MEMCHECK_FILTER:-*}" > "$out/memcheck.log" 2>&1
    rc=$?
    tail -n 25 "$out/memcheck.log"
    [ $rc -eq 124 ] && echo "memcheck stopped at the deadline (partial; see memcheck.log)"
    grep -E "ERROR SUMMARY" "$out/memcheck.log" || true
  fi
fi

step "done: GPU tests $([ $tests_rc -eq 0 ] && echo PASSED || echo FAILED) (logs in $out)"
return $tests_rc
}

# Everything to the terminal and to run.log; the pipeline waits for tee, so the log is complete on exit.
main 2>&1 | tee "$out/run.log"
exit "${PIPESTATUS[0]}"
