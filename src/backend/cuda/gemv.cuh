// The bandwidth-bound core shared by the small-batch projections (linear.cu) and the decode-time experts
// (moe.cu). Two paths:
//
// Tensor-core path (rows 16-byte aligned, K a multiple of 8): a warp owns one or more 16-row tiles of the weight
// matrix and a share of the K steps (32 columns each). Per step a lane loads the 8 consecutive bf16 of rows g
// and g+8 of each tile (g = lane / 4, at column 8 * (lane % 4)) with 128-bit streaming loads, and the 8 float32
// activations of token g at the same columns. These are exactly the operands of two mma.m16n8k16 (bf16 in,
// float32 accumulate) once the columns are relabelled: the dot product does not care which k the hardware
// thinks it is summing, as long as A and B agree. The token dimension of the mma (8) holds the T <= 8 tokens,
// so every weight is read once whatever T is, and the products are summed by the tensor core instead of by
// CUDA cores and shuffles. Activations stay float32: each is split into three bf16 terms hi + mid + lo that
// add up to it exactly (8 significant bits each, 24 in all), and each term gets its own mma; bf16 x bf16
// products are exact in float32. The few steps of one batch are accumulated into a fresh fragment and added
// to the running sum in float32, so the tensor core's own accumulation never works on a long-running sum.
//
// Scalar fallback (odd K, misaligned rows): a warp takes R rows with scalar loads against activations staged
// in shared memory (warp_dot_rows<..., false>). Activations are staged in two planes per vector so that the
// reads of consecutive lanes fall on consecutive slots: element 8j+q sits at plane q/4, slot 4j + q%4.
#pragma once
#include <cuda_bf16.h>

#include <algorithm>
#include <limits>
#include <type_traits>

#include "backend/cuda/common.cuh"
#include "backend/cuda/mma.cuh"

