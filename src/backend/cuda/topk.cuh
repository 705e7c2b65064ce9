// Top-k of one row with cpu::topk_indices' selection (topk_select.h says why ties need care).
//
// Each value becomes a 64-bit key: 32 bits that order floats as the CPU comparator does (NaN highest, -0 equal
// to +0) above the inverted index. Keys are unique, and ranking them descending ranks the row by value
// descending and, among equal values, by index ascending. When the k-th and (k+1)-th keys carry equal values
// the CPU's choice among them depends on its algorithm: one thread replays it (rare: exact ties at the
// boundary) and the chosen items are ordered by key.
//
// Three selections, with identical results:
// - block_topk (any k): one bitonic sort of all keys in shared memory; a straddling row marks the replay's
//   choice and sorts again.
// - block_topk_rank (any k, n <= kTopkRankMaxN): each element's rank counted over all keys; no sort.
// - block_topk_set: the chosen set in index order (a radix search for the k-th key's value bits), for callers
//   that need no order by value; it reports a straddle instead of replaying it.
// - warp_topk_small / block_topk_small (k <= kTopkSmallMax): k + 1 rounds of an arg-max over the keys, each
//   round taking the largest key below the previous round's winner. Round j's winner is the j-th key of the
//   sorted row, so rounds 0..k-1 give the top k in order and round k the (k+1)-th key for the straddle check;
//   a straddling row replays the CPU and sorts the chosen k keys. A round costs one warp reduction (and one
//   barrier in the block version) instead of the sort's log2(n)^2 / 2 barriers.
#pragma once
#include "backend/cuda/common.cuh"
#include "backend/cuda/topk_select.h"

#include <type_traits>

namespace ds4::cuda::detail {

using topk_replay::Item;

__device__ __forceinline__ uint32_t order_bits(float v) {
  if (v != v) return 0xffffffffu;  // NaN ranks above everything
  if (v == 0.0f) v = 0.0f;         // -0 and +0 compare equal
  const uint32_t u = __float_as_uint(v);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}
// 0 is below every real key (the smallest, -inf, has order bits 0x007fffff): it pads the sort.
__device__ __forceinline__ unsigned long long topk_key(float v, int i) {
  return (static_cast<unsigned long long>(order_bits(v)) << 32) | (0xffffffffu - uint32_t(i));
}
__device__ __forceinline__ int topk_index(unsigned long long key) { return int(0xffffffffu - uint32_t(key)); }

__host__ __device__ inline int topk_pow2(int64_t n) {
  int p = 1;
  while (p < n) p <<= 1;
  return p;
}
// Shared memory of block_topk (keys and marks) or block_topk_rank (keys and the two boundary keys) for rows of up
// to n values.
__host__ __device__ inline size_t topk_smem_bytes(int64_t n) {
  const size_t sort = size_t(topk_pow2(n)) * 8 + size_t(n), rank = size_t(n) * 8 + 16;
  return sort > rank ? sort : rank;
}

__device__ inline void bitonic_sort_desc(unsigned long long* keys, int npow2) {
  for (int size = 2; size <= npow2; size <<= 1)
    for (int stride = size >> 1; stride > 0; stride >>= 1) {
      for (int i = threadIdx.x; i < npow2; i += blockDim.x) {
        const int j = i ^ stride;
        if (j > i) {
          const unsigned long long a = keys[i], b = keys[j];
          if ((i & size) == 0 ? a < b : a > b) {
            keys[i] = b;
            keys[j] = a;
          }
        }
      }
      __syncthreads();
    }
}

// All threads of the block call it. value(i) gives element i < n; 1 <= k <= n. smem: topk_smem_bytes(n) bytes
// (8-byte aligned). replay: n items of global scratch for this row. out[0..k): indices by value descending,
// equal values by ascending index. Ends with a barrier: out may be shared memory read right after.
template <class Value>
__device__ void block_topk(Value value, int n, int k, void* smem, Item* replay, int* out) {
  const int npow2 = int(topk_pow2(n));
  auto* keys = static_cast<unsigned long long*>(smem);
  auto* marks = reinterpret_cast<unsigned char*>(keys + npow2);
  for (int i = threadIdx.x; i < npow2; i += blockDim.x) keys[i] = i < n ? topk_key(value(i), i) : 0ull;
  __syncthreads();
  bitonic_sort_desc(keys, npow2);
  const bool straddle = k < n && (keys[k - 1] >> 32) == (keys[k] >> 32);
  if (straddle) {
    for (int i = threadIdx.x; i < n; i += blockDim.x) marks[i] = 0;
    __syncthreads();
    if (threadIdx.x == 0) {
      for (int i = 0; i < n; i++) replay[i] = Item{value(i), i};
      topk_replay::select_topk(replay, n, k);
      for (int i = 0; i < k; i++) marks[replay[i].i] = 1;
    }
    __syncthreads();
    for (int i = threadIdx.x; i < npow2; i += blockDim.x) keys[i] = (i < n && marks[i]) ? topk_key(value(i), i) : 0ull;
    __syncthreads();
    bitonic_sort_desc(keys, npow2);
  }
  for (int i = threadIdx.x; i < k; i += blockDim.x) out[i] = topk_index(keys[i]);
  __syncthreads();
}

// ----------------------------------------------------------------------------------------------------------
// Selection by rounds of arg-max, for small k
// ----------------------------------------------------------------------------------------------------------
constexpr int kTopkSmallMax = 32;  // a warp's lanes hold one selected index each

__device__ __forceinline__ unsigned long long key_max(unsigned long long a, unsigned long long b) { return a > b ? a : b; }

// The largest key among the 32 lanes, in every lane (all lanes must call it).
__device__ __forceinline__ unsigned long long warp_max_key(unsigned long long x) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  // Two single-instruction reductions: the largest high word, then the largest low word among the lanes that
  // hold it (lexicographic order is the 64-bit order).
  const unsigned hi = __reduce_max_sync(0xffffffffu, unsigned(x >> 32));
  const unsigned lo = __reduce_max_sync(0xffffffffu, unsigned(x >> 32) == hi ? unsigned(x) : 0u);
  return (static_cast<unsigned long long>(hi) << 32) | lo;
#else
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) x = key_max(x, __shfl_xor_sync(0xffffffffu, x, o));
  return x;
