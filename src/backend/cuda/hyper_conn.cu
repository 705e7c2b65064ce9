// The fused hyper-connection mixer for decode and short verification chunks (hc_mix_fused, ops.h).
//
// The composition (rms_norm_offset -> linear(down | inject) -> activate -> linear(up) -> hc_collapse ->
// activate) is seven kernel launches and three round trips of [T][S*H] float32 through memory around two
// bandwidth-bound GEMVs (down | inject: (R + S) x S*H, up: S*H x R; 13.2 MB of bf16 at the Flash-Next shape).
// Here it is two kernels, each streaming one of the two matrices exactly once whatever T is:
//
// Kernel 1 (hc_down_kernel): grid = row groups (16 rows) x K chunks. A chunk lies inside one stream's H columns,
// so its partial dot products can be taken against the unnormalised u = x * (1 + norm): the stream's RMS scale
// inv_s is one factor of the whole chunk and is applied later. Each block stages u of its chunk for the T tokens
// in shared memory, each warp dots two rows with it (every lane holds its 2 x 5 128-bit weight loads in
// registers while it loops over the tokens) and writes partial[chunk][t][row]. The blocks of row group 0 also
// write each chunk's float64 sum of squares per token. No atomics: every value has one writer.
//
// The last block of kernel 1 to finish (gemv.cuh: last_block_of) turns the partials into inv_s per (token,
// stream), low[t][0..R) = silu((sum_s inv_s * sum_chunks partial) / S) and the inject weights, once, in a fixed
// order.
//
// Kernel 2 (hc_up_kernel): a warp per h value streams the S up-rows s*H + h against low (staged in shared
// memory); lane s holds normed[t][s*H + h] (recomputed from x, norm and inv_s exactly as the CPU computes it), and
// lane 0 folds the streams in order: mixed = sum_s sigmoid(mix) * normed / S.
//
// The results agree with the composition (and the CPU) to float32 rounding: the only reassociation is
// inv_s * sum(w * x * (1 + norm)) for sum(w * (x * inv_s) * (1 + norm)), and the order of the sums. Every sum
// has a fixed order that depends on the shape only, never on T or on the other tokens (chunks, partitions and
// lane reductions are per token), so a token's row is bit-identical whether it is decoded alone or verified in
// a chunk, as with the GEMVs of the composition; and no atomics, so graphs and eager runs agree bit for bit.
#include <algorithm>

#include "backend/cuda/gemv.cuh"

