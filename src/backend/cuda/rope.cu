// Partial rotary embeddings with interleaved M-RoPE frequencies (cpu/rope.cpp). One thread per rotated pair
// (token, head, i < rotary_dim/2): it derives the pair's angle from the token's position on the frequency's
// axis, takes cos/sin in double precision as the CPU does, and rotates x[i], x[i + half] in place.
#include "backend/cuda/rope.cuh"

namespace ds4::cuda {
namespace {

__global__ void rope_kernel(float* x, int64_t T, int64_t heads, int64_t token_stride, int64_t head_stride,
                            RopeParams rope, Positions pos) {
  [[maybe_unused]] const auto pdl = detail::pdl_enter();
  const int64_t half = rope.rotary_dim / 2, n = T * heads * half;
  for (int64_t idx = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; idx < n; idx += int64_t(gridDim.x) * blockDim.x) {
    const int64_t i = idx % half, th = idx / half, h = th % heads, t = th / heads;
    float* v = x + t * token_stride + h * head_stride;
    detail::rope_pair(v[i], v[i + half], i, t, rope, pos);
  }
}

}  // namespace

DeviceRope::DeviceRope(const cpu::RopeTable& table) : inv_freq_(table.inv_freq) {
  p_.inv_freq = inv_freq_.get();
  p_.rotary_dim = int32_t(table.rotary_dim);
  for (int i = 0; i < 3; i++) p_.section[i] = int32_t(table.mrope_section[size_t(i)]);
}

void apply_rope(Context& ctx, float* x, int64_t T, int64_t heads, int64_t token_stride, int64_t head_stride,
                const RopeParams& rope, Positions pos) {
  detail::require(rope.rotary_dim > 0 && rope.rotary_dim % 2 == 0 && rope.inv_freq, "apply_rope: bad rope table");
  detail::require(rope.rotary_dim <= head_stride || heads == 1, "apply_rope: rotary_dim exceeds the head stride");
  const int64_t n = T * heads * (rope.rotary_dim / 2);
  if (n <= 0) return;
  detail::launch(ctx, rope_kernel, detail::grid_for(ctx, n, 256), 256, 0, x, T, heads, token_stride, head_stride, rope, pos);
  DS4_CUDA_CHECK_LAUNCH();
}

}  // namespace ds4::cuda
