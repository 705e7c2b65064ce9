// Device helpers shared by the CUDA kernels: activations with the CPU's formulas, bf16 unpacking, warp and
// block reductions, launch-size helpers and host-side argument checks.
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>

#include "backend/cuda/check.h"
#include "backend/cuda/ops.h"
#include "backend/cuda/switches.h"
#include "backend/cuda/trace.h"

namespace ds4::cuda::detail {

// ----- activations: the same expressions as cpu/norms.cpp (no fast-math: expf is within 2 ulp) -----
__device__ __forceinline__ float silu(float x) { return x / (1.0f + expf(-x)); }
__device__ __forceinline__ float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }
__device__ __forceinline__ float softplus(float x) { return x > 20.0f ? x : log1pf(expf(x)); }
__device__ __forceinline__ float apply_act(Act a, float x) {
  return a == Act::Silu ? silu(x) : a == Act::Sigmoid ? sigmoid(x) : x;
}

// ----- bfloat16 -----
__device__ __forceinline__ float bf(const bf16 v) { return __bfloat162float(v); }
// The two bf16 halves of a 32-bit word as floats (a bf16 is the top half of a float's bits).
__device__ __forceinline__ float bf_lo(uint32_t u) { return __uint_as_float(u << 16); }
__device__ __forceinline__ float bf_hi(uint32_t u) { return __uint_as_float(u & 0xffff0000u); }
// Eight packed bf16 (one 128-bit load) dotted with eight floats.
__device__ __forceinline__ float dot8(const uint4 w, const float4 a, const float4 b) {
  float s = bf_lo(w.x) * a.x;
  s = fmaf(bf_hi(w.x), a.y, s);
  s = fmaf(bf_lo(w.y), a.z, s);
  s = fmaf(bf_hi(w.y), a.w, s);
  s = fmaf(bf_lo(w.z), b.x, s);
  s = fmaf(bf_hi(w.z), b.y, s);
  s = fmaf(bf_lo(w.w), b.z, s);
  s = fmaf(bf_hi(w.w), b.w, s);
  return s;
}
// Streaming 128-bit load of weights: read once per token, so keep them out of L1 (ld.global.nc.L1::no_allocate).
__device__ __forceinline__ uint4 ld_stream(const void* p) {
#ifdef __CUDA_ARCH__
  uint4 r;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
               : "l"(p));
  return r;
#else  // host compilation of the same source (never executed by nvcc builds)
  return *static_cast<const uint4*>(p);
#endif
}

// ----- asynchronous copies into shared memory (cp.async) -----
// Bytes (4, 8 or 16) from global src to shared dst; the copying thread sees them after its own wait_async (or
// wait_all_async). 16-byte copies bypass L1 (.cg), the smaller ones may not (.ca: the only form for them).
template <int Bytes>
__device__ __forceinline__ void cp_async(void* dst, const void* src) {
  static_assert(Bytes == 4 || Bytes == 8 || Bytes == 16, "cp.async copies 4, 8 or 16 bytes");
#ifdef __CUDA_ARCH__
  const uint32_t d = uint32_t(__cvta_generic_to_shared(dst));
  if constexpr (Bytes == 16) asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(d), "l"(src) : "memory");
  else if constexpr (Bytes == 8) asm volatile("cp.async.ca.shared.global [%0], [%1], 8;" ::"r"(d), "l"(src) : "memory");
  else asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(d), "l"(src) : "memory");
#else  // the CPU emulator: a plain copy
  for (int i = 0; i < Bytes; i++) static_cast<unsigned char*>(dst)[i] = static_cast<const unsigned char*>(src)[i];
#endif
}
// Closes the thread's copies issued since the last commit into one group.
__device__ __forceinline__ void commit_async() {
#ifdef __CUDA_ARCH__
  asm volatile("cp.async.commit_group;" ::: "memory");
#endif
}
// Waits until at most N of the thread's committed groups are still in flight.
template <int N>
__device__ __forceinline__ void wait_async() {
#ifdef __CUDA_ARCH__
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
#endif
}
// Waits for all of the thread's copies, committed or not.
__device__ __forceinline__ void wait_all_async() {
#ifdef __CUDA_ARCH__
  asm volatile("cp.async.wait_all;" ::: "memory");
#endif
}

