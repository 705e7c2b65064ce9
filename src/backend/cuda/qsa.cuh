// The QSA indexer's device steps that several kernels share (the pooling: qsa.cu and attn_prep.cu's decode block;
// the list below the budget: the same two; the choice of the top blocks: qsa.cu's select_kernel and attention.cu's
// decode kernel): one implementation of each, so that a token's results have the same bits whichever kernel made
// them.
#pragma once
#include "backend/cuda/common.cuh"
#include "backend/cuda/topk.cuh"

namespace ds4::cuda::detail {

// Pooled block b of the raw indexer keys: the mean of its R rows, zero-centred RMSNorm, RoPE at position b * R,
// written to out [D]. Threads below `nt` take elements e = tid, tid + nt, ... (pool_kernel: nt = blockDim.x =
// 128); the other threads of the block add nothing but take part in the barriers (block_sum: their zeros do not
// change the sum's bits). last, when set, replaces row R - 1 (the decode selector's current token, whose raw key
// this kernel is still writing). vals: [D] of shared memory; red: [32] doubles. All threads call it.
__device__ inline void pool_block(const float* index_keys, const float* last, int64_t b, int64_t R, int64_t D,
                                  const bf16* k_norm, const RopeParams& rope, float eps, int nt, float* vals,
                                  double* red, float* out) {
  const int tid = int(threadIdx.x);
  double ss = 0.0;
  for (int64_t e = tid; tid < nt && e < D; e += nt) {
    float m = 0.0f;
    for (int64_t r = 0; r < R; r++)
      m += last && r == R - 1 ? last[e] : index_keys[(b * R + r) * D + e];
    m /= float(R);
    vals[e] = m;
    ss += double(m) * double(m);
  }
  ss = block_sum(ss, red);  // its barriers also publish vals
  const float inv = 1.0f / sqrtf(float(ss / double(D)) + eps);
  for (int64_t e = tid; tid < nt && e < D; e += nt)
    vals[e] = (vals[e] * inv) * (1.0f + (k_norm ? __bfloat162float(k_norm[e]) : 0.0f));
  __syncthreads();
  const int64_t half = rope.rotary_dim / 2;
  for (int64_t i = tid; tid < nt && i < D; i += nt) {
    if (i >= rope.rotary_dim) {
      out[i] = vals[i];
    } else if (i < half) {
      // Text positions: every M-RoPE axis is at b * R, so the axis choice does not matter.
      const float f = rope.inv_freq[i] * float(b * R);
      double s, c;
      sincos(double(f), &s, &c);
      const float cs = float(c), sn = float(s), x0 = vals[i], x1 = vals[i + half];
      out[i] = x0 * cs - x1 * sn;
      out[i + half] = x1 * cs + x0 * sn;
    }
  }
}

// The list of a query at position p whose complete blocks fit the budget: every position 0..p. All threads call it.
__device__ inline void all_positions(int64_t p, int32_t* out, int32_t* count) {
  for (int64_t i = threadIdx.x; i <= p; i += blockDim.x) out[i] = int32_t(i);
  if (threadIdx.x == 0) *count = int32_t(p + 1);
}

// Up to this many pooled blocks the ranking by counting is cheaper than the radix search's four passes (n^2 / 256
// compares a thread: 256 at n = 256, about the radix passes' cost; by that estimate, not measured). On the H200,
// one call, 8 layers: after a 32768-token prompt (512 blocks) the radix search against the ranking 834.4 against
// 828.4 tok/s, after 4096 (64 blocks) 838.4 against 843.2: both within the spread of the rounds.
constexpr int64_t kSelectSetMinN = 256;

// Shared memory of a selection among up to n pooled blocks: block_topk_set's, or the ranking's or the sort's.
__host__ __device__ inline size_t select_topk_bytes(int64_t n) {
  const size_t a = topk_smem_bytes(n), b = topk_set_smem_bytes(n);
  return ((a > b ? a : b) + 3) / 4 * 4;
}

// DS4_CUDA_SELECT_RADIX=0 (measurement) ranks or sorts every selection (host side).
inline bool select_radix() {
  static const bool on = switch_on("DS4_CUDA_SELECT_RADIX");
  return on;
}

// The top k of a query's nb complete blocks by value(i), i < nb (cpu::topk_indices' set, ties included), written in
// ascending block order to sorted[0..k). chosen: [k] ints of shared memory; topk_smem: select_topk_bytes(nb) bytes
// (8-byte aligned); replay: nb items (global or shared) for the CPU's replay when equal values straddle the k-th
// place. Past kSelectSetMinN blocks (with radix) the set straight in ascending order; when equal scores straddle
// the k-th place, for fewer blocks, or without radix (DS4_CUDA_SELECT_RADIX=0), the top k by value and then its
// ascending order. All threads call it; k < nb; ends with a barrier (sorted may be shared memory read next).
template <class Value>
__device__ inline void choose_blocks(Value value, int nb, int k, void* topk_smem, Item* replay, int* chosen,
                                     int* sorted, bool radix) {
  if (radix && nb > kSelectSetMinN && block_topk_set(value, nb, k, topk_smem, sorted)) return;
  if (nb <= kTopkRankMaxN)
    block_topk_rank(value, nb, k, topk_smem, replay, chosen);
  else
    block_topk(value, nb, k, topk_smem, replay, chosen);
  // Ascending block order: each chosen block's rank is the number of chosen blocks below it (all distinct).
  for (int i = int(threadIdx.x); i < k; i += int(blockDim.x)) {
    const int c = chosen[i];
    int rank = 0;
#pragma unroll 8
    for (int j = 0; j < k; j++) rank += chosen[j] < c ? 1 : 0;
    sorted[rank] = c;
  }
  __syncthreads();
}

// The decode kernel's own selection among many blocks: a second instantiation of the kernel (head dim 256,
// __expf) whose selection is choose_blocks_lean, so that the default one keeps its code. Taken when the cache can
// hold more than kLeanMinBlocks pooled blocks (score_stride: 8192 positions at R = 64, where block_topk_range_set
// starts to beat the radix selection); DS4_CUDA_SELECT_LEAN=0 never takes it, =1 always (both to measure). Host side.
constexpr int64_t kLeanMinBlocks = 128;
inline bool select_lean(int64_t score_stride) {
  static const int force = switch_int("DS4_CUDA_SELECT_LEAN", -1);
  return force < 0 ? score_stride > kLeanMinBlocks : force != 0;
}
// Shared memory of choose_blocks_lean among up to n pooled blocks (select_topk_bytes covers its fallback; both are
// whole words).
__host__ __device__ inline size_t select_lean_bytes(int64_t n) {
  const size_t a = select_topk_bytes(n), b = topk_range_set_smem_bytes(n);
  return a > b ? a : b;
}

// choose_blocks' ranking (no radix set), out of line: choose_blocks_lean's path for few blocks and its fallback when
// equal scores straddle the k-th place, whose code would otherwise sit in the kernel's path.
template <class Value>
__device__ __noinline__ void choose_blocks_ranked(Value value, int nb, int k, void* topk_smem, Item* replay,
                                                  int* chosen, int* sorted) {
  choose_blocks(value, nb, k, topk_smem, replay, chosen, sorted, false);
}

// choose_blocks' contract: topk.cuh's block_topk_range_set past kLeanRangeMinN blocks (the probe: 128 blocks 1.6 us
// against the radix selection's 1.7, 512 blocks 2.6 against 3.9), the ranking below that (1.2 us at 64 blocks) and
// for the straddle. topk_smem: select_lean_bytes(nb) bytes.
constexpr int kLeanRangeMinN = 64;
template <class Value>
__device__ inline void choose_blocks_lean(Value value, int nb, int k, void* topk_smem, Item* replay, int* chosen,
                                          int* sorted) {
  if (nb > kLeanRangeMinN && block_topk_range_set(value, nb, k, topk_smem, sorted)) return;
  choose_blocks_ranked(value, nb, k, topk_smem, replay, chosen, sorted);
}

// Position j of the key list of a query at p with nb = (p + 1) / R complete blocks, sorted[0..k) its chosen blocks
// (ascending) when nb > k: the chosen blocks' positions, then the incomplete block's; every position when nb <= k
// (select_kernel's lists, position by position). 32-bit: positions are int32.
__device__ __forceinline__ int32_t listed_position(int j, int nb, int k, int R, const int* sorted) {
  if (nb <= k) return j;
  const int kr = k * R;
  return j < kr ? sorted[j / R] * R + j % R : nb * R + (j - kr);
}
// The length of that list.
__device__ __forceinline__ int32_t listed_count(int64_t p, int nb, int k, int R) {
  return nb <= k ? int32_t(p + 1) : int32_t(int64_t(k) * R + p + 1 - int64_t(nb) * R);
}

}  // namespace ds4::cuda::detail
