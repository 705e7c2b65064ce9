// The RMS norm's two expressions (norms.cu), shared with the kernels that fold a norm in (the PLE tail, ple.cu), so
// that every copy of a normalised value has the same bits.
#pragma once
#include "backend/cuda/common.cuh"

namespace ds4::cuda::detail {

// 1 / rms of a segment of n values from its float64 sum of squares.
__device__ __forceinline__ float rms_inv(double ss, int64_t n, float eps) { return 1.0f / sqrtf(float(ss / double(n)) + eps); }

// rms_norm_offset's output: (x / rms) * (1 + w).
__device__ __forceinline__ float offset_norm(float xv, float inv, float w) { return (xv * inv) * (1.0f + w); }

}  // namespace ds4::cuda::detail
