#include "backend/cuda/common.cuh"
#include "backend/cuda/random_fill.h"

namespace ds4::cuda {
namespace {

// splitmix64 of (stream, index): independent across elements and tensors, no state to carry.
__device__ __forceinline__ float uniform(uint64_t stream, int64_t i, float scale) {
  uint64_t z = stream + 0x9E3779B97F4A7C15ull * uint64_t(i + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return scale * (float(z >> 40) * (2.0f / 16777216.0f) - 1.0f);
}

__global__ void fill_bf16_kernel(bf16* dst, int64_t n, uint64_t stream, float scale) {
  [[maybe_unused]] const auto pdl = detail::pdl_enter();
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    dst[i] = __float2bfloat16_rn(uniform(stream, i, scale));
}
__global__ void fill_f32_kernel(float* dst, int64_t n, uint64_t stream, float scale) {
  [[maybe_unused]] const auto pdl = detail::pdl_enter();
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    dst[i] = uniform(stream, i, scale);
}

}  // namespace

void fill_uniform_bf16(Context& ctx, bf16* dst, int64_t n, uint64_t stream, float scale) {
  if (n <= 0) return;
  detail::launch(ctx, fill_bf16_kernel, detail::grid_for(ctx, n, 256), 256, 0, dst, n, stream, scale);
  DS4_CUDA_CHECK_LAUNCH();
}

void fill_uniform_f32(Context& ctx, float* dst, int64_t n, uint64_t stream, float scale) {
  if (n <= 0) return;
  detail::launch(ctx, fill_f32_kernel, detail::grid_for(ctx, n, 256), 256, 0, dst, n, stream, scale);
  DS4_CUDA_CHECK_LAUNCH();
}

}  // namespace ds4::cuda
