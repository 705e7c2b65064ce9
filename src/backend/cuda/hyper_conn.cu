// The fused hyper-connection mixer for decode and short verification chunks (hc_mix_fused, ops.h).
//
// The composition (rms_norm_offset -> linear(down | inject) -> activate -> linear(up) -> hc_collapse ->
// activate) is seven kernel launches and three round trips of [T][S*H] float32 through memory around two
// bandwidth-bound GEMVs (down | inject: (R + S) x S*H, up: S*H x R; 13.2 MB of bf16 at the Flash-Next shape).
// Here it is two kernels, each streaming one of the two matrices exactly once whatever T is:
//
// Kernel 1 (hc_low_kernel): each block owns kLowRows rows of down | inject and all of their K = S * H columns,
// in chunks that lie inside one stream (at most 1280 columns; H = 2560: 2 per stream, 8 in all, one per warp).
// A warp streams its chunk of the block's rows (every lane holds its 4 x 5 128-bit weight loads in registers),
// reads x and the norm weights at the same columns, and dots the rows with the unnormalised u = x * (1 + norm):
// the stream's RMS scale inv_s is one factor of the whole chunk and is applied later. It also sums x^2 of the
// chunk per token in float64 (every block does: x is read anyway, and no block waits for another). After one
// barrier the block has, per row and token, each chunk's partial dot and each chunk's sum of squares, and
// finishes: inv_s = 1 / rms of stream s, low = silu((sum_s inv_s * sum_chunks dot) / S) (the inject rows:
// 2 sigmoid(...)), in a fixed order. Block 0 also writes inv [T][S] for kernel 2. No atomics: every value has one
// writer. (The first version split K over blocks and rebuilt low from partial sums in each of kernel 2's 160
// blocks: over half of all the mixer's instructions, and its time, went into that rebuild.)
//
// Kernel 2 (hc_up_kernel): each block owns a range of h and the S up-rows s*H + h of each. It issues its up-row
// loads, then stages low (plane order) and inv in shared memory. Teams of 8 lanes dot one up-row with low,
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
constexpr int kWarps = kThreads / 32;
constexpr int kGroups = 5;              // 8-element column groups per lane per row (both kernels)
// Kernel 1: a block takes kLowRows rows; a chunk is at most 5 groups x 32 lanes x 8 = 1280 columns, and a block
// keeps every chunk's partial sums (at most kMaxChunks chunks).
constexpr int kLowRows = 4;  // 81 blocks at the Flash-Next shape; 2 (162 blocks) read x twice as often: ~1 % slower
constexpr int64_t kMaxChunk = int64_t(kGroups) * 32 * 8;
// Kernel 1's registers: at most 160 a thread (40 K of a multiprocessor's 64 K at 256 threads), so that one block of
// kernel 2 (80 registers: 20 K) fits beside one of kernel 1 and loads its weights while kernel 1
// runs (the x chunks in registers took kernel 1 to 191).
constexpr int kLowMaxRegs = 160;
constexpr int kMaxChunks = 64;
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

struct LowArgs {
  const float* x;    // [T][D]
  const bf16* norm;  // [D] or null (then 1 + 0)
  const bf16* W;     // [>= N][D]: down rows (R), then inject rows
  int T, S, H, D, N, R, KC, cps, C;
  float eps;
  float* low;     // [T][R]
  float* inject;  // [T][S] (rows R .. R + S - 1) or null
  float* inv;     // [T][S]: 1 / rms of each stream, for kernel 2
};

// 1 / rms of stream s of token t from the chunks' sums of squares, in chunk order (as cpu::rms_norm_offset).
__device__ __forceinline__ float stream_inv(const double* ssp, int s, int t, int cps, int NT, int H, float eps) {
  double ss = 0.0;
  for (int cc = 0; cc < cps; cc++) ss += ssp[(s * cps + cc) * NT + t];
  return 1.0f / sqrtf(float(ss / double(H)) + eps);
}

