#include "backend/cpu/rope.h"

#include <cmath>

namespace ds4::cpu {

RopeTable::RopeTable(int64_t rd, double theta, std::array<int64_t, 3> section) : rotary_dim(rd), mrope_section(section) {
  const int64_t half = rd / 2;
  inv_freq.resize(static_cast<size_t>(half));
  for (int64_t i = 0; i < half; i++) {
    // float32 throughout, as torch: 1 / base ** (arange(0, dim, 2).float() / dim)
    float e = float(2 * i) / float(rd);
    inv_freq[size_t(i)] = 1.0f / std::pow(float(theta), e);
  }
}

void RopeTable::cos_sin(const std::array<int64_t, 3>& pos, float* cos, float* sin) const {
  const int64_t half = rotary_dim / 2;
  for (int64_t i = 0; i < half; i++) {
    // Interleaved M-RoPE: frequency i takes the H position when i % 3 == 1 and W when i % 3 == 2, within
    // each section's span; the rest take T.
    int axis = 0;
    if (i % 3 == 1 && i < mrope_section[1] * 3) axis = 1;
    else if (i % 3 == 2 && i < mrope_section[2] * 3) axis = 2;
    const float f = inv_freq[size_t(i)] * float(pos[size_t(axis)]);
    cos[i] = cos[i + half] = float(std::cos(double(f)));
    sin[i] = sin[i + half] = float(std::sin(double(f)));
  }
}

void apply_rope(float* x, int64_t heads, int64_t stride, int64_t rotary_dim, const float* cos, const float* sin) {
  const int64_t half = rotary_dim / 2;
  for (int64_t h = 0; h < heads; h++) {
    float* v = x + h * stride;
    for (int64_t i = 0; i < half; i++) {
      const float a = v[i], b = v[i + half];
      v[i] = a * cos[i] - b * sin[i];
      v[i + half] = b * cos[i + half] + a * sin[i + half];
    }
  }
}

}  // namespace ds4::cpu