namespace ds4::cuda::detail {

// ----------------------------------------------------------------------------------------------------------
// Tensor-core GEMV core
// ----------------------------------------------------------------------------------------------------------
constexpr int kMmaMaxSplit = 16;  // warps per block that share one tile's K steps (block <= 512 threads)
constexpr int64_t kMmaStepK = 32;  // columns per K step: 4 lanes x 8

// One K step of one 16-row tile: wa = row g, wb = row g + 8, both at the lane's 8 columns. The first mma takes
// columns 0-3 of the lane's 8, the second columns 4-7 (A registers {0,1} and {2,3} pair with B registers
// {0, 1}). Small terms first.
__device__ __forceinline__ void mma_step(float (&c)[4], const uint4 wa, const uint4 wb, const XTerms& s) {
#pragma unroll
  for (int term = 2; term >= 0; term--) {
    mma_bf16_16816(c, wa.x, wb.x, wa.y, wb.y, s.t[term][0], s.t[term][1]);
    mma_bf16_16816(c, wa.z, wb.z, wa.w, wb.w, s.t[term][2], s.t[term][3]);
  }
}

// A warp's share of a tensor-core GEMV: steps v = v0, v0 + stride, ... < nsteps, U of them in flight (each
// lane then has 2 * MT * U 128-bit weight loads outstanding before the first mma). src(v, ra, rb, xp) gives,
// for this lane, the addresses of its 8 weights in rows g and g + 8 of each tile and of its token's 8
// activations (xp null: zeros), and returns false when the lane has nothing at step v (beyond K, beyond
// nsteps, a skipped expert): then weights and activations are zeros. acc[mt] is the lane's C fragment
// (c0, c1: row g, tokens 2 (lane % 4) + {0, 1}; c2, c3: row g + 8).
template <int MT, int U, class Src>
__device__ __forceinline__ void mma_gemv_warp(int64_t v0, int64_t nsteps, int64_t stride, const Src& src, bool xvec,
                                              float (&acc)[MT][4]) {
  for (int64_t vb = v0; vb < nsteps; vb += stride * U) {
    uint4 wa[U][MT], wb[U][MT];
    const float* xp[U];
#pragma unroll
    for (int u = 0; u < U; u++) {
      const bf16* ra[MT];
      const bf16* rb[MT];
      xp[u] = nullptr;
      if (src(vb + u * stride, ra, rb, xp[u])) {
#pragma unroll
        for (int mt = 0; mt < MT; mt++) wa[u][mt] = ld_stream(ra[mt]), wb[u][mt] = ld_stream(rb[mt]);
      } else {
#pragma unroll
        for (int mt = 0; mt < MT; mt++) wa[u][mt] = wb[u][mt] = make_uint4(0u, 0u, 0u, 0u);
        xp[u] = nullptr;
      }
    }
    float part[MT][4];
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
      for (int i = 0; i < 4; i++) part[mt][i] = 0.0f;
#pragma unroll
    for (int u = 0; u < U; u++) {
      XTerms s;
      load_split_x8(xp[u], xvec, s);
#pragma unroll
      for (int mt = 0; mt < MT; mt++) mma_step(part[mt], wa[u][mt], wb[u][mt], s);
    }
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
      for (int i = 0; i < 4; i++) acc[mt][i] += part[mt][i];
  }
}

// Element (i, lane) of a C fragment (i = 0..3): its row within the 16-row tile and its token.
__device__ __forceinline__ int frag_row(int i, int lane) { return (lane >> 2) + (i >> 1) * 8; }
__device__ __forceinline__ int frag_col(int i, int lane) { return 2 * (lane & 3) + (i & 1); }

// The block's epilogue: after each of its S warps stored its accumulator fragment in red[w][4][32] (and a
// barrier), sums the S fragments in warp order and writes y[t][row] for the tile's rows r0.. < N, tokens t < T.
__device__ __forceinline__ void store_tile_sums(const float* red, int S, int64_t r0, int T, int64_t N, float* y) {
  for (int q = int(threadIdx.x); q < 128; q += int(blockDim.x)) {
    float sum = 0.0f;
    for (int w = 0; w < S; w++) sum += red[w * 128 + q];
    const int i = q >> 5, ln = q & 31;
    const int64_t row = r0 + frag_row(i, ln);
    const int col = frag_col(i, ln);
    if (col < T && row < N) y[int64_t(col) * N + row] = sum;
  }
}

// A K dimension split over the P = gridDim.y blocks of one output tile: each block stores its partial tile in
// its own plane, then calls last_block_of (all threads). The call returns true in exactly one of the P blocks,
// the last to finish, after every other block's partial stores are visible to it; that block adds the P planes
// in plane order (fixed: the result does not depend on which block finished last) and writes the output, so no
// second kernel is launched. counter (Context::counters) is zero on entry and left at zero.
__device__ __forceinline__ bool last_block_of(int* counter, int P) {
  __shared__ int last;
  __threadfence();  // this block's partial stores before its count
  __syncthreads();
  if (threadIdx.x == 0) {
    last = atomicAdd(counter, 1) == P - 1;
    if (last) *counter = 0;  // every block of the tile has counted: ready for the next launch
  }
  __syncthreads();
  if (last) __threadfence();  // the other blocks' partials, counted before, are read after this
  return last;
}

// The last block's sum for one 16-row tile: y[t][row] = sum over p of part[p][t][row], rows r0.. < N, t < T.
// Partials were written by other blocks during this kernel: read through L2 (ld.cg), never a stale L1 line.
__device__ __forceinline__ void sum_tile_planes(const float* part, int P, int64_t r0, int T, int64_t N, float* y) {
  for (int q = int(threadIdx.x); q < 16 * T; q += int(blockDim.x)) {
    const int64_t row = r0 + (q & 15);
    const int t = q >> 4;
    if (row >= N) continue;
    float acc = 0.0f;
    for (int p = 0; p < P; p++) acc += __ldcg(part + (int64_t(p) * T + t) * N + row);
    y[int64_t(t) * N + row] = acc;
  }
}

// One output row's destination for RowsOut (ops.h): y[row], or (streams non-null) streams[s][row] += v * inject[s]
// for s < S, hc_inject's expression, so the result has the same bits. The row's first kPre streams and inject
// weights are copied into a shared-memory slot of the writing thread by load(), right after the kernel's
// pdl_enter, so the epilogue's read-modify-write does not add a memory round trip at the end of the kernel (it
// did: +1 to +4 us per launch). The copies are asynchronous (cp.async: no register waits for them, and none is
// held through the main loop; holding them in registers cost the projection kernel two of its 8 blocks per
// multiprocessor).
struct RowSink {
  static constexpr int kPre = 4;  // streams staged; more are read in the epilogue
  float* slot;                    // shared: [0, kPre) the streams at the row, [kPre, 2 kPre) their inject weights
  __device__ __forceinline__ void load(const float* streams, const float* inject, int S, int64_t N,
                                       int64_t row) const {
    if (!streams) return;
#pragma unroll
    for (int s = 0; s < kPre; s++)
      if (s < S) cp_async<4>(slot + s, streams + int64_t(s) * N + row), cp_async<4>(slot + kPre + s, inject + s);
    commit_async();
  }
  __device__ __forceinline__ void put(float* y, float* streams, const float* inject, int S, int64_t N, int64_t row,
                                      float v) const {
    if (streams) wait_all_async();  // this thread's copies (load) have landed
    put_landed(y, streams, inject, S, N, row, v);
  }
  // put once the caller has waited for the slot's copies itself.
  __device__ __forceinline__ void put_landed(float* y, float* streams, const float* inject, int S, int64_t N,
                                             int64_t row, float v) const {
    if (!streams) {
      y[row] = v;
      return;
    }
#pragma unroll
    for (int s = 0; s < kPre; s++)
      if (s < S) streams[int64_t(s) * N + row] = slot[s] + v * slot[kPre + s];
    for (int s = kPre; s < S; s++) streams[int64_t(s) * N + row] += v * inject[s];
  }
};

// Host side: how many warps share one tile's K steps. Blocks of 32 S threads; blocks[S] is the measured
// occupancy (blocks per multiprocessor) of the kernel with that block size. A crude latency model: each
// batch of U steps costs one memory round trip, a grid larger than what is resident at once costs one round
// of batches per wave, and each wave one more (block start, reduction). Ties go to fewer waves (no
// half-empty last wave), then to the split that keeps more warps resident (more bytes in flight), then to
// the smaller split (less reduction).
struct SplitOccupancy {
  int blocks[kMmaMaxSplit + 1] = {};
};

template <class Kernel>
SplitOccupancy measure_split_occupancy(Kernel kernel, size_t smem_per_warp) {
  SplitOccupancy o;
  for (int s = 1; s <= kMmaMaxSplit; s++)
    DS4_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&o.blocks[s], kernel, 32 * s, s * smem_per_warp));
  return o;
}

