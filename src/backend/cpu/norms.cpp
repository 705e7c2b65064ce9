#include "backend/cpu/norms.h"

#include <cmath>

namespace ds4::cpu {

float silu(float x) { return x / (1.0f + std::exp(-x)); }
float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }
float softplus(float x) { return x > 20.0f ? x : std::log1p(std::exp(x)); }  // torch's threshold 20
float apply_act(Act a, float x) { return a == Act::Silu ? silu(x) : a == Act::Sigmoid ? sigmoid(x) : x; }

void rms_norm_offset(const float* x, const float* w, float* y, int64_t rows, int64_t dim, int64_t group, float eps) {
  const int64_t groups = dim / group;
  for (int64_t r = 0; r < rows; r++)
    for (int64_t g = 0; g < groups; g++) {
      const float* xs = x + r * dim + g * group;
      float* ys = y + r * dim + g * group;
      double ss = 0;
      for (int64_t i = 0; i < group; i++) ss += double(xs[i]) * xs[i];
      const float inv = 1.0f / std::sqrt(float(ss / double(group)) + eps);
      for (int64_t i = 0; i < group; i++) ys[i] = (xs[i] * inv) * (1.0f + (w ? w[g * group + i] : 0.0f));
    }
}

void rms_norm_gated(const float* x, const float* z, const float* w, float* y, int64_t rows, int64_t dim, float eps,
                    Act act) {
  for (int64_t r = 0; r < rows; r++) {
    const float* xs = x + r * dim;
    double ss = 0;
    for (int64_t i = 0; i < dim; i++) ss += double(xs[i]) * xs[i];
    const float inv = 1.0f / std::sqrt(float(ss / double(dim)) + eps);
    for (int64_t i = 0; i < dim; i++) y[r * dim + i] = w[i] * (xs[i] * inv) * apply_act(act, z[r * dim + i]);
  }
}

void l2_norm(float* x, int64_t rows, int64_t dim, float eps) {
  for (int64_t r = 0; r < rows; r++) {
    float* xs = x + r * dim;
    double ss = 0;
    for (int64_t i = 0; i < dim; i++) ss += double(xs[i]) * xs[i];
    const float inv = 1.0f / std::sqrt(float(ss) + eps);
    for (int64_t i = 0; i < dim; i++) xs[i] *= inv;
  }
}

}  // namespace ds4::cpu
