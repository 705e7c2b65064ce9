// The causal conv1d's per-channel pieces (conv1d.cu), shared with the fused PLE tail (ple.cu) so that both
// compute every output and history row with the same expression.
#pragma once
#include "backend/cuda/common.cuh"

namespace ds4::cuda::detail {

// Output row t of channel c: the padded input is [state rows (S of them); x rows]. The loads of the K taps are
// independent of each other (no store in between): unrolled, they are in flight together.
__device__ __forceinline__ float conv_at(const float* x, int64_t t, int64_t c, int64_t C, const bf16* w, int64_t K,
                                         int64_t dil, int64_t S, const float* state, Act act) {
  float acc = 0.0f;
#pragma unroll 4
  for (int64_t k = 0; k < K; k++) {
    const int64_t r = t + k * dil;  // row of the padded input
    const float in = r < S ? state[r * C + c] : x[(r - S) * C + c];
    acc += __bfloat162float(w[c * K + k]) * in;
  }
  return detail::apply_act(act, acc);
}

// New history row r = padded row T + r. The rows are moved kShiftChunk at a time, every load of a chunk before its
// stores, so a chunk costs one memory round trip instead of one per row (a store then a dependent load, row after
// row). Source rows T + r > r: a chunk reads only rows that no earlier chunk, and none of its own stores, replaced.
constexpr int kShiftChunk = 16;
__device__ __forceinline__ void shift_history(const float* x, int64_t T, int64_t c, int64_t C, int64_t S, float* state) {
  for (int64_t r0 = 0; r0 < S; r0 += kShiftChunk) {
    float v[kShiftChunk];
#pragma unroll
    for (int j = 0; j < kShiftChunk; j++) {
      const int64_t r = r0 + j, src = T + r;
      if (r < S) v[j] = src < S ? state[src * C + c] : x[(src - S) * C + c];
    }
#pragma unroll
    for (int j = 0; j < kShiftChunk; j++)
      if (r0 + j < S) state[(r0 + j) * C + c] = v[j];
  }
}

}  // namespace ds4::cuda::detail
