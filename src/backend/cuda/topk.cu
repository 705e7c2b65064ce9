// The public top-k: one warp per row over warp_topk_small (k <= 32, n <= 1024), else one block per row over
// block_topk_small (k <= 32), block_topk_rank (n <= 1024) or block_topk (topk.cuh).
#include "backend/cuda/topk.cuh"

namespace ds4::cuda {
namespace {

constexpr int64_t kMaxTopkN = 16384;  // 136 KiB of keys and marks: within the opt-in shared memory
constexpr int kRowsPerBlock = 4;      // warps (rows) per block of the warp kernel

__global__ void topk_kernel(const float* v, int64_t n, int64_t stride, int64_t k, detail::Item* replay, int32_t* idx) {
  [[maybe_unused]] const auto pdl = detail::pdl_enter();
  extern __shared__ __align__(16) unsigned char smem[];
  const int64_t r = blockIdx.x;
  const float* row = v + r * stride;
  if (k <= detail::kTopkSmallMax)
    detail::block_topk_small([row](int i) { return row[i]; }, int(n), int(k), smem, replay + r * n, idx + r * k);
  else if (n <= detail::kTopkRankMaxN)
    detail::block_topk_rank([row](int i) { return row[i]; }, int(n), int(k), smem, replay + r * n, idx + r * k);
  else
    detail::block_topk([row](int i) { return row[i]; }, int(n), int(k), smem, replay + r * n, idx + r * k);
}

// Warp w of the block takes row blockIdx.x * kRowsPerBlock + w; n <= 32 * PER.
template <int PER>
__global__ void topk_warp_kernel(const float* v, int64_t rows, int64_t n, int64_t stride, int64_t k,
                                 detail::Item* replay, int32_t* idx) {
  [[maybe_unused]] const auto pdl = detail::pdl_enter();
  const int64_t r = int64_t(blockIdx.x) * kRowsPerBlock + (threadIdx.x >> 5);
  if (r >= rows) return;  // the whole warp; the kernel has no block barrier
  const int lane = int(threadIdx.x & 31);
  const float* row = v + r * stride;
  float x[PER];
#pragma unroll
  for (int j = 0; j < PER; j++) x[j] = lane + 32 * j < n ? row[lane + 32 * j] : 0.0f;
  const int mine = detail::warp_topk_small<PER>(x, int(n), int(k), replay + r * n);
  if (lane < k) idx[r * k + lane] = mine;
}

}  // namespace

void topk(Context& ctx, const float* v, int64_t rows, int64_t n, int64_t stride, int64_t k, int32_t* idx) {
  detail::require(n >= 1 && k >= 1 && k <= n && stride >= n, "topk: need 1 <= k <= n <= stride");
  detail::require_supported(n <= kMaxTopkN, "topk: rows longer than " + std::to_string(kMaxTopkN));
  detail::require(rows < (int64_t(1) << 31), "topk: too many rows");
  if (rows <= 0) return;
  ScratchScope scope(ctx.scratch());
  auto* replay = ctx.scratch().take<detail::Item>(size_t(rows * n));
  if (k <= detail::kTopkSmallMax && n <= 1024) {
    detail::with_lanes_per(n, [&](auto per) {
      detail::launch(ctx, topk_warp_kernel<decltype(per)::value>, detail::blocks_for(rows, kRowsPerBlock),
                     32 * int(detail::imin(rows, kRowsPerBlock)), 0, v, rows, n, stride, k, replay, idx);
      DS4_CUDA_CHECK_LAUNCH();
    });
    return;
  }
  const size_t smem = k <= detail::kTopkSmallMax ? detail::topk_small_smem_bytes(n) : detail::topk_smem_bytes(n);
  detail::allow_smem(ctx, topk_kernel, smem);
  detail::launch(ctx, topk_kernel, unsigned(rows), 256, smem, v, n, stride, k, replay, idx);
  DS4_CUDA_CHECK_LAUNCH();
}

}  // namespace ds4::cuda
