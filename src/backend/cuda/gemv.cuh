// The bandwidth-bound core shared by the batch-1 projections (linear.cu) and the decode-time experts (moe.cu):
// a warp streams R bf16 weight rows with 128-bit loads (8 weights per lane per load, R loads in flight before the
// first use) against activation vectors staged once per block in shared memory as float32, and reduces each
// dot product with warp shuffles. Weights are read exactly once; activations are read from shared memory.
//
// Activations are staged in two planes per vector so that the two float4 reads a lane makes for its 8 weights
// fall on consecutive 16-byte slots across the warp (no bank conflicts): element 8j+q sits at plane q/4,
// slot 4j + q%4.
#pragma once
#include "backend/cuda/common.cuh"

namespace ds4::cuda::detail {

__device__ __forceinline__ int64_t plane_slot(int64_t kk, int64_t kc) {
  return ((kk & 7) >> 2) * (kc >> 1) + ((kk >> 3) << 2) + (kk & 3);
}

// Cooperative (whole block): xs[0..kc) <- src[0..len) in plane order, zeros past len. kc is a multiple of 8.
__device__ __forceinline__ void stage_planes(float* xs, const float* src, int64_t len, int64_t kc) {
  for (int64_t kk = threadIdx.x; kk < kc; kk += blockDim.x) xs[plane_slot(kk, kc)] = kk < len ? src[kk] : 0.0f;
}

// acc[r][t] += rows[r][0..len) · x_t for NT staged vectors x_t at xs + t * kc (plane order). VEC: every row is
// 16-byte aligned and len is a multiple of 8; otherwise scalar loads.
template <int R, int NT, bool VEC>
__device__ __forceinline__ void warp_dot_rows(const bf16* const (&rows)[R], const float* xs, int64_t kc, int64_t len,
                                              float (&acc)[R][NT]) {
  const int lane = threadIdx.x & 31;
  if constexpr (VEC) {
    const int64_t n8 = len >> 3, half = kc >> 1;
#pragma unroll 2
    for (int64_t j = lane; j < n8; j += 32) {
      uint4 w[R];
#pragma unroll
      for (int r = 0; r < R; r++) w[r] = ld_stream(rows[r] + j * 8);
#pragma unroll
      for (int t = 0; t < NT; t++) {
        const float4 a = *reinterpret_cast<const float4*>(xs + t * kc + j * 4);
        const float4 b = *reinterpret_cast<const float4*>(xs + t * kc + half + j * 4);
#pragma unroll
        for (int r = 0; r < R; r++) acc[r][t] += dot8(w[r], a, b);
      }
    }
  } else {
    for (int64_t kk = lane; kk < len; kk += 32) {
      float w[R];
#pragma unroll
      for (int r = 0; r < R; r++) w[r] = __bfloat162float(rows[r][kk]);
      const int64_t slot = plane_slot(kk, kc);
#pragma unroll
      for (int t = 0; t < NT; t++) {
        const float xv = xs[t * kc + slot];
#pragma unroll
        for (int r = 0; r < R; r++) acc[r][t] = fmaf(w[r], xv, acc[r][t]);
      }
    }
  }
}

}  // namespace ds4::cuda::detail
