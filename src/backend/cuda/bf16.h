// Host-side bfloat16 conversion (round to nearest even, NaN kept quiet), for loading weights and for tests.
// The bits match __float2bfloat16_rn, so a host-rounded weight equals what the device reads.
#pragma once
#include <cstdint>
#include <cstring>
#include <cuda_bf16.h>
#include <vector>

namespace ds4::cuda {

using bf16 = __nv_bfloat16;

inline uint16_t f32_to_bf16_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40);  // NaN stays NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}

inline float bf16_bits_to_f32(uint16_t b) {
  const uint32_t u = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// The float a value becomes after a round trip through bfloat16.
inline float bf16_round(float f) { return bf16_bits_to_f32(f32_to_bf16_bits(f)); }

inline std::vector<bf16> to_bf16(const std::vector<float>& v) {
  std::vector<bf16> out(v.size());
  for (size_t i = 0; i < v.size(); i++) {
    __nv_bfloat16_raw raw;
    raw.x = f32_to_bf16_bits(v[i]);
    out[i] = bf16(raw);
  }
  return out;
}

}  // namespace ds4::cuda
