// greedy_pick (ops.h): the decode step's greedy token on the device, so a greedy step copies 8 bytes to the host
// instead of the vocabulary's row (1 MB at 248320 tokens: the copy, and the host's scan of it, cost more than a
// layer of the model).
//
// Blocks take contiguous ranges of the row; each finds, in its range, the first index of its maximum and the first
// NaN or +inf, and whether anything is above -inf (greedy.cuh). The last block to finish (gemv.cuh's
// last_block_of: no second launch) combines the blocks.
#include "backend/cuda/greedy.cuh"

namespace ds4::cuda {
namespace {

using detail::GreedyBest;
constexpr int kThreads = 256;
constexpr int kMaxBlocks = 128;
constexpr int kLoads = 8;  // values per thread in flight

__global__ void __launch_bounds__(kThreads) greedy_kernel(const float* logits, int64_t V, int64_t per,
                                                          GreedyBest* part, int* counter, int32_t* out) {
  [[maybe_unused]] const auto pdl = detail::pdl_enter();
  const int64_t begin = int64_t(blockIdx.x) * per, end = detail::imin(begin + per, V);
  GreedyBest m = detail::greedy_none();
  // kLoads values of the thread in flight at once (one memory round trip per kLoads, not per value), then
  // scanned in index order.
  for (int64_t k0 = begin + threadIdx.x; k0 < end; k0 += int64_t(kThreads) * kLoads) {
    float v[kLoads];
#pragma unroll
    for (int u = 0; u < kLoads; u++) {
      const int64_t k = k0 + int64_t(kThreads) * u;
      v[u] = k < end ? logits[k] : -INFINITY;
    }
#pragma unroll
    for (int u = 0; u < kLoads; u++) {
      const int64_t k = k0 + int64_t(kThreads) * u;
      if (k >= end) break;
      detail::greedy_see(m, v[u], int(k));
    }
  }
  const GreedyBest b = detail::greedy_block_reduce<kThreads>(m);
  if (threadIdx.x == 0) part[blockIdx.x] = b;
  if (!detail::last_block_of(counter, int(gridDim.x))) return;
  detail::greedy_finish<kThreads>(part, int(gridDim.x), logits, out);
}

}  // namespace

void greedy_pick(Context& ctx, const float* logits, int64_t V, int32_t* out) {
  detail::require(V >= 1 && V < (int64_t(1) << 31), "greedy_pick: need 1 <= V < 2^31");
  detail::require(logits && out, "greedy_pick: null operand");
  // About 8 KB of the row per block (2048 floats), at most kMaxBlocks blocks.
  const int64_t blocks = detail::imin(kMaxBlocks, (V + 2047) / 2048), per = (V + blocks - 1) / blocks;
  ScratchScope scope(ctx.scratch());
  GreedyBest* part = ctx.scratch().take<GreedyBest>(size_t(blocks));
  detail::launch(ctx, greedy_kernel, unsigned((V + per - 1) / per), kThreads, 0, logits, V, per, part,
                 ctx.counters(), out);
  DS4_CUDA_CHECK_LAUNCH();
}

}  // namespace ds4::cuda
