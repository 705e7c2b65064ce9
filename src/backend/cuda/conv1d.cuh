// The causal conv1d's per-channel pieces (conv1d.cu), shared with the kernels that fold a conv in (the PLE tail,
// ple.cu; the GDN decode step, gated_delta.cu) so that all of them compute every output and history row with the
// same expression.
#pragma once
#include "backend/cuda/common.cuh"

namespace ds4::cuda::detail {

// Output row t of channel c: the padded input is [state rows (S of them, row stride C); x rows (row stride ldx)].
__device__ __forceinline__ float conv_at(const float* x, int64_t ldx, int64_t t, int64_t c, int64_t C, const bf16* w,
                                         int64_t K, int64_t dil, int64_t S, const float* state, Act act) {
  float acc = 0.0f;
  for (int64_t k = 0; k < K; k++) {
    const int64_t r = t + k * dil;  // row of the padded input
    const float in = r < S ? state[r * C + c] : x[(r - S) * ldx + c];
    acc += __bfloat162float(w[c * K + k]) * in;
  }
  return detail::apply_act(act, acc);
}

// New history row r = padded row T + r; ascending r never reads a row this thread already overwrote. (Moving 16
// rows per round trip, loads before stores, made the GDN conv slower on the H200: 3.1 -> 3.7 us a launch.)
__device__ __forceinline__ void shift_history(const float* x, int64_t ldx, int64_t T, int64_t c, int64_t C, int64_t S,
                                              float* state) {
  for (int64_t r = 0; r < S; r++) {
    const int64_t src = T + r;
    state[r * C + c] = src < S ? state[src * C + c] : x[(src - S) * ldx + c];
  }
}

// One token without dilation (the GDN conv of a decode step), channel c, K <= MAXK: the taps (w at the channel's
// first, w + c * K), the K padded rows (history rows 0..K-2 from hist = state + c, C apart, then the input *x) in
// registers, the output (the sum in k order) and the new history (row r <- padded row r + 1) from them. The loads
// of a call are independent, so a caller's loads go out together; conv_one_kernel (conv1d.cu) and the GDN step
// that folds the conv in (gated_delta.cu) both compute with these, so their bits agree.
template <int MAXK>
__device__ __forceinline__ void conv_one_taps(const bf16* w, int K, float (&wk)[MAXK]) {
#pragma unroll
  for (int k = 0; k < MAXK; k++)
    if (k < K) wk[k] = __bfloat162float(w[k]);
}
template <int MAXK>
__device__ __forceinline__ void conv_one_rows(const float* hist, int64_t C, const float* x, int K, float (&win)[MAXK]) {
#pragma unroll
  for (int k = 0; k < MAXK; k++)
    if (k < K) win[k] = k < K - 1 ? hist[k * C] : *x;
}
template <int MAXK>
__device__ __forceinline__ float conv_one_out(const float (&wk)[MAXK], const float (&win)[MAXK], int K, Act act) {
  float acc = 0.0f;
#pragma unroll
  for (int k = 0; k < MAXK; k++)
    if (k < K) acc += wk[k] * win[k];
  return detail::apply_act(act, acc);
}
template <int MAXK>
__device__ __forceinline__ void conv_one_shift(const float (&win)[MAXK], int K, float* hist, int64_t C) {
#pragma unroll
  for (int k = 1; k < MAXK; k++)
    if (k < K) hist[(k - 1) * C] = win[k];
}

}  // namespace ds4::cuda::detail
