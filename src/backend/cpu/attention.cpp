#include "backend/cpu/attention.h"

#include <cmath>

namespace ds4::cpu {

void attend(const float* q, const float* keys, const float* values, const std::vector<int32_t>& positions,
            AttnShape s, float scale, float* out) {
  const int64_t group = s.heads / s.kv_heads, stride = s.kv_heads * s.head_dim, n = int64_t(positions.size());
  std::vector<float> w(static_cast<size_t>(n));
  for (int64_t h = 0; h < s.heads; h++) {
    const int64_t kvh = h / group;
    const float* qh = q + h * s.head_dim;
    float mx = -INFINITY;
    for (int64_t i = 0; i < n; i++) {
      const float* kk = keys + positions[size_t(i)] * stride + kvh * s.head_dim;
      float d = 0.0f;
      for (int64_t e = 0; e < s.head_dim; e++) d += qh[e] * kk[e];
      w[size_t(i)] = d * scale;
      mx = std::max(mx, w[size_t(i)]);
    }
    float sum = 0.0f;
    for (int64_t i = 0; i < n; i++) sum += (w[size_t(i)] = std::exp(w[size_t(i)] - mx));
    float* oh = out + h * s.head_dim;
    for (int64_t e = 0; e < s.head_dim; e++) oh[e] = 0.0f;
    for (int64_t i = 0; i < n; i++) {
      const float p = w[size_t(i)] / sum;
      const float* vv = values + positions[size_t(i)] * stride + kvh * s.head_dim;
      for (int64_t e = 0; e < s.head_dim; e++) oh[e] += p * vv[e];
    }
  }
}

}  // namespace ds4::cpu
