// One rotated pair of partial M-RoPE (cpu/rope.cpp), shared by apply_rope and attn_prep so that both rotate with
// the same arithmetic: the pair's angle from the token's position on the frequency's axis, cos/sin in double
// precision as the CPU takes them, rounded to float.
#pragma once
#include "backend/cuda/common.cuh"

namespace ds4::cuda::detail {

// (a, b) rotated in place by the angle f.
__device__ __forceinline__ void rope_rotate(float& a, float& b, float f) {
  double s, c;
  sincos(double(f), &s, &c);
  const float cs = float(c), sn = float(s);
  const float x = a, y = b;
  a = x * cs - y * sn;
  b = y * cs + x * sn;
}

// Token t's position on the axis of pair i's frequency.
__device__ __forceinline__ int64_t rope_position(int64_t i, int64_t t, const RopeParams& rope, const Positions& pos) {
  int axis = 0;
  if (i % 3 == 1 && i < rope.section[1] * 3) axis = 1;
  else if (i % 3 == 2 && i < rope.section[2] * 3) axis = 2;
  return pos.pos3 ? int64_t(pos.pos3[3 * t + axis]) : pos.pos0 + t;
}

// Pair i (i < rotary_dim / 2) of token t: (a, b) = (x[i], x[i + rotary_dim / 2]) rotated in place.
__device__ __forceinline__ void rope_pair(float& a, float& b, int64_t i, int64_t t, const RopeParams& rope,
                                          const Positions& pos) {
  rope_rotate(a, b, rope.inv_freq[i] * float(rope_position(i, t, rope, pos)));
}

}  // namespace ds4::cuda::detail
