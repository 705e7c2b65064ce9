// CPU emulation of the CUDA execution model, enough for DS4's kernels (tools/cuda-emu/run.sh). Clusters run one
// after another (a launch without the cluster attribute: blocks of one), the blocks of a cluster together; every
// thread of the cluster is a fiber on the calling OS thread, switched at barriers: __syncthreads, cluster.sync()
// and the warp collectives (shuffles, ballots, votes, reductions, the bf16 mma.sync of mma.cuh) wait for the
// other threads of the block, cluster or warp; threads that return drop out of later barriers (as on the GPU).
// Each block has its own shared memory, dynamic and static (preprocess.py rewrites every __shared__ declaration
// of the kernels and their headers to the running block's instance), so cluster.map_shared_rank gives the other
// block's variable (include/cooperative_groups.h). The order is deterministic (thread order, or reversed with
// EMU_SCHEDULE=reverse). Reported: a full-mask warp collective reached after some lanes of the warp returned
// (undefined on the GPU), a deadlock at barriers (abort), a fiber stack overflow (guard page). Launches are
// checked against the device's limits (block size, grid size, dynamic shared memory above 48 KiB only after
// cudaFuncSetAttribute, a grid that is a whole number of clusters of at most 8 blocks, 16 after the kernel's
// cudaFuncAttributeNonPortableClusterSizeAllowed); cudaLaunchKernelEx takes
// the cluster dimension attribute and ignores the others (programmatic dependent launch changes nothing when
// each kernel runs to completion before the next starts). Inline PTX is not available: kernels keep it under
// __CUDA_ARCH__ with a plain host path, or (the mma) under #ifndef DS4_CUDA_EMU with an emu_ stand-in that
// computes the warp's product (the fragment layout as the PTX ISA documents it; EmuSelfTest.* in
// emu_selftest.cpp checks it, and the clusters). Shared memory starts as 0xFF bytes (NaN) in every block so a
// read of an unwritten slot shows. While a stream is being captured, launches, async copies and memsets are
// recorded and replayed by cudaGraphLaunch (emu_runtime.h). What it cannot tell: speed, and anything that
// depends on real warp scheduling or on the GPU's memory model beyond barriers (a kernel that spins on a flag of
// a block outside its cluster would hang: only a cluster's blocks run concurrently). Launches come from one
// host thread at a time (the tests have one).
#pragma once
// Set in every file the emulator compiles (emu.h is force-included): the kernels' host-only stand-ins for inline
// PTX are under #ifdef DS4_CUDA_EMU, so nvcc never sees them.
#define DS4_CUDA_EMU 1
#define __CUDA_RUNTIME_API_H__  // block the real runtime API header (vector_functions.h includes it)
#define __CUDA_INCLUDE_COMPILER_INTERNAL_HEADERS__  // host_defines.h is meant for the runtime headers only
#include <crt/host_defines.h>
#undef __CUDA_INCLUDE_COMPILER_INTERNAL_HEADERS__
#include <driver_types.h>
#include <cuda_bf16.h>
#include "emu_state.h"
#include <vector_types.h>
#include <vector_functions.h>
#include <algorithm>
#include <atomic>
#include <cassert>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>  // before __noinline__ is defined: libstdc++ spells the attribute __noinline__
#include <mutex>
#include <tuple>
#include <type_traits>
#include <vector>

#include <sys/mman.h>
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

#undef __global__
#undef __device__
#undef __host__
#undef __forceinline__
#undef __noinline__
#undef __shared__
#undef __align__
#undef __launch_bounds__
#undef __maxnreg__
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __shared__ static
#define __align__(n) __attribute__((aligned(n)))
#define __launch_bounds__(...)
#define __maxnreg__(...)

using std::max;
using std::min;

// The built-in variables: set by the scheduler for the fiber it resumes (plain variables, not macros, so that
// members of the same name, cudaLaunchConfig_t::gridDim, still compile).
inline thread_local uint3 threadIdx, blockIdx;
inline thread_local dim3 blockDim, gridDim;