inline int pick_split(const SplitOccupancy& o, int sms, int64_t tiles, int64_t ksteps, int U) {
  int best = 1;
  int64_t best_cost = std::numeric_limits<int64_t>::max(), best_waves = 0, best_warps = -1;
  for (int s = 1; s <= kMmaMaxSplit; s++) {
    if (s > 1 && s > ksteps) break;
    const int64_t conc = int64_t(o.blocks[s]) * sms;
    if (conc <= 0) continue;
    const int64_t waves = (tiles + conc - 1) / conc, per = (ksteps + s - 1) / s, batches = (per + U - 1) / U;
    const int64_t cost = waves * (batches + 1), warps = imin(tiles, conc) * s;
    const bool better = cost < best_cost || (cost == best_cost && (waves < best_waves ||
                                                                   (waves == best_waves && warps > best_warps)));
    if (better) best = s, best_cost = cost, best_waves = waves, best_warps = warps;
  }
  return best;
}

// ----------------------------------------------------------------------------------------------------------
// Scalar fallback
// ----------------------------------------------------------------------------------------------------------
__device__ __forceinline__ int64_t plane_slot(int64_t kk, int64_t kc) {
  return ((kk & 7) >> 2) * (kc >> 1) + ((kk >> 3) << 2) + (kk & 3);
}

// Cooperative (whole block): xs[0..kc) <- src[0..len) in plane order, zeros past len. kc is a multiple of 8.
__device__ __forceinline__ void stage_planes(float* xs, const float* src, int64_t len, int64_t kc) {
  for (int64_t kk = threadIdx.x; kk < kc; kk += blockDim.x) xs[plane_slot(kk, kc)] = kk < len ? src[kk] : 0.0f;
}

// acc[r][t] += rows[r][0..len) · x_t for NT staged vectors x_t at xs + t * kc (plane order), scalar loads.
template <int R, int NT>
__device__ __forceinline__ void warp_dot_rows_scalar(const bf16* const (&rows)[R], const float* xs, int64_t kc,
                                                     int64_t len, float (&acc)[R][NT]) {
  const int lane = threadIdx.x & 31;
  for (int64_t kk = lane; kk < len; kk += 32) {
    float w[R];
#pragma unroll
    for (int r = 0; r < R; r++) w[r] = __bfloat162float(rows[r][kk]);
    const int64_t slot = plane_slot(kk, kc);
#pragma unroll
    for (int t = 0; t < NT; t++) {
      const float xv = xs[t * kc + slot];
#pragma unroll
      for (int r = 0; r < R; r++) acc[r][t] = fmaf(w[r], xv, acc[r][t]);
    }
  }
}

