// Does a decode kernel pay for fetching its instructions? A decode step runs some 60 different kernels, a GDN
// layer alone about 330 KB of machine code (hc_low_kernel<1> 47 KB, down_rows_kernel 38 KB, ...), so by the time a
// kernel runs again, one layer later, its code may have left the multiprocessors' instruction caches and every
// block fetches it again from L2 after its release.
//
// The probe: kernels of straight-line code (N fused multiply-adds in 8 independent chains: N x 16 bytes of code,
// issue-bound at about one instruction a cycle when cached), one block of 128 threads per multiprocessor, chained
// with programmatic dependent launch in a replayed graph. "warm" launches the same kernel 16 times; "cold" cycles
// through 8 copies of it (the same instructions at 8 addresses: 8 N x 16 bytes, more than an instruction cache holds
// for the larger N), so every launch fetches its code again. cold - warm is what fetching N x 16 bytes of code costs
// a launch; "KB/us" the rate at which a multiprocessor's blocks get their code.
// Build and run on the GPU machine: nvcc -O3 -arch=sm_90a -std=c++17 -Isrc tools/gpu/icache_probe.cu -o /tmp/ic && /tmp/ic
#include <cuda_runtime.h>

#include <cstdio>

#include "backend/cuda/common.cuh"
#include "probe_util.cuh"

namespace d = ds4::cuda::detail;

constexpr int kLaunches = 16;
constexpr int kCopies = 8;

// V only makes the copies distinct functions (and their code distinct addresses).
template <int N, int V>
__global__ void __launch_bounds__(128) straight_kernel(float* out, float a, float b) {
  [[maybe_unused]] const auto pdl = d::pdl_enter();
  float v[8];
#pragma unroll
  for (int c = 0; c < 8; c++) v[c] = float(threadIdx.x + c + V);
#pragma unroll
  for (int i = 0; i < N / 8; i++)
#pragma unroll
    for (int c = 0; c < 8; c++) v[c] = fmaf(v[c], a, b);
  float s = 0.0f;
#pragma unroll
  for (int c = 0; c < 8; c++) s += v[c];
  if (s == 1234.5f) out[blockIdx.x] = s;  // never true for these inputs; keeps the chains alive
}

template <int N, int... V>
void run(cudaStream_t s, float* out, int sms, std::integer_sequence<int, V...>) {
  void (*copies[])(float*, float, float) = {straight_kernel<N, V>...};
  const double warm = best_graph_us(s, 20, [&] {
    for (int i = 0; i < kLaunches; i++) launch_pdl(s, copies[0], unsigned(sms), 128, 0, out, 0.999f, 0.001f);
  }) / kLaunches;
  const double cold = best_graph_us(s, 20, [&] {
    for (int i = 0; i < kLaunches; i++) launch_pdl(s, copies[i % kCopies], unsigned(sms), 128, 0, out, 0.999f, 0.001f);
  }) / kLaunches;
  const double kb = N * 16.0 / 1024.0;
  std::printf("| %d | %.0f | %.0f | %.2f | %.2f | %.2f | %.1f |\n", N, kb, kb * kCopies, warm, cold, cold - warm,
              cold > warm ? kb / (cold - warm) : 0.0);
}

int main() {
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  float* out;
  CK(cudaMalloc(&out, sizeof(float) * 1024));
  std::printf("one block of 128 threads per multiprocessor (%d), %d chained launches, us per launch\n\n", sms,
              kLaunches);
  std::printf("| FMAs | code KB | 8 copies KB | warm us | cold us | cold - warm | KB/us |\n|---:|---:|---:|---:|---:|---:|---:|\n");
  using Copies = std::make_integer_sequence<int, kCopies>;
  run<256>(s, out, sms, Copies{});
  run<1024>(s, out, sms, Copies{});
  run<2048>(s, out, sms, Copies{});
  run<3072>(s, out, sms, Copies{});
  run<4096>(s, out, sms, Copies{});
  CK(cudaDeviceSynchronize());
  return 0;
}
