// The causal conv1d's per-channel pieces (conv1d.cu), shared with the fused PLE tail (ple.cu) so that both
// compute every output and history row with the same expression.
#pragma once
#include "backend/cuda/common.cuh"

namespace ds4::cuda::detail {

// Output row t of channel c: the padded input is [state rows (S of them); x rows]. kUnroll > 0 unrolls the taps
// by that much so their loads are in flight together (the PLE tail: 4); 0 leaves the loop to the compiler (the conv
// kernels, as measured). The same sum in the same order either way.
template <int kUnroll = 0>
__device__ __forceinline__ float conv_at(const float* x, int64_t t, int64_t c, int64_t C, const bf16* w, int64_t K,
                                         int64_t dil, int64_t S, const float* state, Act act) {
  float acc = 0.0f;
  auto tap = [&](int64_t k) {
    const int64_t r = t + k * dil;  // row of the padded input
    const float in = r < S ? state[r * C + c] : x[(r - S) * C + c];
    acc += __bfloat162float(w[c * K + k]) * in;
  };
  if constexpr (kUnroll > 0) {
#pragma unroll kUnroll
    for (int64_t k = 0; k < K; k++) tap(k);
  } else {
    for (int64_t k = 0; k < K; k++) tap(k);
  }
  return detail::apply_act(act, acc);
}

// New history row r = padded row T + r; ascending r never reads a row this thread already overwrote. kChunk rows
// move per memory round trip, every load of a chunk before its stores (source rows T + r > r: a chunk reads only
// rows that no earlier chunk, and none of its own stores, replaced). The conv kernels move one row at a time (16
// measured slower in the GDN conv on the H200, 3.1 -> 3.7 us a launch: its history is 3 rows); the PLE tail's
// history is 9 rows a channel, each a store then a dependent load.
template <int kChunk = 1>
__device__ __forceinline__ void shift_history(const float* x, int64_t T, int64_t c, int64_t C, int64_t S, float* state) {
  for (int64_t r0 = 0; r0 < S; r0 += kChunk) {
    float v[kChunk];
#pragma unroll
    for (int j = 0; j < kChunk; j++) {
      const int64_t r = r0 + j, src = T + r;
      if (r < S) v[j] = src < S ? state[src * C + c] : x[(src - S) * C + c];
    }
#pragma unroll
    for (int j = 0; j < kChunk; j++)
      if (r0 + j < S) state[(r0 + j) * C + c] = v[j];
  }
}

}  // namespace ds4::cuda::detail