namespace ds4::cuda {
namespace {

constexpr int kThreads = 256;           // both kernels: 8 warps
constexpr int kGroups = 5;              // 8-element column groups per lane per row (both kernels)
// Kernel 1: a warp dots 2 rows, a block 16; a chunk is at most 5 groups x 32 lanes x 8 = 1280 columns.
constexpr int kDownRowsPerWarp = 2;
constexpr int64_t kDownRows = kDownRowsPerWarp * (kThreads / 32);
constexpr int64_t kMaxChunk = int64_t(kGroups) * 32 * 8;
// Kernel 2: a warp per h value; low [T][R] staged in shared memory (R <= 1024 keeps T x R under the 48 KiB that
// needs no opt-in).
constexpr int64_t kMaxLowrank = 1024;
constexpr int64_t kMaxStreams = 32;  // kernel 2: one lane per stream
constexpr int64_t kMaxHidden = int64_t(1) << 20;

// Element k of a staged vector of n elements (n a multiple of 8) sits at plane (k % 8) / 4, slot 4 (k / 8) + k % 4,
// planes n / 2 apart: the lane that owns group g (elements 8g .. 8g + 7) reads two float4 at 4g of each plane,
// so consecutive lanes read consecutive 16 bytes (no bank conflicts).
__device__ __forceinline__ int64_t plane_slot(int64_t k, int64_t n) {
  return ((k & 7) >> 2) * (n >> 1) + ((k >> 3) << 2) + (k & 3);
}

// Starts the 128-byte lines of n spans of len bf16 each (span i at p + i * stride) on their way into L2, the
// block's threads sharing the lines. Weights are never written by the kernels before this one, so this may run
// before pdl_enter (as linear.cu does): while the previous kernel finishes, the weights already stream in.
__device__ __forceinline__ void prefetch_spans(const bf16* p, int64_t n, int64_t stride, int64_t len) {
  if (len <= 0) return;
  const int64_t per = len * 2 / 128 + 2;  // lines a span of len * 2 bytes can touch
  for (int64_t i = threadIdx.x; i < n * per; i += blockDim.x) {
    const uintptr_t s = reinterpret_cast<uintptr_t>(p + (i / per) * stride);
    const uintptr_t line = (s & ~uintptr_t(127)) + uintptr_t(i % per) * 128;  // same page as s: mapped
    if (line < s + uintptr_t(len) * 2) detail::prefetch_l2(reinterpret_cast<const void*>(line));
  }
}

// Sums each of v[0..V) over the L lanes of a team (aligned groups of L consecutive lanes; V and L powers of two)
// by recursive halving: at each step a lane keeps half of its values and adds its partner's copy of that half,
// sending the other half (the kernels reduce 2 rows at a time: 5 shuffles over a warp instead of 10, 3 over a
// team of 8 instead of 6). Afterwards, with l = lane % L:
// V >= L: v[k] (k < V / L) holds the total of value l * (V / L) + k; V < L: v[0] holds the total of value
// l / (L / V) (the same in all L / V lanes of a subgroup).
template <int N, int O, int V>
__device__ __forceinline__ void team_sum_step(float (&v)[V], int lane) {
  if constexpr (O >= 1) {
    if constexpr (N > 1) {
      const bool upper = (lane & O) != 0;
#pragma unroll
      for (int k = 0; k < N / 2; k++) {
        const float send = upper ? v[k] : v[k + N / 2];
        const float keep = upper ? v[k + N / 2] : v[k];
        v[k] = keep + __shfl_xor_sync(0xffffffffu, send, O);
      }
      team_sum_step<N / 2, O / 2, V>(v, lane);
    } else {
      v[0] += __shfl_xor_sync(0xffffffffu, v[0], O);
      team_sum_step<1, O / 2, V>(v, lane);
    }
  }
}
template <int V, int L>
__device__ __forceinline__ void team_sum_scatter(float (&v)[V]) {
  static_assert(V > 0 && (V & (V - 1)) == 0 && L > 0 && L <= 32 && (L & (L - 1)) == 0, "powers of two");
  team_sum_step<V, L / 2, V>(v, int(threadIdx.x & 31));
}

// Calls put(index, total) once for each value of a team_sum_scatter<V, L> result (each by one lane).
template <int V, int L, class Put>
__device__ __forceinline__ void team_sum_results(const float (&v)[V], Put put) {
  const int l = int(threadIdx.x & 31) % L;
  if constexpr (V >= L) {
#pragma unroll
    for (int k = 0; k < V / L; k++) put(l * (V / L) + k, v[k]);
  } else {
    if (l % (L / V) == 0) put(l / (L / V), v[0]);
  }
}

struct DownArgs {
  const float* x;    // [T][D]
  const bf16* norm;  // [D] or null (then 1 + 0)
  const bf16* W;     // [>= N][D]: down rows, then inject rows
  int64_t T, H, D, N;
  int64_t KC, cps;   // chunk length (multiple of 8) and chunks per stream
  float* part;       // [C][T][N]
  double* ssq;       // [C][T]
  int64_t S, R;
  float eps;
  int* counter;      // Context::counters: the blocks that have finished
  float* low;        // [T][R] out: silu(down . normed / S)
  float* inv;        // [T][S] out: 1 / rms of each stream
  float* inject;     // [T][S] out, or null
};

template <int NT>
__global__ void __launch_bounds__(kThreads, 2) hc_down_kernel(DownArgs a) {
  extern __shared__ __align__(16) float us[];  // [T][KC] in plane order: u = x * (1 + norm) of the chunk
  const int warp = int(threadIdx.x >> 5), lane = int(threadIdx.x & 31);
  const int64_t c = blockIdx.y, s = c / a.cps, cc = c % a.cps;
  const int64_t k0 = s * a.H + cc * a.KC, len = detail::imin(a.KC, a.H - cc * a.KC), ng = len / 8;
  const int64_t r0 = int64_t(blockIdx.x) * kDownRows;
  prefetch_spans(a.W + r0 * a.D + k0, detail::imin(kDownRows, a.N - r0), a.D, len);
  detail::pdl_enter();

  // The warp's two rows, all of the chunk: 10 loads of 16 bytes per lane in flight before anything else.
  const int64_t rw = r0 + int64_t(warp) * kDownRowsPerWarp;
  uint4 w[kDownRowsPerWarp][kGroups];
#pragma unroll
  for (int i = 0; i < kDownRowsPerWarp; i++)
#pragma unroll
    for (int j = 0; j < kGroups; j++) {
      const int64_t g = lane + 32 * j;
      w[i][j] = rw + i < a.N && g < ng ? detail::ld_stream(a.W + (rw + i) * a.D + k0 + 8 * g)
                                       : make_uint4(0u, 0u, 0u, 0u);
    }

  // Stage u for the T tokens, four columns at a time (they share a plane: consecutive slots).
  const int64_t n4 = len / 4, half = a.KC / 2;
  for (int64_t i = threadIdx.x; i < a.T * n4; i += blockDim.x) {
    const int64_t t = i / n4, k = (i % n4) * 4;
    const float4 xv = *reinterpret_cast<const float4*>(a.x + t * a.D + k0 + k);
    float o[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    if (a.norm) {
#pragma unroll
      for (int e = 0; e < 4; e++) o[e] = detail::bf(a.norm[k0 + k + e]);
    }
    const float4 u =
        make_float4(xv.x * (1.0f + o[0]), xv.y * (1.0f + o[1]), xv.z * (1.0f + o[2]), xv.w * (1.0f + o[3]));
    *reinterpret_cast<float4*>(us + t * a.KC + plane_slot(k, a.KC)) = u;
  }
  __syncthreads();

  // acc[i * NT + t]: row rw + i, token t. Only staged groups (g < ng) and tokens (t < T) are read.
  float acc[kDownRowsPerWarp * NT];
#pragma unroll
  for (int i = 0; i < kDownRowsPerWarp * NT; i++) acc[i] = 0.0f;
#pragma unroll
  for (int t = 0; t < NT; t++) {
    if (t >= a.T) break;
    const float* p0 = us + t * a.KC;
    const float* p1 = p0 + half;
#pragma unroll
    for (int j = 0; j < kGroups; j++) {
      const int64_t g = lane + 32 * j;
      if (g < ng) {
        const float4 lo = *reinterpret_cast<const float4*>(p0 + 4 * g);
        const float4 hi = *reinterpret_cast<const float4*>(p1 + 4 * g);
#pragma unroll
        for (int i = 0; i < kDownRowsPerWarp; i++) acc[i * NT + t] += detail::dot8(w[i][j], lo, hi);
      }
    }
  }
  // One reduction per token, so a token's sums do not depend on how many tokens share the call.
#pragma unroll
  for (int t = 0; t < NT; t++) {
    if (t >= a.T) break;
    float v[kDownRowsPerWarp];
#pragma unroll
    for (int i = 0; i < kDownRowsPerWarp; i++) v[i] = acc[i * NT + t];
    team_sum_scatter<kDownRowsPerWarp, 32>(v);
    team_sum_results<kDownRowsPerWarp, 32>(v, [&](int i, float sum) {
      if (rw + i < a.N) a.part[(c * a.T + t) * a.N + rw + i] = sum;
    });
  }

  // The chunk's sum of squares of x per token, in float64 as cpu::rms_norm_offset, by the whole block (one warp
  // walking 1280 columns was the kernel's slowest block). blockIdx.x is uniform over the block, so the barriers
  // inside block_sum are reached by every thread.
  if (blockIdx.x == 0) {
    __shared__ double red[32];
    for (int64_t t = 0; t < a.T; t++) {
      const float* xr = a.x + t * a.D + k0;
      double ss = 0.0;
#pragma unroll 4
      for (int64_t k = threadIdx.x; k < len; k += blockDim.x) ss += double(xr[k]) * double(xr[k]);
      ss = detail::block_sum(ss, red);
      if (threadIdx.x == 0) a.ssq[c * a.T + t] = ss;
    }
  }

  // The last block to finish turns the partials into what kernel 2 needs, once: inv[t][s] from the chunks' sums
  // of squares (chunks of a stream in order, as cpu::rms_norm_offset), then low[t][r] = silu(sum_s inv_s *
  // (sum of the stream's chunk partials) / S) and the inject weights 2 sigmoid(. / S) from rows R + j. Every
  // sum has a fixed order; the loops are flat and unrolled so that their loads are in flight together.
  if (!detail::last_block_of(a.counter, int(gridDim.x * gridDim.y))) return;
  float* inv = us;  // the staged chunk is no longer read: [T][S]
  __syncthreads();
  for (int64_t i = threadIdx.x; i < a.T * a.S; i += blockDim.x) {
    const int64_t t = i / a.S, st = i % a.S;
    double ss = 0.0;
#pragma unroll 4
    for (int64_t q = 0; q < a.cps; q++) ss += __ldcg(a.ssq + (st * a.cps + q) * a.T + t);
    const float v = 1.0f / sqrtf(float(ss / double(a.H)) + a.eps);
    inv[i] = v;
    a.inv[i] = v;
  }
  __syncthreads();
  for (int64_t i = threadIdx.x; i < a.T * a.N; i += blockDim.x) {
    const int64_t t = i / a.N, r = i % a.N;
    // Nested loops with no division inside (a flat loop's 64-bit divisions cost more than its loads), unrolled
    // so that the loads of several streams are issued before the first sum needs them.
    float dot = 0.0f;
#pragma unroll 4
    for (int64_t st = 0; st < a.S; st++) {
      float ps = 0.0f;
#pragma unroll 2
      for (int64_t q = 0; q < a.cps; q++) ps += __ldcg(a.part + ((st * a.cps + q) * a.T + t) * a.N + r);
      dot += inv[t * a.S + st] * ps;
    }
    if (r < a.R) a.low[t * a.R + r] = detail::silu(dot / float(a.S));
    else if (a.inject) a.inject[t * a.S + (r - a.R)] = 2.0f * detail::sigmoid(dot / float(a.S));
  }
}

struct UpArgs {
  const float* x;     // [T][D]
  const bf16* norm;   // [D] or null
  const bf16* up;     // [D][R]
  const float* low;   // [T][R] from hc_down_kernel's last block
  const float* inv;   // [T][S]
  int64_t T, S, H, D, R;
  float* mixed;       // [T][H]
};

// Kernel 2: a warp per h. Lane s < S holds the stream-s inputs of h (x and 1 + norm, then normed) for every
// token; the warp streams the S up-rows s*H + h (four at a time, every lane's chunks of them in flight
// together), dots each with low[t] (staged in shared memory), and lane 0 folds the streams in order:
// mixed[t][h] = sum_s sigmoid(mix) * normed / S, normed = (x * inv) * (1 + norm) exactly as the CPU.
template <int NT>
__global__ void __launch_bounds__(kThreads) hc_up_kernel(UpArgs a) {
  constexpr int kRowsAtOnce = 4, kMaxChunks = kMaxLowrank / 8 / 32;  // chunks of 8 per lane per row
  extern __shared__ __align__(16) float low[];  // [T][R] in plane order
  const int warp = int(threadIdx.x >> 5), lane = int(threadIdx.x & 31);
  const int64_t h = int64_t(blockIdx.x) * (kThreads / 32) + warp, hh = detail::imin(h, a.H - 1);
  const int64_t R8 = a.R / 8;
  // The rows of this warp are never written by earlier kernels: on their way into L2 while the previous runs.
  for (int64_t s = 0; s < a.S; s++)
    if (lane * 8 < R8) detail::prefetch_l2(a.up + (s * a.H + hh) * a.R + lane * 64);
  float one_plus = 1.0f;
  if (lane < a.S && a.norm) one_plus = 1.0f + detail::bf(a.norm[lane * a.H + hh]);
  detail::pdl_enter();
  float xs[NT], normed[NT];
#pragma unroll
  for (int t = 0; t < NT; t++) xs[t] = t < a.T && lane < a.S ? a.x[t * a.D + lane * a.H + hh] : 0.0f;
  for (int64_t i = threadIdx.x; i < a.T * a.R; i += blockDim.x) {
    const int64_t t = i / a.R, r = i % a.R;
    low[t * a.R + plane_slot(r, a.R)] = a.low[i];
  }
#pragma unroll
  for (int t = 0; t < NT; t++)
    normed[t] = t < a.T && lane < a.S ? (xs[t] * a.inv[t * a.S + lane]) * one_plus : 0.0f;
  __syncthreads();
  float m[NT];
#pragma unroll
  for (int t = 0; t < NT; t++) m[t] = 0.0f;
  for (int64_t s0 = 0; s0 < a.S; s0 += kRowsAtOnce) {
    uint4 w[kRowsAtOnce][kMaxChunks];
    // Unconditional loads of valid addresses (a missing row or chunk re-reads row s0's chunk lane % R8; its
    // products are never used), so that all of them are issued before the first is needed.
#pragma unroll
    for (int q = 0; q < kRowsAtOnce; q++)
#pragma unroll
      for (int j = 0; j < kMaxChunks; j++) {
        const int64_t g = lane + 32 * j;
        const bool ok = s0 + q < a.S && g < R8;
        w[q][j] = detail::ld_stream(a.up + ((ok ? s0 + q : s0) * a.H + hh) * a.R + 8 * (ok ? g : lane % R8));
      }
#pragma unroll
    for (int t = 0; t < NT; t++) {
      if (t >= a.T) break;
      const float* p0 = low + t * a.R;
      const float* p1 = p0 + a.R / 2;
      float acc[kRowsAtOnce] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
      for (int j = 0; j < kMaxChunks; j++) {
        const int64_t g = lane + 32 * j;
        if (g < R8) {
          const float4 lo = *reinterpret_cast<const float4*>(p0 + 4 * g);
          const float4 hi = *reinterpret_cast<const float4*>(p1 + 4 * g);
#pragma unroll
          for (int q = 0; q < kRowsAtOnce; q++) acc[q] += detail::dot8(w[q][j], lo, hi);
        }
      }
#pragma unroll
      for (int q = 0; q < kRowsAtOnce; q++) {
        const float mix = detail::warp_sum(acc[q]);
        const float nv = __shfl_sync(0xffffffffu, normed[t], int(s0) + q < 32 ? int(s0) + q : 0);
        if (s0 + q < a.S) m[t] += detail::sigmoid(mix) * nv;  // streams in order, as the CPU
      }
    }
  }
  if (lane == 0 && h < a.H)
#pragma unroll
    for (int t = 0; t < NT; t++)
      if (t < a.T) a.mixed[t * a.H + h] = m[t] / float(a.S);
}

template <int NT>
void launch_fused(Context& ctx, const DownArgs& d, dim3 g1, size_t smem1, const UpArgs& u, dim3 g2, size_t smem2) {
  detail::launch(ctx, hc_down_kernel<NT>, g1, kThreads, smem1, d);
  DS4_CUDA_CHECK_LAUNCH();
  detail::launch(ctx, hc_up_kernel<NT>, g2, kThreads, smem2, u);
  DS4_CUDA_CHECK_LAUNCH();
}

}  // namespace

bool hc_mix_fused_supported(int64_t T, int64_t streams, int64_t H, int64_t lowrank, int64_t down_rows) {
  return T >= 1 && T <= kHcFusedMaxT && streams >= 1 && streams <= kMaxStreams && H > 0 && H <= kMaxHidden &&
         H % 8 == 0 && lowrank > 0 && lowrank <= kMaxLowrank && lowrank % 8 == 0 &&
         (down_rows == lowrank || down_rows == lowrank + streams);
}

void hc_mix_fused(Context& ctx, const float* x, int64_t T, int64_t streams, int64_t H, int64_t lowrank,
                  const bf16* norm, const bf16* down_inject, int64_t down_rows, const bf16* up, float eps,
                  float* mixed, float* inject) {
  const int64_t S = streams, R = lowrank, D = S * H;
  detail::require_supported(hc_mix_fused_supported(T, S, H, R, down_rows),
                            "hc_mix_fused: needs 1 <= T <= 8, H and lowrank multiples of 8, lowrank <= 1024, "
                            "streams <= 64 and down_rows = lowrank (+ streams)");
  detail::require(x && down_inject && up && mixed, "hc_mix_fused: null operand");
  detail::require(!inject || down_rows == R + S, "hc_mix_fused: inject weights need the inject rows in down_inject");
  // 128-bit loads of x, down_inject and up (rows of D and R elements keep the alignment: both multiples of 8).
  detail::require_supported(detail::aligned16(x) && detail::aligned16(down_inject) && detail::aligned16(up),
                            "hc_mix_fused: x, down_inject and up must be 16-byte aligned");

  // K chunks: a stream's H columns in cps chunks of KC (a multiple of 8, at most kMaxChunk), the last one
  // possibly shorter but never empty. H = 2560: 2 chunks of 1280 per stream, 8 in all, and with 21 row groups
  // of the 324 rows 168 blocks, each streaming 40 KB.
  int64_t cps = (H + kMaxChunk - 1) / kMaxChunk;
  const int64_t KC = ((H + cps - 1) / cps + 7) / 8 * 8;
  cps = (H + KC - 1) / KC;
  const int64_t C = S * cps;
  const int64_t N = inject ? R + S : R;  // inject rows are not read when not wanted

  ScratchScope scope(ctx.scratch());
  float* part = ctx.scratch().take<float>(size_t(C * T * N));
  double* ssq = ctx.scratch().take<double>(size_t(C * T));
  float* low = ctx.scratch().take<float>(size_t(T * R));
  float* inv = ctx.scratch().take<float>(size_t(T * S));

  const dim3 g1(unsigned((N + kDownRows - 1) / kDownRows), unsigned(C));
  const dim3 g2(unsigned((H + kThreads / 32 - 1) / (kThreads / 32)));
  detail::require(int64_t(g1.x) * g1.y < (int64_t(1) << 31), "hc_mix_fused: too many blocks");
  const DownArgs d{x, norm, down_inject, T, H, D, N, KC, cps, part, ssq, S, R, eps, ctx.counters(), low, inv, inject};
  const UpArgs u{x, norm, up, low, inv, T, S, H, D, R, mixed};
  // At most 8 x 1280 x 4 = 40 KiB (kernel 1 also keeps inv [T][S] there at the end) and 8 x 1024 x 4 = 32 KiB:
  // no opt-in needed.
  const size_t smem1 = size_t(T * std::max(KC, S)) * sizeof(float), smem2 = size_t(T * R) * sizeof(float);
  if (T == 1) launch_fused<1>(ctx, d, g1, smem1, u, g2, smem2);
  else if (T == 2) launch_fused<2>(ctx, d, g1, smem1, u, g2, smem2);
  else if (T <= 4) launch_fused<4>(ctx, d, g1, smem1, u, g2, smem2);
  else launch_fused<8>(ctx, d, g1, smem1, u, g2, smem2);
}

}  // namespace ds4::cuda
