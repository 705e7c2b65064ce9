// The QSA indexer's device steps that qsa.cu's kernels and attn_prep.cu's decode block share (the pooling, the
// list below the budget): one implementation of each, so that a token's results have the same bits whichever
// kernel made them.
#pragma once
#include "backend/cuda/common.cuh"

namespace ds4::cuda::detail {

// Pooled block b of the raw indexer keys: the mean of its R rows, zero-centred RMSNorm, RoPE at position b * R,
// written to out [D]. Threads below `nt` take elements e = tid, tid + nt, ... (pool_kernel: nt = blockDim.x =
// 128); the other threads of the block add nothing but take part in the barriers (block_sum: their zeros do not
// change the sum's bits). last, when set, replaces row R - 1 (the decode selector's current token, whose raw key
// this kernel is still writing). vals: [D] of shared memory; red: [32] doubles. All threads call it.
__device__ inline void pool_block(const float* index_keys, const float* last, int64_t b, int64_t R, int64_t D,
                                  const bf16* k_norm, const RopeParams& rope, float eps, int nt, float* vals,
                                  double* red, float* out) {
  const int tid = int(threadIdx.x);
  double ss = 0.0;
  for (int64_t e = tid; tid < nt && e < D; e += nt) {
    float m = 0.0f;
    for (int64_t r = 0; r < R; r++)
      m += last && r == R - 1 ? last[e] : index_keys[(b * R + r) * D + e];
    m /= float(R);
    vals[e] = m;
    ss += double(m) * double(m);
  }
  ss = block_sum(ss, red);  // its barriers also publish vals
  const float inv = 1.0f / sqrtf(float(ss / double(D)) + eps);
  for (int64_t e = tid; tid < nt && e < D; e += nt)
    vals[e] = (vals[e] * inv) * (1.0f + (k_norm ? __bfloat162float(k_norm[e]) : 0.0f));
  __syncthreads();
  const int64_t half = rope.rotary_dim / 2;
  for (int64_t i = tid; tid < nt && i < D; i += nt) {
    if (i >= rope.rotary_dim) {
      out[i] = vals[i];
    } else if (i < half) {
      // Text positions: every M-RoPE axis is at b * R, so the axis choice does not matter.
      const float f = rope.inv_freq[i] * float(b * R);
      double s, c;
      sincos(double(f), &s, &c);
      const float cs = float(c), sn = float(s), x0 = vals[i], x1 = vals[i + half];
      out[i] = x0 * cs - x1 * sn;
      out[i + half] = x1 * cs + x0 * sn;
    }
  }
}

// The list of a query at position p whose complete blocks fit the budget: every position 0..p. All threads call it.
__device__ inline void all_positions(int64_t p, int32_t* out, int32_t* count) {
  for (int64_t i = threadIdx.x; i <= p; i += blockDim.x) out[i] = int32_t(i);
  if (threadIdx.x == 0) *count = int32_t(p + 1);
}

}  // namespace ds4::cuda::detail