// ----- reductions -----
template <class T>
__device__ __forceinline__ T warp_sum(T v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
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

// Sum over the whole block (blockDim.x a multiple of 32, at most 1024); every thread gets the result.
// `red` is shared scratch of 32 elements; the function synchronises, so call it from all threads.
template <class T>
__device__ T block_sum(T v, T* red) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
  v = warp_sum(v);
  __syncthreads();  // red may still be read by a previous call
  if (lane == 0) red[warp] = v;
  __syncthreads();
  T t = lane < nwarps ? red[lane] : T(0);
  return warp_sum(t);
}

__host__ __device__ __forceinline__ int64_t imin(int64_t a, int64_t b) { return a < b ? a : b; }
__host__ __device__ __forceinline__ int64_t imax(int64_t a, int64_t b) { return a > b ? a : b; }

#ifdef DS4_CUDA_TRACE
// This translation unit's pointer to the decode-step timeline (trace.h), set by the trace::Recorder.
namespace trace_unit {
static __device__ trace::Buf* g_trace = nullptr;
// Also called from the recorder's destructor: a failure leaves this unit untraced, never throws.
static void set(trace::Buf* p) { (void)cudaMemcpyToSymbol(g_trace, &p, sizeof(p)); }
[[maybe_unused]] static const bool registered = (trace::register_unit(&set), true);
}  // namespace trace_unit
#endif

// ----- programmatic dependent launch -----
// Every kernel is launched with programmatic stream serialization (launch() below) and begins with
// pdl_enter(): it waits until the kernel before it on the stream has finished and its writes are visible
// (griddepcontrol.wait), then lets the kernel after it be scheduled (griddepcontrol.launch_dependents). So the
// next kernel's blocks are resident and waiting while this one runs, and the launch gap between small decode
// kernels disappears; nothing is read or written before the wait, so the stream order is unchanged. Launched
// without the attribute (or before sm_90), both instructions do nothing.
//
// pdl_enter() returns a PdlScope, which the kernel keeps in the scope it ends in
// (`[[maybe_unused]] const auto pdl = detail::pdl_enter();`): empty in normal builds; in trace builds (trace.h)
// it holds thread 0's record of the block and stamps the block's exit time when it goes out of scope.
struct PdlScope {
#ifdef DS4_CUDA_TRACE
  trace::Rec* rec = nullptr;
  __device__ ~PdlScope() {
#if defined(__CUDA_ARCH__)
    if (rec) {
      unsigned long long t;
      asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
      rec->exit = t;
    }
#endif
  }
  // Thread 0 stamps point k (< trace::kMarks) of the block's timeline (a step of the kernel it has finished).
  __device__ __forceinline__ void mark(int k) const {
#if defined(__CUDA_ARCH__)
    if (rec) {
      unsigned long long t;
      asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t) :: "memory");
      rec->mark[k] = t;
    }
#endif
  }
#else
  __device__ __forceinline__ void mark(int) const {}
#endif
};

//
// pdl_enter(true) (early trigger) lets the kernel after it be scheduled before the wait: for a short, latency-bound
// kernel (the mixer's up pass, the delta rule, the attention combine) whose successor streams weights, so that
// the successor's blocks are resident, and its first weights on their way (it prefetches before its own wait),
// while this kernel still waits and runs. The successor's wait still covers this kernel's completion, and this
// kernel completes only after its own predecessor, so the stream order holds either way.
[[nodiscard]] __device__ __forceinline__ PdlScope pdl_enter(bool early_trigger = false) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#ifdef DS4_CUDA_TRACE
  unsigned long long t0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
#endif
  if (early_trigger) asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  asm volatile("griddepcontrol.wait;" ::: "memory");
  if (!early_trigger) asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#ifdef DS4_CUDA_TRACE
  trace::Buf* b = trace_unit::g_trace;
  trace::Rec* rec = nullptr;
  if (b && threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0) {
    unsigned long long t1, grid;
    unsigned sm;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1));
    asm volatile("mov.u64 %0, %%gridid;" : "=l"(grid));
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    const unsigned i = atomicAdd(&b->n, 1u);
    if (i < b->cap) {
      rec = &b->rec[i];
      *rec = trace::Rec{grid, t0, t1, 0ull, blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z), sm, {}};
    }
  }
  return PdlScope{rec};
#endif
#else
  (void)early_trigger;
#endif
  return PdlScope{};
}

// Starts the 128-byte line at p on its way into L2 (no register is written; safe on any address the kernel
// may read).
__device__ __forceinline__ void prefetch_l2(const void* p) {
#if defined(__CUDA_ARCH__)
  asm volatile("prefetch.global.L2 [%0];" ::"l"(p));
#endif
}