#endif
}

// The straddle path of the small selections: replay[0..n) holds the row (value, index) in index order. Leaves
// in replay[0..k) the CPU's chosen items ordered by key descending (value descending, then index ascending),
// the order block_topk's second sort gives the same set. One thread; k <= kTopkSmallMax, so insertion sort.
// Not inlined: the replay's code would otherwise take registers from the selection's hot loop.
__device__ inline __noinline__ void replay_and_order(Item* replay, int n, int k) {
  topk_replay::select_topk(replay, n, k);
  for (int i = 1; i < k; i++) {
    const Item it = replay[i];
    const unsigned long long key = topk_key(it.v, it.i);
    int j = i;
    for (; j > 0 && topk_key(replay[j - 1].v, replay[j - 1].i) < key; j--) replay[j] = replay[j - 1];
    replay[j] = it;
  }
}

// The straddle path of the block selections: thread 0 replays the CPU's choice over the whole row (value(i) for
// i < n) and writes the chosen indices, ordered by key descending, to out[0..k); the caller synchronises.
template <class Value>
__device__ void replay_to(Value value, int n, int k, Item* replay, int* out) {
  if (threadIdx.x != 0) return;
  for (int i = 0; i < n; i++) replay[i] = Item{value(i), i};
  replay_and_order(replay, n, k);
  for (int i = 0; i < k; i++) out[i] = replay[i].i;
}

