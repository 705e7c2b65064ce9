// Dense projections y[T,N] = x[T,K] · W[N,K]^T.
//
// T <= 8 (decode, speculative verification, short chunks) is bound by reading W. With 16-byte aligned rows and
// activations and K a multiple of 8 it streams W on CUDA cores (gemv_rows_kernel for one token,
// gemv_rows_multi_kernel for up to 8): every token's row is summed in the same order whatever T is, so a
// verified token's projections have the bits of its decode step (speculative decoding then reproduces plain
// decoding exactly), and W crosses HBM once per call. Misaligned activations take the tensor-core GEMV of
// gemv.cuh (a block owns one 16-row tile and its S warps share the tile's K steps; the T tokens are the mma's 8
// columns; a matrix with few row tiles splits K over blocks, and the last block of a tile adds the partial sums:
// gemv.cuh's last_block_of). Other shapes take the scalar fallback. Larger T is compute-bound and goes to
// cuBLASLt with bf16 operands (x rounded to bf16 in scratch), float32 accumulation and float32 output.
#include <algorithm>

#include "backend/cuda/blas.h"
#include "backend/cuda/bulk_copy.cuh"
#include "backend/cuda/gemv.cuh"
#include "backend/cuda/greedy.cuh"

namespace ds4::cuda {
namespace {

constexpr int64_t kGemvMaxT = 8;
constexpr int kMmaU = 4;  // K steps per batch: 8 weight loads per lane in flight

// ----- tensor-core path -----

// Lane's view of the tile: rows g and g + 8 (clamped to N - 1: valid memory, never written) at step v.
struct LinearSrc {
  const bf16 *ra, *rb;
  const float* xg;  // token g's activations, or null when g >= T
  int64_t K;
  int c8;  // 8 * (lane % 4)
  __device__ __forceinline__ bool operator()(int64_t v, const bf16* (&a)[1], const bf16* (&b)[1],
                                             const float*& xp) const {
    const int64_t k = v * detail::kMmaStepK + c8;
    if (k >= K) return false;  // also every v >= nsteps
    a[0] = ra + k;
    b[0] = rb + k;
    xp = xg ? xg + k : nullptr;
    return true;
  }
};

__global__ void __launch_bounds__(detail::kMmaMaxSplit * 32, 1)
    gemv_mma_kernel(const float* x, int T, int64_t K, const bf16* W, int64_t N, float* y, float* part,
                    int* counters, bool xvec, int64_t per) {
  extern __shared__ __align__(16) float red[];  // [S][4][32] partial fragments
  const int S = int(blockDim.x >> 5), s = int(threadIdx.x >> 5), lane = int(threadIdx.x & 31), g = lane >> 2;
  const int64_t r0 = int64_t(blockIdx.x) * 16;
  // blockIdx.y: the partition of K this block covers, `per` K steps from k0 (all of K when gridDim.y == 1);
  // its partial sums go to plane blockIdx.y of part, and the last of the tile's blocks adds the planes into y.
  // Offsets are multiples of kMmaStepK elements, so the 16-byte alignment of W's rows and of x is kept.
  const int64_t k0 = int64_t(blockIdx.y) * per * detail::kMmaStepK;
  {
    // The weights are never written by the kernels before this one: while those still run (see pdl_enter),
    // start the first 2 KiB of each of this tile's rows on their way into L2.
    const int64_t bytes = detail::imin((K - k0) * 2, 2048), lines = bytes / 128;  // whole lines inside the row
    for (int64_t i = threadIdx.x; i < 16 * lines; i += blockDim.x) {
      const int64_t r = r0 + i / lines;
      if (r < N) detail::prefetch_l2(W + r * K + k0 + (i % lines) * 64);
    }
  }
  [[maybe_unused]] const auto pdl = detail::pdl_enter();
  LinearSrc src;
  const int P = int(gridDim.y);
  float* dst = P > 1 ? part + int64_t(blockIdx.y) * T * N : y;
  src.ra = W + detail::imin(r0 + g, N - 1) * K + k0;
  src.rb = W + detail::imin(r0 + g + 8, N - 1) * K + k0;
  src.xg = g < T ? x + int64_t(g) * K + k0 : nullptr;
  src.K = detail::imin(K - k0, per * detail::kMmaStepK);
  src.c8 = 8 * (lane & 3);
  float acc[1][4] = {{0.0f, 0.0f, 0.0f, 0.0f}};
  const int64_t nsteps = (src.K + detail::kMmaStepK - 1) / detail::kMmaStepK;
  detail::mma_gemv_warp<1, kMmaU>(s, nsteps, S, src, xvec, acc);
#pragma unroll
  for (int i = 0; i < 4; i++) red[(s * 4 + i) * 32 + lane] = acc[0][i];
  __syncthreads();
  detail::store_tile_sums(red, S, r0, T, N, dst);
  if (P > 1 && detail::last_block_of(counters + blockIdx.x, P)) detail::sum_tile_planes(part, P, r0, T, N, y);
}

void launch_gemv_mma(Context& ctx, const float* x, int64_t T, int64_t K, const bf16* W, int64_t N, float* y) {
  constexpr size_t kRedPerWarp = 128 * sizeof(float);
  static const detail::SplitOccupancy occ = detail::measure_split_occupancy(gemv_mma_kernel, kRedPerWarp);
  const int64_t tiles = (N + 15) / 16, nsteps = (K + detail::kMmaStepK - 1) / detail::kMmaStepK;
  detail::require(tiles < (int64_t(1) << 31), "linear: too many rows");
  // Few row tiles over a long K (the hyper-connection down projection: 324 rows x 10240; a 512-expert router)
  // leave most multiprocessors idle, and a few tiles per multiprocessor leave a tail (160 tiles on 132 SMs
  // take two rounds on 28 of them): split K over P blocks per tile until there are about four blocks per
  // multiprocessor, each writing its partial sums, then add the partials in a fixed order.
  int64_t P = 1;
  if (tiles < 4 * int64_t(ctx.sm_count()) && nsteps >= 16)
    P = std::min<int64_t>({(4 * int64_t(ctx.sm_count()) + tiles - 1) / tiles, nsteps / 8, 32});
  const int64_t per = (nsteps + P - 1) / P;
  P = (nsteps + per - 1) / per;  // every partition non-empty
  const int S = detail::pick_split(occ, ctx.sm_count(), tiles * P, per, kMmaU);
  detail::require(P == 1 || tiles <= Context::kCounters, "linear: too many row tiles to split K");
  ScratchScope scope(ctx.scratch());
  float* part = P > 1 ? ctx.scratch().take<float>(size_t(P * T * N)) : nullptr;
  detail::launch(ctx, gemv_mma_kernel, dim3(unsigned(tiles), unsigned(P)), 32 * S, S * kRedPerWarp, x, int(T), K,
                 W, N, y, part, ctx.counters(), detail::aligned16(x), per);
  DS4_CUDA_CHECK_LAUNCH();
}

// ----- T = 1: CUDA-core streaming GEMV -----
// One token needs no tensor core: each weight element costs one unpack and one FMA, about half the instructions
// of the three-term tensor-core path. A block of 8 warps owns 8 / P groups of R rows; the P warps of a group
// take consecutive slices of K, each lane keeping U 16-byte weight chunks per row in flight together with the
// activations at the same columns (read straight from global memory: the whole block reads the same vector, so
// it stays in L1, and nothing waits for a staging pass). The P slice sums of a row are added in slice order in
// shared memory. P is picked so that the launch has enough warps to keep every multiprocessor streaming (short
// matrices: several warps per row). Tall matrices take gemv_tall_kernel (K <= 2560) or gemv_bulk_kernel below,
// unless the output goes into streams (RowsOut).

constexpr int kRowWarps = 8;

// A warp's slice of a row's K / 8 chunks: the P warps of a row group take consecutive slices (rows_shape's P).
// The rows, bulk and multi-token kernels all sum a row in these slices, so a token's sums do not depend on T.
struct KSlice {
  int64_t begin, end;
};
__device__ __forceinline__ KSlice k_slice(int64_t K, int P, int warp) {
  const int64_t chunks = K / 8, per = (chunks + P - 1) / P, begin = (warp % P) * per;
  return {begin, detail::imin(begin + per, chunks)};
}

// The R rows from row0 (rows past N: row N - 1, read but never written). The weights are never written by
// earlier kernels: with kPrefetch the slice's first chunks start on their way into L2 while the previous kernel
// runs (this is called before pdl_enter); a caller that loads them there itself passes false.
template <int R, bool kPrefetch = true>
__device__ __forceinline__ void slice_rows(const bf16* W, int64_t K, int64_t N, int64_t row0, KSlice s,
                                           const bf16* (&rows)[R]) {
  const int lane = int(threadIdx.x & 31);
#pragma unroll
  for (int r = 0; r < R; r++) rows[r] = W + detail::imin(row0 + r, N - 1) * K;
  if constexpr (kPrefetch)
#pragma unroll
    for (int r = 0; r < R; r++)
      if (s.begin + lane * 8 < s.end) detail::prefetch_l2(rows[r] + (s.begin + lane * 8) * 8);
}

// kStreams: the RowsOut stream epilogue is compiled in (its registers would cost the plain GEMV occupancy).
// kPre > 0 (short slices: every lane has at most kPre chunks of each row, U >= kPre): all of the lane's weights are
// loaded into registers before pdl_enter, so a projection after a short latency-bound kernel (the router after the
// mixer) has its weights in hand when its input is ready; the sums are the loop's (the same chunks in the same
// order; the loop adds the dots of absent chunks as +0, which changes no sum that starts at +0).
template <int R, int U, bool kStreams, int kPre = 0>
__global__ void __launch_bounds__(kRowWarps * 32)
    gemv_rows_kernel(const float* x, int64_t K, const bf16* W, int64_t N, float* y, int P, float* streams,
                     const float* inject, int S) {
  __shared__ float red[kRowWarps][R];
  const int warp = int(threadIdx.x >> 5), lane = int(threadIdx.x & 31), groups = kRowWarps / P;
  const int64_t row0 = (int64_t(blockIdx.x) * groups + warp / P) * R;
  const KSlice ks = k_slice(K, P, warp);
  const int64_t c_begin = ks.begin, c_end = ks.end;
  const bf16* rows[R];
  slice_rows<R, kPre == 0>(W, K, N, row0, ks, rows);
  uint4 pw[kPre > 0 ? kPre : 1][R];
  if constexpr (kPre > 0) {
#pragma unroll
    for (int u = 0; u < kPre; u++) {
      const int64_t c = c_begin + lane + 32 * u;
#pragma unroll
      for (int r = 0; r < R; r++) pw[u][r] = c < c_end ? detail::ld_stream(rows[r] + c * 8) : make_uint4(0, 0, 0, 0);
    }
  }
  [[maybe_unused]] const auto pdl = detail::pdl_enter();
  // The row writers (lane 0 of the first warp of each row group) fetch their rows' streams now.
  const bool writer = lane == 0 && warp % P == 0;
  __shared__ float sink_slots[kStreams ? kRowWarps : 1][R][2 * detail::RowSink::kPre];
  detail::RowSink sink[R];
#pragma unroll
  for (int r = 0; r < R; r++) sink[r].slot = sink_slots[kStreams ? warp : 0][r];
  if (kStreams)
#pragma unroll
    for (int r = 0; r < R; r++)
      if (writer && row0 + r < N) sink[r].load(streams, inject, S, N, row0 + r);
  const float4* x4 = reinterpret_cast<const float4*>(x);
  float acc[R];
#pragma unroll
  for (int r = 0; r < R; r++) acc[r] = 0.0f;
  if constexpr (kPre > 0) {
#pragma unroll
    for (int u = 0; u < kPre; u++) {
      const int64_t c = c_begin + lane + 32 * u;
      if (c < c_end) {
        const float4 xa = __ldg(x4 + 2 * c), xb = __ldg(x4 + 2 * c + 1);
#pragma unroll
        for (int r = 0; r < R; r++) acc[r] += detail::dot8(pw[u][r], xa, xb);
      }
    }
  }
  for (int64_t c0 = c_begin + lane; kPre == 0 && c0 < c_end; c0 += 32 * U) {
    uint4 w[U][R];
    float4 xa[U], xb[U];
    // Conditional loads: the compiler then interleaves each chunk's load with its use (about 32 registers), which
    // leaves room for 8 blocks per multiprocessor; on the H200 that many warps stream faster than fewer warps
    // with every chunk in flight (measured: batching all loads took 123 registers and was 10-50 % slower here).
#pragma unroll
    for (int u = 0; u < U; u++) {
      const int64_t c = c0 + 32 * u;
      const bool in = c < c_end;
#pragma unroll
      for (int r = 0; r < R; r++) w[u][r] = in ? detail::ld_stream(rows[r] + c * 8) : make_uint4(0, 0, 0, 0);
      xa[u] = in ? __ldg(x4 + 2 * c) : make_float4(0, 0, 0, 0);
      xb[u] = in ? __ldg(x4 + 2 * c + 1) : make_float4(0, 0, 0, 0);
    }
#pragma unroll
    for (int u = 0; u < U; u++)
#pragma unroll
      for (int r = 0; r < R; r++) acc[r] += detail::dot8(w[u][r], xa[u], xb[u]);
  }
#pragma unroll
  for (int r = 0; r < R; r++) acc[r] = detail::warp_sum(acc[r]);
  if (P == 1) {
#pragma unroll
    for (int r = 0; r < R; r++) {
      if constexpr (!kStreams) {
        if (lane == 0 && row0 + r < N) y[row0 + r] = acc[r];
      } else if (writer && row0 + r < N) {
        sink[r].put(y, streams, inject, S, N, row0 + r, acc[r]);
      }
    }
    return;
  }
  if (lane == 0)
#pragma unroll
    for (int r = 0; r < R; r++) red[warp][r] = acc[r];
  __syncthreads();
  if constexpr (!kStreams) {
    if (warp % P == 0 && lane < R && row0 + lane < N) {
      float sum = 0.0f;
      for (int q = 0; q < P; q++) sum += red[warp + q][lane];
      y[row0 + lane] = sum;
    }
  } else if (writer) {
#pragma unroll
    for (int r = 0; r < R; r++)
      if (row0 + r < N) {
        float sum = 0.0f;
        for (int q = 0; q < P; q++) sum += red[warp + q][r];
        sink[r].put(y, streams, inject, S, N, row0 + r, sum);
      }
  }
}

// ----- T = 1, tall matrices: weights streamed into shared memory by the copy engine -----
// The rows kernel keeps the bytes in flight in registers, so how much a multiprocessor has in flight is bound to
// its warps, and a grid of thousands of 8-row blocks pays a ramp at its start and a tail at its end. Here a grid
// of kBulkBlocksPerSm blocks per multiprocessor covers the matrix in contiguous row ranges; each warp streams its
// (row, slice) pieces of kBulkPiece bytes through kBulkDepth shared-memory slots with cp.async.bulk
// (bulk_copy.cuh), so 3 x 8 x 2 x 4 KiB = 192 KiB per multiprocessor are in flight without a register each, and
// the first pieces are requested before pdl_enter, while the kernel before still runs. Measured on the H200
// (tools/gpu/gemv_probe.cu, chained launches over matrices larger than L2): 2560 -> 16480 in 24.0 us against
// 27.9 for the rows kernel, the lm_head (2560 -> 248320) in 290 us against 317.
//
// The sums are the rows kernel's: the P warps of a group take the P slices of one row (rows_shape's P, the same
// for the multi-token kernel), a lane sums its chunks c_begin + lane + 32 j in increasing j whatever piece they
// arrive in (a piece is 256 chunks, a multiple of 32), then the lane butterfly, then the slices in order.
#ifndef DS4_CUDA_EMU  // the CPU emulator has no bulk copies or mbarriers: tall matrices take the rows kernel there
constexpr int kBulkPiece = 4096;
constexpr int kBulkDepth = 2;
constexpr int kBulkBlocksPerSm = 3;
constexpr size_t kBulkSmem = size_t(kRowWarps) * kBulkDepth * kBulkPiece;

__global__ void __launch_bounds__(kRowWarps * 32)
    gemv_bulk_kernel(const float* x, int64_t K, const bf16* W, int64_t N, float* y, int P, int64_t rows_per_block) {
  extern __shared__ __align__(128) uint8_t slots[];  // [warp][kBulkDepth][kBulkPiece]
  __shared__ __align__(8) uint64_t bars[kRowWarps][kBulkDepth];
  __shared__ float red[2][kRowWarps];
  const int warp = int(threadIdx.x >> 5), lane = int(threadIdx.x & 31), G = kRowWarps / P, grp = warp / P;
  const KSlice ks = k_slice(K, P, warp);
  const int64_t c_begin = ks.begin, c_end = ks.end;
  const int slice_bytes = c_end > c_begin ? int(c_end - c_begin) * 16 : 0;
  const int ppr = (slice_bytes + kBulkPiece - 1) / kBulkPiece;  // pieces per row of this warp's slice
  const int64_t r_begin = int64_t(blockIdx.x) * rows_per_block, r_end = detail::imin(N, r_begin + rows_per_block);
  const int rows = r_end - r_begin > grp ? int((r_end - r_begin - grp + G - 1) / G) : 0;  // this group's rows
  const int total = rows * ppr;
  uint8_t* mine = slots + size_t(warp) * kBulkDepth * kBulkPiece;
  // Piece q of the warp: row r_begin + grp + G (q / ppr), bytes [q % ppr * kBulkPiece, ...) of its slice.
  auto piece = [&](int q) {
    const int p = q % ppr;
    const int64_t row = r_begin + grp + int64_t(G) * (q / ppr);
    return reinterpret_cast<const uint8_t*>(W + row * K + c_begin * 8) + int64_t(p) * kBulkPiece;
  };
  auto issue = [&](int q) {
    const int slot = q % kBulkDepth, p = q % ppr;
    const uint32_t bytes = uint32_t(min(kBulkPiece, slice_bytes - p * kBulkPiece));
    detail::mbar_expect_tx(&bars[warp][slot], bytes);
    detail::bulk_g2s(mine + slot * kBulkPiece, piece(q), bytes, &bars[warp][slot]);
  };
  if (lane == 0) {
    for (int d = 0; d < kBulkDepth; d++) detail::mbar_init(&bars[warp][d], 1);
    // The weights are never written by earlier kernels: the first pieces stream in while the kernel before runs.
    for (int q = 0; q < min(kBulkDepth, total); q++) issue(q);
  }
  __syncwarp();
  [[maybe_unused]] const auto pdl = detail::pdl_enter();
  const float4* x4 = reinterpret_cast<const float4*>(x);
  for (int i = 0; i < rows; i++) {
    float acc = 0.0f;
    for (int p = 0; p < ppr; p++) {
      const int q = i * ppr + p, slot = q % kBulkDepth;
      detail::mbar_wait(&bars[warp][slot], uint32_t((q / kBulkDepth) & 1));
      const uint4* wp = reinterpret_cast<const uint4*>(mine + slot * kBulkPiece);
      const int n = min(kBulkPiece, slice_bytes - p * kBulkPiece) / 16;
      const int64_t cb = c_begin + int64_t(p) * (kBulkPiece / 16);
#pragma unroll 4
      for (int j = lane; j < n; j += 32) {
        const int64_t c = cb + j;
        acc += detail::dot8(wp[j], __ldg(x4 + 2 * c), __ldg(x4 + 2 * c + 1));
      }
      __syncwarp();  // every lane has read the slot
      if (lane == 0 && q + kBulkDepth < total) {
        detail::fence_async_shared();
        issue(q + kBulkDepth);
      }
    }
    acc = detail::warp_sum(acc);
    const int64_t row = r_begin + grp + int64_t(G) * i;
    if (P == 1) {
      if (lane == 0) y[row] = acc;
      continue;
    }
    // The group's P slice sums, in slice order; red alternates by row so that a warp already on the next row
    // never overwrites a sum its group's first warp has not read (the barrier below holds the group together).
    if (lane == 0) red[i & 1][warp] = acc;
    asm volatile("bar.sync %0, %1;" ::"r"(1 + grp), "r"(32 * P) : "memory");
    if (warp % P == 0 && lane == 0) {
      float sum = 0.0f;
      for (int q = 0; q < P; q++) sum += red[i & 1][warp + q];
      y[row] = sum;
    }
  }
}
#endif

// ----- T = 1, tall matrices with K <= 2560: the activations in registers -----
// Every row of a tall matrix needs the same activations, and a lane of gemv_bulk_kernel (or the rows kernel) reads
// its chunks of x through L1 again for every row: two 16-byte activation loads per 16-byte weight chunk, so at the
// decode step's shapes the load instructions, not HBM, set the pace (tools/gpu/gemv_probe.cu on the H200: 2560 ->
// 16480 in 24.0 us against 20.0 for a plain read of the same bytes). Here a persistent grid of kTallBlocksPerSm
// blocks a multiprocessor gives each pair of warps rows gp, gp + np, ... (np pairs in the grid), warp 2 q + s of a
// pair slice s of K (the bulk kernel's P = 2 slices): a lane loads its slice's activation chunks into registers
// once and then streams only weights, the next row's loads issued before the current row's sums. The same probe:
// 2560 -> 16480 in 20.7 us, 2560 -> 19584 in 24.2 (27.8), the lm_head (2560 -> 248320) in 280 (291).
// The sums are the bulk kernel's: a lane's chunks c_begin + lane + 32 j in increasing j, the lane butterfly, the
// two slices in order from 0 (the probe checks equal bits on every row; the linear tests check them against the
// multi-token kernel), so a token's projection does not depend on which kernel ran.
constexpr int kTallJ = 5;                                // chunks per lane per slice
constexpr int64_t kTallMaxK = int64_t(2) * 32 * kTallJ * 8;  // 2560
constexpr int kTallBlocksPerSm = 3;                      // 80 registers: 3 blocks of 8 warps a multiprocessor
constexpr int kTallPairs = kRowWarps / 2;

// kPick (linear_pick, the lm_head of a greedy step): each pair's writing lane also keeps the best of the rows it
// writes (greedy.cuh; its rows increase), the block merges its pairs', and the last block to finish picks from
// every block's: the greedy pick without greedy_pick's launch, whose blocks found room only as the lm_head's left
// (3.7-3.9 us of hand-off and 3.9 of run a step in the H200 trace).
template <bool kPick>
__global__ void __launch_bounds__(kRowWarps * 32, kTallBlocksPerSm)
    gemv_tall_kernel(const float* x, int64_t K, const bf16* W, int64_t N, float* y, detail::GreedyBest* part,
                     int* counter, int32_t* pick) {
  __shared__ float red[2][kRowWarps];
  const int warp = int(threadIdx.x >> 5), lane = int(threadIdx.x & 31), pair = warp / 2;
  const int64_t np = int64_t(gridDim.x) * kTallPairs, gp0 = int64_t(blockIdx.x) * kTallPairs, gp = gp0 + pair;
  const KSlice ks = k_slice(K, 2, warp);
  uint4 w[kTallJ];
  auto load = [&](int64_t row) {
#pragma unroll
    for (int j = 0; j < kTallJ; j++) {
      const int64_t c = ks.begin + lane + 32 * j;
      w[j] = row < N && c < ks.end ? detail::ld_stream(W + row * K + c * 8) : make_uint4(0u, 0u, 0u, 0u);
    }
  };
  load(gp);  // the weights are never written by earlier kernels: the first row streams in before the wait
  [[maybe_unused]] const auto pdl = detail::pdl_enter();
  detail::XSlice<kTallJ> xs;
  xs.load(x, ks.begin, ks.end);
  [[maybe_unused]] detail::GreedyBest best = detail::greedy_none();
  // The same number of steps for every pair of the block (its first pair's rows), so that the emulator's block
  // barrier stands in for the pair's own; a pair past its last row only keeps step.
  for (int64_t i = 0; gp0 + np * i < N; i++) {
    const int64_t row = gp + np * i;
    float acc = xs.dot(w, ks.begin, ks.end);
    load(row + np);
    acc = detail::warp_sum(acc);
    // red alternates by step: a warp already on the next step never overwrites a sum its pair has not read.
    if (lane == 0) red[i & 1][warp] = acc;
#ifdef __CUDA_ARCH__
    asm volatile("bar.sync %0, %1;" ::"r"(1 + pair), "r"(64) : "memory");
#else
    __syncthreads();
#endif
    if (warp % 2 == 0 && lane == 0 && row < N) {
      float sum = 0.0f;
      sum += red[i & 1][warp];
      sum += red[i & 1][warp + 1];
      y[row] = sum;
      if constexpr (kPick) detail::greedy_see(best, sum, int(row));
    }
  }
  if constexpr (kPick) {
    __shared__ detail::GreedyBest pair_best[kTallPairs];
    if (warp % 2 == 0 && lane == 0) pair_best[pair] = best;
    __syncthreads();
    if (threadIdx.x == 0) {
      detail::GreedyBest b = pair_best[0];
      for (int q = 1; q < kTallPairs; q++) b = detail::greedy_merge(b, pair_best[q]);
      part[blockIdx.x] = b;
    }
    if (!detail::last_block_of(counter, int(gridDim.x))) return;
    detail::greedy_finish<kRowWarps * 32>(part, int(gridDim.x), y, pick);
  }
}

// One token, K wider than the tall kernel's (the output projections): wide rows over one matrix (gemv.cuh), the
// rows_shape's P = 8 slices, so the multi-token kernel sums a token's row alike.
static_assert(kRowWarps == detail::kWideWarps, "the wide kernel's blocks are the rows kernels' blocks");
template <int D>
__global__ void __launch_bounds__(kRowWarps * 32, detail::kWideBlocksPerSm)
    gemv_wide_kernel(const float* x, int64_t K, const bf16* W, int64_t N, float* y, float* streams,
                     const float* inject, int S, bool prewait) {
  __shared__ detail::WideShared shared;
  extern __shared__ __align__(16) uint4 ring[];  // D > 0: [D][kWideJ][threads]
  const int warp = int(threadIdx.x >> 5), lane = int(threadIdx.x & 31);
  const KSlice ks = k_slice(K, detail::kWideWarps, warp);
  const bf16* cp[detail::kWideJ];
  int stride[detail::kWideJ];
#pragma unroll
  for (int j = 0; j < detail::kWideJ; j++) {
    const int64_t c = ks.begin + lane + 32 * j;
    cp[j] = c < ks.end ? W + c * 8 : nullptr;
    stride[j] = int(K);
  }
  detail::wide_rows<D>(x, ks.begin, ks.end, cp, stride, N, y, streams, inject, S, shared, ring, prewait);
}

// Up to NT tokens (verification chunks, short prefill chunks): each token's row is summed exactly as
// gemv_rows_kernel sums it for one token: the same P slices of K, and in each lane the same chunks in increasing
// order (how many are loaded at a time does not change the order; zero chunks past a slice add +0 to a sum that
// is never -0), the same lane butterfly and slice order. So a verified token's projections have the bits of its
// decode step, while the weights are read once for all the tokens. A warp takes RW rows of its slice so that
// each activation chunk read from L1 serves RW rows: with one row per warp the T activation reads per weight
// chunk, not the weights, bounded the kernel (L1 bandwidth).
template <int RW, int U, int NT>
__global__ void __launch_bounds__(kRowWarps * 32)
    gemv_rows_multi_kernel(const float* x, int T, int64_t K, const bf16* W, int64_t N, float* y, int P) {
  __shared__ float red[kRowWarps][RW][NT];
  const int warp = int(threadIdx.x >> 5), lane = int(threadIdx.x & 31), groups = kRowWarps / P;
  const int64_t row0 = (int64_t(blockIdx.x) * groups + warp / P) * RW;
  const KSlice ks = k_slice(K, P, warp);
  const int64_t c_begin = ks.begin, c_end = ks.end;
  const bf16* rows[RW];
  slice_rows(W, K, N, row0, ks, rows);
  [[maybe_unused]] const auto pdl = detail::pdl_enter();
  const float4* x4 = reinterpret_cast<const float4*>(x);
  float acc[RW][NT];
#pragma unroll
  for (int r = 0; r < RW; r++)
#pragma unroll
    for (int t = 0; t < NT; t++) acc[r][t] = 0.0f;
  for (int64_t c0 = c_begin + lane; c0 < c_end; c0 += 32 * U) {
    uint4 w[U][RW];
#pragma unroll
    for (int u = 0; u < U; u++) {
      const bool in = c0 + 32 * u < c_end;
#pragma unroll
      for (int r = 0; r < RW; r++) w[u][r] = in ? detail::ld_stream(rows[r] + (c0 + 32 * u) * 8) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int u = 0; u < U; u++) {
      const int64_t c = c0 + 32 * u;
      const bool in = c < c_end;
#pragma unroll
      for (int t = 0; t < NT; t++) {
        if (t >= T) break;
        const float4* xt = x4 + int64_t(t) * (K / 4);
        const float4 xa = in ? __ldg(xt + 2 * c) : make_float4(0, 0, 0, 0);
        const float4 xb = in ? __ldg(xt + 2 * c + 1) : make_float4(0, 0, 0, 0);
#pragma unroll
        for (int r = 0; r < RW; r++) acc[r][t] += detail::dot8(w[u][r], xa, xb);
      }
    }
  }
#pragma unroll
  for (int r = 0; r < RW; r++)
#pragma unroll
    for (int t = 0; t < NT; t++) acc[r][t] = detail::warp_sum(acc[r][t]);
  if (P == 1) {
    if (lane == 0)
#pragma unroll
      for (int r = 0; r < RW; r++)
#pragma unroll
        for (int t = 0; t < NT; t++)
          if (t < T && row0 + r < N) y[int64_t(t) * N + row0 + r] = acc[r][t];
    return;
  }
  if (lane == 0)
#pragma unroll
    for (int r = 0; r < RW; r++)
#pragma unroll
      for (int t = 0; t < NT; t++) red[warp][r][t] = acc[r][t];
  __syncthreads();
  if (warp % P == 0 && lane < RW * NT) {
    const int r = lane / NT, t = lane % NT;
    if (t < T && row0 + r < N) {
      float sum = 0.0f;
      for (int q = 0; q < P; q++) sum += red[warp + q][r][t];
      y[int64_t(t) * N + row0 + r] = sum;
    }
  }
}

// The CUDA-core streaming path: K a multiple of 8 and 16-byte aligned rows and activations (every token's row
// of x then is too). Every T <= kGemvMaxT takes it, so a token's row does not depend on how many share the call.
bool rows_path(int64_t K, const bf16* W, const float* x) {
  return K % 8 == 0 && detail::aligned16(W) && detail::aligned16(x);
}

// The shape of a one-token launch, a function of N and K only (never of T: that keeps a token's sums the same,
// and the multi-token kernel takes the same P slices). Tall matrices (at least about 64 rows per warp slot of the
// device) stream through the bulk kernel, each row in 2 slices (measured: 24.0 us at 2560 -> 16480 against 26.1
// with whole rows, 27.8 against 29.7 at 19584 rows). Others take the rows kernel in one resident wave of at most
// about 64 warps per multiprocessor (a second wave costs a whole extra round trip), each row's K split over up to
// 8 warps, as long as every lane gets a chunk.
struct RowsShape {
  bool bulk;
  int P;
  bool wide = false;  // gemv_wide_kernel for one token (P = kWideWarps)
};
bool wide_enabled();
RowsShape rows_shape(const Context& ctx, int64_t K, int64_t N) {
  const int64_t want = 64 * int64_t(ctx.sm_count()), chunks = K / 8;
  if (N >= want && chunks >= 4 * 32) return {true, 2};
  // Wider than the tall kernel's x slice, at most the wide kernel's (the output projections): whole rows over a
  // block's 8 warps, the next rows' weights in flight in shared memory (gemv.cuh's wide rows).
  if (K > kTallMaxK && K <= detail::kWideMaxK && wide_enabled()) return {false, detail::kWideWarps, true};
  int P = 1;
  while (P < kRowWarps && N * 2 * P <= want && chunks / (2 * P) >= 32) P *= 2;
  return {false, P};
}

// DS4_CUDA_GEMV_BULK=0 sends tall matrices to the rows kernel too (the same slices: the same bits), to measure
// what the bulk kernel is worth.
bool bulk_enabled() {
  static const bool on = detail::switch_on("DS4_CUDA_GEMV_BULK");
  return on;
}

// DS4_CUDA_GEMV_PRE=0: short slices too are loaded after the wait (the same bits), to measure the difference.
bool pre_enabled() {
  static const bool on = detail::switch_on("DS4_CUDA_GEMV_PRE");
  return on;
}

// DS4_CUDA_GEMV_WIDE=0: the output projections take the rows kernel with its own slices (other bits).
bool wide_enabled() {
  static const bool on = detail::switch_on("DS4_CUDA_GEMV_WIDE");
  return on;
}

// DS4_CUDA_GEMV_TALL=0: tall matrices with K <= 2560 take the bulk kernel instead of gemv_tall_kernel (the same bits).
bool tall_enabled() {
  static const bool on = detail::switch_on("DS4_CUDA_GEMV_TALL");
  return on;
}

// Whether a one-token GEMV of this shape (rows_path) takes gemv_tall_kernel.
bool tall_path(const Context& ctx, int64_t K, int64_t N) {
  const RowsShape rs = rows_shape(ctx, K, N);
  return rs.bulk && rs.P == 2 && bulk_enabled() && K <= kTallMaxK && tall_enabled();
}

// pick: the greedy pick of y too (linear_pick).
void launch_gemv_tall(Context& ctx, const float* x, int64_t K, const bf16* W, int64_t N, float* y, int32_t* pick) {
  const int64_t blocks = detail::imin(int64_t(kTallBlocksPerSm) * ctx.sm_count(), (N + kTallPairs - 1) / kTallPairs);
  if (!pick) {
    detail::launch(ctx, gemv_tall_kernel<false>, unsigned(blocks), kRowWarps * 32, 0, x, K, W, N, y, nullptr, nullptr,
                   nullptr);
  } else {
    ScratchScope scope(ctx.scratch());
    auto* part = ctx.scratch().take<detail::GreedyBest>(size_t(blocks));
    detail::launch(ctx, gemv_tall_kernel<true>, unsigned(blocks), kRowWarps * 32, 0, x, K, W, N, y, part,
                   ctx.counters(), pick);
  }
  DS4_CUDA_CHECK_LAUNCH();
}

template <bool kStreams>
void launch_gemv_rows_as(Context& ctx, const float* x, int64_t K, const bf16* W, int64_t N, const RowsOut& o) {
  const RowsShape rs = rows_shape(ctx, K, N);
  if (!kStreams && tall_path(ctx, K, N)) return launch_gemv_tall(ctx, x, K, W, N, o.y, nullptr);
#ifndef DS4_CUDA_EMU  // the rows kernel sums the same slices the same way
  if (rs.bulk && !kStreams && bulk_enabled()) {
    detail::allow_smem(ctx, gemv_bulk_kernel, kBulkSmem);
    const int64_t G = kRowWarps / rs.P, groups = (N + G - 1) / G;
    const int64_t blocks = detail::imin(int64_t(kBulkBlocksPerSm) * ctx.sm_count(), groups);
    const int64_t rows_per_block = (groups + blocks - 1) / blocks * G;
    detail::launch(ctx, gemv_bulk_kernel, unsigned((N + rows_per_block - 1) / rows_per_block), kRowWarps * 32,
                   kBulkSmem, x, K, W, N, o.y, rs.P, rows_per_block);
    DS4_CUDA_CHECK_LAUNCH();
    return;
  }
#endif
  if (rs.wide) {
    const unsigned grid = unsigned(detail::wide_grid(ctx.sm_count(), N));
    detail::with_ring_depth(detail::wide_ring_depth(), [&](auto D) {
      const size_t smem = detail::ring_bytes(D.value, detail::kWideJ);
      detail::allow_smem(ctx, gemv_wide_kernel<D.value>, smem);
      detail::launch(ctx, gemv_wide_kernel<D.value>, grid, kRowWarps * 32, smem, x, K, W, N, o.y, o.streams,
                     o.inject, int(o.S), detail::wide_prewait());
    });
    DS4_CUDA_CHECK_LAUNCH();
    return;
  }
  // A lane's chunks of a row: at most 3 (the router projections), all loaded before the wait. Three keep the
  // kernel at 31 registers, so 8 blocks a multiprocessor as the loop (4 took 40 registers: the 897 blocks of the
  // 512-expert router then needed a second wave, and 8-layer decode lost 0.7 % on the H200); the stream epilogue's
  // registers would do the same, so only plain outputs take it.
  const int64_t lane_chunks = ((K / 8 + rs.P - 1) / rs.P + 31) / 32;
  auto kernel = gemv_rows_kernel<1, 8, kStreams>;
  if constexpr (!kStreams)
    if (lane_chunks <= 3 && pre_enabled()) kernel = gemv_rows_kernel<1, 8, false, 3>;
  detail::launch(ctx, kernel, detail::blocks_for(N, kRowWarps / rs.P), kRowWarps * 32, 0, x, K, W, N, o.y, rs.P,
                 o.streams, o.inject, int(o.S));
  DS4_CUDA_CHECK_LAUNCH();
}

constexpr int kMultiRows = 4;  // rows per warp of the multi-token kernel (RW * NT <= 32: one lane per sum)

template <int NT>
void launch_gemv_rows_multi(Context& ctx, const float* x, int64_t T, int64_t K, const bf16* W, int64_t N, float* y) {
  // The one-token launch's slices (P), with kMultiRows rows per warp instead of its 1 or 2.
  const RowsShape rs = rows_shape(ctx, K, N);
  const unsigned blocks = detail::blocks_for(N, int64_t(kRowWarps / rs.P) * kMultiRows);
  detail::launch(ctx, gemv_rows_multi_kernel<kMultiRows, 2, NT>, blocks, kRowWarps * 32, 0, x, int(T), K, W, N, y, rs.P);
  DS4_CUDA_CHECK_LAUNCH();
}

void launch_gemv_rows(Context& ctx, const float* x, int64_t K, const bf16* W, int64_t N, const RowsOut& o) {
  if (o.streams) launch_gemv_rows_as<true>(ctx, x, K, W, N, o);
  else launch_gemv_rows_as<false>(ctx, x, K, W, N, o);
}

// ----- scalar fallback (K not a multiple of 8 or rows not 16-byte aligned) -----

constexpr int kGemvWarps = 4;
constexpr int64_t kGemvSmemFloats = 12288;  // 48 KiB of staged activations per block: no opt-in needed

template <int R, int NT>
__global__ void __launch_bounds__(kGemvWarps * 32)
    gemv_scalar_kernel(const float* x, int64_t T, int64_t K, const bf16* W, int64_t N, float* y, int64_t kc) {
  [[maybe_unused]] const auto pdl = detail::pdl_enter();
  extern __shared__ __align__(16) float xs[];  // [NT][kc] in plane order
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int64_t row0 = (int64_t(blockIdx.x) * kGemvWarps + warp) * R;
  float acc[R][NT];
#pragma unroll
  for (int r = 0; r < R; r++)
#pragma unroll
    for (int t = 0; t < NT; t++) acc[r][t] = 0.0f;
  // Rows past N read row N-1 (valid memory) and are never written: every warp stays for the barriers.
  const bf16* base[R];
#pragma unroll
  for (int r = 0; r < R; r++) base[r] = W + detail::imin(row0 + r, N - 1) * K;

  for (int64_t k0 = 0; k0 < K; k0 += kc) {
    const int64_t len = detail::imin(kc, K - k0);
    __syncthreads();  // the previous chunk's activations are no longer read
    for (int t = 0; t < NT; t++) {
      if (t < T) detail::stage_planes(xs + t * kc, x + t * K + k0, len, kc);
      else detail::stage_planes(xs + t * kc, x, 0, kc);  // zeros for padded tokens
    }
    __syncthreads();
    const bf16* rows[R];
#pragma unroll
    for (int r = 0; r < R; r++) rows[r] = base[r] + k0;
    detail::warp_dot_rows_scalar<R, NT>(rows, xs, kc, len, acc);
  }
#pragma unroll
  for (int r = 0; r < R; r++)
#pragma unroll
    for (int t = 0; t < NT; t++) {
      const float v = detail::warp_sum(acc[r][t]);
      if (lane == 0 && t < T && row0 + r < N) y[t * N + row0 + r] = v;
    }
}

template <int NT>
void launch_gemv_scalar(Context& ctx, const float* x, int64_t T, int64_t K, const bf16* W, int64_t N, float* y) {
  constexpr int R = 2;
  // K is staged in chunks of kc floats per token (a multiple of 8).
  const int64_t cap = (kGemvSmemFloats / NT) / 8 * 8;
  const int64_t kc = std::min(cap, (K + 7) / 8 * 8);
  const size_t smem = size_t(NT * kc) * sizeof(float);
  const unsigned blocks = detail::blocks_for(N, kGemvWarps * R);
  detail::launch(ctx, gemv_scalar_kernel<R, NT>, blocks, kGemvWarps * 32, smem, x, T, K, W, N, y, kc);
  DS4_CUDA_CHECK_LAUNCH();
}

__global__ void to_bf16_kernel(const float* x, bf16* y, int64_t n) {
  [[maybe_unused]] const auto pdl = detail::pdl_enter();
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    y[i] = __float2bfloat16_rn(x[i]);
}

// The largest power of two (up to 256) that divides the address.
uint32_t alignment_of(const void* p) {
  uint32_t a = 256;
  while (a > 1 && reinterpret_cast<uintptr_t>(p) % a) a >>= 1;
  return a;
}

// cuBLASLt descriptors released on every path out.
struct LtDescs {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  ~LtDescs() {
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    if (c) cublasLtMatrixLayoutDestroy(c);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (op) cublasLtMatmulDescDestroy(op);
  }
};

void linear_blas(Context& ctx, const float* x, int64_t T, int64_t K, const bf16* W, int64_t N, float* y) {
  detail::require(T < (int64_t(1) << 31) && K < (int64_t(1) << 31) && N < (int64_t(1) << 31), "linear: shape too large");
  ScratchScope scope(ctx.scratch());
  bf16* xb = ctx.scratch().take<bf16>(size_t(T * K));
  round_to_bf16(ctx, x, T * K, xb);
  auto& blas = ctx.blas();
  const float alpha = 1.0f, beta = 0.0f;
  // Column-major view: W is K x N (ld K), x is K x T (ld K), y is N x T (ld N): y = W^T x (TRANSA = T).
  LtDescs d;
  DS4_CUBLAS_CHECK(cublasLtMatmulDescCreate(&d.op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
  DS4_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
  DS4_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
  DS4_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&d.a, CUDA_R_16BF, uint64_t(K), uint64_t(N), K));
  DS4_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&d.b, CUDA_R_16BF, uint64_t(K), uint64_t(T), K));
  DS4_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&d.c, CUDA_R_32F, uint64_t(N), uint64_t(T), N));
  DS4_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&d.pref));
  DS4_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(d.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                        &blas.workspace_bytes, sizeof blas.workspace_bytes));
  // The heuristic assumes 256-byte aligned operands unless told otherwise; weights sub-allocated from a larger
  // buffer may be less aligned, so state each pointer's actual alignment.
  const uint32_t align[3] = {alignment_of(W), alignment_of(xb), alignment_of(y)};
  DS4_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(d.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &align[0],
                                                        sizeof(uint32_t)));
  DS4_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(d.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &align[1],
                                                        sizeof(uint32_t)));
  DS4_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(d.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &align[2],
                                                        sizeof(uint32_t)));
  DS4_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(d.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &align[2],
                                                        sizeof(uint32_t)));
  cublasLtMatmulHeuristicResult_t heur{};
  int found = 0;
  const cublasStatus_t hs =
      cublasLtMatmulAlgoGetHeuristic(blas.lt, d.op, d.a, d.b, d.c, d.c, d.pref, 1, &heur, &found);
  if (hs == CUBLAS_STATUS_SUCCESS && found > 0) {
    DS4_CUBLAS_CHECK(cublasLtMatmul(blas.lt, d.op, &alpha, W, d.a, xb, d.b, &beta, y, d.c, y, d.c, &heur.algo,
                                    blas.workspace, blas.workspace_bytes, ctx.stream()));
    return;
  }
  // No Lt algorithm for this shape (odd leading dimensions): plain cuBLAS accepts any.
  DS4_CUBLAS_CHECK(cublasGemmEx(blas.blas, CUBLAS_OP_T, CUBLAS_OP_N, int(N), int(T), int(K), &alpha, W, CUDA_R_16BF,
                                int(K), xb, CUDA_R_16BF, int(K), &beta, y, CUDA_R_32F, int(N), CUBLAS_COMPUTE_32F,
                                CUBLAS_GEMM_DEFAULT));
}

}  // namespace

