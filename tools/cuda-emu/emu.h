// CPU emulation of the CUDA execution model, enough for DS4's kernels (tools/cuda-emu/run.sh): one OS thread per
// CUDA thread, blocks one after another, __syncthreads and warp shuffles/ballots through real barriers, threads
// that return drop out of later barriers (as on the GPU). Launches are checked against the device's limits
// (block size, grid size, dynamic shared memory above 48 KiB only after cudaFuncSetAttribute). Shared memory
// starts as 0xFF bytes (NaN) so a read of an unwritten slot shows. What it cannot tell: speed, and anything that
// depends on real warp scheduling or the GPU's memory model beyond barriers.
#pragma once
#define __CUDA_RUNTIME_API_H__  // block the real runtime API header (vector_functions.h includes it)
#define __CUDA_INCLUDE_COMPILER_INTERNAL_HEADERS__  // host_defines.h is meant for the runtime headers only
#include <crt/host_defines.h>
#undef __CUDA_INCLUDE_COMPILER_INTERNAL_HEADERS__
#include <driver_types.h>
#include <cuda_bf16.h>
#include "emu_state.h"
#include <vector_types.h>
#include <algorithm>
#include <cassert>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#undef __global__
#undef __device__
#undef __host__
#undef __forceinline__
#undef __shared__
#undef __align__
#undef __launch_bounds__
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__ static
#define __align__(n) __attribute__((aligned(n)))
#define __launch_bounds__(...)

using std::max;
using std::min;

namespace emu {

struct Barrier {
  std::mutex m;
  std::condition_variable cv;
  int expected = 0, arrived = 0;
  uint64_t gen = 0;
  void reset(int n) {
    std::lock_guard<std::mutex> lk(m);
    expected = n;
    arrived = 0;
  }
  void wait() {
    std::unique_lock<std::mutex> lk(m);
    const uint64_t g = gen;
    if (++arrived >= expected) {
      arrived = 0;
      gen++;
      cv.notify_all();
    } else {
      cv.wait(lk, [&] { return gen != g; });
    }
  }
  void drop() {
    std::lock_guard<std::mutex> lk(m);
    expected--;
    if (arrived > 0 && arrived >= expected) {
      arrived = 0;
      gen++;
      cv.notify_all();
    }
  }
};

struct Launch {
  dim3 grid, block;
  Barrier pool, block_bar;
  std::vector<Barrier> warp_bars;
  std::vector<uint64_t> slots;  // per thread exchange slot
  std::vector<unsigned char> dyn;
};
inline Launch* current = nullptr;
inline thread_local uint3 tidx, bidx;
inline thread_local int tlin = 0;

inline void* dyn_smem() { return current->dyn.data(); }
inline void syncthreads() { current->block_bar.wait(); }
inline void syncwarp() { current->warp_bars[size_t(tlin / 32)].wait(); }

template <class T>
T shfl_xor(T v, int o) {
  static_assert(sizeof(T) <= 8);
  uint64_t u = 0;
  std::memcpy(&u, &v, sizeof(T));
  current->slots[size_t(tlin)] = u;
  syncwarp();
  const int src = (tlin & ~31) | ((tlin & 31) ^ o);
  u = current->slots[size_t(src)];
  syncwarp();
  T r;
  std::memcpy(&r, &u, sizeof(T));
  return r;
}
inline unsigned ballot(bool p) {
  current->slots[size_t(tlin)] = p;
  syncwarp();
  unsigned m = 0;
  const int base = tlin & ~31;
  for (int l = 0; l < 32 && base + l < int(current->slots.size()); l++)
    if (current->slots[size_t(base + l)]) m |= 1u << l;
  syncwarp();
  return m;
}

// Per-kernel dynamic shared memory limit (cudaFuncSetAttribute), default 48 KiB as on the GPU.
inline std::mutex attr_m;
inline std::vector<std::pair<const void*, int>>& attrs() {
  static std::vector<std::pair<const void*, int>> a;
  return a;
}
inline int smem_limit(const void* k) {
  std::lock_guard<std::mutex> lk(attr_m);
  for (auto& p : attrs())
    if (p.first == k) return p.second;
  return 48 * 1024;
}

template <class... P>
struct Launcher {
  void (*kernel)(P...);
  dim3 grid, block;
  size_t smem;
  template <class... A>
  void operator()(A&&... args) {
    const long nthreads = long(block.x) * block.y * block.z;
    if (nthreads < 1 || nthreads > 1024 || grid.y > 65535 || grid.z > 65535 || grid.x < 1 || grid.y < 1 ||
        grid.z < 1 || long(smem) > smem_limit(reinterpret_cast<const void*>(kernel)) || smem > 227 * 1024) {
      std::fprintf(stderr, "EMU: invalid launch grid(%u,%u,%u) block(%u,%u,%u) smem %zu\n", grid.x, grid.y, grid.z,
                   block.x, block.y, block.z, smem);
      last_error = 1;  // cudaErrorInvalidValue
      return;
    }
    Launch L;
    L.grid = grid;
    L.block = block;
    L.pool.reset(int(nthreads));
    const int nwarps = int((nthreads + 31) / 32);
    L.warp_bars = std::vector<Barrier>(size_t(nwarps));
    L.slots.assign(size_t(nthreads), 0);
    L.dyn.assign(smem ? smem : 1, 0xFF);  // uninitialised shared memory reads as NaN / -1
    current = &L;
    const std::tuple<std::decay_t<P>...> targs(std::forward<A>(args)...);
    std::vector<std::thread> th;
    for (long t = 0; t < nthreads; t++)
      th.emplace_back([&, t] {
        tlin = int(t);
        tidx = uint3{unsigned(t % block.x), unsigned(t / block.x % block.y), unsigned(t / (long(block.x) * block.y))};
        for (unsigned bz = 0; bz < grid.z; bz++)
          for (unsigned by = 0; by < grid.y; by++)
            for (unsigned bx = 0; bx < grid.x; bx++) {
              L.pool.wait();
              if (t == 0) {
                L.block_bar.reset(int(nthreads));
                for (int w = 0; w < nwarps; w++) L.warp_bars[size_t(w)].reset(int(std::min<long>(32, nthreads - 32L * w)));
                std::fill(L.dyn.begin(), L.dyn.end(), 0xFF);
              }
              L.pool.wait();
              bidx = uint3{bx, by, bz};
              std::apply(kernel, targs);
              L.block_bar.drop();
              L.warp_bars[size_t(t / 32)].drop();
            }
      });
    for (auto& x : th) x.join();
    current = nullptr;
  }
};

template <class... P>
Launcher<P...> launcher(void (*k)(P...), dim3 g, dim3 b, size_t smem = 0, void* = nullptr) {
  return Launcher<P...>{k, g, b, smem};
}

}  // namespace emu

#define threadIdx (::emu::tidx)
#define blockIdx (::emu::bidx)
#define blockDim (::emu::current->block)
#define gridDim (::emu::current->grid)
#define __syncthreads() ::emu::syncthreads()
#define __syncwarp(...) ::emu::syncwarp()
#define __shfl_xor_sync(mask, v, o) ::emu::shfl_xor((v), (o))
#define __ballot_sync(mask, p) ::emu::ballot(p)
inline int __popc(unsigned v) { return __builtin_popcount(v); }
inline float __uint_as_float(unsigned u) { float f; std::memcpy(&f, &u, 4); return f; }
inline unsigned __float_as_uint(float f) { unsigned u; std::memcpy(&u, &f, 4); return u; }
