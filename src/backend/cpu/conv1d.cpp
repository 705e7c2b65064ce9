#include "backend/cpu/conv1d.h"

#include <cstring>
#include <vector>

namespace ds4::cpu {

void causal_conv1d(const float* x, int64_t T, int64_t C, const float* w, int64_t K, int64_t dilation, float* state,
                   float* y, Act act) {
  const int64_t S = (K - 1) * dilation;
  // The padded input: history rows followed by this chunk.
  std::vector<float> in(static_cast<size_t>((S + T) * C));
  if (S) std::memcpy(in.data(), state, size_t(S * C) * sizeof(float));
  std::memcpy(in.data() + S * C, x, size_t(T * C) * sizeof(float));
#pragma omp parallel for schedule(static) if (T * C * K > 65536)
  for (int64_t t = 0; t < T; t++)
    for (int64_t c = 0; c < C; c++) {
      float acc = 0.0f;
      for (int64_t k = 0; k < K; k++) acc += w[c * K + k] * in[size_t((t + k * dilation) * C + c)];
      y[t * C + c] = apply_act(act, acc);
    }
  if (S) std::memcpy(state, in.data() + T * C, size_t(S * C) * sizeof(float));
}

}  // namespace ds4::cpu