template <int NT>
__global__ void __maxnreg__(kLowMaxRegs) hc_low_kernel(LowArgs a) {
  __shared__ float part[kMaxChunks][kLowRows][NT];  // each chunk's dot of the block's rows with u, per token
  __shared__ double ssp[kMaxChunks][NT];             // each chunk's sum of x^2 per token
  const int warp = int(threadIdx.x >> 5), lane = int(threadIdx.x & 31);
  const int r0 = int(blockIdx.x) * kLowRows, rows = min(kLowRows, a.N - r0);
  // The chunk of the block's rows: 4 x 5 loads of 16 bytes per lane in flight before anything else, and the norm
  // weights at its columns.
  uint4 w[kLowRows][kGroups];
  uint4 nw[kGroups];  // the norm weights at the chunk's columns
  auto load_chunk = [&](int c) {
    const int s = c / a.cps, cc = c % a.cps, k0 = s * a.H + cc * a.KC, ng = min(a.KC, a.H - cc * a.KC) / 8;
#pragma unroll
    for (int i = 0; i < kLowRows; i++)
#pragma unroll
      for (int j = 0; j < kGroups; j++) {
        const int g = lane + 32 * j;
        w[i][j] = i < rows && g < ng ? detail::ld_stream(a.W + int64_t(r0 + i) * a.D + k0 + 8 * g)
                                     : make_uint4(0u, 0u, 0u, 0u);
      }
#pragma unroll
    for (int j = 0; j < kGroups; j++) {
      const int g = lane + 32 * j;
      nw[j] = a.norm && g < ng ? *reinterpret_cast<const uint4*>(a.norm + k0 + 8 * g) : make_uint4(0u, 0u, 0u, 0u);
    }
  };
  // The weights are never written by the kernels before this one: the warp's first chunk is loaded into
  // registers while the kernel before still runs (see pdl_enter).
  if (warp < a.C) load_chunk(warp);
  [[maybe_unused]] const auto pdl = detail::pdl_enter();

  for (int c = warp; c < a.C; c += kWarps) {
    const int s = c / a.cps, cc = c % a.cps, k0 = s * a.H + cc * a.KC, ng = min(a.KC, a.H - cc * a.KC) / 8;
    if (c != warp) load_chunk(c);
#pragma unroll
    for (int t = 0; t < NT; t++) {
      if (t >= a.T) break;
      const float4* x4 = reinterpret_cast<const float4*>(a.x + int64_t(t) * a.D + k0);
      // All of the lane's x chunks are requested before any is used: loaded inside the guarded sums below, each
      // group's load waited for the previous group's sums (five L2 round trips in a row: 3.2 of the kernel's
      // 4.8 us after the wait in the H200 trace).
      float4 xa[kGroups], xb[kGroups];
#pragma unroll
      for (int j = 0; j < kGroups; j++) {
        const int g = lane + 32 * j;
        xa[j] = g < ng ? x4[2 * g] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        xb[j] = g < ng ? x4[2 * g + 1] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      }
      float acc[kLowRows];
#pragma unroll
      for (int i = 0; i < kLowRows; i++) acc[i] = 0.0f;
      double ss = 0.0;
#pragma unroll
      for (int j = 0; j < kGroups; j++) {
        const int g = lane + 32 * j;
        if (g < ng) {
          const float xv[8] = {xa[j].x, xa[j].y, xa[j].z, xa[j].w, xb[j].x, xb[j].y, xb[j].z, xb[j].w};
#pragma unroll
          for (int e = 0; e < 8; e++) ss += double(xv[e]) * double(xv[e]);
          // 1 + norm at the group's columns (unpacked here rather than kept: 40 registers fewer, so that the
          // kernel stays under 160 and the mixer's second kernel still fits beside it).
          const uint32_t q[4] = {nw[j].x, nw[j].y, nw[j].z, nw[j].w};
          float o[8];
#pragma unroll
          for (int e = 0; e < 4; e++) o[2 * e] = 1.0f + detail::bf_lo(q[e]), o[2 * e + 1] = 1.0f + detail::bf_hi(q[e]);
          const float4 ua = make_float4(xv[0] * o[0], xv[1] * o[1], xv[2] * o[2], xv[3] * o[3]);
          const float4 ub = make_float4(xv[4] * o[4], xv[5] * o[5], xv[6] * o[6], xv[7] * o[7]);
#pragma unroll
          for (int i = 0; i < kLowRows; i++) acc[i] += detail::dot8(w[i][j], ua, ub);
        }
      }
      // One reduction per token, so a token's sums do not depend on how many tokens share the call.
      detail::team_sum_scatter<kLowRows, 32>(acc);
      detail::team_sum_results<kLowRows, 32>(acc, [&](int i, float sum) { part[c][i][t] = sum; });
      ss = detail::warp_sum(ss);
      if (lane == 0) ssp[c][t] = ss;
    }
  }
  pdl.mark(0);  // trace builds: warp 0 has its chunk's sums
  __syncthreads();
  pdl.mark(1);

  // inv_s of each token's streams, one thread each: the row sums below then wait for one float64 division and
  // square root, not one per stream in turn (this tail was most of the kernel's time after its release).
  __shared__ float sinv[kMaxStreams * NT];  // [T][S]
  for (int q = int(threadIdx.x); q < a.T * a.S; q += kThreads) {
    const float v = stream_inv(&ssp[0][0], q % a.S, q / a.S, a.cps, NT, a.H, a.eps);
    sinv[q] = v;
    if (blockIdx.x == 0) a.inv[q] = v;
  }
  __syncthreads();
  pdl.mark(2);

  // low[t][r] = silu(sum_s inv_s * sum_chunks part / S); inject rows: 2 sigmoid(...). Streams and chunks in order.
  for (int q = int(threadIdx.x); q < rows * a.T; q += kThreads) {
    const int i = q / a.T, t = q % a.T, r = r0 + i;
    float dot = 0.0f;
    for (int s = 0; s < a.S; s++) {
      float ps = 0.0f;
      for (int cc = 0; cc < a.cps; cc++) ps += part[s * a.cps + cc][i][t];
      dot += sinv[t * a.S + s] * ps;
    }
    if (r < a.R) a.low[t * a.R + r] = detail::silu(dot / float(a.S));
    else a.inject[t * a.S + (r - a.R)] = 2.0f * detail::sigmoid(dot / float(a.S));
  }
}

