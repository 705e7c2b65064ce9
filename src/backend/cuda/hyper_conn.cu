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
// Kernel 2 (hc_up_kernel): each block owns a range of h and the S up-rows s*H + h of each. It first issues its
// up-row loads, then (while they are in flight) rebuilds what it needs from kernel 1's partials: inv_s per
// (token, stream) and low[t][0..R) = silu((sum_s inv_s * sum_chunks partial) / S), in a fixed order, so every
// block computes bit-identical values; block 0 also writes inject. Teams of 8 lanes dot one up-row with low,
// sigmoid it, and the block folds the S streams: mixed = sum_s sigmoid(mix) * normed / S with normed recomputed
// from x, norm and inv_s exactly as the CPU computes it.
//
// The results agree with the composition (and the CPU) to float32 rounding: the only reassociation is
// inv_s * sum(w * x * (1 + norm)) for sum(w * (x * inv_s) * (1 + norm)), and the order of the sums. Every sum
// has a fixed order that depends on the shape only, never on T or on the other tokens (chunks, partitions and
// lane reductions are per token), so a token's row is bit-identical whether it is decoded alone or verified in
// a chunk, as with the GEMVs of the composition; and no atomics, so graphs and eager runs agree bit for bit.
#include "backend/cuda/common.cuh"

namespace ds4::cuda {
namespace {

constexpr int kThreads = 256;           // both kernels: 8 warps
constexpr int kGroups = 5;              // 8-element column groups per lane per row (both kernels)
// Kernel 1: a warp dots 2 rows, a block 16; a chunk is at most 5 groups x 32 lanes x 8 = 1280 columns.
constexpr int kDownRowsPerWarp = 2;
constexpr int64_t kDownRows = kDownRowsPerWarp * (kThreads / 32);
constexpr int64_t kMaxChunk = int64_t(kGroups) * 32 * 8;
// Kernel 2: teams of 8 lanes, 2 up-rows per team, so 64 rows (h values x streams) per block; a column pass of a
// team covers 5 groups x 8 lanes = 40 groups (320 columns: all of R at the Flash-Next shape).
constexpr int kTeam = 8;
constexpr int kUpRowsPerTeam = 2;
constexpr int64_t kUpRows = int64_t(kUpRowsPerTeam) * (kThreads / kTeam);
constexpr int64_t kUpPassGroups = int64_t(kGroups) * kTeam;
// Shared memory of kernel 2 holds low [T][R]: R <= 1024 keeps it (with the rest) under the 48 KiB that needs no
// opt-in.
constexpr int64_t kMaxLowrank = 1024;
constexpr int64_t kMaxStreams = kUpRows;  // a block covers at least one h with all its streams
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

