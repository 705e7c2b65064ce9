// The public top-k: one block per row over block_topk (topk.cuh).
#include "backend/cuda/topk.cuh"

namespace ds4::cuda {
namespace {

constexpr int64_t kMaxTopkN = 16384;  // 136 KiB of keys and marks: within the opt-in shared memory

__global__ void topk_kernel(const float* v, int64_t n, int64_t stride, int64_t k, detail::Item* replay, int32_t* idx) {
  detail::pdl_enter();
  extern __shared__ __align__(16) unsigned char smem[];
  const int64_t r = blockIdx.x;
  const float* row = v + r * stride;
  detail::block_topk([row](int i) { return row[i]; }, int(n), int(k), smem, replay + r * n, idx + r * k);
}

}  // namespace

void topk(Context& ctx, const float* v, int64_t rows, int64_t n, int64_t stride, int64_t k, int32_t* idx) {
  detail::require(n >= 1 && k >= 1 && k <= n && stride >= n, "topk: need 1 <= k <= n <= stride");
  detail::require_supported(n <= kMaxTopkN, "topk: rows longer than " + std::to_string(kMaxTopkN));
  detail::require(rows < (int64_t(1) << 31), "topk: too many rows");
  if (rows <= 0) return;
  ScratchScope scope(ctx.scratch());
  auto* replay = ctx.scratch().take<detail::Item>(size_t(rows * n));
  const size_t smem = detail::topk_smem_bytes(n);
  detail::allow_smem(ctx, topk_kernel, smem);
  detail::launch(ctx, topk_kernel, unsigned(rows), 256, smem, v, n, stride, k, replay, idx);
  DS4_CUDA_CHECK_LAUNCH();
}

}  // namespace ds4::cuda