struct UpArgs {
  const float* x;     // [T][D]
  const bf16* norm;   // [D] or null
  const bf16* up;     // [D][R]
  const float* low;   // [T][R] from hc_low_kernel
  const float* inv;   // [T][S] from hc_low_kernel
  int T, S, H, D, R, HB;  // HB: h values per block (HB * S <= kUpRows)
  float* mixed;   // [T][H]
  bool early_trigger;  // pdl_enter(true): DS4_CUDA_EARLY_TRIGGER names hc_up
};

template <int NT>
__global__ void __launch_bounds__(kThreads, 2) hc_up_kernel(UpArgs a) {
  extern __shared__ __align__(16) float sm[];
  float* low = sm;                     // [T][R] in plane order
  float* sig = low + a.T * a.R;        // [T][kUpRows]: sigmoid(mix) of the block's rows
  float* inv = sig + a.T * kUpRows;    // [T][S]: 1 / rms of each token's streams
  const int lane = int(threadIdx.x & 31), team = int(threadIdx.x / kTeam), l = lane % kTeam;
  // 32-bit indices (hc_mix_fused_supported bounds them): 64-bit divisions cost ~70 instructions each.
  const int h0 = int(blockIdx.x) * a.HB, hn = min(a.HB, a.H - h0), rows = hn * a.S;

  // Block row q = hl * S + s is up-row s*H + h0 + hl; team rows q = team + 32 u.
  const int R8 = a.R / 8;
  const bf16* rp[kUpRowsPerTeam];
  bool rv[kUpRowsPerTeam];
#pragma unroll
  for (int u = 0; u < kUpRowsPerTeam; u++) {
    const int q = team + (kThreads / kTeam) * u;
    rv[u] = q < rows;
    rp[u] = rv[u] ? a.up + (int64_t(q % a.S) * a.H + h0 + q / a.S) * a.R : a.up;
  }
  uint4 w[kUpRowsPerTeam][kGroups];
  auto load = [&](int cb) {
#pragma unroll
    for (int u = 0; u < kUpRowsPerTeam; u++)
#pragma unroll
      for (int j = 0; j < kGroups; j++) {
        const int g = cb + l + kTeam * j;
        w[u][j] = rv[u] && g < R8 ? detail::ld_stream(rp[u] + 8 * g) : make_uint4(0u, 0u, 0u, 0u);
      }
  };
  // The weights are never written by the kernels before this one: the first pass's rows are loaded into
  // registers while kernel 1 still runs (see pdl_enter).
  load(0);

  // The fold at the end reads x and norm at the block's columns: thread i's first item starts those loads now
  // (the first kPre streams; more are read when folded), so they are not a round trip after the GEMV. x is
  // final before the wait: this grid is launched only once every block of kernel 1 has passed its own wait
  // (pdl_enter), i.e. once the kernel that wrote x has completed. Read past L1 (ld.global.cg), which may still
  // hold lines of an older x.
  constexpr int kPre = 4;
  float xpre[kPre], opre[kPre];
  if (int(threadIdx.x) < a.T * hn) {
    const int t = int(threadIdx.x) / hn, h = h0 + int(threadIdx.x) % hn;
#pragma unroll
    for (int s = 0; s < kPre; s++)
      if (s < a.S) {
        xpre[s] = __ldcg(a.x + t * a.D + s * a.H + h);
        opre[s] = a.norm ? detail::bf(a.norm[s * a.H + h]) : 0.0f;
      }
  }
  [[maybe_unused]] const auto pdl = detail::pdl_enter(a.early_trigger);

  // low (plane order) and inv from kernel 1, in rounds of kStageLoads loads a thread, all requested before the
  // round's stores (as a plain loop, each load waited for the store before it: three L2 round trips, 1.1 us of the
  // kernel's 2.4 after the wait in the H200 trace). One round covers T x R + T x S at the Flash-Next shape (320 + 4).
  {
    constexpr int kStageLoads = 2;
    const int nl = a.T * a.R, n = nl + a.T * a.S;
    for (int i0 = int(threadIdx.x); i0 < n; i0 += kStageLoads * kThreads) {
      float v[kStageLoads];
#pragma unroll
      for (int u = 0; u < kStageLoads; u++) {
        const int i = i0 + u * kThreads;
        v[u] = i < nl ? a.low[i] : i < n ? a.inv[i - nl] : 0.0f;
      }
#pragma unroll
      for (int u = 0; u < kStageLoads; u++) {
        const int i = i0 + u * kThreads;
        if (i < nl) low[(i / a.R) * a.R + plane_slot(i % a.R, a.R)] = v[u];
        else if (i < n) inv[i - nl] = v[u];
      }
    }
  }
  __syncthreads();
  pdl.mark(0);  // trace builds: low and inv staged

  // mix of the team's rows: acc[u * NT + t]. Passes of 40 groups (one pass for R <= 320).
  float acc[kUpRowsPerTeam * NT];
#pragma unroll
  for (int i = 0; i < kUpRowsPerTeam * NT; i++) acc[i] = 0.0f;
  for (int cb = 0;;) {
#pragma unroll
    for (int t = 0; t < NT; t++) {
      if (t >= a.T) break;
      const float* p0 = low + t * a.R;
      const float* p1 = p0 + a.R / 2;
#pragma unroll
      for (int j = 0; j < kGroups; j++) {
        const int g = cb + l + kTeam * j;
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
    detail::team_sum_scatter<kUpRowsPerTeam, kTeam>(v);
    detail::team_sum_results<kUpRowsPerTeam, kTeam>(v, [&](int u, float sum) {
      const int q = team + (kThreads / kTeam) * u;
      if (q < rows) sig[t * kUpRows + q] = detail::sigmoid(sum);
    });
  }
  pdl.mark(1);
  __syncthreads();
  pdl.mark(2);

  // mixed[t][h] = sum_s sigmoid(mix) * normed / S, streams in order, normed = (x * inv) * (1 + norm) as the CPU.
  for (int i = int(threadIdx.x); i < a.T * hn; i += kThreads) {
    const int t = i / hn, hl = i % hn, h = h0 + hl;
    const bool pre = i == int(threadIdx.x);
    float m = 0.0f;
    for (int s = 0; s < a.S; s++) {
      const int k = s * a.H + h;
      float xv = 0.0f, o = 0.0f;
      if (pre && s < kPre) {
#pragma unroll
        for (int q = 0; q < kPre; q++)
          if (q == s) xv = xpre[q], o = opre[q];  // register indices must be constants
      } else {
        xv = a.x[t * a.D + k];
        o = a.norm ? detail::bf(a.norm[k]) : 0.0f;
      }
      const float normed = (xv * inv[t * a.S + s]) * (1.0f + o);
      m += sig[t * kUpRows + hl * a.S + s] * normed;
    }
    a.mixed[t * a.H + h] = m / float(a.S);
  }
}

template <int NT>
void launch_fused(Context& ctx, const LowArgs& d, unsigned g1, const UpArgs& u, unsigned g2, size_t smem2) {
  detail::launch(ctx, hc_low_kernel<NT>, g1, kThreads, 0, d);
  DS4_CUDA_CHECK_LAUNCH();
  detail::launch(ctx, hc_up_kernel<NT>, g2, kThreads, smem2, u);
  DS4_CUDA_CHECK_LAUNCH();
}

}  // namespace

// Chunks of a stream for kernel 1: ceil(H / kMaxChunk) of equal length (a multiple of 8), the last possibly shorter.
int64_t chunks_per_stream(int64_t H) { return (H + kMaxChunk - 1) / kMaxChunk; }

bool hc_mix_fused_supported(int64_t T, int64_t streams, int64_t H, int64_t lowrank, int64_t down_rows) {
  // 32-bit indices in the kernels: D * (rows of down_inject or of lowrank) below 2^31.
  return T >= 1 && T <= kHcFusedMaxT && streams >= 1 && streams <= kMaxStreams && H > 0 && H <= kMaxHidden &&
         H % 8 == 0 && lowrank > 0 && lowrank <= kMaxLowrank && lowrank % 8 == 0 &&
         (down_rows == lowrank || down_rows == lowrank + streams) && streams * chunks_per_stream(H) <= kMaxChunks &&
         streams * H * (lowrank + streams) < (int64_t(1) << 31);
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
  detail::require_supported(detail::aligned16(x) && detail::aligned16(down_inject) && detail::aligned16(up) &&
                                (!norm || detail::aligned16(norm)),
                            "hc_mix_fused: x, norm, down_inject and up must be 16-byte aligned");

  // K chunks: a stream's H columns in cps chunks of KC (a multiple of 8, at most kMaxChunk), the last one
  // possibly shorter but never empty. H = 2560: 2 chunks of 1280 per stream, 8 in all (one per warp); with 4 rows
  // per block, 81 blocks of the 324 rows, each streaming 80 KB.
  int64_t cps = chunks_per_stream(H);
  const int64_t KC = ((H + cps - 1) / cps + 7) / 8 * 8;
  cps = (H + KC - 1) / KC;
  const int64_t C = S * cps;
  const int64_t N = inject ? R + S : R;  // inject rows are not read when not wanted
  const int64_t HB = kUpRows / S;        // h values per kernel-2 block: 16 at S = 4, 160 blocks at H = 2560

  ScratchScope scope(ctx.scratch());
  float* low = ctx.scratch().take<float>(size_t(T * R));
  float* inv = ctx.scratch().take<float>(size_t(T * S));
  const LowArgs d{x, norm, down_inject, int(T), int(S), int(H), int(D), int(N), int(R), int(KC), int(cps), int(C),
                  eps, low, inject, inv};
  const UpArgs u{x, norm, up, low, inv, int(T), int(S), int(H), int(D), int(R), int(HB), mixed,
                 detail::early_trigger("hc_up")};
  const unsigned g1 = unsigned((N + kLowRows - 1) / kLowRows), g2 = unsigned((H + HB - 1) / HB);
  // Kernel 2: at most 8 x (1024 + 64 + 64) x 4 = 36 KiB: no opt-in needed.
  const size_t smem2 = size_t(T * (R + kUpRows + S)) * sizeof(float);
  if (T == 1) launch_fused<1>(ctx, d, g1, u, g2, smem2);
  else if (T == 2) launch_fused<2>(ctx, d, g1, u, g2, smem2);
  else if (T <= 4) launch_fused<4>(ctx, d, g1, u, g2, smem2);
  else launch_fused<8>(ctx, d, g1, u, g2, smem2);
}

}  // namespace ds4::cuda
