// Causal depthwise conv1d with dilation and carried history (cpu/conv1d.cpp). The input the convolution sees is
// [state rows; x rows]; output row t reads padded rows t + k*dilation. Two kernels, so that no thread overwrites
// history another thread still reads: the first computes y (one thread per (t, c), consecutive channels per
// warp: coalesced), the second shifts the history by T rows, one thread per channel walking its rows upwards.
#include "backend/cuda/common.cuh"

namespace ds4::cuda {
namespace {

__global__ void conv_kernel(const float* x, int64_t T, int64_t C, const bf16* w, int64_t K, int64_t dil,
                            const float* state, float* y, Act act) {
  detail::pdl_enter();
  const int64_t S = (K - 1) * dil;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < T * C; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t t = i / C, c = i % C;
    float acc = 0.0f;
    for (int64_t k = 0; k < K; k++) {
      const int64_t r = t + k * dil;  // row of the padded input
      const float in = r < S ? state[r * C + c] : x[(r - S) * C + c];
      acc += __bfloat162float(w[c * K + k]) * in;
    }
    y[i] = detail::apply_act(act, acc);
  }
}

// new history row r = padded row T + r; ascending r never reads a row this thread already overwrote.
__global__ void conv_state_kernel(const float* x, int64_t T, int64_t C, int64_t S, float* state) {
  detail::pdl_enter();
  for (int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; c < C; c += int64_t(gridDim.x) * blockDim.x)
    for (int64_t r = 0; r < S; r++) {
      const int64_t src = T + r;
      state[r * C + c] = src < S ? state[src * C + c] : x[(src - S) * C + c];
    }
}

}  // namespace

void causal_conv1d(Context& ctx, const float* x, int64_t T, int64_t C, const bf16* w, int64_t K, int64_t dilation,
                   float* state, float* y, Act act) {
  detail::require(K >= 1 && dilation >= 1 && C >= 0 && T >= 0, "causal_conv1d: bad shape");
  if (T == 0 || C == 0) return;
  const int64_t S = (K - 1) * dilation;
  detail::launch(ctx, conv_kernel, detail::grid_for(ctx, T * C, 256), 256, 0, x, T, C, w, K, dilation, state, y, act);
  DS4_CUDA_CHECK_LAUNCH();
  if (S == 0) return;
  detail::launch(ctx, conv_state_kernel, detail::blocks_for(C, 128), 128, 0, x, T, C, S, state);
  DS4_CUDA_CHECK_LAUNCH();
}

}  // namespace ds4::cuda