// Kernels that keep a lane's activations in registers while they stream many rows (linear.cu's gemv_tall_kernel,
// moe.cu's down_wide_kernel): a lane's chunks of a slice [begin, end) of K are c = begin + lane + 32 j, j < J.
// XSlice holds x at those chunks (zeros past the slice); dot() is the lane's sum over a row's weight chunks at the
// same places, in increasing j: the order the rows and bulk kernels sum a lane's chunks in.
template <int J>
struct XSlice {
  float4 a[J], b[J];
  __device__ __forceinline__ void load(const float* x, int64_t begin, int64_t end) {
    const int lane = int(threadIdx.x & 31);
    const float4* x4 = reinterpret_cast<const float4*>(x);
#pragma unroll
    for (int j = 0; j < J; j++) {
      const int64_t c = begin + lane + 32 * j;
      a[j] = c < end ? __ldg(x4 + 2 * c) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      b[j] = c < end ? __ldg(x4 + 2 * c + 1) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }
  }
  __device__ __forceinline__ float dot(const uint4 (&w)[J], int64_t begin, int64_t end) const {
    const int lane = int(threadIdx.x & 31);
    float acc = 0.0f;
#pragma unroll
    for (int j = 0; j < J; j++)
      if (begin + lane + 32 * j < end) acc += dot8(w[j], a[j], b[j]);
    return acc;
  }
};

// ----------------------------------------------------------------------------------------------------------
// Wide rows (one token): a persistent grid whose block b takes output rows b, b + grid, ..., each row's K in
// kWideWarps slices (warp w slice w, k_slice's split), a lane's slice of x in registers (XSlice) and a lane's
// weight chunks of a row at cp[j] + row * stride[j] (the caller's layout: one matrix, or the MoE down pass's
// concatenated experts). The sums: a lane's chunks in increasing order, the lane butterfly, the slices in order
// from 0, as gemv_rows_multi_kernel sums with P = kWideWarps, so a token's row does not depend on T.
//
// D = 0: the next row's weights go into registers before the current row's sums: a block has one row in flight
// (14 KB at the Flash-Next experts' shape), and each row costs a loaded memory round trip (about 1.9 us in the
// H200 trace of the down pass: 6.5 rows a block, 12.5 us for 36 MB, where the GDN input projection, 20 KB a block
// a step, ran at 4.3 TB/s). D > 0: the next D rows' weights are copied into shared memory by cp.async, each lane
// into slots of its own (it reads only what it copied, so its own wait_group orders them; no barrier), a row's
// slot refilled with row + D right after the row's barrier. The first D rows are requested before pdl_enter (the
// weights are never written by earlier kernels). With streams, the block's rows' first kPre streams and inject
// weights are read once after the wait, beside x, into shared memory (at most kWideMaxRows rows a block).
constexpr int kWideWarps = 8;
constexpr int kWideJ = 4;  // chunks per lane: K of at most 8 x 32 x 4 x 8 = 8192
constexpr int64_t kWideMaxK = int64_t(kWideWarps) * 32 * kWideJ * 8;
constexpr int kWideBlocksPerSm = 3;
constexpr int kWideRingMax = 4;   // 4 x 16 KB of shared memory a block
constexpr int kWideMaxRows = 16;  // rows a block (N <= kWideMaxRows x grid)
// A ring of D steps of J 16-byte chunks for each of a block's 256 threads (the wide rows).
constexpr size_t ring_bytes(int D, int J) { return size_t(D) * J * kWideWarps * 32 * sizeof(uint4); }
// The grid: kWideBlocksPerSm blocks a multiprocessor, more when a block would get over kWideMaxRows rows.
inline int64_t wide_grid(int64_t sms, int64_t N) {
  const int64_t g = std::max<int64_t>(int64_t(kWideBlocksPerSm) * sms, (N + kWideMaxRows - 1) / kWideMaxRows);
  return std::min(g, N);
}

struct WideShared {
  float red[2][kWideWarps];
  float sink[kWideMaxRows][2 * RowSink::kPre];  // the block's i-th row's streams, then inject weights
};