void round_to_bf16(Context& ctx, const float* x, int64_t n, bf16* y) {
  if (n <= 0) return;
  detail::launch(ctx, to_bf16_kernel, detail::grid_for(ctx, n, 256), 256, 0, x, y, n);
  DS4_CUDA_CHECK_LAUNCH();
}

void linear(Context& ctx, const float* x, int64_t T, int64_t K, const bf16* W, int64_t N, float* y) {
  detail::require(T >= 0 && K > 0 && N >= 0, "linear: bad shape");
  if (T == 0 || N == 0) return;
  if (T <= kGemvMaxT) {
    if (rows_path(K, W, x)) {
      if (T == 1) launch_gemv_rows(ctx, x, K, W, N, RowsOut{y});
      else if (T == 2) launch_gemv_rows_multi<2>(ctx, x, T, K, W, N, y);
      else if (T <= 4) launch_gemv_rows_multi<4>(ctx, x, T, K, W, N, y);
      else launch_gemv_rows_multi<8>(ctx, x, T, K, W, N, y);
    } else if (K % 8 == 0 && detail::aligned16(W)) launch_gemv_mma(ctx, x, T, K, W, N, y);
    else if (T == 1) launch_gemv_scalar<1>(ctx, x, T, K, W, N, y);
    else if (T == 2) launch_gemv_scalar<2>(ctx, x, T, K, W, N, y);
    else if (T <= 4) launch_gemv_scalar<4>(ctx, x, T, K, W, N, y);
    else launch_gemv_scalar<8>(ctx, x, T, K, W, N, y);
    return;
  }
  linear_blas(ctx, x, T, K, W, N, y);
}