// A lane's keys in descending order: a bitonic network over registers.
template <int PER>
__device__ __forceinline__ void sort_keys_desc(unsigned long long (&key)[PER]) {
#pragma unroll
  for (int size = 2; size <= PER; size <<= 1)
#pragma unroll
    for (int stride = size >> 1; stride > 0; stride >>= 1)
#pragma unroll
      for (int i = 0; i < PER; i++) {
        const int j = i ^ stride;
        if (j > i) {
          const unsigned long long a = key[i], b = key[j];
          const bool swap = (i & size) == 0 ? a < b : a > b;
          key[i] = swap ? b : a;
          key[j] = swap ? a : b;
        }
      }
}

// Rounds of an arg-max over the warp's keys (each lane's PER keys sorted descending, 0 for none; real keys are
// unique and > 0): round r's winner is the r-th largest key of the warp. Lane r < min(rounds, 32) gets round r's
// key (0 when the warp has fewer keys), the other lanes 0; last gets the final round's key in every lane. Only the
// winner's lane changes its candidate, moving to its next key by a shift (a scan of all its keys for the largest
// below the winner, a chain of PER dependent compares every round, was most of the routing kernel's time at 512
// experts). All 32 lanes call it; the keys are consumed.
template <int PER>
__device__ __forceinline__ unsigned long long warp_rank_keys(unsigned long long (&key)[PER], int rounds,
                                                             unsigned long long& last) {
  const int lane = int(threadIdx.x & 31);
  unsigned long long loc = key[0], mine = 0;
  last = 0;
  for (int r = 0; r < rounds; r++) {
    const unsigned long long best = warp_max_key(loc);
    if (lane == r) mine = best;
    last = best;
    if (loc == best && best != 0) {
#pragma unroll
      for (int j = 0; j + 1 < PER; j++) key[j] = key[j + 1];
      key[PER - 1] = 0;
      loc = key[0];
    }
  }
  return mine;
}

// The straddle check and the chosen indices of a small selection from its ranked keys (warp_rank_keys with
// k + 1 rounds when k < n, else k): when the k-th and (k+1)-th keys have the same value, the CPU's choice among
// equal values is replayed over the whole row, which fill(replay) writes (n items, index order; all lanes call it,
// each writing some). Returns, in lane j < k, the j-th chosen index, -1 in the other lanes.
template <class Fill>
__device__ __forceinline__ int chosen_from_ranks(unsigned long long rank, unsigned long long last, int n, int k,
                                                 Item* replay, Fill fill) {
  const int lane = int(threadIdx.x & 31);
  const unsigned long long kth = __shfl_sync(0xffffffffu, rank, k - 1);
  int mine = lane < k ? topk_index(rank) : -1;
  // Warp-uniform: kth and last are the same in every lane.
  if (k < n && (kth >> 32) == (last >> 32)) {
    fill(replay);
    __syncwarp();  // orders the lanes' writes before lane 0's reads (and lane 0's writes before the reads below)
    if (lane == 0) replay_and_order(replay, n, k);
    __syncwarp();
    mine = lane < k ? replay[lane].i : -1;
  }
  return mine;
}

// One warp selects the top k of n <= 32 * PER values held in registers: v[j] is element lane + 32 j (ignored
// at n and beyond). 1 <= k <= min(n, kTopkSmallMax). Returns, in lane j < k, the index of the j-th selected
// element (value descending, equal values by ascending index), -1 in the other lanes. replay: n items of
// global scratch for this row (written only when equal values straddle the k-th place). All 32 lanes call it.
// Rounds 0..k-1 select; round k (when k < n) only looks at the (k+1)-th key, for the straddle check.
template <int PER>
__device__ int warp_topk_small(const float (&v)[PER], int n, int k, Item* replay) {
  const int lane = int(threadIdx.x & 31);
  unsigned long long key[PER];
#pragma unroll
  for (int j = 0; j < PER; j++) {
    const int i = lane + 32 * j;
    key[j] = i < n ? topk_key(v[j], i) : 0ull;
  }
  sort_keys_desc(key);
  unsigned long long last;
  const unsigned long long rank = warp_rank_keys(key, k < n ? k + 1 : k, last);
  return chosen_from_ranks(rank, last, n, k, replay, [&](Item* rp) {
#pragma unroll
    for (int j = 0; j < PER; j++) {
      const int i = lane + 32 * j;
      if (i < n) rp[i] = Item{v[j], i};
    }
  });
}