  // The chunk's sum of squares of x per token, in float64 as cpu::rms_norm_offset (one warp per token).
  if (blockIdx.x == 0)
    for (int64_t t = warp; t < a.T; t += kThreads / 32) {
      const float* xr = a.x + t * a.D + k0;
      double ss = 0.0;
      for (int64_t k = lane; k < len; k += 32) ss += double(xr[k]) * double(xr[k]);
      ss = detail::warp_sum(ss);
      if (lane == 0) a.ssq[c * a.T + t] = ss;
    }
}

struct UpArgs {
  const float* x;     // [T][D]
  const bf16* norm;   // [D] or null
  const bf16* up;     // [D][R]
  const float* part;  // [C][T][N] from hc_down_kernel
  const double* ssq;  // [C][T]
  int64_t T, S, H, D, R, N, cps, HB;  // HB: h values per block (HB * S <= kUpRows)
  float eps;
  float* mixed;   // [T][H]
  float* inject;  // [T][S] or null (then N may be R)
};

template <int NT>
__global__ void __launch_bounds__(kThreads, 2) hc_up_kernel(UpArgs a) {
  extern __shared__ __align__(16) float sm[];
  float* low = sm;                     // [T][R] in plane order
  float* sig = low + a.T * a.R;        // [T][kUpRows]: sigmoid(mix) of the block's rows
  float* inv = sig + a.T * kUpRows;    // [T][S]: 1 / rms of each token's streams
  const int lane = int(threadIdx.x & 31), team = int(threadIdx.x / kTeam), l = lane % kTeam;
  const int64_t h0 = int64_t(blockIdx.x) * a.HB, hn = detail::imin(a.HB, a.H - h0), rows = hn * a.S;
  // The block's rows s*H + h0 .. s*H + h0 + hn - 1 are contiguous in up for each s.
  prefetch_spans(a.up + h0 * a.R, a.S, a.H * a.R, hn * a.R);
  detail::pdl_enter();

  // Block row q = hl * S + s is up-row s*H + h0 + hl; team rows q = team + 32 u.
  const int64_t R8 = a.R / 8;
  const bf16* rp[kUpRowsPerTeam];
  bool rv[kUpRowsPerTeam];
#pragma unroll
  for (int u = 0; u < kUpRowsPerTeam; u++) {
    const int64_t q = team + int64_t(kThreads / kTeam) * u;
    rv[u] = q < rows;
    rp[u] = rv[u] ? a.up + ((q % a.S) * a.H + h0 + q / a.S) * a.R : a.up;
  }
  uint4 w[kUpRowsPerTeam][kGroups];
  auto load = [&](int64_t cb) {
#pragma unroll
    for (int u = 0; u < kUpRowsPerTeam; u++)
#pragma unroll
      for (int j = 0; j < kGroups; j++) {
        const int64_t g = cb + l + kTeam * j;
        w[u][j] = rv[u] && g < R8 ? detail::ld_stream(rp[u] + 8 * g) : make_uint4(0u, 0u, 0u, 0u);
      }
  };
  load(0);  // in flight while the block rebuilds low below

  // inv[t][s] from the chunks' sums of squares (chunks of a stream in order), as cpu::rms_norm_offset.
  for (int64_t i = threadIdx.x; i < a.T * a.S; i += blockDim.x) {
    const int64_t t = i / a.S, s = i % a.S;
    double ss = 0.0;
    for (int64_t cc = 0; cc < a.cps; cc++) ss += a.ssq[(s * a.cps + cc) * a.T + t];
    inv[i] = 1.0f / sqrtf(float(ss / double(a.H)) + a.eps);
  }
  __syncthreads();
  // low[t][r] = silu(down_r . normed_t / S) for every block (the same fixed order everywhere); block 0 also
  // the inject weights 2 sigmoid(inject_j . normed_t / S) from rows R + j.
  const int64_t n_low = a.T * a.R, n_all = n_low + (blockIdx.x == 0 && a.inject ? a.T * a.S : 0);
  for (int64_t i = threadIdx.x; i < n_all; i += blockDim.x) {
    const bool is_low = i < n_low;
    const int64_t t = is_low ? i / a.R : (i - n_low) / a.S, r = is_low ? i % a.R : a.R + (i - n_low) % a.S;
    float dot = 0.0f;
    for (int64_t s = 0; s < a.S; s++) {
      float ps = 0.0f;
      for (int64_t cc = 0; cc < a.cps; cc++) ps += a.part[((s * a.cps + cc) * a.T + t) * a.N + r];
      dot += inv[t * a.S + s] * ps;
    }
    if (is_low) low[t * a.R + plane_slot(r, a.R)] = detail::silu(dot / float(a.S));
    else a.inject[t * a.S + (r - a.R)] = 2.0f * detail::sigmoid(dot / float(a.S));
  }
  __syncthreads();

  // mix of the team's rows: acc[u * NT + t]. Passes of 40 groups (one pass for R <= 320).
  float acc[kUpRowsPerTeam * NT];
#pragma unroll
  for (int i = 0; i < kUpRowsPerTeam * NT; i++) acc[i] = 0.0f;
  for (int64_t cb = 0;;) {
#pragma unroll
    for (int t = 0; t < NT; t++) {
      if (t >= a.T) break;
      const float* p0 = low + t * a.R;
      const float* p1 = p0 + a.R / 2;
#pragma unroll
      for (int j = 0; j < kGroups; j++) {
        const int64_t g = cb + l + kTeam * j;
        if (g < R8) {
          const float4 lo = *reinterpret_cast<const float4*>(p0 + 4 * g);
          const float4 hi = *reinterpret_cast<const float4*>(p1 + 4 * g);
#pragma unroll
          for (int u = 0; u < kUpRowsPerTeam; u++) acc[u * NT + t] += detail::dot8(w[u][j], lo, hi);
        }
      }
    }
    cb += kUpPassGroups;
    if (cb >= R8) break;
    load(cb);
  }
#pragma unroll
  for (int t = 0; t < NT; t++) {
    if (t >= a.T) break;
    float v[kUpRowsPerTeam];
#pragma unroll
    for (int u = 0; u < kUpRowsPerTeam; u++) v[u] = acc[u * NT + t];
    team_sum_scatter<kUpRowsPerTeam, kTeam>(v);
    team_sum_results<kUpRowsPerTeam, kTeam>(v, [&](int u, float sum) {
      const int64_t q = team + int64_t(kThreads / kTeam) * u;
      if (q < rows) sig[t * kUpRows + q] = detail::sigmoid(sum);
    });
  }
  __syncthreads();

  // mixed[t][h] = sum_s sigmoid(mix) * normed / S, streams in order, normed = (x * inv) * (1 + norm) as the CPU.
  for (int64_t i = threadIdx.x; i < a.T * hn; i += blockDim.x) {
    const int64_t t = i / hn, hl = i % hn, h = h0 + hl;
    float m = 0.0f;
    for (int64_t s = 0; s < a.S; s++) {
      const int64_t k = s * a.H + h;
      const float o = a.norm ? detail::bf(a.norm[k]) : 0.0f;
      const float normed = (a.x[t * a.D + k] * inv[t * a.S + s]) * (1.0f + o);
      m += sig[t * kUpRows + hl * a.S + s] * normed;
    }
    a.mixed[t * a.H + h] = m / float(a.S);
  }
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
  const int64_t HB = kUpRows / S;        // h values per kernel-2 block: 16 at S = 4, 160 blocks at H = 2560

  ScratchScope scope(ctx.scratch());
  float* part = ctx.scratch().take<float>(size_t(C * T * N));
  double* ssq = ctx.scratch().take<double>(size_t(C * T));

  const DownArgs d{x, norm, down_inject, T, H, D, N, KC, cps, part, ssq};
  const UpArgs u{x, norm, up, part, ssq, T, S, H, D, R, N, cps, HB, eps, mixed, inject};
  const dim3 g1(unsigned((N + kDownRows - 1) / kDownRows), unsigned(C)), g2(unsigned((H + HB - 1) / HB));
  // At most 8 x 1280 x 4 = 40 KiB and 8 x (1024 + 64 + 64) x 4 = 36 KiB: no opt-in needed.
  const size_t smem1 = size_t(T * KC) * sizeof(float), smem2 = size_t(T * (R + kUpRows + S)) * sizeof(float);
  if (T == 1) launch_fused<1>(ctx, d, g1, smem1, u, g2, smem2);
  else if (T == 2) launch_fused<2>(ctx, d, g1, smem1, u, g2, smem2);
  else if (T <= 4) launch_fused<4>(ctx, d, g1, smem1, u, g2, smem2);
  else launch_fused<8>(ctx, d, g1, smem1, u, g2, smem2);
}

}  // namespace ds4::cuda
