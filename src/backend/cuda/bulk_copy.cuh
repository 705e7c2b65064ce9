// Bulk copies from global to shared memory by the copy engine (cp.async.bulk, sm_90) completing on a shared-memory
// mbarrier: a kernel streams weights into shared memory without holding a register per byte in flight, so
// the bytes in flight per multiprocessor are bounded by shared memory, not by warps and registers.
//
// A slot's protocol: mbar_init once (count 1); per use, one thread calls mbar_expect_tx with the bytes and issues
// bulk_g2s (they complete the phase); consumers wait with mbar_wait(parity of the use); before the slot is
// refilled, the readers' accesses must be ordered before the copy engine's writes (fence_async_shared after a
// __syncwarp/__syncthreads).
#pragma once
#include <cstdint>

namespace ds4::cuda::detail {

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
#ifdef __CUDA_ARCH__
  return uint32_t(__cvta_generic_to_shared(p));
#else  // host compilation of the same source (never executed)
  return uint32_t(reinterpret_cast<uintptr_t>(p));
#endif
}

__device__ __forceinline__ void mbar_init(uint64_t* bar, int count) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(bar)), "r"(count) : "memory");
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");  // visible to the copy engine
#endif
}

__device__ __forceinline__ void mbar_expect_tx(uint64_t* bar, uint32_t bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(bar)), "r"(bytes) : "memory");
#endif
}

// bytes (a multiple of 16, both addresses 16-byte aligned) from src to dst, completing on bar.
__device__ __forceinline__ void bulk_g2s(void* dst, const void* src, uint32_t bytes, uint64_t* bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                   smem_addr(dst)),
               "l"(src), "r"(bytes), "r"(smem_addr(bar))
               : "memory");
#endif
}

__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t parity) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  uint32_t done;
  do {
    asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                 : "=r"(done)
                 : "r"(smem_addr(bar)), "r"(parity)
                 : "memory");
  } while (!done);
#endif
}

// Orders this thread's earlier shared-memory accesses before later copy-engine writes to shared memory.
__device__ __forceinline__ void fence_async_shared() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
#endif
}

}  // namespace ds4::cuda::detail