// Host side: calls f(std::integral_constant<int, PER>{}) with the smallest PER of 1, 2, 4, ..., 32 such that
// n <= 32 * PER (1 <= n <= 1024): the register row of warp_topk_small.
template <class F>
void with_lanes_per(int64_t n, F&& f) {
  if (n <= 32) f(std::integral_constant<int, 1>{});
  else if (n <= 64) f(std::integral_constant<int, 2>{});
  else if (n <= 128) f(std::integral_constant<int, 4>{});
  else if (n <= 256) f(std::integral_constant<int, 8>{});
  else if (n <= 512) f(std::integral_constant<int, 16>{});
  else f(std::integral_constant<int, 32>{});
}

// The block-wide version for any n: the same rounds, each thread owning elements threadIdx.x + blockDim.x * j
// (their keys in shared memory, read and written only by that thread). All threads of the block call it;
// blockDim.x a multiple of 32. value(i) gives element i < n; 1 <= k <= min(n, kTopkSmallMax). smem:
// topk_small_smem_bytes(n) bytes (8-byte aligned). replay: n items of global scratch for this row. out[0..k):
// indices by value descending, equal values by ascending index. Ends with a barrier: out may be shared memory
// read right after.
inline size_t topk_small_smem_bytes(int64_t n) { return size_t(n) * 8; }

template <class Value>
__device__ void block_topk_small(Value value, int n, int k, void* smem, Item* replay, int* out) {
  __shared__ unsigned long long red[2][32];  // per-warp maxima, double-buffered: one barrier per round
  auto* keys = static_cast<unsigned long long*>(smem);
  const int tid = int(threadIdx.x), nt = int(blockDim.x), lane = tid & 31, warp = tid >> 5, nwarps = nt >> 5;
  unsigned long long loc = 0;
  for (int i = tid; i < n; i += nt) {
    keys[i] = topk_key(value(i), i);
    loc = key_max(loc, keys[i]);
  }
  const int rounds = k < n ? k + 1 : k;
  unsigned long long kth = 0, next = 0;
  for (int r = 0; r < rounds; r++) {
    // Buffer r & 1 is rewritten in round r + 2, after every thread has passed round r + 1's barrier and so
    // finished reading it in round r.
    const unsigned long long w = warp_max_key(loc);
    if (lane == 0) red[r & 1][warp] = w;
    __syncthreads();
    unsigned long long best = 0;
    for (int q = 0; q < nwarps; q++) best = key_max(best, red[r & 1][q]);
    if (r == k) {
      next = best;
      break;
    }
    const int i = topk_index(best);
    if (tid == 0) out[r] = i;
    if (r == k - 1) kth = best;
    if (i % nt == tid) {
      loc = 0;
      for (int q = tid; q < n; q += nt) loc = key_max(loc, keys[q] < best ? keys[q] : 0ull);
    }
  }
  // Block-uniform: every thread read the same maxima.
  if (k < n && (kth >> 32) == (next >> 32)) replay_to(value, n, k, replay, out);
  __syncthreads();
}

// ----------------------------------------------------------------------------------------------------------
// Selection by ranks, for rows of at most kTopkRankMaxN values (any k)
// ----------------------------------------------------------------------------------------------------------
// Keys are unique, so an element's place in the descending order is the number of keys above its own: the top k
// are the elements ranked below k, each written straight to out[rank], with no sort. The rank loop reads every key
// once per element (n^2 compares spread over the block, the keys read as broadcasts), against the bitonic sort's
// log2(n)^2 / 2 barrier-separated stages: at n = 64 (the QSA selection after a 4096-token prompt) the sort took
// 2.8 us of the selection kernel on the H200. Past about a thousand elements the n^2 compares cost more.
constexpr int kTopkRankMaxN = 1024;

