// Block-wide top-k of one row with cpu::topk_indices' selection (topk_select.h says why ties need care).
//
// Each value becomes a 64-bit key: 32 bits that order floats as the CPU comparator does (NaN highest, -0 equal
// to +0) above the inverted index, so one bitonic sort in shared memory ranks the row by value descending and,
// among equal values, by index ascending. When the k-th and (k+1)-th keys carry equal values the CPU's choice
// among them depends on its algorithm: thread 0 replays it (rare: exact ties at the boundary), marks the chosen
// items, and a second sort orders them.
#pragma once
#include "backend/cuda/common.cuh"
#include "backend/cuda/topk_select.h"

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
// Shared memory of block_topk for rows of up to n values.
inline size_t topk_smem_bytes(int64_t n) { return size_t(topk_pow2(n)) * 8 + size_t(n); }

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

}  // namespace ds4::cuda::detail
