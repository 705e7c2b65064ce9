// Causal depthwise conv1d with dilation and carried history (cpu/conv1d.cpp). The input the convolution sees is
// [state rows; x rows]; output row t reads padded rows t + k*dilation. Long chunks take two kernels, so that no
// thread overwrites history another thread still reads: the first computes y (one thread per (t, c),
// consecutive channels per warp: coalesced), the second shifts the history by T rows, one thread per channel
// walking its rows upwards. Short chunks (decode, verification) take one kernel with one thread per channel
// doing both in that order: a channel's history is read only by its own thread. Every output element is the same
// expression in both forms, so the bits do not depend on the form.
#include "backend/cuda/common.cuh"
#include "backend/cuda/conv1d.cuh"

namespace ds4::cuda {
namespace {

constexpr int64_t kShortChunk = 8;  // tokens up to which one thread per channel does all of a channel

__global__ void conv_kernel(const float* x, int64_t T, int64_t C, const bf16* w, int64_t K, int64_t dil,
                            const float* state, float* y, Act act) {
  [[maybe_unused]] const auto pdl = detail::pdl_enter();
  const int64_t S = (K - 1) * dil;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < T * C; i += int64_t(gridDim.x) * blockDim.x) {
    y[i] = detail::conv_at(x, C, i / C, i % C, C, w, K, dil, S, state, act);
  }
}

__global__ void conv_state_kernel(const float* x, int64_t T, int64_t C, int64_t S, float* state) {
  [[maybe_unused]] const auto pdl = detail::pdl_enter();
  for (int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; c < C; c += int64_t(gridDim.x) * blockDim.x)
    detail::shift_history(x, C, T, c, C, S, state);
}

// One token without dilation (the GDN conv of a decode step): channel c's K padded rows are loaded once, all
// requested together, and serve both the output and the new history (state row r <- padded row r + 1). The general
// form below reads them again for the history, each load after the store before it: three more round trips at
// K = 4. The same expressions: the output's sum in k order, the history's values.
constexpr int kOneTokenMaxK = 8;

__global__ void conv_one_kernel(const float* x, int64_t C, const bf16* w, int K, float* state, float* y, Act act) {
  [[maybe_unused]] const auto pdl = detail::pdl_enter();
  for (int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; c < C; c += int64_t(gridDim.x) * blockDim.x) {
    float win[kOneTokenMaxK], wk[kOneTokenMaxK];
    detail::conv_one_rows(state + c, C, x + c, K, win);
    detail::conv_one_taps(w + c * K, K, wk);
    y[c] = detail::conv_one_out(wk, win, K, act);
    detail::conv_one_shift(win, K, state + c, C);
  }
}

// Short chunks: channel c's outputs for every token, then its history.
__global__ void conv_short_kernel(const float* x, int64_t T, int64_t C, const bf16* w, int64_t K, int64_t dil,
                                  float* state, float* y, Act act) {
  [[maybe_unused]] const auto pdl = detail::pdl_enter();
  const int64_t S = (K - 1) * dil;
  for (int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; c < C; c += int64_t(gridDim.x) * blockDim.x) {
    for (int64_t t = 0; t < T; t++) y[t * C + c] = detail::conv_at(x, C, t, c, C, w, K, dil, S, state, act);
    detail::shift_history(x, C, T, c, C, S, state);
  }
}

// DS4_CUDA_CONV_ONE=0: one token takes conv_short_kernel too (the same bits), to measure the difference.
bool one_token_enabled() {
  static const bool on = detail::switch_on("DS4_CUDA_CONV_ONE");
  return on;
}

}  // namespace

void causal_conv1d(Context& ctx, const float* x, int64_t T, int64_t C, const bf16* w, int64_t K, int64_t dilation,
                   float* state, float* y, Act act) {
  detail::require(K >= 1 && dilation >= 1 && C >= 0 && T >= 0, "causal_conv1d: bad shape");
  if (T == 0 || C == 0) return;
  const int64_t S = (K - 1) * dilation;
  if (T == 1 && dilation == 1 && K <= kOneTokenMaxK && one_token_enabled()) {
    detail::launch(ctx, conv_one_kernel, detail::grid_for(ctx, C, 128), 128, 0, x, C, w, int(K), state, y, act);
    DS4_CUDA_CHECK_LAUNCH();
    return;
  }
  if (T <= kShortChunk) {
    detail::launch(ctx, conv_short_kernel, detail::grid_for(ctx, C, 128), 128, 0, x, T, C, w, K, dilation, state, y, act);
    DS4_CUDA_CHECK_LAUNCH();
    return;
  }
  detail::launch(ctx, conv_kernel, detail::grid_for(ctx, T * C, 256), 256, 0, x, T, C, w, K, dilation, state, y, act);
  DS4_CUDA_CHECK_LAUNCH();
  if (S == 0) return;
  detail::launch(ctx, conv_state_kernel, detail::blocks_for(C, 128), 128, 0, x, T, C, S, state);
  DS4_CUDA_CHECK_LAUNCH();
}

}  // namespace ds4::cuda