// The third selection with block_topk's results: all threads of the block call it; value(i) gives element i < n,
// 1 <= k <= n <= kTopkRankMaxN; smem: topk_smem_bytes(n) bytes (8-byte aligned); replay: n items of global
// scratch for this row. out[0..k): indices by value descending, equal values by ascending index. Ends with a
// barrier: out may be shared memory read right after.
template <class Value>
__device__ void block_topk_rank(Value value, int n, int k, void* smem, Item* replay, int* out) {
  auto* keys = static_cast<unsigned long long*>(smem);
  unsigned long long* edge = keys + n;  // [2]: the keys ranked k - 1 and k
  const int tid = int(threadIdx.x), nt = int(blockDim.x);
  for (int i = tid; i < n; i += nt) keys[i] = topk_key(value(i), i);
  if (tid < 2) edge[tid] = 0ull;
  __syncthreads();
  for (int i = tid; i < n; i += nt) {
    const unsigned long long key = keys[i];
    int rank = 0;
#pragma unroll 8
    for (int j = 0; j < n; j++) rank += keys[j] > key ? 1 : 0;
    if (rank < k) out[rank] = i;
    if (rank == k - 1) edge[0] = key;
    if (rank == k) edge[1] = key;
  }
  __syncthreads();
  // Block-uniform: when the k-th and (k+1)-th keys carry the same value, the CPU's choice is replayed.
  if (k < n && (edge[0] >> 32) == (edge[1] >> 32)) replay_to(value, n, k, replay, out);
  __syncthreads();
}

// ----------------------------------------------------------------------------------------------------------
// The chosen set in index order, by a radix search for the k-th key's value bits
// ----------------------------------------------------------------------------------------------------------
// For callers that need the top k as a set in ascending index order (the QSA selection): four passes of 8 bits
// over the keys' value bits (a shared-memory histogram each, the bin holding the k-th key found by one warp), then
// every element at or above those bits is chosen and written in index order by a block-wide scan. No sort and no
// n^2 compares: ranking 512 pooled blocks by counting (a 32768-token prompt) was about 5 us on one multiprocessor.
constexpr int kRadixBins = 256;

// Shared memory of block_topk_set for rows of up to n values.
__host__ __device__ inline size_t topk_set_smem_bytes(int64_t n) { return size_t(n) * 4 + size_t(kRadixBins + 40) * 4; }

// One radix pass's bin holding the remaining-th element from the top, found by one warp (all 32 lanes call it):
// lane l holds bins 255 - 8 l down to 248 - 8 l, counted from the top bin down. sh[0] = the bin, sh[1] = the elements
// in the bins above it, sh[2] = the bin's own count.
__device__ __forceinline__ void radix_find_bin(const int* hist, int remaining, int* sh) {
  const int lane = int(threadIdx.x & 31);
  int c[8], sum = 0;
#pragma unroll
  for (int q = 0; q < 8; q++) sum += (c[q] = hist[255 - 8 * lane - q]);
  int incl = sum;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const int y = __shfl_up_sync(0xffffffffu, incl, o);
    if (lane >= o) incl += y;
  }
  int above = incl - sum;
  if (above < remaining && remaining <= incl) {
#pragma unroll
    for (int q = 0; q < 8; q++) {
      if (above + c[q] >= remaining) {
        sh[0] = 255 - 8 * lane - q;
        sh[1] = above;
        sh[2] = c[q];
        break;
      }
      above += c[q];
    }
  }
}

// Writes every i < n with (ob[i] & mask) >= prefix to out, in index order: contiguous ranges per thread, their
// counts scanned over the block (sh[8 + w]: the warps' sums). All threads call it; ends with a barrier.
__device__ inline void write_chosen_in_order(const uint32_t* ob, int n, uint32_t mask, uint32_t prefix, int* out,
                                             int* sh) {
  const int tid = int(threadIdx.x), nt = int(blockDim.x), lane = tid & 31, warp = tid >> 5;
  const int per = (n + nt - 1) / nt, i0 = min(n, tid * per), i1 = min(n, i0 + per);
  int mine = 0;
  for (int i = i0; i < i1; i++) mine += (ob[i] & mask) >= prefix ? 1 : 0;
  int incl = mine;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const int y = __shfl_up_sync(0xffffffffu, incl, o);
    if (lane >= o) incl += y;
  }
  if (lane == 31) sh[8 + warp] = incl;
  __syncthreads();
  int pos = incl - mine;
  for (int w = 0; w < warp; w++) pos += sh[8 + w];
  for (int i = i0; i < i1; i++)
    if ((ob[i] & mask) >= prefix) out[pos++] = i;
  __syncthreads();
}

