// RMSNorm variants and L2 normalisation. Each normalised segment (a group, a row or a head) is reduced by one
// warp when it is at most 1024 long (the common head-sized case: many small independent segments), else by a
// whole block. Sums of squares accumulate in float64 as cpu/norms.cpp does, so the scale factor agrees with the
// CPU to the last bit or two; the two passes over a segment read it from L1/L2 the second time.
#include "backend/cuda/common.cuh"
#include "backend/cuda/norm_math.cuh"

namespace ds4::cuda {
namespace {

using detail::block_sum;
using detail::warp_sum;

enum class NormKind { Offset, Gated, L2 };

struct NormArgs {
  const float* x;
  const float* z;    // gated only
  const bf16* w;     // may be null (Offset)
  float* y;
  int64_t segments;  // rows * groups
  int64_t seg_len;   // group
  int64_t groups;    // segments per row
  float eps, scale;
  Act act;
};

template <NormKind kind>
__device__ __forceinline__ float norm_scale(double ss, const NormArgs& a) {
  if (kind == NormKind::L2) return 1.0f / sqrtf(float(ss) + a.eps);
  return detail::rms_inv(ss, a.seg_len, a.eps);
}

// The weights of segment seg (Offset: its group's slice; Gated: the one shared row), computed once per segment:
// a 64-bit modulo per element made the long-segment kernel ten times slower than its memory traffic.
template <NormKind kind>
__device__ __forceinline__ const bf16* norm_weights(int64_t seg, const NormArgs& a) {
  if (kind == NormKind::Offset) return a.w ? a.w + (seg % a.groups) * a.seg_len : nullptr;
  return a.w;
}

template <NormKind kind>
__device__ __forceinline__ float norm_out(float xv, float inv, const bf16* w, int64_t i, int64_t off, const NormArgs& a) {
  if (kind == NormKind::L2) return (xv * inv) * a.scale;
  if (kind == NormKind::Offset) return detail::offset_norm(xv, inv, w ? __bfloat162float(w[i]) : 0.0f);
  return __bfloat162float(w[i]) * (xv * inv) * detail::apply_act(a.act, a.z[off + i]);
}

// One warp per segment; blockDim = 256 (8 segments per block).
template <NormKind kind>
__global__ void norm_warp_kernel(NormArgs a) {
  [[maybe_unused]] const auto pdl = detail::pdl_enter();
  const int64_t seg = int64_t(blockIdx.x) * 8 + (threadIdx.x >> 5);
  if (seg >= a.segments) return;
  const int lane = threadIdx.x & 31;
  const int64_t off = seg * a.seg_len;
  const float* xs = a.x + off;
  double ss = 0.0;
#pragma unroll 4
  for (int64_t i = lane; i < a.seg_len; i += 32) ss += double(xs[i]) * double(xs[i]);
  ss = warp_sum(ss);
  const float inv = norm_scale<kind>(ss, a);
  const bf16* w = norm_weights<kind>(seg, a);
#pragma unroll 4
  for (int64_t i = lane; i < a.seg_len; i += 32) a.y[off + i] = norm_out<kind>(xs[i], inv, w, i, off, a);
}

// One block per segment, for segments longer than 1024 (the hyper-connection norm: hidden_size). Few segments make
// few blocks, so each thread's loads are what the time is made of: many threads (1024), few loads each, unrolled so
// that they are in flight together; many segments (prefill) take 256 threads (launch_norm).
template <NormKind kind>
__global__ void norm_block_kernel(NormArgs a) {
  [[maybe_unused]] const auto pdl = detail::pdl_enter();
  __shared__ double red[32];
  const int64_t seg = blockIdx.x;
  const int64_t off = seg * a.seg_len;
  const float* xs = a.x + off;
  double ss = 0.0;
#pragma unroll 4
  for (int64_t i = threadIdx.x; i < a.seg_len; i += blockDim.x) ss += double(xs[i]) * double(xs[i]);
  ss = block_sum(ss, red);
  const float inv = norm_scale<kind>(ss, a);
  const bf16* w = norm_weights<kind>(seg, a);
#pragma unroll 4
  for (int64_t i = threadIdx.x; i < a.seg_len; i += blockDim.x) a.y[off + i] = norm_out<kind>(xs[i], inv, w, i, off, a);
}

template <NormKind kind>
void launch_norm(Context& ctx, const NormArgs& a) {
  if (a.segments == 0 || a.seg_len == 0) return;
  if (a.seg_len <= 1024) {
    detail::launch(ctx, norm_warp_kernel<kind>, detail::blocks_for(a.segments, 8), 256, 0, a);
  } else {
    detail::require(a.segments < (int64_t(1) << 31), "too many norm segments");
    // Prefill rows (more than 8: never a decode step or a verification chunk, whose rows keep the 1024-thread
    // sums) take 256 threads a segment, so that 8 segments are in flight per multiprocessor instead of 2: the
    // hyper-connection norm of 2048 tokens (8192 segments of 2560) took 116 us a call at 1024 threads.
    const int threads = a.segments > 8 * a.groups ? 256 : 1024;
    detail::launch(ctx, norm_block_kernel<kind>, unsigned(a.segments), threads, 0, a);
  }
  DS4_CUDA_CHECK_LAUNCH();
}

}  // namespace

void rms_norm_offset(Context& ctx, const float* x, const bf16* w, float* y, int64_t rows, int64_t dim, int64_t group,
                     float eps) {
  detail::require(rows >= 0 && dim >= 0 && group > 0 && dim % group == 0, "rms_norm_offset: dim must be a multiple of group");
  const int64_t groups = dim / group;
  launch_norm<NormKind::Offset>(ctx, NormArgs{x, nullptr, w, y, rows * groups, group, groups, eps, 1.0f, Act::None});
}

void rms_norm_gated(Context& ctx, const float* x, const float* z, const bf16* w, float* y, int64_t rows, int64_t dim,
                    float eps, Act act) {
  detail::require(rows >= 0 && dim > 0 && w && z, "rms_norm_gated: needs w and z");
  launch_norm<NormKind::Gated>(ctx, NormArgs{x, z, w, y, rows, dim, 1, eps, 1.0f, act});
}

void l2_norm(Context& ctx, float* x, int64_t rows, int64_t dim, float eps, float scale) {
  detail::require(rows >= 0 && dim > 0, "l2_norm: bad shape");
  launch_norm<NormKind::L2>(ctx, NormArgs{x, nullptr, nullptr, x, rows, dim, 1, eps, scale, Act::None});
}

}  // namespace ds4::cuda
