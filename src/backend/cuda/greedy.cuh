// The greedy pick's partial results (ops.h's greedy_pick): greedy.cu's kernel over a logits row, and the lm_head
// GEMV that picks while it writes the row (linear.cu's linear_pick). Each thread sees values in increasing index
// order; partials merge to the larger maximum, the lower index on a tie, the first NaN or +inf, and whether
// anything is above -inf, so the result does not depend on the order partials are merged in: the same token,
// and the same first bad index, as the host's scan in index order (engine/logits_check.cpp, sampler.cpp's argmax).
#pragma once
#include <climits>

#include "backend/cuda/gemv.cuh"
#include "backend/cuda/ops.h"

namespace ds4::cuda::detail {

struct GreedyBest {
  float v;   // the maximum so far (-inf: none above -inf yet)
  int i;     // its first index (-1: none)
  int bad;   // the first NaN or +inf index (INT_MAX: none)
  int live;  // 1 when some value is above -inf
};

__device__ __forceinline__ GreedyBest greedy_none() { return GreedyBest{-INFINITY, -1, INT_MAX, 0}; }

// Value v at index k, after every index this thread saw before (all lower).
__device__ __forceinline__ void greedy_see(GreedyBest& m, float v, int k) {
  if (v != v || v == INFINITY) {
    m.bad = min(m.bad, k);
  } else if (v > -INFINITY) {
    m.live = 1;
    if (m.i < 0 || v > m.v) m.v = v, m.i = k;  // the first stays on ties
  }
}

__device__ __forceinline__ GreedyBest greedy_merge(const GreedyBest& a, const GreedyBest& b) {
  const bool take_b = b.i >= 0 && (a.i < 0 || b.v > a.v || (b.v == a.v && b.i < a.i));
  return GreedyBest{take_b ? b.v : a.v, take_b ? b.i : a.i, min(a.bad, b.bad), a.live | b.live};
}

// The block's merge (Threads threads, all calling), in every thread.
template <int Threads>
__device__ GreedyBest greedy_block_reduce(GreedyBest m) {
  __shared__ GreedyBest warp_best[Threads / 32];
  const int lane = int(threadIdx.x & 31), warp = int(threadIdx.x >> 5);
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const GreedyBest b{__shfl_xor_sync(0xffffffffu, m.v, o), __shfl_xor_sync(0xffffffffu, m.i, o),
                       __shfl_xor_sync(0xffffffffu, m.bad, o), __shfl_xor_sync(0xffffffffu, m.live, o)};
    m = greedy_merge(m, b);
  }
  if (lane == 0) warp_best[warp] = m;
  __syncthreads();
  GreedyBest r = warp_best[0];
  for (int w = 1; w < Threads / 32; w++) r = greedy_merge(r, warp_best[w]);
  return r;
}

// The last block's pick from the n partials the blocks stored (this launch: read through L2, after
// last_block_of's fences), into out {index, status} (greedy_pick's contract; logits tells NaN from +inf).
// One round trip for the partials instead of a thread reading them one after another (that serial loop was
// about 20 us, on the critical path of every greedy step). last_block_of's barriers order an earlier reduction's
// shared-memory reads before this one's writes.
template <int Threads>
__device__ void greedy_finish(const GreedyBest* part, int n, const float* logits, int32_t* out) {
  GreedyBest q = greedy_none();
  for (int i = int(threadIdx.x); i < n; i += Threads)
    q = greedy_merge(q, GreedyBest{__ldcg(&part[i].v), __ldcg(&part[i].i), __ldcg(&part[i].bad), __ldcg(&part[i].live)});
  const GreedyBest r = greedy_block_reduce<Threads>(q);
  if (threadIdx.x == 0) {
    if (r.bad != INT_MAX) out[0] = r.bad, out[1] = __ldcg(&logits[r.bad]) != __ldcg(&logits[r.bad]) ? kGreedyNan : kGreedyPosInf;
    else if (!r.live) out[0] = 0, out[1] = kGreedyAllNegInf;
    else out[0] = r.i, out[1] = kGreedyOk;
  }
}

}  // namespace ds4::cuda::detail