// All threads of the block call it; blockDim.x a multiple of 32, at most 1024. value(i) gives element i < n;
// 1 <= k <= n; smem: topk_set_smem_bytes(n) bytes (4-byte aligned). Returns true (in every thread) with out[0..k) =
// the indices of the top k (block_topk's set) in ascending order, or false, out untouched, when the k-th and
// (k+1)-th keys carry the same value: the CPU's choice among equal values must then be replayed (block_topk and
// block_topk_rank do). Ends with a barrier either way.
template <class Value>
__device__ bool block_topk_set(Value value, int n, int k, void* smem, int* out) {
  auto* ob = static_cast<uint32_t*>(smem);          // [n] the value bits (order_bits)
  int* hist = reinterpret_cast<int*>(ob + n);       // [kRadixBins]
  int* sh = hist + kRadixBins;                      // radix_find_bin's [0..2], [8 + w] warp sums
  const int tid = int(threadIdx.x), nt = int(blockDim.x), warp = tid >> 5;
  for (int i = tid; i < n; i += nt) ob[i] = order_bits(value(i));
  uint32_t prefix = 0, pmask = 0;
  int remaining = k;  // elements still to choose among those whose bits match prefix under pmask
  for (int shift = 24; shift >= 0; shift -= 8) {
    for (int b = tid; b < kRadixBins; b += nt) hist[b] = 0;
    __syncthreads();  // the bits (first pass); every thread has read the previous pass's bin
    for (int i = tid; i < n; i += nt) {
      const uint32_t o = ob[i];
      if ((o & pmask) == prefix) atomicAdd(&hist[(o >> shift) & 255u], 1);
    }
    __syncthreads();
    if (warp == 0) radix_find_bin(hist, remaining, sh);
    __syncthreads();
    remaining -= sh[1];
    prefix |= uint32_t(sh[0]) << shift;
    pmask |= 255u << shift;
  }
  // prefix: the k-th key's value bits; remaining (>= 1) of the hist[bin] elements with exactly those bits are
  // chosen. Fewer than all of them is the straddle (block-uniform: every thread read the same counts).
  if (hist[prefix & 255u] > remaining) {
    __syncthreads();
    return false;
  }
  // Every element at or above prefix is chosen (k of them).
  write_chosen_in_order(ob, n, 0xffffffffu, prefix, out, sh);
  return true;
}

// ----------------------------------------------------------------------------------------------------------
// The decode kernel's QSA selection over many blocks (qsa.cuh's choose_blocks_lean)
// ----------------------------------------------------------------------------------------------------------
// Session 25 (bench/RESULTS.md): in the H200 probe faster than the model's selection past about 128 blocks (512
// values 2.5 us against 3.9); inline in the default decode kernel it cost more than it saved (the kernel's code
// grew), so it lives in a second instantiation, taken when the cache can hold more than 128 blocks (session 26:
// +0.4 % decode after a 32768-token prompt), written for few instructions (loops not unrolled).

// The set by a radix search over d = o - lo, the order bits' distance from the row's smallest value: the first pass
// bins the top 8 bits of the row's range (block_topk_set's first pass bins the top 8 bits of o, where indexer scores
// of 1 to 8 fall into three bins), each pass has its own histogram zeroed with the staging, every warp finds the bin
// itself (radix_find_bin into its own slots: one barrier a pass instead of three), and the search stops once the
// k-th value's bin is taken whole. Same contract as block_topk_set; smem: topk_range_set_smem_bytes(n) bytes.
constexpr int kRangeSlots = 200;  // [8, 40) warp counts, [40, 72) / [72, 104) warp extremes, [104, 200) warp bins
__host__ __device__ inline size_t topk_range_set_smem_bytes(int64_t n) {
  return size_t(4 * kRadixBins + kRangeSlots) * 4 + size_t(n) * 4;
}

