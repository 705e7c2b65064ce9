// greedy_pick (ops.h): the decode step's greedy token on the device, so a greedy step copies 8 bytes to the host
// instead of the vocabulary's row (1 MB at 248320 tokens: the copy, and the host's scan of it, cost more than a
// layer of the model).
//
// Blocks take contiguous ranges of the row; each finds, in its range, the first index of its maximum and the first
// NaN or +inf, and whether anything is above -inf. The last block to finish (gemv.cuh's last_block_of: no second
// launch) combines the blocks; ties go to the lower index at every step: the same token, and the same first bad
// index, as the host's scan in index order (engine/logits_check.cpp, sampler.cpp's argmax).
#include <climits>

#include "backend/cuda/gemv.cuh"

namespace ds4::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kMaxBlocks = 128;
constexpr int kLoads = 8;  // values per thread in flight

struct Best {
  float v;   // the maximum so far (-inf: none above -inf yet)
  int i;     // its first index (-1: none)
  int bad;   // the first NaN or +inf index (INT_MAX: none)
  int live;  // 1 when some value is above -inf
};

// The better of two partial results: the larger maximum, the lower index on a tie (so the first index of the
// maximum wins whatever order the partials are combined in); the first bad index; anything above -inf.
__device__ __forceinline__ Best merge(const Best& a, const Best& b) {
  const bool take_b = b.i >= 0 && (a.i < 0 || b.v > a.v || (b.v == a.v && b.i < a.i));
  return Best{take_b ? b.v : a.v, take_b ? b.i : a.i, min(a.bad, b.bad), a.live | b.live};
}

__device__ Best block_reduce(Best m) {
  __shared__ Best warp_best[kThreads / 32];
  const int lane = int(threadIdx.x & 31), warp = int(threadIdx.x >> 5);
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const Best b{__shfl_xor_sync(0xffffffffu, m.v, o), __shfl_xor_sync(0xffffffffu, m.i, o),
                 __shfl_xor_sync(0xffffffffu, m.bad, o), __shfl_xor_sync(0xffffffffu, m.live, o)};
    m = merge(m, b);
  }
  if (lane == 0) warp_best[warp] = m;
  __syncthreads();
  Best r = warp_best[0];
  for (int w = 1; w < kThreads / 32; w++) r = merge(r, warp_best[w]);
  return r;  // every thread
}

__global__ void __launch_bounds__(kThreads) greedy_kernel(const float* logits, int64_t V, int64_t per, Best* part,
                                                          int* counter, int32_t* out) {
  [[maybe_unused]] const auto pdl = detail::pdl_enter();
  const int64_t begin = int64_t(blockIdx.x) * per, end = detail::imin(begin + per, V);
  Best m{-INFINITY, -1, INT_MAX, 0};
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
      if (v[u] != v[u] || v[u] == INFINITY) {
        m.bad = min(m.bad, int(k));
      } else if (v[u] > -INFINITY) {
        m.live = 1;
        if (m.i < 0 || v[u] > m.v) m.v = v[u], m.i = int(k);  // a thread's indices increase: the first stays on ties
      }
    }
  }
  const Best b = block_reduce(m);
  if (threadIdx.x == 0) part[blockIdx.x] = b;
  if (!detail::last_block_of(counter, int(gridDim.x))) return;
  // The last block merges the blocks' results with the same block reduction (merge's result does not depend on
  // the order): one round trip for the partials instead of a thread reading them one after another (that serial
  // loop was about 20 us, on the critical path of every greedy step). last_block_of's barriers order the first
  // reduction's shared-memory reads before the second's writes.
  Best q{-INFINITY, -1, INT_MAX, 0};
  for (int i = int(threadIdx.x); i < int(gridDim.x); i += kThreads)
    q = merge(q, Best{__ldcg(&part[i].v), __ldcg(&part[i].i), __ldcg(&part[i].bad), __ldcg(&part[i].live)});
  const Best r = block_reduce(q);
  if (threadIdx.x == 0) {
    if (r.bad != INT_MAX) out[0] = r.bad, out[1] = logits[r.bad] != logits[r.bad] ? kGreedyNan : kGreedyPosInf;
    else if (!r.live) out[0] = 0, out[1] = kGreedyAllNegInf;
    else out[0] = r.i, out[1] = kGreedyOk;
  }
}

}  // namespace

void greedy_pick(Context& ctx, const float* logits, int64_t V, int32_t* out) {
  detail::require(V >= 1 && V < (int64_t(1) << 31), "greedy_pick: need 1 <= V < 2^31");
  detail::require(logits && out, "greedy_pick: null operand");
  // About 8 KB of the row per block (2048 floats), at most kMaxBlocks blocks.
  const int64_t blocks = detail::imin(kMaxBlocks, (V + 2047) / 2048), per = (V + blocks - 1) / blocks;
  ScratchScope scope(ctx.scratch());
  Best* part = ctx.scratch().take<Best>(size_t(blocks));
  detail::launch(ctx, greedy_kernel, unsigned((V + per - 1) / per), kThreads, 0, logits, V, per, part,
                 ctx.counters(), out);
  DS4_CUDA_CHECK_LAUNCH();
}

}  // namespace ds4::cuda
