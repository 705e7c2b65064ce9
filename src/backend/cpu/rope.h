// Partial rotary embeddings in the M-RoPE layout (rotate-half pairing over the first rotary_dim dims).
#pragma once
#include <array>
#include <cstdint>
#include <vector>

namespace ds4::cpu {

struct RopeTable {
  int64_t rotary_dim = 0;
  std::array<int64_t, 3> mrope_section{0, 0, 0};
  std::vector<float> inv_freq;  // rotary_dim / 2, float32 as the reference computes it

  RopeTable(int64_t rotary_dim, double theta, std::array<int64_t, 3> section);
  // cos/sin of rotary_dim entries for a position given as (t, h, w); text tokens use t = h = w.
  void cos_sin(const std::array<int64_t, 3>& pos, float* cos, float* sin) const;
};

// Rotates the first rotary_dim dims of each of `heads` vectors (stride `stride` floats apart).
void apply_rope(float* x, int64_t heads, int64_t stride, int64_t rotary_dim, const float* cos, const float* sin);

}  // namespace ds4::cpu