// DS4_CUDA_FUSED_PICK=0: linear_pick runs linear and then greedy_pick (the same logits and pick), to measure.
bool fused_pick_enabled() {
  static const bool on = detail::switch_on("DS4_CUDA_FUSED_PICK");
  return on;
}

bool linear_pick_fused(const Context& ctx, const float* x, int64_t K, const bf16* W, int64_t N) {
  return fused_pick_enabled() && rows_path(K, W, x) && tall_path(ctx, K, N);
}

void linear_pick(Context& ctx, const float* x, int64_t K, const bf16* W, int64_t N, float* y, int32_t* pick) {
  detail::require(K > 0 && N >= 1 && N < (int64_t(1) << 31) && y && pick, "linear_pick: bad shape or operand");
  if (linear_pick_fused(ctx, x, K, W, N)) return launch_gemv_tall(ctx, x, K, W, N, y, pick);
  linear(ctx, x, 1, K, W, N, y);
  greedy_pick(ctx, y, N, pick);
}

void linear(Context& ctx, const float* x, int64_t T, int64_t K, const bf16* W, int64_t N, const RowsOut& out) {
  if (!out.streams) return linear(ctx, x, T, K, W, N, out.y);
  detail::require(T >= 0 && K > 0 && N >= 0 && out.inject && out.S > 0 && out.S < (int64_t(1) << 16),
                  "linear: bad stream output");
  if (T == 0 || N == 0) return;
  if (T == 1 && rows_path(K, W, x)) return launch_gemv_rows(ctx, x, K, W, N, out);
  ScratchScope scope(ctx.scratch());
  float* y = ctx.scratch().take<float>(size_t(T * N));
  linear(ctx, x, T, K, W, N, y);
  hc_inject(ctx, out.streams, y, out.inject, T, out.S, N);
}

}  // namespace ds4::cuda