// The row's order bits into ob (thread tid takes elements tid, tid + blockDim.x, ...), and in every lane the largest
// and smallest of its warp's. All threads call it.
template <class Value>
__device__ inline void stage_order_bits(Value value, int n, uint32_t* ob, uint32_t& hi, uint32_t& lo) {
  hi = 0, lo = 0xffffffffu;
#pragma unroll 1
  for (int i = int(threadIdx.x); i < n; i += int(blockDim.x)) {
    const uint32_t o = order_bits(value(i));
    ob[i] = o;
    hi = max(hi, o), lo = min(lo, o);
  }
  hi = __reduce_max_sync(0xffffffffu, hi), lo = __reduce_min_sync(0xffffffffu, lo);
}

template <class Value>
__device__ bool block_topk_range_set(Value value, int n, int k, void* smem, int* out) {
  int* hist = static_cast<int*>(smem);                       // [4][kRadixBins]
  int* sh = hist + 4 * kRadixBins;                           // [kRangeSlots]
  auto* ob = reinterpret_cast<uint32_t*>(sh + kRangeSlots);  // [n] the order bits, d after the first pass
  const int tid = int(threadIdx.x), nt = int(blockDim.x), lane = tid & 31, warp = tid >> 5, nw = nt >> 5;
#pragma unroll 1
  for (int b = tid; b < 4 * kRadixBins; b += nt) hist[b] = 0;
  uint32_t hi, lo;
  stage_order_bits(value, n, ob, hi, lo);
  if (lane == 0) sh[40 + warp] = int(hi), sh[72 + warp] = int(lo);
  __syncthreads();  // the bits, the histograms' zeros, the warps' extremes
#pragma unroll 1
  for (int w = 0; w < nw; w++) hi = max(hi, uint32_t(sh[40 + w])), lo = min(lo, uint32_t(sh[72 + w]));
  // Block-uniform from here: every thread read the same extremes and, pass by pass, the same histogram.
  const int bits = 32 - __clz(int(hi - lo));                      // every d is below 2^bits (0: all equal)
  uint32_t pmask = bits == 32 ? 0u : ~0u << bits, prefix = 0;     // d's bits above those: zero everywhere
  int remaining = k,* wb = sh + 104 + 3 * warp;
  bool whole = false;
#pragma unroll 1
  for (int shift = bits, pass = 0; shift > 0; pass++) {
    const int low = max(shift - 8, 0);
    const uint32_t bmask = (1u << (shift - low)) - 1u;
    int* h = hist + pass * kRadixBins;
#pragma unroll 1
    for (int i = tid; i < n; i += nt) {
      const uint32_t d = pass == 0 ? ob[i] - lo : ob[i];
      if (pass == 0) ob[i] = d;  // each thread its own elements until the pass's barrier
      if ((d & pmask) == prefix) atomicAdd(&h[(d >> low) & bmask], 1);
    }
    __syncthreads();  // this pass's histogram (the next one was zeroed with the staging)
    radix_find_bin(h, remaining, wb);
    __syncwarp();
    remaining -= wb[1];
    prefix |= uint32_t(wb[0]) << low;
    pmask |= bmask << low;
    shift = low;
    if (wb[2] == remaining) {  // the k-th value's bin taken whole: every d at or above prefix is chosen
      whole = true;
      break;
    }
  }
  if (!whole) {  // every bit fixed and more equal values than places (or all equal): the straddle
    __syncthreads();  // every warp has read its last histogram before the caller reuses the bytes
    return false;
  }
  write_chosen_in_order(ob, n, pmask, prefix, out, sh);  // ob holds d: the first pass wrote it before its barrier
  return true;
}

}  // namespace ds4::cuda::detail