template <int D>
__device__ __forceinline__ void wide_rows(const float* x, int64_t c_begin, int64_t c_end,
                                          const bf16* const (&cp)[kWideJ], const int (&stride)[kWideJ], int64_t N,
                                          float* y, float* streams, const float* inject, int S, WideShared& sh,
                                          uint4* ring, bool prewait) {
  constexpr int kPre = RowSink::kPre;
  const int warp = int(threadIdx.x >> 5), lane = int(threadIdx.x & 31);
  uint4 w[kWideJ];
  auto load = [&](int64_t row) {
#pragma unroll
    for (int j = 0; j < kWideJ; j++)
      w[j] = row < N && cp[j] ? ld_stream(cp[j] + row * stride[j]) : make_uint4(0u, 0u, 0u, 0u);
  };
  // D > 0: row's weights into ring slot q, one commit group a row whatever it holds.
  auto fill = [&](int64_t row, int q) {
    if (row < N)
#pragma unroll
      for (int j = 0; j < kWideJ; j++)
        if (cp[j]) cp_async<16>(ring + (q * kWideJ + j) * blockDim.x + threadIdx.x, cp[j] + row * stride[j]);
    commit_async();
  };
  auto first = [&] {
    if constexpr (D > 0) {
#pragma unroll
      for (int q = 0; q < D; q++) fill(blockIdx.x + int64_t(q) * gridDim.x, q);
    } else {
      load(blockIdx.x);
    }
  };
  if (prewait) first();
  [[maybe_unused]] const auto pdl = pdl_enter();  // x, the streams and inject weights: earlier kernels'
  if (!prewait) first();
  if (streams) {
    // Thread e of row i: stream e (e < kPre) or inject weight e - kPre; read past L1, which may hold older lines.
    const int64_t rows = (N - int64_t(blockIdx.x) + gridDim.x - 1) / gridDim.x;
    const int i = int(threadIdx.x) / (2 * kPre), e = int(threadIdx.x) % (2 * kPre);
    if (i < rows && (e % kPre) < S)
      sh.sink[i][e] = e < kPre ? __ldcg(streams + int64_t(e) * N + blockIdx.x + int64_t(i) * gridDim.x)
                               : __ldcg(inject + (e - kPre));
  }
  XSlice<kWideJ> xs;
  xs.load(x, c_begin, c_end);
  RowSink sink;
  int par = 0, q = 0, i = 0;
  for (int64_t row = blockIdx.x; row < N; row += gridDim.x, par ^= 1, i++) {
    if constexpr (D > 0) {
      wait_async<D - 1>();  // this row's group (the D - 1 after it may still fly)
#pragma unroll
      for (int j = 0; j < kWideJ; j++)
        w[j] = cp[j] ? ring[(q * kWideJ + j) * blockDim.x + threadIdx.x] : make_uint4(0u, 0u, 0u, 0u);
    }
    float acc = xs.dot(w, c_begin, c_end);
    if constexpr (D == 0) load(row + gridDim.x);
    acc = warp_sum(acc);
    // red alternates by row: a warp already on the next row never overwrites a sum the writer has not read. The
    // barrier also makes the first row's sink values visible.
    if (lane == 0) sh.red[par][warp] = acc;
    __syncthreads();
    if (warp == 0 && lane == 0) {
      float sum = 0.0f;
      for (int k = 0; k < kWideWarps; k++) sum += sh.red[par][k];
      sink.slot = sh.sink[i];
      sink.put_landed(y, streams, inject, S, N, row, sum);
    }
    if constexpr (D > 0) {
      fill(row + int64_t(D) * gridDim.x, q);  // every lane's reads of slot q are behind the barrier above
      q = q + 1 == D ? 0 : q + 1;
    }
  }
}

// DS4_CUDA_WIDE_RING / DS4_CUDA_DOWN_RING (measurement): the ring's depth in rows of the projections / the MoE
// down pass, 0 for one row in registers. DS4_CUDA_WIDE_PREWAIT=0: the first rows are requested after the wait.
inline int ring_depth(const char* name, int fallback) {
  const int v = switch_int(name, fallback);
  return v < 0 ? 0 : v > kWideRingMax ? kWideRingMax : v;
}
inline int wide_ring_depth() {
  static const int d = ring_depth("DS4_CUDA_WIDE_RING", 3);
  return d;
}
// The down pass keeps one row in registers by default: on the H200 (48 layers, 64 experts, one call) 207.9 tok/s
// against 204.9 with a ring of 3 rows (the projections' ring on in both).
inline int down_ring_depth() {
  static const int d = ring_depth("DS4_CUDA_DOWN_RING", 0);
  return d;
}
// Calls f(std::integral_constant<int, D>) for the depth d in [0, kWideRingMax] (host side: picks the kernel).
template <class F>
void with_ring_depth(int d, F&& f) {
  switch (d) {
    case 0: f(std::integral_constant<int, 0>{}); break;
    case 1: f(std::integral_constant<int, 1>{}); break;
    case 2: f(std::integral_constant<int, 2>{}); break;
    case 3: f(std::integral_constant<int, 3>{}); break;
    default: f(std::integral_constant<int, kWideRingMax>{}); break;
  }
}
inline bool wide_prewait() {
  static const bool on = switch_on("DS4_CUDA_WIDE_PREWAIT");
  return on;
}

}  // namespace ds4::cuda::detail
