// Does a streaming kernel gain from loading its bytes before griddepcontrol.wait, while a latency-bound kernel
// before it runs? A chain of pairs (busy kernel, stream kernel) over distinct buffers (together larger than L2),
// replayed from a CUDA graph with programmatic dependent launch:
//   busy    one small block per multiprocessor that waits D us after its release (a stand-in for the decode
//           step's latency-bound kernels: the mixer, the delta rule, the routing)
//   stream  one block per multiprocessor reading its contiguous share of M bytes into shared memory through a
//           ring of S slots of 16 KB with cp.async.bulk; PRE of the slots are requested before the wait
// and prints, per case, the pair's time, the stream's time after the busy kernel (pair - busy alone) and the
// stream alone. If bytes requested before the wait were free, pair - busy would fall by PRE x 16 KB x 132 / BW.
// carveout: the busy kernel's preferred shared-memory carveout (default, or max like the stream kernel: a
// multiprocessor changes its L1/shared split only when empty, so with the default split the stream's blocks
// cannot become resident beside a busy block).
// Build and run on the GPU machine: nvcc -O3 -arch=sm_90a -std=c++17 -Isrc tools/gpu/prewait_probe.cu -o /tmp/pw && /tmp/pw
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <vector>

#include "backend/cuda/bulk_copy.cuh"
#include "backend/cuda/common.cuh"
#include "probe_util.cuh"

namespace d = ds4::cuda::detail;

constexpr int kSlot = 16384;
constexpr int kMaxSlots = 13;  // 208 KB

__device__ __forceinline__ uint64_t now_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void busy(unsigned ns, unsigned* sink) {
  [[maybe_unused]] const auto pdl = d::pdl_enter();  // the model kernels' wait, then trigger
  if (threadIdx.x == 0) {
    const uint64_t t0 = now_ns();
    unsigned n = 0;
    while (now_ns() - t0 < ns) n++;
    if (n == 0xffffffffu) *sink = n;
  }
}

// Block b reads bytes [b * share, (b + 1) * share) of src (share a multiple of kSlot).
__global__ void __launch_bounds__(256) stream(const uint8_t* src, size_t share, int slots, int pre, unsigned* out) {
  extern __shared__ __align__(128) uint8_t ring[];
  __shared__ __align__(8) uint64_t bars[kMaxSlots];
  const uint8_t* base = src + size_t(blockIdx.x) * share;
  const int pieces = int(share / kSlot);
  auto issue = [&](int q) {
    const int s = q % slots;
    d::mbar_expect_tx(&bars[s], kSlot);
    d::bulk_g2s(ring + size_t(s) * kSlot, base + size_t(q) * kSlot, kSlot, &bars[s]);
  };
  if (threadIdx.x == 0) {
    for (int s = 0; s < slots; s++) d::mbar_init(&bars[s], 1);
    for (int q = 0; q < pre && q < pieces; q++) issue(q);
  }
  __syncthreads();
  [[maybe_unused]] const auto pdl = d::pdl_enter();
  if (threadIdx.x == 0)
    for (int q = pre; q < slots && q < pieces; q++) issue(q);
  unsigned acc = 0;
  for (int q = 0; q < pieces; q++) {
    const int s = q % slots;
    d::mbar_wait(&bars[s], unsigned((q / slots) & 1));
    const uint4* p = reinterpret_cast<const uint4*>(ring + size_t(s) * kSlot);
    for (int i = threadIdx.x; i < kSlot / 16; i += blockDim.x) {
      const uint4 v = p[i];
      acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    __syncthreads();  // every thread has read the slot
    if (threadIdx.x == 0 && q + slots < pieces) {
      d::fence_async_shared();
      issue(q + slots);
    }
  }
  if (acc == 0x12345678u) out[blockIdx.x] = acc;
}

int main() {
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  cudaStream_t s;
  CK(cudaStreamCreate(&s));
  CK(cudaFuncSetAttribute(stream, cudaFuncAttributeMaxDynamicSharedMemorySize, kMaxSlots * kSlot));
  CK(cudaFuncSetAttribute(stream, cudaFuncAttributePreferredSharedMemoryCarveout, 100));
  unsigned* sink;
  CK(cudaMalloc(&sink, 4096 * sizeof(unsigned)));
  constexpr int kChain = 24;
  const size_t max_bytes = size_t(88) << 20;
  std::vector<uint8_t*> buf(kChain);
  for (auto& b : buf) {
    CK(cudaMalloc(&b, max_bytes));
    CK(cudaMemset(b, 1, max_bytes));
  }
  auto time_chain = [&](auto body) {
    return best_graph_us(s, 7, [&] {
             for (int i = 0; i < kChain; i++) body(i);
           }) /
           kChain;
  };
  std::printf("| MB | busy us | carveout | slots | pre | busy alone | stream alone | pair | pair - busy | GB/s after busy |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|\n");
  for (int mb : {32, 84}) {
    const size_t share = (size_t(mb) << 20) / size_t(sms) / kSlot * kSlot, bytes = share * size_t(sms);
    for (unsigned busy_us : {0u, 4u, 8u}) {
      for (int carve : {-1, 100}) {
        CK(cudaFuncSetAttribute(busy, cudaFuncAttributePreferredSharedMemoryCarveout, carve));
        const double b_alone = time_chain([&](int) { launch_pdl(s, busy, unsigned(sms), 64, 0, busy_us * 1000u, sink); });
        for (const auto& sp : std::vector<std::pair<int, int>>{{4, 0}, {4, 4}, {12, 0}, {12, 4}, {12, 12}}) {
          const int slots = sp.first, pre = sp.second;
          const size_t smem = size_t(slots) * kSlot;
          const double s_alone = time_chain(
              [&](int i) { launch_pdl(s, stream, unsigned(sms), 256, smem, buf[i], share, slots, pre, sink); });
          const double pair = time_chain([&](int i) {
            launch_pdl(s, busy, unsigned(sms), 64, 0, busy_us * 1000u, sink);
            launch_pdl(s, stream, unsigned(sms), 256, smem, buf[i], share, slots, pre, sink);
          });
          std::printf("| %.1f | %u | %s | %d | %d | %.2f | %.2f | %.2f | %.2f | %.0f |\n", bytes / 1e6, busy_us,
                      carve < 0 ? "default" : "max", slots, pre, b_alone, s_alone, pair, pair - b_alone,
                      bytes / (pair - b_alone) / 1e3);
        }
      }
    }
  }
  return 0;
}