// DS4_CUDA_PDL=0 launches without the attribute (plain stream order), to measure what the overlap is worth.
inline bool pdl_enabled() {
  static const bool on = switch_on("DS4_CUDA_PDL");
  return on;
}

// The kernels that enter with pdl_enter(true): DS4_CUDA_EARLY_TRIGGER=hc_up,delta,combine (any of them), none by
// default: on the H200 (session 10, bench/RESULTS.md) hc_up measured +1.0, +0.6 and -0.6 % on 48 layers in three
// calls and neutral on 8, with delta or combine added -0.5 to +0.3 %: within the noise, so plain order stays.
inline bool early_trigger(const char* kernel) {
  static const std::string list = [] {
    const char* v = std::getenv("DS4_CUDA_EARLY_TRIGGER");
    return "," + std::string(v ? v : "") + ",";
  }();
  return list.find("," + std::string(kernel) + ",") != std::string::npos;
}

// kernel<<<grid, block, smem, ctx.stream()>>>(args...) with the programmatic-serialization attribute, and with
// cluster_x > 0 in thread-block clusters of cluster_x blocks along x (grid.x a multiple of it).
template <typename... KArgs, typename... Args>
inline void launch_in_clusters(const Context& ctx, unsigned cluster_x, void (*kernel)(KArgs...), dim3 grid, dim3 block,
                               size_t smem, Args&&... args) {
#ifdef DS4_CUDA_TRACE
  trace::note_launch(reinterpret_cast<const void*>(kernel));
#endif
  cudaLaunchAttribute attr[2];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = pdl_enabled() ? 1 : 0;
  attr[1].id = cudaLaunchAttributeClusterDimension;
  attr[1].val.clusterDim.x = cluster_x;
  attr[1].val.clusterDim.y = 1;
  attr[1].val.clusterDim.z = 1;
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = ctx.stream();
  cfg.attrs = attr;
  cfg.numAttrs = cluster_x > 0 ? 2 : 1;
  DS4_CUDA_CHECK(cudaLaunchKernelEx(&cfg, kernel, static_cast<KArgs>(args)...));
}
template <typename... KArgs, typename... Args>
inline void launch(const Context& ctx, void (*kernel)(KArgs...), dim3 grid, dim3 block, size_t smem, Args&&... args) {
  launch_in_clusters(ctx, 0, kernel, grid, block, smem, std::forward<Args>(args)...);
}

// ----- launch helpers -----
inline unsigned blocks_for(int64_t n, int threads) { return unsigned((n + threads - 1) / threads); }
// A 1-D grid-stride launch size that fills the device without a huge grid.
inline unsigned grid_for(const Context& ctx, int64_t n, int threads) {
  const int64_t b = (n + threads - 1) / threads, cap = int64_t(ctx.sm_count()) * 32;
  return unsigned(b < 1 ? 1 : b > cap ? cap : b);
}

// ----- host-side argument checks -----
inline void require(bool ok, const std::string& what) {
  if (!ok) throw Error(ErrorKind::InvalidArgument, "cuda op: " + what);
}
inline void require_supported(bool ok, const std::string& what) {
  if (!ok) throw Error(ErrorKind::Unsupported, "cuda op: " + what);
}
inline bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

// Raises a kernel's dynamic shared-memory limit to `bytes` where the default does not cover them: the default (48
// KiB) counts the kernel's static shared memory too, so 48 KiB of dynamic memory beside a few static bytes is past
// it. Throws when the device has less. Callers call it before every launch (prefill chunks: hundreds a chunk), so
// each kernel's attributes are asked once and the limit raised once per size (`allowed`: the bytes each kernel is
// known to take).
template <class Kernel>
void allow_smem(const Context& ctx, Kernel k, size_t bytes) {
  require_supported(bytes <= ctx.smem_optin(), "kernel needs " + std::to_string(bytes) +
                                                   " bytes of shared memory, the device allows " +
                                                   std::to_string(ctx.smem_optin()));
  if (bytes == 0) return;
  static std::mutex mu;
  static std::unordered_map<const void*, size_t> allowed;
  const void* key = reinterpret_cast<const void*>(k);
  std::lock_guard<std::mutex> lock(mu);
  auto it = allowed.find(key);
  if (it != allowed.end() && it->second >= bytes) return;
  cudaFuncAttributes fa{};
  DS4_CUDA_CHECK(cudaFuncGetAttributes(&fa, k));
  if (bytes + fa.sharedSizeBytes > 48 * 1024)
    DS4_CUDA_CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)));
  allowed[key] = bytes;
}

}  // namespace ds4::cuda::detail