namespace emu {

// ----- fibers: every CUDA thread of a block is a fiber on the calling OS thread -----
// A fiber runs until it waits at a barrier (or returns), then the scheduler resumes the next one that can run.
// Switching is a few instructions (emu_ctx_switch, emu_support.cpp) instead of an OS context switch, and the
// order is deterministic: fibers are resumed in thread order (EMU_SCHEDULE=reverse: the opposite), so a missing
// barrier shows the same way on every run, and running both orders catches it whichever way the data flows.
extern "C" void emu_ctx_switch(void** save_sp, void* to_sp);

struct Fiber {
  void* sp = nullptr;    // saved stack pointer while switched out
  char* stack = nullptr;  // lowest usable address (a guard page lies below)
  size_t size = 0;
  void* fake = nullptr;  // AddressSanitizer's fake stack while switched out
  const uint64_t* wait_on = nullptr;  // blocked until *wait_on != wait_gen
  uint64_t wait_gen = 0;
  const char* wait_what = nullptr;
  int wait_index = 0;
  bool done = false;
  int tlin = 0;
  int rank = 0;  // the block's rank in its cluster
  uint3 tidx{}, bidx{};
};

struct Sched {
  std::vector<Fiber> fibers;
  int cur = -1;
  void* main_sp = nullptr;
  void* main_fake = nullptr;
  const void* main_lo = nullptr;
  size_t main_size = 0;
  void (*body)(void*) = nullptr;  // what every fiber of the block runs
  void* arg = nullptr;
};
inline Sched sched;
inline thread_local int tlin = 0;
struct Block;
inline thread_local Block* blk = nullptr;  // the block of the running fiber
inline thread_local int blk_rank = 0;       // its rank in the cluster
struct Launch;
inline Launch* current = nullptr;
Block* block_of_rank(int rank);
constexpr size_t kFiberStack = size_t(1) << 20;

inline void switch_to_main(bool finished) {
  Fiber& f = sched.fibers[size_t(sched.cur)];
#if defined(__SANITIZE_ADDRESS__)
  __sanitizer_start_switch_fiber(finished ? nullptr : &f.fake, sched.main_lo, sched.main_size);
#else
  (void)finished;
#endif
  emu_ctx_switch(&f.sp, sched.main_sp);
#if defined(__SANITIZE_ADDRESS__)
  __sanitizer_finish_switch_fiber(f.fake, &sched.main_lo, &sched.main_size);
#endif
}

[[noreturn]] inline void fiber_entry() {
#if defined(__SANITIZE_ADDRESS__)
  __sanitizer_finish_switch_fiber(nullptr, &sched.main_lo, &sched.main_size);
#endif
  sched.body(sched.arg);
  sched.fibers[size_t(sched.cur)].done = true;
  switch_to_main(true);
  __builtin_trap();  // a finished fiber is never resumed
}

// Makes n fibers with their stacks (kept for later launches).
inline void ensure_fibers(int n) {
  while (int(sched.fibers.size()) < n) {
    const size_t guard = 4096;
    void* m = mmap(nullptr, kFiberStack + guard, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) {
      std::fprintf(stderr, "EMU: cannot map a fiber stack\n");
      std::abort();
    }
    mprotect(m, guard, PROT_NONE);  // an overflow faults instead of corrupting the next stack
    Fiber f;
    f.stack = static_cast<char*>(m) + guard;
    f.size = kFiberStack;
    sched.fibers.push_back(f);
  }
}

// A fresh start of fiber f at fiber_entry: the frame emu_ctx_switch pops (x87 and SSE control words, six
// callee-saved registers, the return address) on top of a null return address (16-byte alignment at entry).
inline void fiber_init(Fiber& f) {
#if defined(__SANITIZE_ADDRESS__)
  // Frames a finished fiber leaves poisoned are only fiber_entry's and switch_to_main's (every other function
  // returned and cleaned up), at the top of the stack.
  __asan_unpoison_memory_region(f.stack + f.size - 16384, 16384);
#endif
  void** sp = reinterpret_cast<void**>((reinterpret_cast<uintptr_t>(f.stack) + f.size) & ~uintptr_t(15));
  *--sp = nullptr;
  *--sp = reinterpret_cast<void*>(&fiber_entry);
  for (int i = 0; i < 6; i++) *--sp = nullptr;
  sp -= 2;
  uint16_t cw;
  uint32_t mx;
  asm volatile("fnstcw %0" : "=m"(cw));
  asm volatile("stmxcsr %0" : "=m"(mx));
  std::memset(sp, 0, 16);
  std::memcpy(sp, &cw, 2);
  std::memcpy(reinterpret_cast<char*>(sp) + 8, &mx, 4);
  f.sp = sp;
  f.fake = nullptr;
  f.wait_on = nullptr;
  f.done = false;
}

inline bool reverse_schedule() {
  static const bool r = [] {
    const char* v = std::getenv("EMU_SCHEDULE");
    return v && std::strcmp(v, "reverse") == 0;
  }();
  return r;
}

// Runs fibers 0..n-1 (already initialised) until all have returned. Aborts on a deadlock (threads waiting at
// barriers that the others never reach: undefined on the GPU, usually a hang).
inline void run_fibers(int n) {
  int remaining = n;
  while (remaining > 0) {
    bool progressed = false;
    for (int j = 0; j < n; j++) {
      const int i = reverse_schedule() ? n - 1 - j : j;
      Fiber& f = sched.fibers[size_t(i)];
      if (f.done || (f.wait_on && *f.wait_on == f.wait_gen)) continue;
      f.wait_on = nullptr;
      sched.cur = i;
      tlin = f.tlin;
      blk_rank = f.rank;
      blk = block_of_rank(f.rank);
      threadIdx = f.tidx;
      blockIdx = f.bidx;
#if defined(__SANITIZE_ADDRESS__)
      __sanitizer_start_switch_fiber(&sched.main_fake, f.stack, f.size);
#endif
      emu_ctx_switch(&sched.main_sp, f.sp);
#if defined(__SANITIZE_ADDRESS__)
      __sanitizer_finish_switch_fiber(sched.main_fake, nullptr, nullptr);
#endif
      progressed = true;
      if (f.done) remaining--;
    }
    if (!progressed) {
      std::fprintf(stderr, "EMU: deadlock in block (%u,%u,%u): %d threads wait at barriers the others never reach\n",
                   sched.fibers[0].bidx.x, sched.fibers[0].bidx.y, sched.fibers[0].bidx.z, remaining);
      for (int i = 0; i < n; i++)
        if (!sched.fibers[size_t(i)].done)
          std::fprintf(stderr, "  thread %d: %s %d\n", i, sched.fibers[size_t(i)].wait_what,
                       sched.fibers[size_t(i)].wait_index);
      std::abort();
    }
  }
  sched.cur = -1;
}

// A barrier of `expected` fibers; fibers that return drop out (as threads that exit do on the GPU).
struct Barrier {
  int expected = 0, arrived = 0;
  uint64_t gen = 0;
  const char* what = "barrier";
  int index = 0;
  void reset(int n) {
    expected = n;
    arrived = 0;
  }
  void wait() {
    const uint64_t g = gen;
    if (++arrived >= expected) {
      arrived = 0;
      gen++;
      return;
    }
    Fiber& f = sched.fibers[size_t(sched.cur)];
    f.wait_on = &gen;
    f.wait_gen = g;
    f.wait_what = what;
    f.wait_index = index;
    switch_to_main(false);
  }
  void drop() {
    expected--;
    if (arrived > 0 && arrived >= expected) {
      arrived = 0;
      gen++;
    }
  }
  int live() const { return expected; }
};

// One block of the cluster being run: its barriers, exchange slots and shared memory.
struct Block {
  uint3 idx{};
  Barrier block_bar;
  std::vector<Barrier> warp_bars;
  std::vector<uint64_t> slots;     // per thread exchange slot (shuffles, ballots, block votes)
  std::vector<uint32_t> mma_ab;    // per thread: the mma's a0..a3, b0, b1
  std::vector<float> mma_c;        // per thread: the mma's c0..c3 in, d0..d3 out
  std::vector<uint64_t> mma_done;  // per warp: the warp barrier generation whose mma is computed
  std::vector<char> alive;         // per thread: has not returned from the current block
  std::vector<unsigned char> dyn;  // dynamic shared memory
  // Static __shared__ variables (preprocess.py turns each declaration into block_shared): one instance per
  // block, made at the first thread's declaration (or map_shared_rank from another block of the cluster).
  struct Static {
    const void* tag;
    size_t size;
    unsigned char* p;
  };
  std::vector<Static> statics;
  Block() = default;
  Block(const Block&) = delete;
  Block& operator=(const Block&) = delete;
  ~Block() {
    for (auto& v : statics) std::free(v.p);
  }
  unsigned char* shared_var(const void* tag, size_t size) {
    for (auto& v : statics)
      if (v.tag == tag) return v.p;
    void* p = std::aligned_alloc(256, (size + 255) & ~size_t(255));
    std::memset(p, 0xFF, size);  // uninitialised shared memory reads as NaN / -1
    statics.push_back({tag, size, static_cast<unsigned char*>(p)});
    return statics.back().p;
  }
};

struct Launch {
  dim3 grid, block, cluster{1, 1, 1};
  int nthreads = 0;  // per block
  int nblocks = 1;   // per cluster
  std::vector<std::unique_ptr<Block>> blocks;  // by rank in the cluster
  Barrier cluster_bar;                          // cluster.sync(): every live thread of the cluster
  bool warned = false;
};
inline Block* block_of_rank(int rank) { return current->blocks[size_t(rank)].get(); }

inline void* dyn_smem() { return blk->dyn.data(); }
inline void syncthreads() { blk->block_bar.wait(); }
inline void syncwarp() { blk->warp_bars[size_t(tlin / 32)].wait(); }
inline int lane_id() { return tlin & 31; }
inline int warp_size_here() { return std::min(32, current->nthreads - (tlin & ~31)); }

// A warp collective with the full mask needs every lane of the warp; on the GPU one that returned makes it
// undefined. Reported once per launch (the emulator carries on with the lanes that are left). Called after the
// collective's first barrier, when every lane of the warp has either arrived or returned.
inline void check_full_warp(unsigned mask, const char* what) {
  if (mask != 0xffffffffu || warp_size_here() != 32) return;
  if (blk->warp_bars[size_t(tlin / 32)].live() < 32 && !current->warned) {
    current->warned = true;
    std::fprintf(stderr, "EMU: %s with mask 0xffffffff in block (%u,%u,%u) warp %d after some of its lanes returned\n",
                 what, blockIdx.x, blockIdx.y, blockIdx.z, tlin / 32);
  }
}

// Every lane publishes v; each gets the value of lane src(lane) of its warp (its own when src is out of range).
template <class T, class Src>
T shfl_from(unsigned mask, T v, Src src, const char* what) {
  static_assert(sizeof(T) <= 8 && std::is_trivially_copyable_v<T>);
  uint64_t u = 0;
  std::memcpy(&u, &v, sizeof(T));
  blk->slots[size_t(tlin)] = u;
  syncwarp();
  check_full_warp(mask, what);
  const int s = src(lane_id());
  if (s >= 0 && s < warp_size_here()) u = blk->slots[size_t((tlin & ~31) + s)];
  syncwarp();
  T r;
  std::memcpy(&r, &u, sizeof(T));
  return r;
}

// The values of every live lane of the warp combined by f (`missing` when there is none).
template <class T, class F>
T warp_reduce(unsigned mask, T v, T missing, F f, const char* what) {
  blk->slots[size_t(tlin)] = uint64_t(v);
  syncwarp();
  check_full_warp(mask, what);
  const int base = tlin & ~31, n = warp_size_here();
  T r = missing;
  bool first = true;
  for (int l = 0; l < n; l++) {
    if (!blk->alive[size_t(base + l)]) continue;
    const T x = T(blk->slots[size_t(base + l)]);
    r = first ? x : f(r, x);
    first = false;
  }
  syncwarp();
  return r;
}

inline unsigned ballot(unsigned mask, bool p) {
  blk->slots[size_t(tlin)] = p;
  syncwarp();
  check_full_warp(mask, "__ballot_sync");
  unsigned m = 0;
  const int base = tlin & ~31, n = warp_size_here();
  for (int l = 0; l < n; l++)
    if (blk->alive[size_t(base + l)] && blk->slots[size_t(base + l)]) m |= 1u << l;
  syncwarp();
  return m;
}

// __syncthreads_count: the number of live threads of the block whose predicate is true (all threads wait).
inline int block_count(bool p) {
  blk->slots[size_t(tlin)] = p;
  syncthreads();
  int c = 0;
  for (int t = 0; t < current->nthreads; t++) c += blk->alive[size_t(t)] && blk->slots[size_t(t)];
  syncthreads();
  return c;
}
inline int block_live() {
  int c = 0;
  for (int t = 0; t < current->nthreads; t++) c += blk->alive[size_t(t)];
  return c;
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
// Kernels allowed clusters above the portable 8 blocks (cudaFuncAttributeNonPortableClusterSizeAllowed): up to 16.
inline std::vector<const void*>& large_cluster_kernels() {
  static std::vector<const void*> k;
  return k;
}
inline int cluster_limit(const void* k) {
  std::lock_guard<std::mutex> lk(attr_m);
  for (auto* p : large_cluster_kernels())
    if (p == k) return 16;
  return 8;
}

// Runs the clusters of a grid one after another; the blocks of a cluster (one block without a cluster launch)
// run together, one fiber per CUDA thread of each, so that cluster.sync() and map_shared_rank work.
template <class... P>
void run_grid(void (*kernel)(P...), dim3 grid, dim3 block, dim3 cluster, size_t smem, const std::tuple<P...>& targs) {
  const int nthreads = int(block.x * block.y * block.z);
  const int nblocks = int(cluster.x * cluster.y * cluster.z);
  Launch L;
  L.grid = grid;
  L.block = block;
  L.cluster = cluster;
  L.nthreads = nthreads;
  L.nblocks = nblocks;
  L.cluster_bar.what = "cluster.sync";
  const int nwarps = (nthreads + 31) / 32;
  if (current || sched.cur >= 0) {
    std::fprintf(stderr, "EMU: a launch from inside a kernel\n");
    std::abort();
  }
  for (int r = 0; r < nblocks; r++) {
    L.blocks.push_back(std::make_unique<Block>());
    Block& B = *L.blocks.back();
    B.block_bar.what = "__syncthreads";
    B.warp_bars = std::vector<Barrier>(size_t(nwarps));
    for (int w = 0; w < nwarps; w++) B.warp_bars[size_t(w)].what = "warp collective of warp", B.warp_bars[size_t(w)].index = w;
    B.slots.assign(size_t(nthreads), 0);
    B.mma_ab.assign(size_t(nthreads) * 6, 0);
    B.mma_c.assign(size_t(nthreads) * 4, 0.0f);
    B.mma_done.assign(size_t(nwarps), 0);
    B.alive.assign(size_t(nthreads), 1);
    B.dyn.assign(smem ? smem : 1, 0xFF);
  }
  current = &L;
  blockDim = block;
  gridDim = grid;
  struct Body {
    void (*kernel)(P...);
    const std::tuple<P...>* args;
    Launch* L;
  } body{kernel, &targs, &L};
  sched.body = [](void* p) {
    const Body& b = *static_cast<const Body*>(p);
    std::apply(b.kernel, *b.args);
    blk->alive[size_t(tlin)] = 0;
    blk->block_bar.drop();
    blk->warp_bars[size_t(tlin / 32)].drop();
    b.L->cluster_bar.drop();
  };
  sched.arg = &body;
  const int nfib = nthreads * nblocks;
  ensure_fibers(nfib);
  for (unsigned cz = 0; cz < grid.z; cz += cluster.z)
    for (unsigned cy = 0; cy < grid.y; cy += cluster.y)
      for (unsigned cx = 0; cx < grid.x; cx += cluster.x) {
        L.cluster_bar.reset(nfib);
        for (int r = 0; r < nblocks; r++) {
          Block& B = *L.blocks[size_t(r)];
          // Rank order within the cluster: x fastest (as %cluster_ctarank).
          B.idx = uint3{cx + unsigned(r) % cluster.x, cy + unsigned(r) / cluster.x % cluster.y,
                        cz + unsigned(r) / (cluster.x * cluster.y)};
          B.block_bar.reset(nthreads);
          for (int w = 0; w < nwarps; w++) B.warp_bars[size_t(w)].reset(std::min(32, nthreads - 32 * w));
          std::fill(B.alive.begin(), B.alive.end(), 1);
          std::fill(B.dyn.begin(), B.dyn.end(), 0xFF);
          for (auto& v : B.statics) std::free(v.p);
          B.statics.clear();
          for (int t = 0; t < nthreads; t++) {
            Fiber& f = sched.fibers[size_t(r * nthreads + t)];
            fiber_init(f);
            f.tlin = t;
            f.rank = r;
            f.tidx = uint3{unsigned(t) % block.x, unsigned(t) / block.x % block.y, unsigned(t) / (block.x * block.y)};
            f.bidx = B.idx;
          }
        }
        run_fibers(nfib);
      }
  current = nullptr;
  blk = nullptr;
}

// A static __shared__ variable of the running block (preprocess.py: `__shared__ T x[N];` becomes
// `static char emu_tag_x; T (&x)[N] = ::emu::block_shared<T[N]>(&emu_tag_x);`).
template <class T>
T& block_shared(const void* tag) {
  return *reinterpret_cast<T*>(blk->shared_var(tag, sizeof(T)));
}

// cluster.map_shared_rank: the address in block `rank`'s shared memory of the variable p points into in this
// block's (static __shared__ or dynamic).
template <class T>
T* map_shared_rank(T* p, unsigned rank) {
  if (rank >= unsigned(current->nblocks)) {
    std::fprintf(stderr, "EMU: map_shared_rank to rank %u of a cluster of %d blocks\n", rank, current->nblocks);
    std::abort();
  }
  Block& other = *current->blocks[rank];
  const auto* c = reinterpret_cast<const unsigned char*>(p);
  if (c >= blk->dyn.data() && c < blk->dyn.data() + blk->dyn.size())
    return reinterpret_cast<T*>(other.dyn.data() + (c - blk->dyn.data()));
  for (auto& v : blk->statics)
    if (c >= v.p && c < v.p + v.size)
      return reinterpret_cast<T*>(other.shared_var(v.tag, v.size) + (c - v.p));
  std::fprintf(stderr, "EMU: map_shared_rank of an address that is not in the block's shared memory\n");
  std::abort();
}

template <class... P>
struct Launcher {
  void (*kernel)(P...);
  dim3 grid, block;
  size_t smem;
  dim3 cluster{1, 1, 1};
  // Checks the configuration, then runs the grid (or records it while a stream capture is in progress).
  // Returns the cudaError_t, also left for cudaGetLastError as the runtime does.
  template <class... A>
  int launch(A&&... args) {
    const long nthreads = long(block.x) * block.y * block.z;
    if (nthreads < 1 || nthreads > 1024 || block.z > 64 || grid.y > 65535 || grid.z > 65535 || grid.x < 1 ||
        grid.y < 1 || grid.z < 1 || long(smem) > smem_limit(reinterpret_cast<const void*>(kernel)) ||
        smem > 227 * 1024 || cluster.x < 1 || cluster.y < 1 || cluster.z < 1 || grid.x % cluster.x ||
        grid.y % cluster.y || grid.z % cluster.z ||
        int(cluster.x * cluster.y * cluster.z) > cluster_limit(reinterpret_cast<const void*>(kernel))) {
      std::fprintf(stderr, "EMU: invalid launch grid(%u,%u,%u) block(%u,%u,%u) cluster(%u,%u,%u) smem %zu\n", grid.x,
                   grid.y, grid.z, block.x, block.y, block.z, cluster.x, cluster.y, cluster.z, smem);
      last_error = 1;  // cudaErrorInvalidValue
      return 1;
    }
    std::tuple<P...> targs(std::forward<A>(args)...);  // converted to the parameter types, as the runtime does
    enqueue([k = kernel, g = grid, b = block, c = cluster, s = smem, targs] { run_grid(k, g, b, c, s, targs); });
    return 0;
  }
  template <class... A>
  void operator()(A&&... args) {
    launch(std::forward<A>(args)...);
  }
};

template <class... P>
Launcher<P...> launcher(void (*k)(P...), dim3 g, dim3 b, size_t smem = 0, void* = nullptr) {
  return Launcher<P...>{k, g, b, smem};
}

// Stand-in for mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 (PTX ISA, "Matrix fragments for mma.m16n8k16
// with floating point type"): D[16x8] = A[16x16] B[16x8] + C, gathered from the 32 lanes of the warp.
// Lane = 4 g + t (g = groupID, t = threadID_in_group). Each 32-bit register holds two bf16, the lower column (A)
// or row (B) index in the low half.
//   A (row major): a0 = (g, 2t..2t+1), a1 = (g+8, 2t..2t+1), a2 = (g, 2t+8..2t+9), a3 = (g+8, 2t+8..2t+9)
//   B (col major): b0 = (2t..2t+1, g), b1 = (2t+8..2t+9, g)
//   C, D:          c0, c1 = (g, 2t..2t+1), c2, c3 = (g+8, 2t..2t+1)
// The products of bf16 are exact in float32; they are summed in k order onto C in float32 (the hardware's order
// and intermediate precision are unspecified).
//
// mma_warp computes the whole warp's D once, from ab[lane][0..5] (a0..a3, b0, b1) and cd[lane][0..3] (C in, D
// out). Emulator internals only: built optimised and without sanitizer checks (the hot loop of every
// tensor-core GEMV), plain arrays (nothing left out of line).
__attribute__((optimize("O2"), no_sanitize("address", "undefined"))) inline float bf16_half(uint32_t r, int hi) {
  const uint32_t u = hi ? (r & 0xffff0000u) : (r << 16);
  float f;
  __builtin_memcpy(&f, &u, 4);
  return f;
}
__attribute__((optimize("O2"), no_sanitize("address", "undefined"))) inline void mma_warp(const uint32_t* ab,
                                                                                         float* cd) {
  float a[16][16], b[8][16];  // a[row][k], b[col][k]
  for (int lane = 0; lane < 32; lane++) {
    const int g = lane >> 2, t = lane & 3;
    const uint32_t* r = ab + 6 * lane;
    for (int h = 0; h < 2; h++) {
      a[g][2 * t + h] = bf16_half(r[0], h);
      a[g + 8][2 * t + h] = bf16_half(r[1], h);
      a[g][2 * t + 8 + h] = bf16_half(r[2], h);
      a[g + 8][2 * t + 8 + h] = bf16_half(r[3], h);
      b[g][2 * t + h] = bf16_half(r[4], h);
      b[g][2 * t + 8 + h] = bf16_half(r[5], h);
    }
  }
  for (int lane = 0; lane < 32; lane++) {
    const int g = lane >> 2, t = lane & 3;
    for (int i = 0; i < 4; i++) {
      const float* ar = a[g + 8 * (i >> 1)];
      const float* bc = b[2 * t + (i & 1)];
      float s = cd[4 * lane + i];
      for (int k = 0; k < 16; k++) s += ar[k] * bc[k];
      cd[4 * lane + i] = s;
    }
  }
}

// The warp-wide instruction: every lane publishes its registers and waits for the others (one warp barrier);
// the first lane to go on computes D for all 32 and each takes its own. One barrier is enough: a lane's slots
// are written again only at its next mma, whose computation needs every lane to have arrived there, so after
// it has read its result.
inline void mma_bf16_16816(float (&c)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint32_t b0,
                           uint32_t b1) {
  const int w = tlin / 32, base = tlin & ~31;
  uint32_t* ab = &blk->mma_ab[size_t(6 * tlin)];
  ab[0] = a0, ab[1] = a1, ab[2] = a2, ab[3] = a3, ab[4] = b0, ab[5] = b1;
  float* cd = &blk->mma_c[size_t(4 * tlin)];
  for (int i = 0; i < 4; i++) cd[i] = c[i];
  syncwarp();
  const Barrier& bar = blk->warp_bars[size_t(w)];
  if (blk->mma_done[size_t(w)] != bar.gen) {  // the first lane on (generations only grow during a launch)
    // Checked here, before any lane goes on: later a lane that went on may have returned from the kernel.
    if (warp_size_here() != 32 || bar.live() != 32) {
      std::fprintf(stderr, "EMU: mma.sync needs all 32 lanes of the warp (block (%u,%u,%u) warp %d)\n", blockIdx.x,
                   blockIdx.y, blockIdx.z, w);
      std::abort();
    }
    mma_warp(&blk->mma_ab[size_t(6 * base)], &blk->mma_c[size_t(4 * base)]);
    blk->mma_done[size_t(w)] = bar.gen;
  }
  for (int i = 0; i < 4; i++) c[i] = cd[i];
}

}  // namespace emu

// ----- device intrinsics -----
inline void __syncthreads() { ::emu::syncthreads(); }
inline int __syncthreads_count(int p) { return ::emu::block_count(p != 0); }
inline int __syncthreads_or(int p) { return ::emu::block_count(p != 0) != 0; }
inline int __syncthreads_and(int p) {
  const int c = ::emu::block_count(p != 0);
  return c == ::emu::block_live();
}
inline void __syncwarp(unsigned = 0xffffffffu) { ::emu::syncwarp(); }
inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline void __threadfence_block() { std::atomic_thread_fence(std::memory_order_seq_cst); }

template <class T>
T __shfl_sync(unsigned mask, T v, int src, int width = 32) {
  return ::emu::shfl_from(mask, v, [&](int l) { return (l & ~(width - 1)) + (src & (width - 1)); }, "__shfl_sync");
}
template <class T>
T __shfl_xor_sync(unsigned mask, T v, int o, int width = 32) {
  return ::emu::shfl_from(mask, v, [&](int l) {
    const int s = l ^ o;
    return (s & ~(width - 1)) == (l & ~(width - 1)) ? s : l;
  }, "__shfl_xor_sync");
}
template <class T>
T __shfl_up_sync(unsigned mask, T v, unsigned d, int width = 32) {
  return ::emu::shfl_from(mask, v, [&](int l) { return (l & (width - 1)) >= int(d) ? l - int(d) : l; }, "__shfl_up_sync");
}
template <class T>
T __shfl_down_sync(unsigned mask, T v, unsigned d, int width = 32) {
  return ::emu::shfl_from(mask, v, [&](int l) { return (l & (width - 1)) + int(d) < width ? l + int(d) : l; },
                          "__shfl_down_sync");
}
inline unsigned __ballot_sync(unsigned mask, int p) { return ::emu::ballot(mask, p != 0); }
inline int __any_sync(unsigned mask, int p) { return ::emu::ballot(mask, p != 0) != 0; }
inline int __all_sync(unsigned mask, int p) { return ::emu::ballot(mask, p == 0) == 0; }
inline unsigned __activemask() { return ::emu::ballot(0u, true); }
inline unsigned __reduce_max_sync(unsigned mask, unsigned v) {
  return ::emu::warp_reduce(mask, v, 0u, [](unsigned a, unsigned b) { return a > b ? a : b; }, "__reduce_max_sync");
}
inline int __reduce_max_sync(unsigned mask, int v) {
  return int(::emu::warp_reduce<int64_t>(mask, v, 0, [](int64_t a, int64_t b) { return a > b ? a : b; }, "__reduce_max_sync"));
}
inline unsigned __reduce_min_sync(unsigned mask, unsigned v) {
  return ::emu::warp_reduce(mask, v, 0u, [](unsigned a, unsigned b) { return a < b ? a : b; }, "__reduce_min_sync");
}
inline int __reduce_min_sync(unsigned mask, int v) {
  return int(::emu::warp_reduce<int64_t>(mask, v, 0, [](int64_t a, int64_t b) { return a < b ? a : b; }, "__reduce_min_sync"));
}
inline unsigned __reduce_add_sync(unsigned mask, unsigned v) {
  return ::emu::warp_reduce(mask, v, 0u, [](unsigned a, unsigned b) { return a + b; }, "__reduce_add_sync");
}
inline int __reduce_add_sync(unsigned mask, int v) {
  return int(unsigned(::emu::warp_reduce(mask, unsigned(v), 0u, [](unsigned a, unsigned b) { return a + b; }, "__reduce_add_sync")));
}

// Atomics (one OS thread runs every fiber and a fiber is never interrupted between barriers, so any
// read-modify-write is atomic here; std::atomic_ref says what is meant).
template <class T>
T atomicAdd(T* p, std::type_identity_t<T> v) { return std::atomic_ref<T>(*p).fetch_add(v); }
template <class T>
T atomicSub(T* p, std::type_identity_t<T> v) { return std::atomic_ref<T>(*p).fetch_sub(v); }
template <class T>
T atomicExch(T* p, std::type_identity_t<T> v) { return std::atomic_ref<T>(*p).exchange(v); }
template <class T>
T atomicCAS(T* p, std::type_identity_t<T> cmp, std::type_identity_t<T> v) {
  std::atomic_ref<T>(*p).compare_exchange_strong(cmp, v);
  return cmp;
}
template <class T>
T atomicMax(T* p, std::type_identity_t<T> v) {
  std::atomic_ref<T> a(*p);
  T old = a.load();
  while (old < v && !a.compare_exchange_weak(old, v)) {}
  return old;
}
template <class T>
T atomicMin(T* p, std::type_identity_t<T> v) {
  std::atomic_ref<T> a(*p);
  T old = a.load();
  while (v < old && !a.compare_exchange_weak(old, v)) {}
  return old;
}
template <class T>
T atomicOr(T* p, std::type_identity_t<T> v) { return std::atomic_ref<T>(*p).fetch_or(v); }
template <class T>
T atomicAnd(T* p, std::type_identity_t<T> v) { return std::atomic_ref<T>(*p).fetch_and(v); }

// Cache-hinted loads and stores are plain accesses.
template <class T> T __ldg(const T* p) { return *p; }
template <class T> T __ldcg(const T* p) { return *p; }
template <class T> T __ldca(const T* p) { return *p; }
template <class T> T __ldcs(const T* p) { return *p; }
template <class T> T __ldlu(const T* p) { return *p; }
template <class T> T __ldcv(const T* p) { return *p; }
template <class T> void __stcg(T* p, T v) { *p = v; }
template <class T> void __stcs(T* p, T v) { *p = v; }
template <class T> void __stwt(T* p, T v) { *p = v; }

inline int __popc(unsigned v) { return __builtin_popcount(v); }
inline int __popcll(unsigned long long v) { return __builtin_popcountll(v); }
inline int __clz(unsigned v) { return v ? __builtin_clz(v) : 32; }
inline int __clzll(unsigned long long v) { return v ? __builtin_clzll(v) : 64; }
inline int __ffs(unsigned v) { return __builtin_ffs(int(v)); }
inline int __ffsll(unsigned long long v) { return __builtin_ffsll((long long)v); }
inline unsigned __brev(unsigned v) {
  v = ((v >> 1) & 0x55555555u) | ((v & 0x55555555u) << 1);
  v = ((v >> 2) & 0x33333333u) | ((v & 0x33333333u) << 2);
  v = ((v >> 4) & 0x0f0f0f0fu) | ((v & 0x0f0f0f0fu) << 4);
  return __builtin_bswap32(v);
}
inline float __uint_as_float(unsigned u) { float f; std::memcpy(&f, &u, 4); return f; }
inline unsigned __float_as_uint(float f) { unsigned u; std::memcpy(&u, &f, 4); return u; }
inline float __int_as_float(int u) { float f; std::memcpy(&f, &u, 4); return f; }
inline int __float_as_int(float f) { int u; std::memcpy(&u, &f, 4); return u; }
inline double __longlong_as_double(long long u) { double f; std::memcpy(&f, &u, 8); return f; }
inline long long __double_as_longlong(double f) { long long u; std::memcpy(&u, &f, 8); return u; }
inline float __expf(float x) { return std::exp(x); }
inline float __logf(float x) { return std::log(x); }
inline float __fdividef(float a, float b) { return a / b; }
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }

// The bf16 tensor-core mma of mma.cuh (see emu::mma_bf16_16816).
inline void emu_mma_bf16_16816(float (&c)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint32_t b0,
                               uint32_t b1) {
  ::emu::mma_bf16_16816(c, a0, a1, a2, a3, b0, b1);
}

// cudaLaunchKernelEx (C++ form): the cluster dimension attribute makes a cluster launch (the portable sizes, at
// most 8 blocks); the others (programmatic stream serialization) change nothing when each kernel runs to
// completion before the next starts.
template <class... P, class... A>
cudaError_t cudaLaunchKernelEx(const cudaLaunchConfig_t* cfg, void (*kernel)(P...), A&&... args) {
  auto l = ::emu::launcher(kernel, cfg->gridDim, cfg->blockDim, cfg->dynamicSmemBytes);
  for (unsigned i = 0; i < cfg->numAttrs; i++)
    if (cfg->attrs[i].id == cudaLaunchAttributeClusterDimension)
      l.cluster = dim3(cfg->attrs[i].val.clusterDim.x, cfg->attrs[i].val.clusterDim.y, cfg->attrs[i].val.clusterDim.z);
  return cudaError_t(l.launch(std::forward<A>(args)...));
}
